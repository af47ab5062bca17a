"""The names of a folder of numbered files (OpenHands' events) in number order, packed."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

from passdown.agents._numbered_files import numbered_names

EVENT = re.compile(r"event-(\d{1,12})-[0-9A-Za-z-]{1,64}\.json")


def _touch(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("{}")


def test_names_come_by_number_not_by_text(tmp_path: Path) -> None:
    # "event-10-..." sorts before "event-9-..." as text; by number it comes after
    _touch(tmp_path, "event-10-b.json", "event-9-a.json", "event-0-z.json", "event-100-c.json")
    names = list(numbered_names(tmp_path, EVENT))
    assert names == ["event-0-z.json", "event-9-a.json", "event-10-b.json", "event-100-c.json"]


def test_files_of_one_number_come_in_name_order(tmp_path: Path) -> None:
    _touch(tmp_path, "event-1-c.json", "event-1-a.json", "event-0-x.json", "event-1-b.json")
    assert list(numbered_names(tmp_path, EVENT)) == [
        "event-0-x.json",
        "event-1-a.json",
        "event-1-b.json",
        "event-1-c.json",
    ]


def test_other_names_are_left_out_and_a_missing_folder_gives_none(tmp_path: Path) -> None:
    _touch(tmp_path, "event-2-a.json", "notes.txt", "event-x-a.json", "event-3-a.json.tmp")
    assert list(numbered_names(tmp_path, EVENT)) == ["event-2-a.json"]
    assert list(numbered_names(tmp_path / "missing", EVENT)) == []
    assert list(numbered_names(tmp_path / "event-2-a.json", EVENT)) == []  # a file


def test_sparse_numbers_are_sorted_not_given_a_slot_each(tmp_path: Path) -> None:
    # a number far past the count would need a slot array of that size: sorted instead
    _touch(tmp_path, "event-999999999999-a.json", "event-5-a.json", "event-70000000-b.json")
    tracemalloc.start()
    names = list(numbered_names(tmp_path, EVENT))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert names == ["event-5-a.json", "event-70000000-b.json", "event-999999999999-a.json"]
    assert peak < 1_000_000


def test_openhands_names_come_back_exactly_beside_other_shapes(tmp_path: Path) -> None:
    """A name as OpenHands writes it is kept as number + uuid bytes: it must come back
    byte for byte, in order with names of other shapes (upper-case hex, unpadded)."""
    names = [
        "event-00000-c22540be-36f4-4067-b431-69757dcd2032.json",
        "event-00001-7A2B43BE-C14D-4F1C-91FB-EC57A7FAF2DE.json",  # upper case: as written
        "event-2-7a2b43be-c14d-4f1c-91fb-ec57a7faf2de.json",  # unpadded
        "event-00003-7a2b43be-c14d-4f1c-91fb-ec57a7faf2de.json",
        "event-00003-00000000-0000-0000-0000-000000000000.json",  # a number used twice
        "event-123456-7a2b43be-c14d-4f1c-91fb-ec57a7faf2de.json",  # past five digits
    ]
    _touch(tmp_path, *reversed(names))
    listed = list(numbered_names(tmp_path, EVENT))
    assert listed == [*names[:3], names[4], names[3], names[5]]


def test_many_names_cost_a_few_bytes_each(tmp_path: Path) -> None:
    """20,000 event files named as OpenHands names them: the listing's peak stays near 30
    bytes a name, where a sorted list of str with a key apiece took about 210."""
    count = 20_000
    uids = [f"{n:08x}-c14d-4f1c-91fb-ec57a7faf2de" for n in range(count)]
    _touch(tmp_path, *(f"event-{n:05d}-{uids[n]}.json" for n in range(count)))
    tracemalloc.start()
    listed = []
    for n, name in enumerate(numbered_names(tmp_path, EVENT)):
        if n % 5000 == 0:
            listed.append(name)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert listed == [f"event-{n:05d}-{uids[n]}.json" for n in range(0, count, 5000)]
    assert peak < count * 50, f"{peak / count:.0f} bytes a name"
