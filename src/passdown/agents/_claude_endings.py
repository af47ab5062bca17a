"""How a Claude Code turn or compaction ended, from the text the CLI wrote: the reason an
API call failed, and a compaction summary without the CLI's instructions to the model."""

from __future__ import annotations

import re

from passdown._lazy_re import lazy_compile
from passdown.transcript import EndReason

# API errors ---------------------------------------------------------------------------
# What 2.1.197 writes (provoked against a scripted server): an assistant record with
# model "<synthetic>", isApiErrorMessage, `error` (rate_limit, server_error,
# authentication_failed, invalid_request, billing_error, ...) and the message it showed,
# e.g. "API Error: Request rejected (429) · You've hit your limit" or "Prompt is too long"
# (errorDetails then holds the raw 400 body). A usage limit is a 429 too: only the text
# tells it from a rate limit.
_USAGE_LIMIT = lazy_compile(
    r"usage limit|(?:hit|reached) your (?:[\w-]+ ){0,3}limit|out of (?:extra )?usage"
    r"|spend limit|limit reached|usage credits",
    re.IGNORECASE,
)
_OVERLOADED = lazy_compile(r"\b529\b|overloaded", re.IGNORECASE)
_AUTH = lazy_compile(
    r"\b401\b|invalid api key|invalid x-api-key|authentication|oauth token|/login|unauthori[sz]ed",
    re.IGNORECASE,
)
_CONTEXT_LENGTH = lazy_compile(
    r"prompt is too long|context (?:length|window)|too many (?:input )?tokens|input length",
    re.IGNORECASE,
)
_RATE_LIMIT = lazy_compile(r"\b429\b|rate.?limit", re.IGNORECASE)


def api_error_reason(error: str | None, text: str) -> EndReason:
    """Why an API call failed, from the record's `error` code and the text shown."""
    if error == "billing_error" or _USAGE_LIMIT.search(text):
        return "usage_limit"
    if error == "rate_limit" or _RATE_LIMIT.search(text):
        return "rate_limit"
    if _OVERLOADED.search(text):
        return "overloaded"  # `server_error` is also a plain 500: only "529"/overloaded count
    if error == "authentication_failed" or _AUTH.search(text):
        return "auth"
    if _CONTEXT_LENGTH.search(text):
        return "context_length"
    return "error"


# compaction ---------------------------------------------------------------------------
# 2.1.197 wraps the model's summary: a preamble, "Summary:", then instructions to the
# model that resumes (where the full transcript is, "Continue the conversation from
# where it left off ... as if the break never happened."); older builds ended with
# "Please continue the conversation from where we left it off ...". Those address the
# compacting agent, not the next one.
_COMPACT_PREAMBLE = lazy_compile(
    r"^\s*This session is being continued from a previous conversation that ran out of "
    r"context\.(?: The summary below covers the earlier portion of the conversation\.)?\s*"
    r"(?:Summary:\s*)?",
)
_COMPACT_INSTRUCTIONS = lazy_compile(
    r"^[ \t]*(?:If you need specific details from before compaction"
    r"|Recent messages are preserved verbatim\."
    r"|Continue the conversation from where it left off"
    r"|Please continue the conversation from where we left (?:it|off)"
    r"|Resume directly)",
    re.MULTILINE,
)


def clean_compact_summary(text: str | None) -> str | None:
    """The summary a compaction kept, without the CLI's preamble and its resume
    instructions to the model."""
    if not text:
        return text
    body = _COMPACT_PREAMBLE.sub("", text, count=1)
    match = _COMPACT_INSTRUCTIONS.search(body)
    if match:
        body = body[: match.start()]
    body = body.strip()
    return body or None
