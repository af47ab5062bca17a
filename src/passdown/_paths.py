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


def private_data_dir(*parts: str) -> Path:
    """`data_dir()` (or a folder inside it), created 0700 or tightened to 0700.

    It holds handoff text, token hashes and copies of users' config files. A symlink at
    the data folder itself is followed (the user's own choice, e.g. a dotfiles setup);
    below it, `ensure_private_dir` refuses symlinks. Raises `OutputError`.
    """
    from passdown._fsio import ensure_private_dir

    folder = ensure_private_dir(data_dir().resolve())
    for part in parts:
        folder = ensure_private_dir(folder / part)
    return folder
