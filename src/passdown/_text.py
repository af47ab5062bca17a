"""Text made safe to show to a person or an agent.

Session text, paths, branch names and agent versions come from files passdown does not
control. Shown raw they can do two kinds of harm:

- a newline inside a value rendered on one line (a file path, a plan subject, the agent
  version) starts a new line of its own, so `\\n## Takeover contract` forges a heading;
- terminal control sequences (CSI such as `ESC[2J`, OSC such as `ESC]0;title BEL`, the
  single-byte C1 forms, bidirectional overrides) rewrite what a terminal shows.

`safe_text` keeps newlines and tabs (for multi-line blocks) and removes every
control sequence; `one_line` also folds every kind of line break into a space.
Complete ANSI sequences are dropped (colour codes in test output carry no meaning for
the reader); any other control character is shown escaped (`\\x07`), so nothing is
silently hidden; NUL, which no argv or terminal can carry, is dropped.
"""

from __future__ import annotations

import functools
import re

__all__ = ["json_safe", "one_line", "safe_text", "shown"]

# ESC [ params intermediates final | ESC ] ... (BEL or ESC \) | the C1 CSI/OSC bytes likewise
# | any other two-byte escape (ESC 7, ESC c ...)
_ANSI = (
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[@-Z\\-_0-9=<>a-z]?"
)
# C0 (but tab and newline), DEL, C1, bidirectional overrides and isolates (they reorder
# what is shown: "Trojan Source"), line and paragraph separators
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
_BREAKS = r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+"

_re = functools.cache(re.compile)


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch == "\0":
        return ""
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(text: str) -> str:
    """`text` without terminal control sequences; newlines and tabs kept, `\\r\\n` as `\\n`."""
    if text.isprintable():  # the common case: nothing to do (newlines are not printable)
        return text
    text = _re(_ANSI).sub("", text.replace("\r\n", "\n"))
    return _re(_CONTROL).sub(_escape, text)


def one_line(text: str, limit: int | None = None) -> str:
    """`text` as one line: control sequences removed, every run of whitespace or line
    breaks one space, cut at `limit` characters with an ellipsis."""
    if not text.isprintable():
        text = _re(_ANSI).sub("", text)
    text = _re(_BREAKS).sub(" ", text.replace("\0", "")).strip()
    if not text.isprintable():
        text = _re(_CONTROL).sub(_escape, text)
    return text if limit is None else cut(text, limit)


_MARKER = "[REDACTED:"  # _redact.MARKER_PREFIX, without importing the redactor
_LONGEST_MARKER = 64


def cut(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, the last an ellipsis when it is cut. Never
    inside a redaction marker: `[REDACTED:github_t…` reads like the start of a secret,
    so a marker the cut falls in is left out whole."""
    if len(text) <= limit:
        return text
    end = limit - 1
    start = text.rfind("[", max(0, end - _LONGEST_MARKER), end)
    if start >= 0 and text.startswith(_MARKER, start) and text.find("]", start, end) < 0:
        return text[:start].rstrip() + "…"  # the marker is not closed before the cut
    return text[:end] + "…"


def shown(value: object) -> str:
    """One value for a terminal line (a path, a warning): redacted, then `one_line`."""
    from passdown._redact import redact  # lazy: the redactor's rules compile on first use

    return one_line(redact(str(value)))


# In JSON text these characters can only occur inside strings, where `\\uXXXX` is the same
# value: escaping them changes nothing for a parser and everything for a terminal.
_JSON_UNSAFE = r"[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"


def json_safe(dumped: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`, which already escapes C0)
    with DEL, C1 and bidirectional controls escaped too."""
    escaped: str = _re(_JSON_UNSAFE).sub(lambda m: f"\\u{ord(m.group(0)):04x}", dumped)
    return escaped


def listed(items: list[str], limit: int = 5) -> str:
    """`a, b, c`: at most `limit` items, then how many more there are (`a, b and 3 more`),
    so that a count said beside the list agrees with it."""
    head = ", ".join(items[:limit])
    more = len(items) - limit
    return f"{head} and {more} more" if more > 0 else head
