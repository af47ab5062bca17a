"""Where passdown keeps its own files."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """passdown's data folder: `$PASSDOWN_DATA_DIR` if set, else the platform's user data dir.

    The folder is not created here; whoever writes into it creates it.
    """
    override = os.environ.get("PASSDOWN_DATA_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_data_dir  # lazy: keeps `passdown --help` fast

    return Path(user_data_dir("passdown", appauthor=False))
