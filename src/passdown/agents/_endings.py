"""How a turn that failed on the model API ended, from what an agent wrote about it.

Each agent records an API failure differently (Codex: `task_complete.error` with a
`codex_error_info`; others: an error record with a status code or only a message), so
every reader reduces what it has, a status code, an error kind, a message, to one
`EndReason` here. The message is kept short: it is shown to the next agent.
"""

from __future__ import annotations

import functools
import re

from passdown._lazy_re import lazy_compile
from passdown.transcript import EndReason, SessionEnding

ENDING_MESSAGE_CHARS = 300

# Error kinds as the APIs and CLIs name them (lower case, any separators).
_KIND_REASONS: dict[str, EndReason] = {
    "rate_limit": "rate_limit",
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "rate_limited": "rate_limit",
    "too_many_requests": "rate_limit",
    "resource_exhausted": "rate_limit",
    "usage_limit": "usage_limit",
    "usage_limit_exceeded": "usage_limit",
    "usage_limit_reached": "usage_limit",
    "insufficient_quota": "usage_limit",
    "quota_exceeded": "usage_limit",
    "session_budget_exceeded": "usage_limit",
    "billing_error": "usage_limit",
    "overloaded": "overloaded",
    "overloaded_error": "overloaded",
    "server_overloaded": "overloaded",
    "server_is_overloaded": "overloaded",
    "unavailable": "overloaded",
    "authentication": "auth",
    "authentication_error": "auth",
    "permission_error": "auth",
    "unauthorized": "auth",
    "unauthenticated": "auth",
    "invalid_api_key": "auth",
    "permission_denied": "auth",
    "context_length": "context_length",
    "context_length_exceeded": "context_length",
    "context_window_exceeded": "context_length",
    "prompt_too_long": "context_length",
    "interrupted": "interrupted",
    "aborted": "interrupted",
    "cancelled": "interrupted",
}
_SPECIFIC = ("usage_limit", "context_length", "interrupted")
_STATUS = lazy_compile(r"(?<![\d.])([45]\d\d)(?![\d.])")
# Message wording, checked in this order (a usage limit is also "429").
_MESSAGE_REASONS: tuple[tuple[re.Pattern[str], EndReason], ...] = (
    (
        lazy_compile(
            r"context (?:length|window)|maximum context|too many tokens|prompt is too long|"
            r"input token count .* exceeds|exceeds? the (?:maximum|context)",
            re.I,
        ),
        "context_length",
    ),
    # not a bare "quota": Gemini's per-minute 429 says "Resource has been exhausted (e.g.
    # check quota)"
    (
        lazy_compile(
            r"usage limit|exceeded your (?:current )?quota|quota exceeded|"
            r"insufficient[_ ]quota|billing|credit balance|out of credits",
            re.I,
        ),
        "usage_limit",
    ),
    (
        lazy_compile(
            r"rate[_ ]?limit|too many requests|\b429\b|resource[_ ]exhausted|"
            r"resource has been exhausted|please wait and try again later",
            re.I,
        ),
        "rate_limit",
    ),
    (
        lazy_compile(r"overloaded|\b529\b|\b503\b|service unavailable|high demand", re.I),
        "overloaded",
    ),
    (
        lazy_compile(
            r"\b401\b|\b403\b|unauthori[sz]ed|unauthenticated|invalid api key|"
            r"incorrect api key|api key not valid|authentication|forbidden",
            re.I,
        ),
        "auth",
    ),
    (
        lazy_compile(
            r"\binterrupted\b|\baborted\b|request was aborted|cancell?ed by (?:the )?user", re.I
        ),
        "interrupted",
    ),
)


def reason_for_status(status: int | None) -> EndReason | None:
    if status is None:
        return None
    if status == 429:
        return "rate_limit"
    if status in (401, 403, 407):
        return "auth"
    if status in (503, 529):
        return "overloaded"
    if status == 413:
        return "context_length"
    if 400 <= status < 600:
        return "error"
    return None


def reason_for_kind(kind: str | None) -> EndReason | None:
    if not kind:
        return None
    key = re.sub(r"(?<=[a-z])(?=[A-Z])|[\s\-.]+", "_", kind.strip()).lower()
    return _KIND_REASONS.get(key)


# A failing request is retried, and each retry writes the same error: the same message
# is classified once (a few regex searches), not once per retry.
@functools.lru_cache(maxsize=256)
def classify_api_error(
    message: str | None = None, *, status: int | None = None, kind: str | None = None
) -> EndReason:
    """The reason for an API failure. Specific before generic: a usage limit or a full
    context window named by the kind or the message (both come as a 429 or a 400), then
    the error kind the agent names, then the HTTP status, then the message's wording."""
    text = (message or "")[:4000]  # an error message, not a log: the head says it all
    by_kind = reason_for_kind(kind)
    if by_kind in _SPECIFIC:
        return by_kind
    for pattern, reason in _MESSAGE_REASONS:
        if reason in ("usage_limit", "context_length") and pattern.search(text):
            return reason
    if by_kind is not None:
        return by_kind
    by_status = reason_for_status(status)
    if by_status not in (None, "error"):
        return by_status
    for pattern, reason in _MESSAGE_REASONS:
        if pattern.search(text):
            return reason
    if status is None:
        match = _STATUS.search(text[:400])
        by_status = reason_for_status(int(match.group(1))) if match else None
    return by_status or "error"


def api_error_ending(
    message: str | None,
    *,
    status: int | None = None,
    kind: str | None = None,
    timestamp: str | None = None,
) -> SessionEnding:
    return SessionEnding(
        reason=classify_api_error(message, status=status, kind=kind),
        message=short_message(message),
        timestamp=timestamp,
    )


@functools.lru_cache(maxsize=256)
def short_message(message: str | None) -> str | None:
    if not message:
        return None
    line = " ".join(message.split())
    if len(line) > ENDING_MESSAGE_CHARS:
        line = line[: ENDING_MESSAGE_CHARS - 1] + "…"
    return line or None
