"""Access to the session fixtures recorded from the real agent CLIs (tests/e2e/record.py).

The CLIs ran in workspaces under /tmp/passdown-rec (`REC_ROOT`), and the sessions name
them: a command that hands a session off into its own workspace refuses one whose folder
is gone. A test that needs the workspace copies the store with `lay_out_recorded` (or
`Recorded.install(..., workspaces=...)`): every recorded workspace moved into the test's
own folder and made there, never the shared /tmp/passdown-rec."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
ENV_VAR = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "cursor": "CURSOR_CONFIG_DIR"}
REC_ROOT = "/tmp/passdown-rec"  # where tests/e2e/record.py runs the CLIs
_WORKSPACE = re.compile(re.escape(REC_ROOT).encode() + rb"/([A-Za-z0-9._-]+)")
_SQLITE = b"SQLite format 3\x00"


def _folder_codes() -> list[tuple[tuple[str, ...], Callable[[str], str]]]:
    """The folders agents name after a workspace, by the folder they sit in (Qwen's
    before Claude's `projects/`): a recorded store holds these names."""
    from passdown.agents import claude, droid, kimi, pi, qwen

    return [
        ((".qwen", "projects"), qwen.encode_project),
        (("projects",), claude.encode_cwd),
        ((".pi", "agent", "sessions"), pi.encode_cwd),
        ((".factory", "sessions"), droid.cwd_slug),
        ((".kimi", "sessions"), kimi.folder_name),
    ]


@dataclass
class Layout:
    """A recorded store copied with its workspaces moved (see `lay_out_recorded`)."""

    store: Path
    workspaces: Path
    renamed: dict[Path, Path] = field(default_factory=dict)  # folders, relative to the store

    def path(self, relative: str | Path) -> Path:
        """Where a file of the recorded store (relative to it) is in the copy."""
        relative = Path(relative)
        for old, new in self.renamed.items():
            if relative.is_relative_to(old):
                return self.store / new / relative.relative_to(old)
        return self.store / relative

    def workspace(self, recorded: str) -> Path:
        """Where the recorded workspace `recorded` (REC_ROOT/<name>) is now."""
        return self.workspaces / Path(recorded).relative_to(REC_ROOT)


def _rewrite_sqlite(path: Path, old: str, new: str) -> set[str]:
    """`old` replaced by `new` in every text value of the database; returns the recorded
    workspaces (their names) the values named."""
    names: set[str] = set()
    with closing(sqlite3.connect(path)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for column in [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]:
                where = f'WHERE typeof("{column}") = \'text\' AND instr("{column}", ?) > 0'
                for (value,) in db.execute(f'SELECT "{column}" FROM "{table}" {where}', (old,)):
                    names |= {m.decode() for m in _WORKSPACE.findall(value.encode())}
                db.execute(
                    f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) {where}',
                    (old, new, old),
                )
        db.commit()
    return names


def lay_out_recorded(
    source: Path, target: Path, workspaces: Path, ignore: Iterable[str] = ("expected.json",)
) -> Layout:
    """Copy the recorded store `source` to `target` with every workspace it names moved
    from REC_ROOT into `workspaces`: the paths in its text files and SQLite databases
    rewritten, the folders an agent names after a workspace renamed, and each workspace
    made (empty). Returns where things are in the copy."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*ignore))
    old, new = REC_ROOT + "/", f"{workspaces}/"
    names: set[str] = set()
    for path in sorted(p for p in target.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if data.startswith(_SQLITE):
            names |= _rewrite_sqlite(path, old, new)
        elif _WORKSPACE.search(data):
            names |= {m.decode() for m in _WORKSPACE.findall(data)}
            path.write_bytes(data.replace(old.encode(), new.encode()))
    layout = Layout(target, workspaces)
    for name in sorted(names):
        (workspaces / name).mkdir(parents=True, exist_ok=True)
    for parent_parts, code in _folder_codes():
        parent = Path(*parent_parts)
        for name in sorted(names):
            was = parent / code(f"{REC_ROOT}/{name}")
            if (target / was).is_dir() and was not in layout.renamed:
                now = parent / code(str(workspaces / name))
                (target / was).rename(target / now)
                layout.renamed[was] = now
    return layout


@dataclass
class Recorded:
    agent: str
    scenario: str
    root: Path  # the agent's config dir as recorded
    expected: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.agent}-{self.scenario}"

    def session_files(self) -> list[str]:
        """The session's main file first (an explicit `session_path` wins)."""
        files = [f for f in self.expected["session_files"] if f.endswith((".jsonl", ".zst", ".db"))]
        main = self.expected.get("session_path")
        return [main, *[f for f in files if f != main]] if main else files

    def install(
        self, target: Path, monkeypatch: pytest.MonkeyPatch, workspaces: Path | None = None
    ) -> Path:
        """Copy the recorded store to `target` and point the agent at it: through its own
        env var (Claude, Codex, Cursor), or as HOME for agents whose fixtures are laid out
        relative to the home folder (~/.gemini, ~/.qwen, ~/.local/share/opencode, ...).
        Returns the session's main file. With `workspaces`, the session's workspace is
        moved there (`lay_out_recorded`; `workspace_in` says where); without, the session
        names the recorded one, which does not exist: pass `--workspace` to commands
        that hand the session off."""
        monkeypatch.setenv(ENV_VAR.get(self.agent, "HOME"), str(target))
        if workspaces is None:
            shutil.copytree(self.root, target, ignore=shutil.ignore_patterns("expected.json"))
            return target / self.session_files()[0]
        return lay_out_recorded(self.root, target, workspaces).path(self.session_files()[0])

    def workspace_in(self, workspaces: Path) -> Path:
        """The session's workspace once installed with `workspaces`."""
        return workspaces / Path(self.expected["workspace"]).relative_to(REC_ROOT)


def scenarios(agent: str | None = None) -> list[Recorded]:
    """Recorded scenarios of the agents passdown has a module for (fixtures for an agent
    whose module is still being written are skipped until it lands)."""
    from passdown.agents import agent_names

    known = set(agent_names())
    found = []
    for expected_path in sorted(FIXTURES.glob("*/*/expected.json")):
        rec_agent = expected_path.parent.parent.name
        if (agent and rec_agent != agent) or rec_agent not in known:
            continue
        expected = json.loads(expected_path.read_text())
        found.append(Recorded(rec_agent, expected_path.parent.name, expected_path.parent, expected))
    return found


def params(agent: str | None = None) -> list[Any]:
    return [pytest.param(r, id=r.id) for r in scenarios(agent)]
