"""How a Claude Code turn or compaction ended, from the text the CLI wrote: the reason an
API call failed, and a compaction summary without the CLI's instructions to the model."""

from __future__ import annotations

import re

from passdown.transcript import EndReason

# The patterns are compiled when first used (`re`'s own cache): most sessions hold no API
# error and no compaction.

# API errors ---------------------------------------------------------------------------
# What 2.1.197 writes (provoked against a scripted server): an assistant record with
# model "<synthetic>", isApiErrorMessage, `error` (rate_limit, server_error,
# authentication_failed, invalid_request, billing_error, ...) and the message it showed,
# e.g. "API Error: Request rejected (429) · You've hit your limit" or "Prompt is too long"
# (errorDetails then holds the raw 400 body). A usage limit is a 429 too: only the text
# tells it from a rate limit.
_USAGE_LIMIT = (
    r"usage limit|(?:hit|reached) your (?:[\w-]+ ){0,3}limit|out of (?:extra )?usage"
    r"|spend limit|limit reached|usage credits"
)
_OVERLOADED = r"\b529\b|overloaded"
_AUTH = (
    r"\b401\b|invalid api key|invalid x-api-key|authentication|oauth token|/login|unauthori[sz]ed"
)
_CONTEXT_LENGTH = (
    r"prompt is too long|context (?:length|window)|too many (?:input )?tokens|input length"
)
_RATE_LIMIT = r"\b429\b|rate.?limit"


def api_error_reason(error: str | None, text: str) -> EndReason:
    """Why an API call failed, from the record's `error` code and the text shown."""
    if error == "billing_error" or re.search(_USAGE_LIMIT, text, re.IGNORECASE):
        return "usage_limit"
    if error == "rate_limit" or re.search(_RATE_LIMIT, text, re.IGNORECASE):
        return "rate_limit"
    if re.search(_OVERLOADED, text, re.IGNORECASE):
        return "overloaded"  # `server_error` is also a plain 500: only "529"/overloaded count
    if error == "authentication_failed" or re.search(_AUTH, text, re.IGNORECASE):
        return "auth"
    if re.search(_CONTEXT_LENGTH, text, re.IGNORECASE):
        return "context_length"
    return "error"


# compaction ---------------------------------------------------------------------------
# 2.1.197 wraps the model's summary: a preamble, "Summary:", then instructions to the
# model that resumes (where the full transcript is, "Continue the conversation from
# where it left off ... as if the break never happened."); older builds ended with
# "Please continue the conversation from where we left it off ...". Those address the
# compacting agent, not the next one.
_COMPACT_PREAMBLE = (
    r"^\s*This session is being continued from a previous conversation that ran out of "
    r"context\.(?: The summary below covers the earlier portion of the conversation\.)?\s*"
    r"(?:Summary:\s*)?"
)
_COMPACT_INSTRUCTIONS = (
    r"^[ \t]*(?:If you need specific details from before compaction"
    r"|Recent messages are preserved verbatim\."
    r"|Continue the conversation from where it left off"
    r"|Please continue the conversation from where we left (?:it|off)"
    r"|Resume directly)"
)


def clean_compact_summary(text: str | None) -> str | None:
    """The summary a compaction kept, without the CLI's preamble and its resume
    instructions to the model."""
    if not text:
        return text
    body = re.sub(_COMPACT_PREAMBLE, "", text, count=1)
    match = re.search(_COMPACT_INSTRUCTIONS, body, re.MULTILINE)
    if match:
        body = body[: match.start()]
    body = body.strip()
    return body or None
