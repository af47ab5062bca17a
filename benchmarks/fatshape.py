"""The fat-line session shape (the second shape of bench_export.py): synthetic Claude Code
and Codex sessions whose lines carry whole file bodies and long command outputs (3-4 KB on
average, up to 20 KB), with rewinds and compactions. Real sessions have many more, smaller
lines: see realshape.py.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

WORKSPACE = "/tmp/passdown-bench/ws"  # the cwd the records name
LOREM = (
    "def handler(event, context):\n    items = [normalise(x) for x in event['items']]\n"
    "    return {'count': len(items), 'ok': all(i.valid for i in items)}\n"
)


def _text(rng: random.Random, size: int) -> str:
    words = [
        "update",
        "the",
        "parser",
        "so",
        "that",
        "it",
        "streams",
        "lines",
        "and",
        "keeps",
        "memory",
        "flat",
        "while",
        "tests",
        "pass",
        "\n",
        "fix",
        "handler",
        "config",
        "value",
    ]
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(words)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


class ClaudeWriter:
    def __init__(self, handle, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
        self.h = handle
        self.rng = rng
        self.parent: str | None = None
        self.session = str(uuid.UUID(int=rng.getrandbits(128)))
        self.n = 0
        self.tasks = 0

    def rec(self, kind: str, message: dict | None = None, **extra: object) -> str:
        uid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        record = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": WORKSPACE,
            "sessionId": self.session,
            "version": "2.1.197",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": f"2026-11-29T10:{self.n // 6000 % 60:02d}:{self.n // 100 % 60:02d}.000Z",
        }
        if message is not None:
            record["message"] = message
        record.update(extra)
        self.h.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
        self.parent = uid
        self.n += 1
        return uid

    def turn(self, i: int) -> None:
        rng = self.rng
        self.rec("user", {"role": "user", "content": f"Step {i}: " + _text(rng, 200)})
        self.rec("attachment", attachment={"type": "todo_reminder", "content": _text(rng, 300)})
        mid = f"msg_{i:08d}"
        self.rec(
            "assistant",
            {
                "id": mid,
                "role": "assistant",
                "model": "claude-opus-4-8",
                "content": [{"type": "thinking", "thinking": _text(rng, 400), "signature": "x"}],
            },
        )
        self.rec(
            "assistant",
            {
                "id": mid,
                "role": "assistant",
                "model": "claude-opus-4-8",
                "content": [{"type": "text", "text": _text(rng, 300)}],
            },
        )
        for _ in range(rng.randint(2, 5)):
            self.tool(rng.random())
        self.rec(
            "assistant",
            {
                "id": mid + "b",
                "role": "assistant",
                "model": "claude-opus-4-8",
                "content": [{"type": "text", "text": "Progress: " + _text(rng, 400)}],
            },
        )
        self.h.write(
            json.dumps(
                {"type": "last-prompt", "leafUuid": self.parent, "sessionId": self.session}
            ).encode()
            + b"\n"
        )

    def tool(self, roll: float) -> None:
        rng = self.rng
        tid = f"toolu_{rng.getrandbits(64):016x}"
        if roll < 0.35:
            body = LOREM * rng.randint(10, 120)
            path = f"{WORKSPACE}/src/mod_{rng.randint(0, 300)}.py"
            self.rec(
                "assistant",
                {
                    "id": tid,
                    "role": "assistant",
                    "model": "claude-opus-4-8",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Write",
                            "input": {"file_path": path, "content": body},
                        }
                    ],
                },
            )
            self.rec(
                "user",
                {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": tid,
                            "type": "tool_result",
                            "content": f"File created successfully at: {path}",
                        }
                    ],
                },
                toolUseResult={
                    "type": "create",
                    "filePath": path,
                    "content": body,
                    "structuredPatch": [],
                },
            )
        elif roll < 0.7:
            out = _text(rng, rng.randint(500, 20000))
            fail = rng.random() < 0.1
            self.rec(
                "assistant",
                {
                    "id": tid,
                    "role": "assistant",
                    "model": "claude-opus-4-8",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Bash",
                            "input": {"command": "pytest -q tests/", "description": "run tests"},
                        }
                    ],
                },
            )
            if fail:
                self.rec(
                    "user",
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": tid,
                                "is_error": True,
                                "content": "Exit code 1\nFAILED tests/test_x.py::test_y - AssertionError\n"
                                + out,
                            }
                        ],
                    },
                    toolUseResult="Error: Exit code 1\n" + out,
                )
            else:
                self.rec(
                    "user",
                    {
                        "role": "user",
                        "content": [
                            {
                                "tool_use_id": tid,
                                "type": "tool_result",
                                "content": out,
                                "is_error": False,
                            }
                        ],
                    },
                    toolUseResult={
                        "stdout": out,
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                    },
                )
        elif roll < 0.74:  # plans are small next to the work they describe
            self.tasks += 1
            self.rec(
                "assistant",
                {
                    "id": tid,
                    "role": "assistant",
                    "model": "claude-opus-4-8",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "TaskCreate",
                            "input": {
                                "subject": f"Task {self.tasks}",
                                "description": "d",
                                "activeForm": "Doing",
                            },
                        }
                    ],
                },
            )
            self.rec(
                "user",
                {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": tid,
                            "type": "tool_result",
                            "content": f"Task #{self.tasks} created",
                        }
                    ],
                },
                toolUseResult={"task": {"id": str(self.tasks), "subject": f"Task {self.tasks}"}},
            )
        else:
            body = LOREM * rng.randint(5, 60)
            self.rec(
                "assistant",
                {
                    "id": tid,
                    "role": "assistant",
                    "model": "claude-opus-4-8",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Read",
                            "input": {"file_path": f"{WORKSPACE}/src/a.py"},
                        }
                    ],
                },
            )
            self.rec(
                "user",
                {
                    "role": "user",
                    "content": [{"tool_use_id": tid, "type": "tool_result", "content": body}],
                },
                toolUseResult={
                    "type": "text",
                    "file": {"filePath": f"{WORKSPACE}/src/a.py", "content": body},
                },
            )
        self.rec("progress", data={"type": "hook_progress", "hookEvent": "PostToolUse"})


def generate_claude(path: Path, size: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with open(path, "wb") as handle:
        w = ClaudeWriter(handle, rng)
        i = 0
        while handle.tell() < size:
            i += 1
            fork_point = w.parent
            w.turn(i)
            if i % 50 == 0:  # a rewind: the last turn becomes a dead branch
                w.parent = fork_point
            if i % 400 == 0:  # a compaction
                last = w.parent
                w.parent = None
                w.rec(
                    "system",
                    subtype="compact_boundary",
                    content="Conversation compacted",
                    logicalParentUuid=last,
                    compactMetadata={"trigger": "auto", "preTokens": 160000},
                )
                w.rec(
                    "user",
                    {
                        "role": "user",
                        "content": "This session is being continued... " + _text(rng, 3000),
                    },
                    isCompactSummary=True,
                )


def generate_codex(path: Path, size: int, seed: int = 11) -> None:
    rng = random.Random(seed)

    def line(kind: str, payload: dict) -> bytes:
        return (
            json.dumps(
                {"timestamp": "2026-11-29T10:00:00.000Z", "type": kind, "payload": payload},
                separators=(",", ":"),
            ).encode()
            + b"\n"
        )

    with open(path, "wb") as h:
        h.write(
            line(
                "session_meta",
                {
                    "id": str(uuid.UUID(int=rng.getrandbits(128))),
                    "cwd": WORKSPACE,
                    "cli_version": "0.171.0",
                    "originator": "codex_exec",
                    "timestamp": "2026-11-29T10:00:00.000Z",
                },
            )
        )
        i = 0
        while h.tell() < size:
            i += 1
            h.write(line("turn_context", {"cwd": WORKSPACE, "model": "gpt-5.5"}))
            prompt = f"Step {i}: " + _text(rng, 200)
            h.write(
                line(
                    "response_item",
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": prompt}],
                    },
                )
            )
            h.write(line("event_msg", {"type": "user_message", "message": prompt}))
            h.write(
                line(
                    "response_item",
                    {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": _text(rng, 300)}],
                        "encrypted_content": "x" * 800,
                    },
                )
            )
            for _ in range(rng.randint(2, 5)):
                cid = f"call_{rng.getrandbits(64):016x}"
                if rng.random() < 0.5:
                    out = _text(rng, rng.randint(500, 20000))
                    code = 1 if rng.random() < 0.1 else 0
                    h.write(
                        line(
                            "response_item",
                            {
                                "type": "function_call",
                                "name": "exec_command",
                                "arguments": json.dumps({"cmd": "pytest -q"}),
                                "call_id": cid,
                            },
                        )
                    )
                    h.write(
                        line(
                            "event_msg",
                            {
                                "type": "item_completed",
                                "item": {
                                    "type": "CommandExecution",
                                    "id": cid,
                                    "command": ["bash", "-lc", "pytest -q"],
                                    "exit_code": code,
                                    "aggregated_output": out,
                                },
                            },
                        )
                    )
                    h.write(
                        line(
                            "response_item",
                            {
                                "type": "function_call_output",
                                "call_id": cid,
                                "output": f"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code {code}\nOutput:\n{out}",
                            },
                        )
                    )
                else:
                    body = "".join(
                        "+" + ln + "\n" for ln in (LOREM * rng.randint(10, 100)).splitlines()
                    )
                    h.write(
                        line(
                            "response_item",
                            {
                                "type": "custom_tool_call",
                                "name": "apply_patch",
                                "call_id": cid,
                                "input": f"*** Begin Patch\n*** Add File: src/m{rng.randint(0, 300)}.py\n{body}*** End Patch\n",
                            },
                        )
                    )
                    h.write(
                        line(
                            "response_item",
                            {
                                "type": "custom_tool_call_output",
                                "call_id": cid,
                                "output": "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.",
                            },
                        )
                    )
                h.write(
                    line(
                        "event_msg",
                        {"type": "token_count", "info": {"total_token_usage": {"input_tokens": i}}},
                    )
                )
            text = "Progress: " + _text(rng, 400)
            h.write(
                line(
                    "response_item",
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    },
                )
            )
            h.write(line("event_msg", {"type": "agent_message", "message": text}))
