"""Grow the one-document sessions of Auggie and Continue CLI (a JSON document rewritten
per turn, so benchmarks/growslice.py's line repetition does not apply) by repeating the
recorded turn's shape: a plan change, a file written, a command that fails. The shapes
are the real CLIs' (tests/fixtures/sessions/{auggie,continue}/full).

    python benchmarks/growdoc.py          # prints read + extract CPU seconds and peak memory
                                          # per agent at 1x, 2x and 4x the turns

Work must stay linear: the time ratio 4x/1x near 4, not 16. The document streams
(agents/_json_stream.py): memory holds one history item plus what the budgets keep, not
the document. benchmarks/bench_editor_chats.py exports an Auggie document grown here in a
child process (peak RSS, and `--before` to compare with another tree in the same run).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

WS = "/tmp/ws-grown"
FAILING = "ls no-such-test-dir && echo ok"


def auggie_document(turns: int) -> dict[str, Any]:
    """`turns` exchanges, each an add_tasks answer, a save-file, a failing launch-process."""

    def exchange(
        n: int, message: str, results: list[dict[str, Any]], tool: dict[str, Any] | None
    ) -> dict[str, Any]:
        request: list[dict[str, Any]] = [
            {"id": 1, "type": 0, "text_node": {"content": message}} if message else {},
            {
                "id": 2,
                "type": 4,
                "ide_state_node": {"current_terminal": {"current_working_directory": WS}},
            },
            *({"id": 3, "type": 1, "tool_result_node": r} for r in results),
        ]
        response: list[dict[str, Any]] = [{"id": 1, "type": 0, "content": f"Step {n}."}]
        if tool is not None:
            response.append({"id": 2, "type": 5, "tool_use": tool})
        return {
            "exchange": {
                "request_message": message,
                "request_nodes": [r for r in request if r],
                "response_nodes": response,
            },
            "completed": True,
            "finishedAt": "2026-12-01T10:00:00.000Z",
        }

    history = []
    previous: list[dict[str, Any]] = []
    for n in range(turns):
        kinds = [
            ("add_tasks", {"tasks": [{"name": f"task {n}", "description": "d"}]}),
            ("save-file", {"path": f"f{n}.py", "file_content": "x = 1\n"}),
            ("launch-process", {"command": f"{FAILING} {n}", "wait": True}),
        ]
        for k, (name, args) in enumerate(kinds):
            call_id = f"t{n}-{k}"
            tool = {"tool_use_id": call_id, "tool_name": name, "input_json": json.dumps(args)}
            message = "the first request" if n == 0 and k == 0 else ""
            history.append(exchange(n, message, previous, tool))
            if name == "add_tasks":
                content = (
                    "Task list updated successfully.\n\n## Created Tasks\n\n"
                    f"[ ] UUID:u{n} NAME:task {n} DESCRIPTION:d\n"
                )
                previous = [{"tool_use_id": call_id, "content": content, "is_error": False}]
            elif name == "save-file":
                previous = [{"tool_use_id": call_id, "content": "File saved.", "is_error": False}]
            else:
                content = (
                    "<return-code>\n2\n</return-code>\n<output>\nls: cannot access "
                    "'no-such-test-dir': No such file or directory\n</output>"
                )
                previous = [{"tool_use_id": call_id, "content": content, "is_error": True}]
    history.append(exchange(turns, "", previous, None))  # the last result, and the end
    return {
        "sessionId": "grown",
        "created": "2026-12-01T10:00:00.000Z",
        "modified": "2026-12-01T11:00:00.000Z",
        "chatHistory": history,
        "agentState": {"modelId": ""},
    }


def continue_document(turns: int) -> dict[str, Any]:
    """`turns` replies, each a Checklist, a Write and a failing Bash with their outcomes."""
    history: list[dict[str, Any]] = [{"message": {"role": "user", "content": "the first request"}}]
    for n in range(turns):
        calls = [
            ("c", "Checklist", {"checklist": f"- [x] task {n}\n- [ ] task {n + 1}"}, "done", "ok"),
            ("w", "Write", {"filepath": f"{WS}/f{n}.py", "content": "x = 1\n"}, "done", "ok"),
            (
                "b",
                "Bash",
                {"command": f"{FAILING} {n}"},
                "errored",
                "Error executing tool Bash: Error (exit code 2): ls: cannot access 'x'",
            ),
        ]
        history.append(
            {
                "message": {
                    "role": "assistant",
                    "content": f"Step {n}.",
                    "toolCalls": [
                        {"id": f"{k}{n}", "function": {"name": name, "arguments": json.dumps(args)}}
                        for k, name, args, _s, _o in calls
                    ],
                    "usage": {"model": "m"},
                },
                "toolCallStates": [
                    {"toolCallId": f"{k}{n}", "status": status, "output": [{"content": out}]}
                    for k, _n, _a, status, out in calls
                ],
            }
        )
    return {"sessionId": "grown", "title": "t", "workspaceDirectory": WS, "history": history}


def write(agent: str, turns: int, home: Path) -> Path:
    """The grown session under `home` where the agent keeps it; returns its path."""
    if agent == "auggie":
        path = home / ".augment" / "sessions" / "grown.json"
        document = auggie_document(turns)
    else:
        path = home / ".continue" / "sessions" / "grown.json"
        document = continue_document(turns)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2))  # both CLIs indent their files
    return path


def measure(agent: str, turns: int, home: Path) -> tuple[float, float, int]:
    """(CPU seconds to read and extract, peak MiB traced, file bytes)."""
    import os

    from passdown._extract import extract
    from passdown.agents.auggie import Auggie
    from passdown.agents.continue_cli import ContinueCLI

    path = write(agent, turns, home)
    os.environ["HOME"] = str(home)
    reader = Auggie() if agent == "auggie" else ContinueCLI()
    ref = reader.ref_for_path(path)
    # timed untraced (tracing every allocation slows a reader that builds objects far
    # more than one that slices bytes), then once more traced for the peak
    started = time.process_time()
    extract(reader.read(ref).events(), workspace=WS)
    seconds = time.process_time() - started
    tracemalloc.start()
    extract(reader.read(ref).events(), workspace=WS)
    peak = tracemalloc.get_traced_memory()[1] / (1024 * 1024)
    tracemalloc.stop()
    return seconds, peak, path.stat().st_size


def main() -> int:
    base = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    print(f"{'agent':8} {'turns':>6} {'MiB file':>9} {'seconds':>8} {'peak MiB':>9} {'x 1x':>6}")
    for agent in ("auggie", "continue"):
        first = None
        for factor in (1, 2, 4):
            with tempfile.TemporaryDirectory() as folder:
                seconds, peak, size = measure(agent, base * factor, Path(folder))
            first = first or seconds
            print(
                f"{agent:8} {base * factor:6} {size / 2**20:9.1f} {seconds:8.2f} "
                f"{peak:9.1f} {seconds / first:6.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
