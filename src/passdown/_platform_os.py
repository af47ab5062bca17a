"""Which operating system passdown runs on, the floor of the platform seam (`_platform`
re-exports these: import them from there).

Asked at call time (`sys.platform`, `os.name`), so a test that sets `sys.platform`
simulates another system for the whole seam.
"""

from __future__ import annotations

import os
import sys


def is_windows() -> bool:
    return os.name == "nt" or sys.platform == "win32"


def is_macos() -> bool:
    return sys.platform == "darwin"


def is_linux() -> bool:
    return sys.platform.startswith("linux")
