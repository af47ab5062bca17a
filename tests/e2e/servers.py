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
import re
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


# Claude Code's system prompt: "The following deferred tools are now available via
# ToolSearch. ... before calling them:\nCronCreate\nTaskCreate\n...\n\nAvailable ..."
_DEFERRED_TOOLS = re.compile(
    r"deferred tools are now available via ToolSearch[^\n]*:\n((?:\w+\n)+)"
)


def _strings(value: Any) -> list[str]:
    """Every string inside a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


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

    def offered_tools(self) -> set[str]:
        """The tools the agent offered the model: those in the request's tool list and,
        for Claude Code 2.1.3xx, the deferred ones its prompt lists as loadable through
        ToolSearch (TaskCreate and TodoWrite sit there since 2.1.332)."""
        body = self.body if isinstance(self.body, dict) else {}
        names = {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
        if "ToolSearch" in names:
            for text in _strings(body.get("system")) + _strings(body.get("messages")):
                for listed in _DEFERRED_TOOLS.findall(text):
                    names.update(listed.split())
        return names


@dataclass
class _Failure:
    status: int
    body: Any
    times: int | None
    headers: dict[str, str]
    when: Callable[[Any], bool] | None


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
        self._failure: _Failure | None = None
        self._held_until = 0  # step requests wait until this many have arrived
        self._arrived = threading.Condition(self._lock)
        self._hold_s = 0.0

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

    def fail(
        self,
        status: int,
        body: Any,
        *,
        times: int | None = None,
        headers: dict[str, str] | None = None,
        when: Callable[[Any], bool] | None = None,
    ) -> None:
        """Answer POSTs with an HTTP error instead of the script: every one (`times=None`,
        a sticky 429) or the next `times` of them (a 529 on the first request of a turn).
        `when` limits it to matching bodies (e.g. only requests that carry tools)."""
        with self._lock:
            self._failure = _Failure(status, body, times, dict(headers or {}), when)

    def hold_steps_until(self, count: int, timeout: float = 120.0) -> None:
        """Answer no step request until `count` of them have arrived (or `timeout`
        seconds passed): sessions started together are each past their start (their
        SessionStart hooks ran) before any of their turns ends."""
        with self._lock:
            self._held_until, self._hold_s = count, timeout

    def stop_failing(self) -> None:
        with self._lock:
            self._failure = None

    def _take_failure(self, body: Any) -> _Failure | None:
        with self._lock:
            failure = self._failure
            if failure is None or (failure.when is not None and not failure.when(body)):
                return None
            if failure.times is not None:
                failure.times -= 1
                if failure.times <= 0:
                    self._failure = None
            return failure

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
            self._wait_for_the_others()
            if self._cursor < len(self._steps):
                i = self._cursor
                self._cursor += 1
                return i, self._steps[i]
        # Script exhausted: end the turn politely rather than looping on tool calls.
        return None, Step(text=DEFAULT_FINAL_TEXT)

    def _wait_for_the_others(self) -> None:
        """(Under the lock.) `hold_steps_until`: count this step request, wait for the rest."""
        if not self._held_until:
            return
        self._held_until -= 1
        self._arrived.notify_all()
        self._arrived.wait_for(lambda: self._held_until <= 0, timeout=self._hold_s)
        self._held_until = 0  # arrived, or timed out: nothing waits any more

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
                body = self._read_body()
                failure = server._take_failure(body)
                if failure is not None:
                    server._log(self, "POST", body, "error")
                    server.send_json(self, failure.body, failure.status, failure.headers)
                    return
                server.handle(self, "POST", body)

            def do_GET(self) -> None:
                server.handle(self, "GET", None)

            def do_HEAD(self) -> None:
                server.handle(self, "HEAD", None)

        return Handler

    def _log(
        self,
        h: BaseHTTPRequestHandler,
        method: str,
        body: Any,
        kind: str,
        step_index: int | None = None,
    ) -> None:
        with self._lock:
            self.requests.append(
                LoggedRequest(method, h.path, dict(h.headers.items()), body, kind, step_index)
            )

    @staticmethod
    def send_json(
        h: BaseHTTPRequestHandler,
        obj: Any,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(obj).encode()
        h.send_response(status)
        for name, value in (headers or {}).items():
            h.send_header(name, value)
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
            return self.send_json(
                h, {"type": "error", "error": {"type": "not_found_error", "message": path}}, 404
            )
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
            blocks.append(
                {"type": "thinking", "thinking": step.thinking, "signature": "c2NyaXB0ZWQ="}
            )
        if step.text:
            blocks.append({"type": "text", "text": step.text})
        if step.tool:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": self._new_id("toolu"),
                    "name": step.tool,
                    "input": step.input,
                }
            )
        if not blocks:
            blocks.append({"type": "text", "text": DEFAULT_FINAL_TEXT})
        return blocks

    def _reply(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: Step) -> None:
        blocks = self._blocks(step)
        stop_reason = "tool_use" if step.tool else "end_turn"
        usage = {
            "input_tokens": 1200,
            "output_tokens": 40,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        msg_id = self._new_id("msg")
        model = body.get("model") or self.model
        if not body.get("stream"):
            return self.send_json(
                h,
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 1},
                    },
                },
            )
        ]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": b["text"]}]
            elif b["type"] == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": b["thinking"]},
                    {"type": "signature_delta", "signature": b["signature"]},
                ]
            else:
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(b["input"])}]
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": start},
                )
            )
            events.extend(
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
                for d in deltas
            )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": 40},
                },
            )
        )
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
            items.append(
                {
                    "type": "reasoning",
                    "id": self._new_id("rs"),
                    "summary": [{"type": "summary_text", "text": step.thinking}],
                    "content": None,
                    "encrypted_content": None,
                }
            )
        if step.text or not step.tool:
            items.append(
                {
                    "type": "message",
                    "id": self._new_id("msg"),
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": step.text or DEFAULT_FINAL_TEXT,
                            "annotations": [],
                        }
                    ],
                }
            )
        if step.tool and isinstance(step.input, str):
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": self._new_id("ctc"),
                    "call_id": self._new_id("call"),
                    "name": step.tool,
                    "input": step.input,
                    "status": "completed",
                }
            )
        elif step.tool:
            items.append(
                {
                    "type": "function_call",
                    "id": self._new_id("fc"),
                    "call_id": self._new_id("call"),
                    "name": step.tool,
                    "arguments": json.dumps(step.input),
                    "status": "completed",
                }
            )
        return items

    def _reply(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: Step) -> None:
        resp_id = self._new_id("resp")
        model = body.get("model") or self.model
        base = {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": model}
        items = self._items(step)
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "response.created",
                {
                    "type": "response.created",
                    "response": {**base, "status": "in_progress", "output": []},
                },
            )
        ]
        for i, item in enumerate(items):
            events.append(
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "output_index": i,
                        "item": {**item, "status": "in_progress"},
                    },
                )
            )
            events.append(
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "output_index": i, "item": item},
                )
            )
        usage = {
            "input_tokens": 1500,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 50,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 1550,
        }
        events.append(
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {**base, "status": "completed", "output": items, "usage": usage},
                },
            )
        )
        self.send_sse(h, events)


# ---------------------------------------------------------------------------------------
# OpenAI chat completions (Qwen Code, opencode, pi, GitHub Copilot CLI)
# ---------------------------------------------------------------------------------------
AUX_TITLE = "Scripted session"


def _pieces(text: str, n: int = 3) -> list[str]:
    """Split a string into up to n pieces: clients must reassemble streamed arguments."""
    if len(text) < n:
        return [text]
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


def chat_has_tools(body: dict[str, Any]) -> bool:
    return bool(body.get("tools") or body.get("functions"))


class ChatCompletionsServer(_ScriptedServer):
    """`POST /v1/chat/completions`, streaming (`data:` chunks, `[DONE]`) or not.

    A request with tools consumes one step; one without (titles, summaries) gets a short
    text. `aux` lets a test classify tool-bearing side requests (e.g. a memory agent) as aux
    so they never consume a step: it returns the text to answer with, or None.
    """

    model = "scripted-model"

    def __init__(
        self,
        steps: list[Step] | None = None,
        aux: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        super().__init__(steps)
        self.aux = aux

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        path = h.path.split("?")[0]
        if method == "GET" and path.endswith("/models"):
            self._log(h, method, body, "other")
            return self.send_json(
                h,
                {
                    "object": "list",
                    "data": [
                        {"id": self.model, "object": "model", "created": 0, "owned_by": "scripted"}
                    ],
                },
            )
        if method != "POST" or not path.endswith("/chat/completions") or not isinstance(body, dict):
            self._log(h, method, body, "other")
            return self.send_json(
                h,
                {"error": {"message": f"not found: {path}", "type": "invalid_request_error"}},
                404,
            )
        aux_text = self.aux(body) if self.aux else None
        if aux_text is None and chat_has_tools(body):
            idx, step = self._next_step()
            self._log(h, method, body, "step", idx)
        else:
            self._log(h, method, body, "aux")
            step, idx = Step(text=aux_text or AUX_TITLE), None
        self._reply(h, body, step)

    def _reply(self, h: BaseHTTPRequestHandler, body: dict[str, Any], step: Step) -> None:
        cid = self._new_id("chatcmpl")
        model = body.get("model") or self.model
        created = int(time.time())
        text = step.text or ("" if step.tool else DEFAULT_FINAL_TEXT)
        call = None
        if step.tool:
            args = step.input if isinstance(step.input, str) else json.dumps(step.input)
            call = {
                "id": self._new_id("call"),
                "type": "function",
                "function": {"name": step.tool, "arguments": args},
            }
        finish = "tool_calls" if call else "stop"
        usage = {"prompt_tokens": 1500, "completion_tokens": 50, "total_tokens": 1550}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if call:
                message["tool_calls"] = [call]
            return self.send_json(
                h,
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {
                **base,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }

        chunks = [chunk({"role": "assistant", "content": ""})]
        if step.thinking:  # the DeepSeek/Qwen convention for visible reasoning
            chunks.append(chunk({"reasoning_content": step.thinking}))
        chunks.extend(chunk({"content": p}) for p in _pieces(text, 2) if p)
        if call:
            fn = call["function"]
            chunks.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": fn["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            chunks.extend(
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
                for p in _pieces(fn["arguments"])
            )
        chunks.append(chunk({}, finish))
        chunks.append({**base, "choices": [], "usage": usage})
        self.send_sse_data(h, [*chunks, "[DONE]"])

    @staticmethod
    def send_sse_data(h: BaseHTTPRequestHandler, items: list[dict[str, Any] | str]) -> None:
        """`data:`-only SSE (no event names), as OpenAI chat completions and Gemini use."""
        payload = "".join(
            f"data: {it if isinstance(it, str) else json.dumps(it)}\n\n" for it in items
        ).encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)


# ---------------------------------------------------------------------------------------
# Gemini API (Gemini CLI)
# ---------------------------------------------------------------------------------------
def _value_for_schema(schema: Any) -> Any:
    """A minimal value that satisfies a JSON schema (Gemini CLI's structured side requests,
    e.g. its next-speaker check, parse the reply against the schema they sent)."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][-1] if "user" not in schema["enum"] else "user"
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _value_for_schema(v) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return "scripted"


