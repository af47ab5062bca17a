"""Kilo Code CLI (`kilo`, npm `@kilocode/cli`, verified with 7.7.9): an opencode fork
that keeps opencode's session store under its own names.

Sessions are in SQLite, `$XDG_DATA_HOME/kilo/kilo.db` (default `~/.local/share/kilo/`;
the same folder on macOS and Windows, where Kilo, like opencode, follows xdg-basedir
under the home folder; `KILO_DB` names another database). The tables passdown reads
are opencode's: `session` (the cwd in `directory`, Kilo's version in `version`),
`message` and `part` with JSON `data`, and `todo`, the final list of `todowrite`. Kilo's
own tables (`session_message`, `session_input`, `kilo_board*`, `account_state`, ...)
hold nothing a handoff needs, so the reader is opencode's (`OpenCode`), with Kilo's
names, paths and launch.

A failed shell command stays a `completed` `bash` part; its exit code is
`state.metadata.exit`, which the shared reader uses. A 429 Kilo retried leaves no trace
in the database (only an ERROR line in `log/opencode.log`), so it is no ending here.
"""

from __future__ import annotations

from pathlib import Path

from passdown.agents.base import LaunchSpec
from passdown.agents.opencode import OpenCode


class KiloCode(OpenCode):
    name = "kilo"
    display_name = "Kilo Code"
    program = "kilo"
    data_folder = "kilo"
    db_env = "KILO_DB"
    store_env = ("KILO_DB", "XDG_DATA_HOME")

    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # As opencode's: "--prompt=" keeps a prompt that starts with "-" attached to its
        # option; `run` takes it after "--" (Kilo's default permissions let it edit files
        # and run commands unattended, so no --auto, which also approves what is set to ask).
        if interactive:
            return LaunchSpec(argv=[self.program, f"--prompt={prompt}"], cwd=workspace)
        return LaunchSpec(argv=[self.program, "run", "--", prompt], cwd=workspace)


__all__ = ["KiloCode"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
KiloCode.integration = "passdown.integrations._kilo:KiloHooks"  # type: ignore[attr-defined]
