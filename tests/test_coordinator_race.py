"""Two coordinators racing on one project (threads and processes), and a crash between
store and launch: compare-and-swap decides one winner, and a re-run finishes the job
exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from passdown import HandoffCoordinator
from passdown.coordinator import ExecuteResult, HandoffConflict
from passdown.coordinator import _execute as execute
from test_coordinator_fixtures import launches

SRC = Path(__file__).resolve().parents[1] / "src"

pytest_plugins = ["test_coordinator_fixtures"]


def _race(project: Path, n: int) -> tuple[list[ExecuteResult], list[HandoffConflict], list[str]]:
    """n coordinators (each its own store connection) prepare from the same state, then
    execute at the same moment."""
    coordinators = [HandoffCoordinator(project, identity=f"c{i}") for i in range(n)]
    packages = [
        c.prepare_handoff_sync("coding-agent", f"from c{i}") for i, c in enumerate(coordinators)
    ]
    barrier = threading.Barrier(n)
    won: list[ExecuteResult] = []
    lost: list[HandoffConflict] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            won.append(coordinators[i].execute_handoff_sync(packages[i], "coding-agent"))
        except HandoffConflict as exc:
            lost.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won, lost, [p.id for p in packages]


def test_racing_threads_have_exactly_one_winner(project: Path) -> None:
    won, lost, ids = _race(project, 4)
    assert len(won) == 1 and len(lost) == 3
    coordinator = HandoffCoordinator(project)
    assert coordinator.load_handoff().id == won[0].package.id
    statuses = sorted(coordinator.status(i).status for i in ids)  # type: ignore[union-attr]
    assert statuses == ["published", "rejected", "rejected", "rejected"]
    loser = next(i for i in ids if coordinator.status(i).status == "rejected")  # type: ignore[union-attr]
    assert "lost the race" in (coordinator.events(loser)[-1].note or "")


def test_racing_processes_have_exactly_one_winner(project: Path, tmp_path: Path) -> None:
    coordinator = HandoffCoordinator(project)
    files = []
    for i in range(4):
        path = tmp_path / f"package-{i}.json"
        path.write_text(
            coordinator.prepare_handoff_sync("coding-agent", f"from process {i}").to_json()
        )
        files.append(path)
    go = tmp_path / "go"
    script = (
        "import os, sys, time\n"
        "from passdown import HandoffCoordinator, HandoffConflict, HandoffPackage\n"
        "c = HandoffCoordinator(sys.argv[1])\n"
        "p = HandoffPackage.model_validate_json(open(sys.argv[2]).read())\n"
        "c.store()  # open the store before the start signal\n"
        "open(sys.argv[3] + '.' + str(os.getpid()), 'w').close()\n"
        "while not os.path.exists(sys.argv[3]):\n"
        "    time.sleep(0.001)\n"
        "try:\n"
        "    c.execute_handoff_sync(p, 'coding-agent')\n"
        "    print('won')\n"
        "except HandoffConflict:\n"
        "    print('lost')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(project), str(f), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for f in files
    ]
    while len(list(tmp_path.glob("go.*"))) < len(procs):  # every process is ready
        if any(p.poll() is not None for p in procs):
            break
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    results = sorted(out.strip() for out, _ in outputs)
    assert results == ["lost", "lost", "lost", "won"], [err for _, err in outputs]
    winner = HandoffCoordinator(project).load_handoff()
    assert winner.status == "published"


def test_executing_one_package_from_two_threads_launches_once(
    project: Path, fake_agents: Path
) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("claude", "x")
    barrier = threading.Barrier(2)
    results: list[ExecuteResult] = []

    def run() -> None:
        other = HandoffCoordinator(project)
        barrier.wait()
        results.append(other.execute_handoff_sync(package))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.launched for r in results) == [False, True]
    assert len(launches(fake_agents)) == 1


class Crash(BaseException):
    """Stands for the process dying: nothing catches it."""


def test_crash_between_store_and_launch_is_finished_once_by_a_rerun(
    project: Path,
    fake_agents: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("claude", "x")

    def crash(*_args: object, **_kwargs: object) -> None:
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(execute, "_launch", crash)
        with pytest.raises(Crash):
            coordinator.execute_handoff_sync(package)
    assert coordinator.status(package.id).status == "published"  # type: ignore[union-attr]
    assert launches(fake_agents) == []

    rerun = HandoffCoordinator(project).execute_handoff_sync(package)
    assert rerun.launched
    again = HandoffCoordinator(project).execute_handoff_sync(package)
    assert again.already_launched and not again.launched
    assert len(launches(fake_agents)) == 1
    assert [e.status for e in coordinator.events(package.id)] == ["prepared", "published"]


def test_process_killed_after_store_is_finished_once_by_a_rerun(
    project: Path,
    fake_agents: Path,
    tmp_path: Path,
) -> None:
    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("claude", "x")
    path = tmp_path / "package.json"
    path.write_text(package.to_json())
    script = (
        "import os, sys\n"
        "from passdown import HandoffCoordinator, HandoffPackage\n"
        "from passdown.coordinator import _execute as execute\n"
        "def die(*a, **k):\n"
        "    os._exit(137)  # killed after store and publish, before the launch\n"
        "execute._launch = die\n"
        "p = HandoffPackage.model_validate_json(open(sys.argv[2]).read())\n"
        "HandoffCoordinator(sys.argv[1]).execute_handoff_sync(p)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run(
        [sys.executable, "-c", script, str(project), str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 137, proc.stderr
    assert coordinator.load_handoff().id == package.id
    assert launches(fake_agents) == []
    for _ in range(2):
        HandoffCoordinator(project).execute_handoff_sync(json.loads(path.read_text()))
    assert len(launches(fake_agents)) == 1


def test_a_launch_that_cannot_start_can_be_retried(
    project: Path, fake_agents: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown.errors import AgentNotInstalled

    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("claude", "x")
    with monkeypatch.context() as patch:
        patch.setenv(
            "PATH",
            os.pathsep.join(
                p
                for p in os.environ["PATH"].split(os.pathsep)
                if p != str(fake_agents.parent / "bin")
            ),
        )
        with pytest.raises(AgentNotInstalled):
            coordinator.execute_handoff_sync(package)
    assert coordinator.execute_handoff_sync(package).launched
    assert len(launches(fake_agents)) == 1


def test_a_twin_that_read_the_pointer_before_the_swap_does_not_reject_its_own_package(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving CI once hit with two threads executing one package: both find it
    `prepared`; thread B reads "nothing is active" just before thread A swaps the pointer
    to this very package, so B's own swap fails. The package is active, as B wanted: B
    must neither reject it nor raise."""
    from passdown.coordinator._lifecycle import Lifecycle

    coordinator = HandoffCoordinator(project)
    package = coordinator.prepare_handoff_sync("claude", "x")
    ctx = coordinator.context
    lc = ctx.lifecycle()
    # thread A, up to its swap: stored, prepared, the pointer moved to the package
    execute._store_record(ctx, package)
    lc.transition(package.id, "prepared", by="a", only_from=frozenset({None}))
    assert lc.swap_active(None, package.id)

    real_active = Lifecycle.active
    stale = iter([None])  # B's first look at the pointer predates A's swap

    def active(self: Lifecycle) -> str | None:
        return next(stale, real_active(self))

    monkeypatch.setattr(Lifecycle, "active", active)
    execute.publish(ctx, package)  # thread B
    monkeypatch.setattr(Lifecycle, "active", real_active)  # not undo(): it resets the store too
    assert next(stale, "used") == "used", "B read the stale pointer"
    assert real_active(lc) == package.id
    event = lc.current(package.id)
    assert event is not None and event.status == "published"
