"""Several processes writing at once, and a writer killed mid-transaction."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import passdown
from passdown.records import canonical_json
from passdown.store import Store, open_store

PROCESSES = 8
PER_PROCESS = 1000
SHARED = 50  # ids every process stores with identical content: must end up once each

_SRC = str(Path(next(iter(passdown.__path__))).parent)

# Runs in a child process: python -c WORKER URL INDEX COUNT GO_FILE
WORKER = textwrap.dedent(
    """
    import os, sys, time
    from passdown.store import open_store

    url, index, count, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

    def record(id, n):
        return {
            "id": id, "type": "handoff", "title": f"record {id}", "scope": {"project": "shared"},
            "content": f"worker payload number{n}",
            "annotations": [{"kind": "next", "value": f"step {n}"}],
            "created_at": f"2026-01-01T00:00:{n % 60:02}Z",
            "provenance": {"agent": "worker", "session": "s"},
        }

    with open_store(url) as store:
        print("ready", flush=True)
        while not os.path.exists(go):
            time.sleep(0.01)
        for n in range(count):
            store.store(record(f"w{index}-{n}", n))
            if n < SHARED:
                store.store(record(f"shared-{n}", n))
    """
).replace("SHARED", str(SHARED))

# python -c KILLED URL: stores 100 records one by one, then blocks half-way through a
# 1,000-record batch (inside its transaction) until it is killed.
KILLED = textwrap.dedent(
    """
    import sys, time
    from passdown.store import open_store

    def record(id):
        return {"id": id, "type": "task", "title": id, "scope": {"project": "k"},
                "content": "kill test", "created_at": "2026-01-01T00:00:00Z",
                "provenance": {"agent": "a", "session": "s"}}

    store = open_store(sys.argv[1])
    for n in range(100):
        store.store(record(f"committed-{n}"))
    put, calls = store._put, []

    def blocking_put(*args, **kwargs):
        put(*args, **kwargs)
        calls.append(1)
        if len(calls) == 500:
            print("inside", flush=True)
            time.sleep(600)

    store._put = blocking_put
    store.store_many([record(f"batch-{n}") for n in range(1000)])
    """
)


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_SRC, os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, env=env
    )


def _all_ids(store: Store, project: str) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = store.query(project, limit=1000, cursor=cursor)
        seen += [r.id for r in page.records]
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


@pytest.mark.timeout(120)
def test_parallel_writers_lose_and_duplicate_nothing(store_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    if store_url.startswith("postgresql"):
        # commits need not wait for the disk here: this test is about atomicity and
        # uniqueness, and it shares two cores with its own 8 server backends
        store_url += "&options=-csynchronous_commit%3Doff"
    with open_store(store_url):
        pass  # create the schema first, as a real deployment would
    workers = [
        _spawn(WORKER, store_url, str(i), str(PER_PROCESS), str(go)) for i in range(PROCESSES)
    ]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    go.touch()  # all start storing at once
    assert [w.wait(timeout=110) for w in workers] == [0] * PROCESSES

    with open_store(store_url) as store:
        found = _all_ids(store, "shared")
        expected = {f"w{i}-{n}" for i in range(PROCESSES) for n in range(PER_PROCESS)}
        expected |= {f"shared-{n}" for n in range(SHARED)}
        assert len(found) == len(set(found)) == len(expected)
        assert set(found) == expected
        assert [m.version for m in store.history("shared", "shared-7")] == [1]
        assert store.retrieve("shared", "w3-999").content == "worker payload number999"
        hits = store.query("shared", text="number999", limit=100).records
        assert sorted(r.id for r in hits) == [f"w{i}-999" for i in range(PROCESSES)]
        assert store.check() == []


@pytest.mark.timeout(60)
def test_a_writer_killed_mid_store_leaves_the_store_consistent(store_url: str) -> None:
    child = _spawn(KILLED, store_url)
    assert child.stdout is not None and child.stdout.readline().strip() == "inside"
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL

    with open_store(store_url) as store:
        assert store.check() == []
        found = _all_ids(store, "k")
        assert sorted(found) == sorted(f"committed-{n}" for n in range(100))  # the batch: nothing
        # the dead writer's locks are gone: the same batch now stores in full
        batch = [
            store.retrieve("k", "committed-0").model_copy(update={"id": f"batch-{n}"})
            for n in range(1000)
        ]
        store.store_many(batch)
        assert len(_all_ids(store, "k")) == 1100
        assert canonical_json(store.retrieve("k", "batch-999")) == canonical_json(batch[-1])
        assert store.check() == []