class GeminiServer(_ScriptedServer):
    """The Gemini API as Gemini CLI calls it with an API key and GOOGLE_GEMINI_BASE_URL.

    `:streamGenerateContent?alt=sse` with `functionDeclarations` consumes one step; the
    same without tools, `:generateContent` (side requests, JSON-schema answers) and
    `:countTokens` get minimal answers.
    """

    model = "gemini-2.5-pro"

    def handle(self, h: BaseHTTPRequestHandler, method: str, body: Any) -> None:
        path = h.path.split("?")[0]
        action = path.rsplit(":", 1)[-1] if ":" in path else ""
        if method == "GET" and path.rstrip("/").endswith("/models"):
            self._log(h, method, body, "other")
            return self.send_json(h, {"models": [{"name": f"models/{self.model}"}]})
        if (
            method != "POST"
            or not isinstance(body, dict)
            or action not in ("streamGenerateContent", "generateContent", "countTokens")
        ):
            self._log(h, method, body, "other")
            return self.send_json(
                h,
                {"error": {"code": 404, "message": f"not found: {path}", "status": "NOT_FOUND"}},
                404,
            )
        if action == "countTokens":
            self._log(h, method, body, "other")
            return self.send_json(h, {"totalTokens": 1000})
        tools = [d for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if tools and action == "streamGenerateContent" and not schema:
            idx, step = self._next_step()
            self._log(h, method, body, "step", idx)
            parts = self._parts(step)
        else:
            self._log(h, method, body, "aux")
            text = json.dumps(_value_for_schema(schema)) if schema else AUX_TITLE
            parts = [{"text": text}]
        model = path.split("/models/")[-1].split(":")[0] or self.model
        response = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 1500,
                "candidatesTokenCount": 50,
                "totalTokenCount": 1550,
            },
            "modelVersion": model,
            "responseId": self._new_id("resp"),
        }
        if action == "generateContent":
            return self.send_json(h, response)
        ChatCompletionsServer.send_sse_data(h, [response])

    def _parts(self, step: Step) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        if step.thinking:
            parts.append({"text": step.thinking, "thought": True})
        if step.text or not step.tool:
            parts.append({"text": step.text or DEFAULT_FINAL_TEXT})
        if step.tool:
            parts.append({"functionCall": {"name": step.tool, "args": step.input}})
        return parts


ServerFactory = Callable[[list[Step]], _ScriptedServer]


# ---------------------------------------------------------------------------------------
# Error bodies for `fail()` (issue 10: sessions that end on an API error)
# ---------------------------------------------------------------------------------------
def anthropic_error(error_type: str, message: str) -> dict[str, Any]:
    """The Anthropic API's error body, e.g. ("rate_limit_error", "...") for a 429,
    ("overloaded_error", "Overloaded") for a 529, ("authentication_error", ...) for a 401,
    ("invalid_request_error", "prompt is too long: ...") for a 400."""
    return {"type": "error", "error": {"type": error_type, "message": message}}
