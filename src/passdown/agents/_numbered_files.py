"""The names of a folder's numbered files in number order, in little memory.

OpenHands writes one file per event (`events/event-00042-<uuid>.json`), so a long
conversation is a folder of hundreds of thousands of files. As a list of str sorted with a
key apiece the names cost about 210 bytes each, and the reader's peak grew with the
conversation (+51 MB at 192,000 events). Here a name shaped as OpenHands writes it is kept
as its number and the uuid's 16 bytes, any other name in one bytes buffer, and each is
placed in a slot by its number (OpenHands numbers its events 0, 1, 2, ...: a dense range),
so nothing per name is sorted: about 30 bytes a name.
"""

from __future__ import annotations

import os
import re
import uuid
from array import array
from collections.abc import Iterator
from pathlib import Path

# Numbers spread wider than this over the count are sorted instead of placed in slots
# (a slot costs 4 bytes: a few stray large numbers must not allocate gigabytes).
_DENSE_SPREAD = 4
_UUID_TAIL = re.compile(r"-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.json")
_WIDTH = 5  # OpenHands pads the number to five digits


class _Names:
    """The matching names: `ref(i)` is the i-th listed, `name(ref)` gives it back."""

    def __init__(self) -> None:
        self.numbers = array("Q")
        self.refs = array("q")  # >= 0: a uuid in `uuids`; < 0: -1 - a start in `starts`
        self.uuids = bytearray()
        self.blob = bytearray()
        self.starts = array("I")
        self.prefix: str | None = None  # what comes before the number, in every name

    def add(self, name: str, match: re.Match[str]) -> None:
        number = int(match.group(1))
        self.numbers.append(number)
        prefix, end = name[: match.start(1)], match.end(1)
        self.prefix = prefix if self.prefix is None else self.prefix
        tail = _UUID_TAIL.fullmatch(name, end)
        if tail and prefix == self.prefix and name[match.start(1) : end] == f"{number:0{_WIDTH}d}":
            self.refs.append(len(self.uuids) // 16)
            self.uuids += uuid.UUID(tail.group(1)).bytes
        else:
            self.refs.append(-1 - len(self.starts))
            self.starts.append(len(self.blob))
            self.blob += name.encode("utf-8", "surrogateescape") + b"/"  # "/" ends it

    def __len__(self) -> int:
        return len(self.numbers)

    def name(self, index: int) -> str:
        ref = self.refs[index]
        if ref >= 0:
            tail = uuid.UUID(bytes=bytes(self.uuids[ref * 16 : ref * 16 + 16]))
            return f"{self.prefix}{self.numbers[index]:0{_WIDTH}d}-{tail}.json"
        start = self.starts[-1 - ref]
        return self.blob[start : self.blob.index(b"/", start)].decode("utf-8", "surrogateescape")


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
                    names.add(entry.name, match)
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
