"""A compaction summary as the next agent should read it: without what the CLI wrapped
around it for the model that continued (an instruction the next agent must not follow)."""

from __future__ import annotations

import re

# What the CLIs wrap around a compaction summary for the model that continues: not part
# of the summary, and an instruction the next agent must not follow. Codex prefixes
# codex-rs/core/templates/compact/summary_prefix.md; Claude Code opens with "This session
# is being continued..." and closes with its resume instructions.
CODEX_SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by "
    "that language model. Use this to build on the work that has already been done and "
    "avoid duplicating work. Here is the summary produced by the other language model, use "
    "the information in this summary to assist with your own analysis:"
)
_CODEX_PREFIX_START = re.compile(
    r"\s*Another language model started to solve this problem and produced a summary"
    r"(?: of its thinking process)?\.",
)
_CODEX_PREFIX_END = "use the information in this summary to assist with your own analysis:"
_CLAUDE_PREAMBLE = re.compile(
    r"\s*This session is being continued from a previous conversation that ran out of "
    r"context\.[^\n]*\n+(?:\s*Summary:\s*\n)?",
)
_CLAUDE_TRAILERS = (
    "If you need specific details from before compaction",
    "Continue the conversation from where it left off without asking the user",
    "Please continue the conversation from where we left it off without asking the user",
    "Resume directly",
)


def strip_compaction_instructions(text: str) -> str:
    """A compaction summary without what the CLI wrapped around it for the model that
    continued (Codex's "Another language model started to solve this problem..." prefix,
    Claude Code's "This session is being continued..." opening and resume instructions)."""
    body = text
    codex = _CODEX_PREFIX_START.match(body)
    if codex:
        end = body.find(_CODEX_PREFIX_END)
        # the whole preamble; a shorter variant without its closing words: its first sentence
        body = body[end + len(_CODEX_PREFIX_END) :] if 0 <= end < 1000 else body[codex.end() :]
    opening = _CLAUDE_PREAMBLE.match(body)
    if opening:
        body = body[opening.end() :]
        cut = min((i for i in (body.find(t) for t in _CLAUDE_TRAILERS) if i >= 0), default=-1)
        if cut >= 0:
            body = body[:cut]
    return body.strip()
