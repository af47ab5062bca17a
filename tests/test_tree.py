"""The active-branch walk shared by Claude, Qwen and pi (passdown.agents._tree): on
random trees with rewinds, leaf hints, lines outside the tree and fragments, the lines
handed to pass 2 are exactly the active branch, found by brute force; and what pass 1
keeps does not grow with the number of records."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from passdown.agents._tree import (
    FRAGMENT_MEMORY,
    LeafHint,
    Node,
    branch_lines,
    find_active_branch,
)
from passdown.transcript import Diagnostics


def read_node(_offset: int, line: bytes, _tail: int) -> Node | LeafHint | None:
    record = json.loads(line)
    if record["kind"] == "hint":
        return LeafHint(record["leaf"])
    if record["kind"] == "node":
        return Node(record["id"], record["parent"])
    return None  # a line outside the tree


def random_session(rng: random.Random, records: int) -> list[dict]:
    """A tree written parents-first: mostly a chain, with rewinds to earlier records,
    lines outside the tree, and leaf hints (sometimes naming an older record)."""
    lines: list[dict] = []
    ids: list[str] = []
    tip: str | None = None
    for n in range(records):
        roll = rng.random()
        if roll < 0.1:
            lines.append({"kind": "other", "n": n})
            continue
        if roll < 0.15 and ids:
            hint = rng.choice(ids) if rng.random() < 0.3 else tip
            lines.append({"kind": "hint", "leaf": hint})
            continue
        if roll < 0.2 and ids:
            tip = rng.choice(ids)  # a rewind: the next record forks from an earlier one
        record_id = f"r{n}"
        lines.append({"kind": "node", "id": record_id, "parent": tip})
        ids.append(record_id)
        tip = record_id
    return lines


def brute_force_branch(lines: list[dict]) -> list[int]:
    """Indexes of the active branch's lines, from a parent map of everything."""
    parent = {r["id"]: r["parent"] for r in lines if r["kind"] == "node"}
    nodes = [i for i, r in enumerate(lines) if r["kind"] == "node"]
    if not nodes:
        return []
    hints = [r["leaf"] for r in lines[nodes[-1] + 1 :] if r["kind"] == "hint"]
    leaf = hints[-1] if hints else lines[nodes[-1]]["id"]
    on_branch = set()
    while leaf is not None:
        on_branch.add(leaf)
        leaf = parent[leaf]
    return [i for i in nodes if lines[i]["id"] in on_branch]


def write(path: Path, lines: list[dict]) -> list[int]:
    offsets = []
    with open(path, "wb") as out:
        for record in lines:
            offsets.append(out.tell())
            out.write(json.dumps(record).encode() + b"\n")
    return offsets


