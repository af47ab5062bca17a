"""Redaction's share of one export, on a large Claude Code session.

The session is shaped like the one of issue 20: a real 2.1.197 turn (three TaskCreate
calls, TaskUpdate, a failing and a passing Bash `pytest`, a Write) repeated with fresh
uuids chained by `parentUuid`, the task ids reused in every copy as a forked session
reuses them; a few planted secrets (a token in a command, a password in a file written,
a key in the agent's prose) so that redaction has something to find.

For each size, in this process (the redactor instrumented, the store a fresh SQLite
file): the export's wall time; the calls to `Redactor.redact` on a non-empty text, how
many distinct texts that is, how many texts were redacted more than once, the rule
applications (one regex pass of one rule over one text) and the seconds spent inside
`redact`. `--door` picks the door: `export` (CLI `passdown export`), `inspect` (prepare
only), `api` (`HandoffCoordinator.prepare_handoff_sync` + `export_sync` with caller values).

Usage: python benchmarks/bench_redact_export.py [--sizes 4,16] [--door export|inspect|api]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MB = 1024 * 1024
CWD = "/tmp/passdown-bench/ws"
SID = "dddddddd-0000-4000-8000-000000000020"
TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
FAILING = (
    "============================= test session starts ==============================\n"
    "collected 12 items\n\ntests/test_parse.py ....F.......\n\n"
    "=================================== FAILURES ===================================\n"
    "___________________________ test_whitespace_only ___________________________\n"
    "    def test_whitespace_only():\n>       assert parse('   ') == []\n"
    "E       AssertionError: assert [''] == []\n\n"
    "tests/test_parse.py:41: AssertionError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_parse.py::test_whitespace_only - AssertionError: assert [''] == []\n"
    "========================= 1 failed, 11 passed in 0.31s =========================\n"
)


class _Writer:
    """Claude Code records, one uuid chain, written as they are made."""

    def __init__(self, out: Any) -> None:
        self.out, self.n, self.parent, self.calls = out, 0, None, 0

    def add(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        self.n += 1
        uid = f"{self.n:08x}-0000-4000-8000-{self.n:012x}"
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "cwd": CWD,
            "sessionId": SID,
            "version": "2.1.197",
            "type": kind,
            "uuid": uid,
            "timestamp": f"2026-11-30T{10 + self.n // 3_600_000 % 10}:"
            f"{self.n // 60_000 % 60:02d}:{self.n // 1000 % 60:02d}.{self.n % 1000:03d}Z",
            "message": message,
            **extra,
        }
        self.out.write(json.dumps(record) + "\n")
        self.parent = uid

    def text(self, role: str, text: str) -> None:
        if role == "user":
            self.add("user", {"role": "user", "content": text})
        else:
            content = [{"type": "text", "text": text}]
            self.add("assistant", {"id": f"m{self.n}", "role": role, "content": content})

    def tool(self, name: str, args: dict[str, Any], result: str, outcome: Any = None) -> None:
        self.calls += 1
        call = f"toolu_{self.calls:020d}"
        use = {"type": "tool_use", "id": call, "name": name, "input": args}
        self.add("assistant", {"id": f"m{self.n}", "role": "assistant", "content": [use]})
        answer = {"tool_use_id": call, "type": "tool_result", "content": result}
        extra = {"toolUseResult": outcome} if outcome is not None else {}
        self.add("user", {"role": "user", "content": [answer]}, **extra)


def _turn(w: _Writer, copy: int) -> None:
    w.text("user", f"Make the parser reject whitespace-only input (round {copy})")
    for number, subject in ((1, "Reproduce the bug"), (2, "Fix parse()"), (3, "Run the suite")):
        w.tool(
            "TaskCreate",
            {"subject": subject, "description": f"{subject} for round {copy}"},
            f"Task #{number} created successfully: {subject}",
            {"task": {"id": str(number), "subject": subject}},
        )
    w.tool("TaskUpdate", {"taskId": "1", "status": "in_progress"}, "Updated task #1 status")
    w.tool("Bash", {"command": "python -m pytest -q tests/test_parse.py"}, FAILING)
    w.tool(
        "Write",
        {"file_path": f"{CWD}/src/parse_{copy % 50}.py", "content": "def parse(s):\n    ...\n"},
        f"File created successfully at: {CWD}/src/parse_{copy % 50}.py",
    )
    w.tool(
        "Bash",
        {"command": f"curl -H 'Authorization: Bearer {TOKEN}' https://api.example.test/ci"},
        '{"status": "queued"}',
    )
    w.tool("Bash", {"command": "python -m pytest -q"}, "12 passed in 0.30s")
    w.text("assistant", f"Round {copy}: parse() fixed.\n\nNext steps:\n- run the full suite")


def write_session(config_dir: Path, size: int) -> Path:
    folder = config_dir / "projects" / CWD.replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SID}.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        writer, copy = _Writer(out), 0
        while out.tell() < size:
            _turn(writer, copy)
            copy += 1
    return path


class Counting:
    """Counts the redactor's work: calls, texts scanned (the rules run over them) and how
    often each, rule applications, seconds inside `redact`."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.scanned: collections.Counter[str] = collections.Counter()
        self.rules = 0
        self.seconds = 0.0

    def install(self) -> None:
        from passdown import _redact

        cls = _redact.Redactor
        redact, apply = cls.redact, cls._apply
        scan = getattr(cls, "_scan", None)  # before redact-once, redact scanned every call
        counting = self

        def counted_redact(self: _redact.Redactor, text: str) -> str:
            if not text:
                return text
            counting.calls += 1
            if scan is None:
                counting.scanned[text] += 1
            start = time.perf_counter()
            try:
                return redact(self, text)
            finally:
                counting.seconds += time.perf_counter() - start

        def counted_scan(self: _redact.Redactor, text: str) -> Any:
            counting.scanned[text] += 1
            assert scan is not None
            return scan(self, text)

        def counted_apply(self: _redact.Redactor, *args: Any) -> str:
            counting.rules += 1
            return str(apply(self, *args))

        cls.redact = counted_redact  # type: ignore[method-assign]
        cls._apply = counted_apply  # type: ignore[method-assign]
        if scan is not None:
            cls._scan = counted_scan  # type: ignore[attr-defined]

    def line(self) -> str:
        again = sum(1 for n in self.scanned.values() if n > 1)
        return (
            f"redact calls {self.calls:>8,}  texts scanned {sum(self.scanned.values()):>8,} "
            f"({len(self.scanned):>7,} distinct, {again:>6,} more than once)  "
            f"rule applications {self.rules:>10,}  in redact {self.seconds:6.2f} s"
        )


