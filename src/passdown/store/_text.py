"""Full-text terms, partitioned by project.

Every indexed word is prefixed with a short hash of the record's project, and so is
every searched word. The text index therefore holds one posting list per
(project, word): a search in project A reads only A's postings, so its cost does not
grow with other projects, and B's documents never take part in A's matching. (The
SQL `project = ?` filter remains the isolation guarantee; a hash collision would
only cost speed.)

Words are runs of letters and decimal digits, case- and accent-folded: characters that both
SQLite's unicode61 tokenizer and PostgreSQL's default parser keep inside a word, so
neither engine splits a prefixed word and leaves an unprefixed piece behind.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from passdown.errors import UsageError

_RUN = re.compile(r"[^\W_]+")
_QUERY_WORD = re.compile(r"([^\W_]+)(\*?)")


def project_prefix(project: str) -> str:
    # fixed length and starting with a letter, so prefix + word reads as one word
    return "p" + hashlib.blake2b(project.encode(), digest_size=5).hexdigest()


def _word_chars(run: str) -> Iterator[str]:
    """Split a regex word run at characters that are not letters or decimal digits."""
    if run.isascii():
        yield run
        return
    start = 0
    for i, ch in enumerate(run):
        cat = unicodedata.category(ch)
        if not (cat[0] == "L" or cat == "Nd"):
            if i > start:
                yield run[start:i]
            start = i + 1
    if start < len(run):
        yield run[start:]


def fold(text: str) -> str:
    """Case- and accent-insensitive form: `Café` and `CAFE` index the same word in
    both backends (SQLite's tokenizer would drop accents, PostgreSQL's would not)."""
    text = text.casefold()
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def words(text: str) -> list[str]:
    folded = fold(text)
    runs = _RUN.findall(folded)
    if folded.isascii():
        return runs  # the common case, and the hot path of bulk stores
    return [word for run in runs for word in _word_chars(run)]


def document(project: str, texts: Iterable[str]) -> str:
    """The prefixed, space-separated words both backends index for one record."""
    prefix = project_prefix(project)
    found = [word for text in texts for word in words(text)]
    return prefix + (" " + prefix).join(found) if found else ""


@dataclass(frozen=True, slots=True)
class Term:
    word: str  # prefixed
    prefix_match: bool  # the query word ended in `*`


def query_terms(project: str, text: str) -> list[Term]:
    """The searched words (all must match); a trailing `*` matches words starting so."""
    prefix = project_prefix(project)
    terms: list[Term] = []
    for run, star in _QUERY_WORD.findall(fold(text)):
        parts = list(_word_chars(run))
        terms.extend(
            Term(prefix + p, bool(star) and i == len(parts) - 1) for i, p in enumerate(parts)
        )
    if not terms:
        raise UsageError(f"nothing to search for in {text!r}: give at least one word")
    return terms


def fts5_query(terms: list[Term]) -> str:
    return " AND ".join(f'"{t.word}"' + ("*" if t.prefix_match else "") for t in terms)


def tsquery(terms: list[Term]) -> str:
    return " & ".join(t.word + (":*" if t.prefix_match else "") for t in terms)