@pytest.mark.parametrize("seed", range(40))
def test_pass_2_gets_exactly_the_active_branch(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    lines = random_session(rng, rng.randint(0, 300))
    offsets = write(tmp_path / "s.jsonl", lines)
    diag = Diagnostics()
    branch = find_active_branch(tmp_path / "s.jsonl", diag, read_node)
    got = [offset for offset, _, _ in branch_lines(tmp_path / "s.jsonl", diag, branch)]
    expected = [offsets[i] for i in brute_force_branch(lines)]
    assert not branch.broken
    assert got == expected
    nodes = sum(1 for r in lines if r["kind"] == "node")
    assert diag.off_branch_records == nodes - len(expected)


def test_always_lines_come_with_the_branch_in_file_order(tmp_path: Path) -> None:
    lines = [
        {"kind": "other", "n": 0},
        {"kind": "node", "id": "a", "parent": None},
        {"kind": "node", "id": "dead", "parent": "a"},
        {"kind": "other", "n": 3},
        {"kind": "node", "id": "b", "parent": "a"},
        {"kind": "other", "n": 5},
    ]
    offsets = write(tmp_path / "s.jsonl", lines)
    diag = Diagnostics()
    branch = find_active_branch(tmp_path / "s.jsonl", diag, read_node)
    got = [
        o
        for o, _, _ in branch_lines(
            tmp_path / "s.jsonl", diag, branch, always=lambda _o, line: b'"other"' in line
        )
    ]
    assert got == [offsets[i] for i in (0, 1, 3, 4, 5)]


def test_a_missing_parent_reads_every_line(tmp_path: Path) -> None:
    lines = [
        {"kind": "node", "id": "a", "parent": "gone"},
        {"kind": "other", "n": 1},
        {"kind": "node", "id": "b", "parent": "a"},
    ]
    offsets = write(tmp_path / "s.jsonl", lines)
    diag = Diagnostics()
    branch = find_active_branch(tmp_path / "s.jsonl", diag, read_node)
    assert branch.broken and "broken" in diag.warnings[0]
    assert [o for o, _, _ in branch_lines(tmp_path / "s.jsonl", diag, branch)] == offsets


def test_what_pass_1_keeps_grows_with_rewinds_not_with_records(tmp_path: Path) -> None:
    """A long chain with a line outside the tree every 10 records and 3 rewinds: the
    branch is stored as runs between those lines, not one entry per record."""
    lines: list[dict] = []
    parent = None
    for n in range(20_000):
        if n % 10 == 9:
            lines.append({"kind": "other", "n": n})
            continue
        if n in (5_000, 10_000, 15_000):
            parent = f"r{n - 4}"  # rewind 4 records back
        lines.append({"kind": "node", "id": f"r{n}", "parent": parent})
        parent = f"r{n}"
    write(tmp_path / "s.jsonl", lines)
    diag = Diagnostics()
    branch = find_active_branch(tmp_path / "s.jsonl", diag, read_node)
    assert branch.record_count() <= 2_000 + 3  # one run per gap line (and per rewind)
    got = list(branch_lines(tmp_path / "s.jsonl", diag, branch))
    assert len(got) == len(brute_force_branch(lines))


def test_fragments_of_a_record_are_all_kept(tmp_path: Path) -> None:
    """Qwen: pieces of one record share its id; each piece is on the branch."""
    lines = [
        {"kind": "node", "id": "a", "parent": None},
        {"kind": "node", "id": "b", "parent": "a"},
        {"kind": "node", "id": "sibling", "parent": "a"},
        {"kind": "node", "id": "b", "parent": "a"},
        {"kind": "node", "id": "c", "parent": "b"},
    ]
    offsets = write(tmp_path / "s.jsonl", lines)
    diag = Diagnostics()
    branch = find_active_branch(tmp_path / "s.jsonl", diag, read_node, fragments=True)
    got = [o for o, _, _ in branch_lines(tmp_path / "s.jsonl", diag, branch)]
    assert got == [offsets[i] for i in (0, 1, 3, 4)]
    assert diag.off_branch_records == 1


def test_fragment_memory_is_bounded(tmp_path: Path) -> None:
    """Only the most recent FRAGMENT_MEMORY branch ids are remembered (the bound keeps
    memory flat): a piece of the leaf written more than that many branch records before
    it counts as off the branch, a piece of a record nearby is kept."""
    last = FRAGMENT_MEMORY + 10
    lines = [
        {"kind": "node", "id": "r0", "parent": None},
        {"kind": "node", "id": f"r{last}", "parent": "r0"},
    ]  # too far back
    for n in range(1, last + 1):
        lines.append({"kind": "node", "id": f"r{n}", "parent": f"r{n - 1}"})
        if n == last - 5:
            lines.append({"kind": "node", "id": f"r{last - 2}", "parent": "r0"})  # near
    offsets = write(tmp_path / "s.jsonl", lines)
    diag = Diagnostics()
    branch = find_active_branch(tmp_path / "s.jsonl", diag, read_node, fragments=True)
    got = {o for o, _, _ in branch_lines(tmp_path / "s.jsonl", diag, branch)}
    assert diag.off_branch_records == 1
    assert offsets[1] not in got and len(got) == len(lines) - 1