def _export(door: str, session: Path, workspace: Path, store: str) -> Iterator[str]:
    from passdown.coordinator import HandoffCoordinator
    from passdown.coordinator import _doors as doors

    request = doors.HandoffRequest(source="claude", session=str(session), workspace=workspace)
    if door == "export":
        written = doors.export(request, workspace, store=store)
        yield f"HANDOFF.md {written.markdown_path.stat().st_size:,} B"
    elif door == "inspect":
        prepared = doors.prepare(request, workspace, store=False)
        prepared.coordinator.close()
    else:
        with HandoffCoordinator(workspace, store) as coordinator:
            package = coordinator.prepare_handoff_sync(
                "claude",
                session=str(session),
                require_session=True,
                blockers=[f"CI token {TOKEN} expired"],
                next_steps=["rotate DB_PASSWORD=hunter22 in staging"],
            )
            written = coordinator.export_sync(package)
            yield f"HANDOFF.md {written.markdown_path.stat().st_size:,} B"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="4,16", help="session sizes in MB")
    parser.add_argument("--door", choices=("export", "inspect", "api"), default="export")
    args = parser.parse_args()
    counting = Counting()
    counting.install()
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="passdown-bench-redact-") as tmp:
            root = Path(tmp)
            os.environ["CLAUDE_CONFIG_DIR"] = str(root / "claude")
            os.environ["PASSDOWN_DATA_DIR"] = str(root / "data")
            session = write_session(root / "claude", size * MB)
            workspace = root / "ws"
            workspace.mkdir()
            counting.reset()
            start = time.perf_counter()
            extra = list(_export(args.door, session, workspace, f"sqlite:///{root}/store.db"))
            wall = time.perf_counter() - start
            print(f"{args.door} {size:>4} MB: {wall:6.2f} s  {counting.line()}  {' '.join(extra)}")


if __name__ == "__main__":
    sys.exit(main())
