"""A takeover prompt too long for one argument goes to the agent through a file.

Linux refuses a single argument of 128 KiB or more (`_launch.MAX_ARG_BYTES`); agents
that can read their first instruction from a file (Auggie's `--instruction-file`,
Continue's `--prompt <file>`) are handed a private copy in the workspace's
`.agent-handoff/` folder instead, written atomically, 0600.
"""

from __future__ import annotations

from pathlib import Path

from passdown._fsio import ensure_private_dir, write_private
from passdown._workspace import HANDOFF_DIR

# Below the one-argument limit less its headroom (128 KiB - 8 KiB): past this, a file.
LONG_PROMPT_BYTES = 64 * 1024


def is_long(prompt: str) -> bool:
    return len(prompt.encode("utf-8", "replace")) > LONG_PROMPT_BYTES


def write_prompt_file(prompt: str, workspace: Path, agent: str) -> Path:
    """The prompt in `<workspace>/.agent-handoff/<agent>-prompt.md`; raises OutputError."""
    folder = ensure_private_dir(workspace / HANDOFF_DIR)
    path = folder / f"{agent}-prompt.md"
    write_private(path, prompt)
    return path
