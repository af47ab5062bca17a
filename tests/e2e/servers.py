"""Scripted model servers for the real agent CLIs, bound to 127.0.0.1 on a free port.

`AnthropicServer` speaks the Anthropic Messages API (streaming SSE on POST /v1/messages),
`OpenAIResponsesServer` the OpenAI Responses API (streaming POST /v1/responses). Both replay
a script: one `Step` per model request that carries tools (i.e. a real agent turn). Requests
without tools (title generation, quota probes, compaction summaries) get a trivial answer so
they never consume a step. Every request is logged so tests can assert on what the agent sent.
"""

from __future__ import annotations

import gzip
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import zstandard

DEFAULT_FINAL_TEXT = "All done."
COMPACT_SUMMARY = (
    "<summary>\n1. Primary Request and Intent: the user asked for the scripted task.\n"
    "2. Current work: the scripted steps ran; next step is to finish the remaining items.\n"
    "</summary>"
)


@dataclass
class Step:
    """One scripted model reply: optional hidden reasoning, text, and at most one tool call.

    `input` is the tool's JSON input; a plain string makes it a freeform (custom) tool call,
    which is how Codex's `apply_patch` receives its patch. `expect_error` is not sent: the
    recorder uses it to check that the agent reported the tool failure we planned.
    """

    text: str = ""
    tool: str | None = None
    input: dict[str, Any] | str = field(default_factory=dict)
    thinking: str = ""
    expect_error: bool = False


@dataclass
class LoggedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    kind: str  # "step" (consumed a script step), "aux" (trivial answer), "other"
    step_index: int | None = None

    def text(self) -> str:
        """The whole request body as one string, for substring assertions."""
        return json.dumps(self.body, ensure_ascii=False)


class _QuietHTTPServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # Agents drop keep-alive connections when they exit; that is not a test failure.
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _ScriptedServer:
    """Shared plumbing: threading HTTP server, request log, step cursor."""

    def __init__(self, steps: list[Step] | None = None) -> None:
        self._steps: list[Step] = list(steps or [])
        self._cursor = 0
        self._lock = threading.Lock()
        self.requests: list[LoggedRequest] = []
        self._ids = itertools.count(1)
        self._httpd = _QuietHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    # -- public API -----------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> _ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> _ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_script(self, steps: list[Step]) -> None:
        """Replace the remaining script (e.g. before the next turn of a multi-turn session)."""
        with self._lock:
            self._steps = list(steps)
            self._cursor = 0

    @property
    def remaining(self) -> int:
        return len(self._steps) - self._cursor

    def step_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.kind == "step"]

    def dump_log(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            for r in self.requests:
                fh.write(json.dumps(r.__dict__, ensure_ascii=False) + "\n")

    # -- internals ------------------------------------------------------------------
    def _next_step(self) -> tuple[int | None, Step]:
        with self._lock:
            if self._cursor < len(self._steps):
                i = self._cursor
                self._cursor += 1
                return i, self._steps[i]
        # Script exhausted: end the turn politely rather than looping on tool calls.
        return None, Step(text=DEFAULT_FINAL_TEXT)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):024d}"

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        raise NotImplementedError

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def _read_body(self) -> Any:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                enc = (self.headers.get("Content-Encoding") or "").lower()
                if enc == "zstd":
                    raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
                elif enc == "gzip":
                    raw = gzip.decompress(raw)
                if not raw:
                    return None
                try:
                    return json.loads(raw)
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def do_POST(self) -> None:
                server.handle(self, "POST", self._read_body())

            def do_GET(self) -> None:
                server.handle(self, "GET", None)

            def do_HEAD(self) -> None:
                server.handle(self, "HEAD", None)

        return Handler

    def _log(self, h: BaseHTTPRequestHandler, method: str, body: Any, kind: str,
             step_index: int | None = None) -> None:
        with self._lock:
            self.requests.append(LoggedRequest(method, h.path, dict(h.headers.items()), body,
                                               kind, step_index))

    @staticmethod
    def send_json(h: BaseHTTPRequestHandler, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def send_sse(h: BaseHTTPRequestHandler, events: list[tuple[str, dict[str, Any]]]) -> None:
        # One body, closed connection: no chunked framing needed, every client handles it.
        payload = "".join(
            f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events
        ).encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)


# ---------------------------------------------------------------------------------------
# Anthropic Messages API
# ---------------------------------------------------------------------------------------
def _anthropic_last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
    return ""


def is_compaction_request(body: dict[str, Any]) -> bool:
    """Claude Code asks the model for a conversation summary when compacting."""
    text = _anthropic_last_user_text(body).lower()
    return "summary of the conversation" in text or "create a detailed summary" in text


