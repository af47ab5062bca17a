"""A takeover prompt too long for one argv element, handed to an agent as a file.

Linux refuses one argument of 128 KiB or more (`passdown._launch`); agents that read a
prompt from a file (Vibe `--prompt-file`, OpenHands `--file`) get the long ones that way.
"""

from __future__ import annotations

from pathlib import Path

# A prompt longer than this goes in a file: one argv element stays far below the limit.
LONG_PROMPT_BYTES = 32 * 1024


def is_long(prompt: str) -> bool:
    return len(prompt.encode("utf-8")) > LONG_PROMPT_BYTES


def prompt_file(prompt: str, workspace: Path, agent: str) -> Path:
    """Write `prompt` privately beside the handoff (`.agent-handoff/<agent>-prompt.md`)."""
    from passdown._fsio import ensure_private_dir, write_atomic

    folder = workspace / ".agent-handoff"
    ensure_private_dir(folder)
    path = folder / f"{agent}-prompt.md"
    write_atomic(path, prompt.encode("utf-8"))
    return path
