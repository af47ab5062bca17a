"""Store benchmark: bulk-store throughput and scoped query latency as the store grows.

    python benchmarks/bench_store.py                      # SQLite 1,000,000 + PostgreSQL 100,000
    python benchmarks/bench_store.py --records 20000 --pg-records 5000   # a quick smoke run
    python benchmarks/bench_store.py --backend sqlite

Layout: the measured project "bench-a" holds `--scope-size` records; every other
project holds the same number. Query latency for "bench-a" (scope + one text word,
newest 20) is measured at `--small` total records and again at the full size, so the
two figures show whether other projects' growth slows a project's queries.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from passdown.store import Store, open_store

PG_URL = os.environ.get(
    "PASSDOWN_TEST_PG_URL", "postgresql://passdown:passdown@127.0.0.1:5432/passdown_test"
)
KINDS = ["what_i_did", "next", "blockers", "files_touched", "open_questions", "decisions"]
BATCH = 1000


def vocabulary(size: int = 5000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return sorted({"".join(rng.choices(letters, k=rng.randint(4, 9))) for _ in range(size)})


def make_record(n: int, project: str, words: list[str], rng: random.Random) -> dict[str, Any]:
    def text(k: int) -> str:
        return " ".join(rng.choices(words, k=k))

    return {
        "id": f"rec-{n}",
        "type": rng.choice(["handoff", "handoff", "status", "task"]),
        "title": text(6),
        "scope": {"project": project},
        "content": text(40),
        "annotations": [{"kind": k, "value": text(8)} for k in rng.sample(KINDS, 3)],
        "created_at": f"2026-{1 + n % 12:02}-{1 + n % 28:02}T{n % 24:02}:{n % 60:02}:{(n // 60) % 60:02}Z",
        "provenance": {"agent": "bench", "session": f"s-{n // 1000}"},
    }


def records(start: int, stop: int, scope_size: int, words: list[str]) -> Iterator[dict[str, Any]]:
    """Records start..stop; record n belongs to project n // scope_size (0 is "bench-a")."""
    rng = random.Random(start)
    for n in range(start, stop):
        group = n // scope_size
        yield make_record(n, "bench-a" if group == 0 else f"other-{group}", words, rng)


def load(store: Store, start: int, stop: int, scope_size: int, words: list[str]) -> float:
    """Store records start..stop in batches; returns records per second."""
    began = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for n, data in enumerate(records(start, stop, scope_size, words), start=start + 1):
        batch.append(data)
        if len(batch) == BATCH:
            store.store_many(batch)
            batch.clear()
        if n % 100_000 == 0:
            rate = (n - start) / (time.perf_counter() - began)
            print(f"    ... {n:>9,} stored ({rate:,.0f}/s)", flush=True)
    if batch:
        store.store_many(batch)
    return (stop - start) / (time.perf_counter() - began)


def single_store_rate(store: Store, count: int, words: list[str]) -> float:
    """One transaction per record, as `passdown export` does."""
    rng = random.Random(99)
    items = [make_record(10**9 + i, "bench-single", words, rng) for i in range(count)]
    began = time.perf_counter()
    for data in items:
        store.store(data)
    return count / (time.perf_counter() - began)


def latencies(run: Callable[[int], object], count: int) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    times = []
    for i in range(count):
        began = time.perf_counter()
        run(i)
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))]


def measure_queries(store: Store, words: list[str], count: int) -> dict[str, tuple[float, float]]:
    rng = random.Random(5)
    picks = [rng.choice(words) for _ in range(count)]
    return {
        "scope + text": latencies(lambda i: store.query("bench-a", text=picks[i], limit=20), count),
        "scope + text + kind": latencies(
            lambda i: store.query("bench-a", text=picks[i], kind="blockers", limit=20), count
        ),
        "scope only (newest 20)": latencies(lambda i: store.query("bench-a", limit=20), count),
        "retrieve by id": latencies(lambda i: store.retrieve("bench-a", f"rec-{i % 100}"), count),
    }


def report(label: str, figures: dict[str, tuple[float, float]]) -> None:
    print(f"  queries at {label}:")
    for name, (p50, p99) in figures.items():
        print(f"    {name:<24} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms")


def run(name: str, url: str, total: int, small: int, scope_size: int, queries: int) -> None:
    words = vocabulary()
    small = min(small, total)
    print(f"\n{name}: {total:,} records, {scope_size:,} per project ({url})", flush=True)
    with open_store(url) as store:
        rate = load(store, 0, small, scope_size, words)
        print(f"  bulk store to {small:,}: {rate:,.0f} records/s")
        report(f"{small:,} records", measure_queries(store, words, queries))
        if total > small:
            rate = load(store, small, total, scope_size, words)
            print(f"  bulk store {small:,} -> {total:,}: {rate:,.0f} records/s")
            report(f"{total:,} records", measure_queries(store, words, queries))
        single = single_store_rate(store, 2000, words)
        print(f"  single-record store (one transaction each): {single:,.0f} records/s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--records", type=int, default=1_000_000, help="SQLite total records")
    parser.add_argument("--pg-records", type=int, default=100_000, help="PostgreSQL total records")
    parser.add_argument("--small", type=int, default=10_000, help="size of the first measurement")
    parser.add_argument("--scope-size", type=int, default=1000, help="records per project")
    parser.add_argument("--queries", type=int, default=500, help="queries per measurement")
    parser.add_argument("--pg-url", default=PG_URL)
    args = parser.parse_args(argv)

    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="passdown-bench-") as folder:
            url = f"sqlite://{Path(folder) / 'store.db'}"
            run("SQLite", url, args.records, args.small, args.scope_size, args.queries)
            size = sum(p.stat().st_size for p in Path(folder).iterdir()) / 1e6
            print(f"  database size: {size:,.0f} MB")
    if args.backend in ("postgresql", "both"):
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        sep = "&" if "?" in args.pg_url else "?"
        try:
            run("PostgreSQL", f"{args.pg_url}{sep}schema={schema}", args.pg_records, args.small,
                args.scope_size, args.queries)  # fmt: skip
        finally:
            _drop_schema(args.pg_url, schema)
    return 0


def _drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


if __name__ == "__main__":
    raise SystemExit(main())
