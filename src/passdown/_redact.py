"""Secret redaction: nothing leaves passdown (handoff files, printed lines, prompts) unredacted.

Why our own compiled regexes rather than detect-secrets (Yelp, 1.5.0), measured with
benchmarks/bench_redaction.py (196 planted fakes of 22 kinds; 15.7 MB of stdlib code, docs and
git/agent-session output), same process, 2-core machine:
- recall: ours 100% on every kind; detect-secrets 53% in file-scan mode (no rule for Anthropic,
  Google, Hugging Face, bearer headers or names like DB_PASSWORD in .env lines; it flags only
  the BEGIN line of a private key, so the key body leaks). Its ad-hoc eager mode reaches 99.5%
  but flags UUIDs, hashes and plain words: 84,000 redactions per MB of ordinary text.
- false positives: ours 0.25 per MB (4, all doc examples: `password: sekrit`, a sample JWT);
  detect-secrets 277 per MB (UUIDs, npm integrity hashes, git hashes as "high entropy").
- speed: ours about 25 MB/s; detect-secrets 0.1-0.2 MB/s, and it reports values, not spans.
So no dependency. Each rule below is one regex pass; rules without a literal prefix run a cheap
finder on the lowercased text and try the full pattern only where it hits.

Marker: `[REDACTED:<kind>]`. Where a secret has a name (KEY=value, "password": "...",
Authorization: Bearer ..., user:pass@host) the name stays and only the value goes, so the next
agent still understands the text. Redacting is idempotent: markers never match a rule.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from passdown._redact_rules import MARKER_PREFIX as MARKER_PREFIX
from passdown._redact_rules import Rule, marker, rules, value_is_secret

__all__ = ["Redactor", "redact"]


Found = dict[str, int]  # secrets found in one text, per kind


class _Memo:
    """What redacting a text gave in this process (the text, its secrets per kind), up
    to `limit` characters of texts (the oldest go first). Redacting is a pure function
    of the text, and idempotent: a text met again (a plan item's subject in every
    replayed plan, a caller's blocker in the package and its handoff, the handoff the
    store's edge and the package check look at again) is not scanned again. A text that
    held a secret is kept only as its digest: the memo holds no secret."""

    def __init__(self, limit: int, longest: int) -> None:
        self._results: dict[str | bytes, tuple[str, Found]] = {}
        self._chars = 0
        self._limit, self._longest = limit, longest
        self._lock = threading.Lock()
        self._digests = False  # any text with a secret remembered (by its digest)

    def get(self, text: str) -> tuple[str, Found] | None:
        found = self._results.get(text)
        if found is None and self._digests and len(text) <= self._longest:
            found = self._results.get(_digest(text))
        return found

    def put(self, text: str, redacted: str, found: Found) -> None:
        if len(text) > self._longest:
            return
        with self._lock:
            if found:
                self._digests = True
                self._add(_digest(text), (redacted, found))
            self._add(redacted, (redacted, {}))  # redacting it again gives itself
            while self._chars > self._limit:
                oldest = next(iter(self._results))
                del self._results[oldest]
                self._chars -= _size(oldest)

    def _add(self, key: str | bytes, result: tuple[str, Found]) -> None:
        if key not in self._results:
            self._results[key] = result
            self._chars += _size(key)


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _size(key: str | bytes) -> int:
    return len(key)  # characters of a text, 16 for a digest


_MEMO = _Memo(limit=16 * 1024 * 1024, longest=1024 * 1024)


@dataclass
class Redactor:
    """Redacts secrets from text and data, counting what it found per kind: the secrets
    of each distinct text it was given, once (a text given twice is counted once)."""

    findings: dict[str, int] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set, repr=False)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by `[REDACTED:<kind>]`."""
        if not text:
            return text
        known = _MEMO.get(text)
        if known is None:
            known = self._scan(text)
            _MEMO.put(text, *known)
        redacted, found = known
        if found and text not in self._seen:
            self._seen.add(text)
            for kind, n in found.items():
                self.findings[kind] = self.findings.get(kind, 0) + n
        return redacted

    def _scan(self, text: str) -> tuple[str, Found]:
        """Every rule over `text`, in order: the redacted text and what was found."""
        found: Found = {}
        lowered = text.lower()
        for rule in rules():
            if not rule.triggers or any(t in lowered for t in rule.triggers):
                new = self._apply(rule, text, lowered, found)
                if new is not text:
                    text, lowered = new, new.lower()
        return text, found

    def redact_data(self, obj: Any) -> Any:
        """A copy of `obj` (dicts, lists, tuples, sets, strings; anything else as is) with every
        string redacted, dict keys included. A string under a secret-sounding key
        ({"password": "..."}) is judged as that name's value, since alone it has no context."""
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, dict):
            return self._redact_dict(obj)
        if isinstance(obj, list):
            return [self.redact_data(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.redact_data(v) for v in obj)
        if isinstance(obj, (set, frozenset)):
            return type(obj)(self.redact_data(v) for v in obj)
        return obj

    def _redact_dict(self, obj: dict[Any, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            new_key = self.redact(key) if isinstance(key, str) else key
            while new_key in out:  # two keys redacted to the same marker: keep both
                new_key = f"{new_key}'"
            if (
                isinstance(key, str)
                and isinstance(value, str)
                and value.strip()
                and value_is_secret(key, value.strip(), quoted=True, env_style=False)
            ):
                self._count("secret_assignment")
                out[new_key] = marker("secret_assignment")
            else:
                out[new_key] = self.redact_data(value)
        return out

    def _apply(self, rule: Rule, text: str, lowered: str, found: Found) -> str:
        if rule.finder is not None and len(lowered) == len(text):
            starts: Iterable[int] = (f.start() for f in rule.finder.finditer(lowered))
            matches: Iterable[re.Match[str]] = (
                m for pos in starts if (m := rule.pattern.match(text, pos))
            )
        else:  # lower() changed the length (rare non-ASCII): scan the text itself
            matches = rule.pattern.finditer(text)
        parts: list[str] = []
        last = 0
        for m in matches:
            if m.start() < last:
                continue
            new = rule.replace(m)
            if new is None:
                continue
            parts += (text[last : m.start()], new)
            last = m.end()
            found[rule.kind] = found.get(rule.kind, 0) + 1
        if not parts:
            return text
        parts.append(text[last:])
        return "".join(parts)

    def _count(self, kind: str) -> None:
        self.findings[kind] = self.findings.get(kind, 0) + 1


def redact(text: str) -> str:
    """`text` with every secret replaced by `[REDACTED:<kind>]`."""
    return Redactor().redact(text)
