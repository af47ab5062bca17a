"""Issue 21: a pointer change taken back (`restore_pointer`) leaves the store's row as it
was, its time included, on every backend: a failed or killed export's undo is then
byte-identical, not just equal in value."""

from __future__ import annotations

import time

from passdown.store import Store


def test_restore_pointer_puts_the_value_and_its_time_back(store: Store) -> None:
    assert store.pointer_stamp("P", "active") is None
    assert store.set_pointer("P", "active", None, "h1")
    stamp = store.pointer_stamp("P", "active")
    assert stamp
    time.sleep(0.01)
    assert store.set_pointer("P", "active", "h1", "h2")
    assert store.pointer_stamp("P", "active") != stamp  # a change moves the time on

    assert not store.restore_pointer("P", "active", "h1", "h1", stamp)  # compare-and-swap
    assert store.restore_pointer("P", "active", "h2", "h1", stamp)
    assert store.get_pointer("P", "active") == "h1"
    assert store.pointer_stamp("P", "active") == stamp

    assert store.restore_pointer("P", "active", "h1", None, None)  # an undo of a creation
    assert store.get_pointer("P", "active") is None
    assert store.restore_pointer("P", "active", None, "h1", stamp)  # an undo of a removal
    assert (store.get_pointer("P", "active"), store.pointer_stamp("P", "active")) == ("h1", stamp)


def test_set_pointer_still_stamps_now(store: Store) -> None:
    assert store.set_pointer("P", "claim", None, "a")
    first = store.pointer_stamp("P", "claim")
    time.sleep(0.01)
    assert store.set_pointer("P", "claim", "a", "b")
    assert store.pointer_stamp("P", "claim") != first
    assert store.pointer_stamp("Q", "claim") is None  # per exact scope, as the value
