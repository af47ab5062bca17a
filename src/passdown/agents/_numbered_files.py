"""The names of a folder's numbered files in number order, in little memory.

OpenHands writes one file per event (`events/event-00042-<uuid>.json`), so a long
conversation is a folder of hundreds of thousands of files. As a list of str sorted with a
key apiece the names cost about 270 bytes each, and the reader's peak grew with the
conversation (+13 MB for 48,000 events). Here they live in one bytes buffer, placed by
their number (OpenHands numbers its events 0, 1, 2, ...: a dense range): under 70 bytes
each, and nothing per name is sorted.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Iterator
from pathlib import Path

# Numbers spread wider than this over the count are sorted instead of placed in slots
# (a slot costs 4 bytes: a few stray large numbers must not allocate gigabytes).
_DENSE_SPREAD = 4


class _Names:
    """Names appended to one buffer; `name(i)` is the i-th appended."""

    def __init__(self) -> None:
        self.blob = bytearray()
        self.starts = array("I")
        self.numbers = array("Q")

    def add(self, name: str, number: int) -> None:
        self.starts.append(len(self.blob))
        self.numbers.append(number)
        self.blob += name.encode("utf-8", "surrogateescape")

    def __len__(self) -> int:
        return len(self.numbers)

    def name(self, index: int) -> str:
        start = self.starts[index]
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.blob)
        return self.blob[start:end].decode("utf-8", "surrogateescape")


def numbered_names(folder: Path, pattern: re.Pattern[str]) -> Iterator[str]:
    """The names in `folder` that `pattern` fully matches (its group 1: the number), by
    number, names of one number in name order. None for a missing folder. The folder is
    listed once, before the first name is given."""
    names = _list(folder, pattern)
    if not len(names):
        return
    top = max(names.numbers)
    if top > _DENSE_SPREAD * len(names) + 1024:
        order = sorted(range(len(names)), key=lambda i: (names.numbers[i], names.name(i)))
        yield from (names.name(i) for i in order)
        return
    yield from _by_slot(names, top)


def _list(folder: Path, pattern: re.Pattern[str]) -> _Names:
    names = _Names()
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                match = pattern.fullmatch(entry.name)
                if match is not None:
                    names.add(entry.name, int(match.group(1)))
    except (FileNotFoundError, NotADirectoryError):
        pass
    return names


def _by_slot(names: _Names, top: int) -> Iterator[str]:
    slots = array("i", [-1]) * (top + 1)
    shared: dict[int, list[int]] = {}  # a number two files carry: all its files
    for index, number in enumerate(names.numbers):
        if slots[number] < 0:
            slots[number] = index
        else:
            shared.setdefault(number, [slots[number]]).append(index)
    for number, index in enumerate(slots):
        if number in shared:
            yield from sorted(names.name(i) for i in shared[number])
        elif index >= 0:
            yield names.name(index)
