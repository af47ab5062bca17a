"""The plan changes a two-core read's worker hands back (`passdown._half_extract.Partial`),
reduced as they come so that what travels is O(plan size), not O(plan operations).

The main process replays them onto the plan it read before the cut, which the worker
cannot see (`transcript.Plan`; a tree reader replays them onto its own copy too). A
change is kept unless the replay cannot tell it was dropped, whatever the plan before:

- a create of an id created before in the half (since the last full replacement)
  supersedes that earlier create and the updates made after it: the later create pops
  and re-adds the id either way. What the dropped ones did to the counters is carried
  on the later step (`PlanStep.skipped`: creates, for the numbering; `set_aside`: ids
  they reused, which only the half's own items can explain, so the worker knows it);
- updates of one id between two of its creates fold into one update (the last status
  and subject given; a deletion ends it, as the item is gone).

A create whose id the replay alone decides (no id given, or several items) or a full
replacement is a barrier: nothing is folded across it. Past `2 * PLAN_KEEP` items a
plan is cut back by rules that depend on the items it holds, so a merge whose plans
could get there is refused (`over_what_a_replay_keeps`); so is a half whose kept steps
pass `STEPS_KEEP` (`overflow`): the main process then reads that half itself."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import msgspec

from passdown._packed import Packed, unpacked
from passdown.transcript import PLAN_KEEP, Plan, PlanOp

KEYS_KEEP = 2 * PLAN_KEEP  # a replay past it cuts the plan back (`Plan._bound`)
# kept steps past which a half is not merged (`overflow`): an id keeps at most three
# (an update of the plan before the cut, its last create, an update after it) until a
# barrier; about 100 bytes each
STEPS_KEEP = 4 * KEYS_KEEP


class PlanStep(msgspec.Struct, array_like=True):
    op: PlanOp
    source: str
    created_id: str | None = None
    skipped: int = 0  # creates folded into this one (counted before it applies)
    set_aside: int = 0  # ids the folded creates' successors reused (counted after)

    def onto(self, plan: Plan, apply: Callable[..., object]) -> bool:
        """Replay this step onto `plan` through `apply(op, created_id=...)`, which applies
        an op to it; True when a folded create had reused an id (`PlanReplay.rekeyed`)."""
        plan.counter += self.skipped
        apply(self.op, created_id=self.created_id)
        plan.set_aside += self.set_aside
        return self.set_aside > 0


def steps_of(data: bytes) -> Iterator[PlanStep]:
    return unpacked(data, PlanStep)


def _own_key(op: PlanOp, created_id: str | None) -> str | None:
    """The id a create gives its one item whatever the plan before, else None."""
    if len(op.items) != 1:
        return None
    return created_id or op.items[0].id or None


class PlanSteps:
    """The reduced plan changes of a half, in replay order (see the module doc)."""

    def __init__(self) -> None:
        self._steps: dict[int, PlanStep] = {}
        self._next = 0
        self._created: dict[str, int] = {}  # id -> its last create in this segment
        self._after: dict[str, int] = {}  # id -> the folded update after that create
        self._before: dict[str, int] = {}  # id -> the folded update before any create
        self._keys: set[str] = set()  # ids the half's replay can hold
        self._unkeyed = 0  # items whose ids only the replay decides
        self.created = False  # a kept step created an item
        self.overflow = False

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def keys(self) -> int:
        """How many items the half can add to a plan (an upper bound)."""
        return len(self._keys) + self._unkeyed

    def clear(self) -> None:
        """Everything before a full replacement that created nothing is overwritten."""
        self._steps.clear()
        self._created.clear()
        self._after.clear()
        self._before.clear()
        self._keys.clear()
        self._unkeyed = 0

    def add(self, op: PlanOp, source: str, created_id: str | None) -> None:
        if self.overflow:
            return
        if op.op == "update":
            self._update(op, source)
        elif op.op == "create" and (key := _own_key(op, created_id)) is not None:
            self._create(key, op, source, created_id)
        else:  # a barrier: a replacement, or a create numbered by the replay
            self._created.clear()
            self._after.clear()
            self._before.clear()
            self.created = self.created or op.op == "create"
            if op.op == "replace":
                self._keys.update(item.id for item in op.items)
            else:
                self._unkeyed += len(op.items)
            self._push(PlanStep(op, source, created_id))
        if len(self._steps) > STEPS_KEEP or self.keys > KEYS_KEEP:
            self.overflow = True
            self._steps.clear()

    def packed(self) -> bytes:
        packed: Packed[PlanStep] = Packed()
        for step in self._steps.values():
            packed.append(step)
        return bytes(packed.data)

    def _push(self, step: PlanStep) -> int:
        self._next += 1
        self._steps[self._next] = step
        return self._next

    def _create(self, key: str, op: PlanOp, source: str, created_id: str | None) -> None:
        self.created = True
        self._keys.add(key)
        skipped = set_aside = 0
        earlier = self._created.get(key)
        if earlier is not None:  # this create pops whatever that one left
            folded = self._steps.pop(earlier)
            update = self._after.pop(key, None)
            gone = update is not None and self._steps.pop(update).op.status == "deleted"
            skipped = folded.skipped + 1
            set_aside = folded.set_aside + (not gone)
        self._created[key] = self._push(PlanStep(op, source, created_id, skipped, set_aside))

    def _update(self, op: PlanOp, source: str) -> None:
        key = op.item_id or ""
        slots = self._after if key in self._created else self._before
        at = slots.get(key)
        if at is None:
            slots[key] = self._push(PlanStep(op, source))
            return
        old = self._steps[at].op
        if old.status == "deleted":
            return  # the item is gone: a later update of it changes nothing
        folded = PlanOp(
            op="update",
            item_id=op.item_id,
            status=op.status or old.status,
            subject=op.subject or old.subject,
        )
        self._steps[at] = PlanStep(folded, source)


def over_what_a_replay_keeps(plan_size: int, half_keys: int) -> bool:
    """Whether a plan of `plan_size` items, with the half's changes replayed on it,
    could pass `KEYS_KEEP` and be cut back (which the reduction does not follow)."""
    return plan_size + half_keys > KEYS_KEEP
