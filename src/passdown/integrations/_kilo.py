"""Kilo Code (7.7.9): opencode's plugin, under Kilo's names.

Kilo, an opencode fork, loads the same JavaScript plugins with the same events
(`session.idle`, `session.compacted`, `experimental.chat.system.transform`) from
`~/.config/kilo/plugins/` (`$XDG_CONFIG_HOME`; project: `.kilo/plugins/`). passdown
writes opencode's plugin there, running `passdown hook kilo PAYLOAD` instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from passdown.integrations._base import InstallTarget
from passdown.integrations._opencode import PLUGIN, OpenCodeHooks

KILO_PLUGIN = (
    PLUGIN.replace('["hook", "opencode",', '["hook", "kilo",')
    .replace("handoffs for opencode sessions", "handoffs for Kilo Code sessions")
    .replace("`passdown install opencode`", "`passdown install kilo`")
    .replace("`passdown uninstall opencode`", "`passdown uninstall kilo`")
    .replace("`passdown hook opencode PAYLOAD`", "`passdown hook kilo PAYLOAD`")
    .replace("`opencode run` exits", "`kilo run` exits")
)


def kilo_config_dir() -> Path:
    configured = os.environ.get("XDG_CONFIG_HOME")
    return (Path(configured) if configured else Path.home() / ".config") / "kilo"


class KiloHooks(OpenCodeHooks):
    agent = "kilo"
    template: ClassVar[str] = KILO_PLUGIN

    def folder(self, target: InstallTarget) -> Path:
        return kilo_config_dir() if target.scope == "user" else target.project_dir / ".kilo"