class AnthropicServer(_ScriptedServer):
    model = "claude-sonnet-4-5-20250929"

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        path = h.path.split("?")[0]
        if method == "POST" and path == "/v1/messages/count_tokens":
            self._log(h, method, body, "other")
            return self.send_json(h, {"input_tokens": 1000})
        if method != "POST" or path != "/v1/messages" or not isinstance(body, dict):
            self._log(h, method, body, "other")
            return self.send_json(h, {"type": "error", "error": {"type": "not_found_error",
                                                                 "message": path}}, 404)
        if is_compaction_request(body):
            self._log(h, method, body, "aux")
            step: Step = Step(text=COMPACT_SUMMARY)
            idx = None
        elif body.get("tools"):
            idx, step = self._next_step()
            self._log(h, method, body, "step", idx)
        else:
            self._log(h, method, body, "aux")
            # Title/topic probes expect short text (some want JSON); keep it neutral.
            step, idx = Step(text='{"title": "Scripted session"}'), None
        self._reply(h, body, step)

    def _blocks(self, step: Step) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if step.thinking:
            blocks.append({"type": "thinking", "thinking": step.thinking,
                           "signature": "c2NyaXB0ZWQ="})
        if step.text:
            blocks.append({"type": "text", "text": step.text})
        if step.tool:
            blocks.append({"type": "tool_use", "id": self._new_id("toolu"), "name": step.tool,
                           "input": step.input})
        if not blocks:
            blocks.append({"type": "text", "text": DEFAULT_FINAL_TEXT})
        return blocks

    def _reply(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: Step) -> None:
        blocks = self._blocks(step)
        stop_reason = "tool_use" if step.tool else "end_turn"
        usage = {"input_tokens": 1200, "output_tokens": 40, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        msg_id = self._new_id("msg")
        model = body.get("model") or self.model
        if not body.get("stream"):
            return self.send_json(h, {"id": msg_id, "type": "message", "role": "assistant",
                                      "model": model, "content": blocks,
                                      "stop_reason": stop_reason, "stop_sequence": None,
                                      "usage": usage})
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {
            "type": "message_start",
            "message": {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                        "content": [], "stop_reason": None, "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 1}}})]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": b["text"]}]
            elif b["type"] == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": b["thinking"]},
                          {"type": "signature_delta", "signature": b["signature"]}]
            else:
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(b["input"])}]
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": start}))
            events.extend(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": d}) for d in deltas)
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop_reason,
                                                   "stop_sequence": None},
                                         "usage": {"output_tokens": 40}}))
        events.append(("message_stop", {"type": "message_stop"}))
        self.send_sse(h, events)


# ---------------------------------------------------------------------------------------
# OpenAI Responses API
# ---------------------------------------------------------------------------------------
class OpenAIResponsesServer(_ScriptedServer):
    model = "gpt-5-codex"

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        path = h.path.split("?")[0]
        if method == "GET" and path.endswith("/models"):
            self._log(h, method, body, "other")
            return self.send_json(h, {"object": "list", "data": [], "models": []})
        if method != "POST" or not path.endswith("/responses") or not isinstance(body, dict):
            self._log(h, method, body, "other")
            return self.send_json(h, {"error": {"message": f"not found: {path}"}}, 404)
        if body.get("tools"):
            idx, step = self._next_step()
            self._log(h, method, body, "step", idx)
        else:
            self._log(h, method, body, "aux")
            step, idx = Step(text="Scripted session"), None
        self._reply(h, body, step)

    def _items(self, step: Step) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if step.thinking:
            items.append({"type": "reasoning", "id": self._new_id("rs"),
                          "summary": [{"type": "summary_text", "text": step.thinking}],
                          "content": None, "encrypted_content": None})
        if step.text or not step.tool:
            items.append({"type": "message", "id": self._new_id("msg"), "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": step.text or
                                       DEFAULT_FINAL_TEXT, "annotations": []}]})
        if step.tool and isinstance(step.input, str):
            items.append({"type": "custom_tool_call", "id": self._new_id("ctc"),
                          "call_id": self._new_id("call"), "name": step.tool,
                          "input": step.input, "status": "completed"})
        elif step.tool:
            items.append({"type": "function_call", "id": self._new_id("fc"),
                          "call_id": self._new_id("call"), "name": step.tool,
                          "arguments": json.dumps(step.input), "status": "completed"})
        return items

    def _reply(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: Step) -> None:
        resp_id = self._new_id("resp")
        model = body.get("model") or self.model
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()),
                "model": model}
        items = self._items(step)
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"type": "response.created",
                                  "response": {**base, "status": "in_progress", "output": []}})]
        for i, item in enumerate(items):
            events.append(("response.output_item.added", {
                "type": "response.output_item.added", "output_index": i,
                "item": {**item, "status": "in_progress"}}))
            events.append(("response.output_item.done", {
                "type": "response.output_item.done", "output_index": i, "item": item}))
        usage = {"input_tokens": 1500, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 1550}
        events.append(("response.completed", {"type": "response.completed", "response": {
            **base, "status": "completed", "output": items, "usage": usage}}))
        self.send_sse(h, events)


ServerFactory = Callable[[list[Step]], _ScriptedServer]
