"""`lazy_compile`: a pattern compiled at its first use, then the compiled one's own."""

from __future__ import annotations

import re

import pytest

from passdown._lazy_re import lazy_compile


@pytest.mark.parametrize(
    ("pattern", "flags", "text"),
    [
        (r"(?P<word>\w+)-(\d+)", 0, "a-1 b-22 c-x"),
        (r"^error: (.*)$", re.I | re.M, "ok\nERROR: one\nerror: two"),
        (rb'"cwd"\s*:\s*("[^"]*")', 0, b'{"cwd": "/w", "cwd":"/x"}'),
    ],
)
def test_a_lazy_pattern_answers_as_the_compiled_one(
    pattern: str | bytes, flags: int, text: str | bytes
) -> None:
    lazy, compiled = lazy_compile(pattern, flags), re.compile(pattern, flags)
    assert lazy.pattern == compiled.pattern
    for method in ("search", "match", "fullmatch"):
        found, expected = getattr(lazy, method)(text), getattr(compiled, method)(text)
        assert (found and found.span()) == (expected and expected.span())
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert lazy.findall(text) == compiled.findall(text)
    assert lazy.split(text) == compiled.split(text)
    empty = text[:0]
    assert lazy.sub(empty, text) == compiled.sub(empty, text)
    assert lazy.groups == compiled.groups and lazy.groupindex == compiled.groupindex


def test_nothing_is_compiled_before_the_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = re.compile

    def counting(pattern: str, flags: int = 0) -> re.Pattern[str]:
        calls.append(pattern)
        return original(pattern, flags)

    monkeypatch.setattr(re, "compile", counting)
    lazy = lazy_compile(r"x+(")  # not a valid pattern: nothing says so until it is used
    assert calls == [] and lazy.pattern == r"x+("
    with pytest.raises(re.error):
        lazy.search("xx")
    good = lazy_compile(r"x+")
    assert good.fullmatch("xxx") and good.search("axxb") and calls == [r"x+(", r"x+"]
