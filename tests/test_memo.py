"""The one bounded memo for functions of a short string (`passdown._memo`)."""

from __future__ import annotations

from passdown._memo import for_short_strings


def test_short_strings_are_computed_once_long_ones_and_none_every_time() -> None:
    calls: list[str | None] = []

    @for_short_strings(maxsize=2, longest=5)
    def length(text: str | None) -> int:
        calls.append(text)
        return len(text or "")

    assert [length("ab"), length("ab"), length("abcdef"), length("abcdef")] == [2, 2, 6, 6]
    assert length(None) == 0 and length(None) == 0
    assert calls == ["ab", "abcdef", "abcdef", None, None]
    length("c"), length("d"), length("ab")  # bounded: "ab" was pushed out
    assert calls[-1] == "ab"
