"""`passdown push`/`pull` between two clones with two HOMEs over a bare remote: the
handoff arrives with this clone's paths and becomes active; claims travel back; two
clones changing one handoff keep both changes; the newest wins by creation time; the
detached HEAD, a fork as origin, a shallow clone and a repository without commits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from passdown.cli import main
from share_world import Side, git, make_remote, make_side, refs_on

if TYPE_CHECKING:
    from passdown.records import Scope


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


@pytest.fixture
def a(tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch) -> Side:
    return make_side(tmp_path, "a", remote, monkeypatch)


@pytest.fixture
def b(tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch) -> Side:
    return make_side(tmp_path, "b", remote, monkeypatch)


def status_of(side: Side, handoff_id: str) -> str | None:
    from passdown._git import project_name
    from passdown.coordinator._lifecycle import Lifecycle

    with side.store() as store:
        event = Lifecycle(store, _scope(project_name(side.clone))).current(handoff_id)
    return event.status if event else None


def active_of(side: Side) -> str | None:
    from passdown._git import project_name

    with side.store() as store:
        return store.get_pointer(project_name(side.clone), "active-handoff")


def _scope(project: str) -> Scope:
    from passdown.records import Scope

    return Scope(project=project)


def test_a_pushed_handoff_arrives_in_another_clone_with_its_paths(
    a: Side, b: Side, remote: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from passdown._git import project_name
    from passdown._handoff_record import package_from_record

    handoff_id = a.export()
    assert main(["push", "--json"]) == 0
    pushed = json.loads(capsys.readouterr().out)
    assert [i["id"] for i in pushed["pushed"]] == [handoff_id]
    (ref,) = refs_on(remote)
    assert handoff_id in ref and ref.startswith("refs/passdown/")
    assert main(["push"]) == 0  # again: nothing to push
    assert "nothing to push" in capsys.readouterr().out

    b.use()
    assert main(["pull", "--json"]) == 0
    pulled = json.loads(capsys.readouterr().out)
    assert pulled["active"] == handoff_id and pulled["refused"] == []
    assert active_of(b) == handoff_id and status_of(b, handoff_id) == "published"
    with b.store() as store:
        record = store.retrieve(project_name(b.clone), handoff_id)
    package = package_from_record(record)
    assert package.workspace == str(b.clone) and package.is_intact()
    assert package.handoff is not None and package.handoff.workspace.path == str(b.clone)
    markdown = (b.clone / ".agent-handoff" / "HANDOFF.md").read_text()
    assert str(b.clone) in markdown and str(a.clone) not in markdown
    assert str(a.home) not in markdown
    assert json.loads((b.clone / ".agent-handoff" / "handoff.json").read_text())["id"] == handoff_id
    assert main(["pull"]) == 0  # again: nothing new
    assert "nothing new" in capsys.readouterr().out
    # the writer's own record keeps its absolute paths
    a.use()
    with a.store() as store:
        own = package_from_record(store.retrieve(project_name(a.clone), handoff_id))
    assert own.workspace == str(a.clone)


def test_a_claim_travels_back_and_the_writer_does_not_take_it_over(
    a: Side, b: Side, capsys: pytest.CaptureFixture[str]
) -> None:
    from passdown.integrations._continuity import pickup

    handoff_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    assert pickup("codex", "b-session", str(b.clone)).outcome == f"claimed {handoff_id}"
    assert main(["push"]) == 0
    a.use()
    assert status_of(a, handoff_id) == "published"
    assert main(["pull"]) == 0
    assert status_of(a, handoff_id) == "claimed"
    assert pickup("claude", "a-new-session", str(a.clone)).outcome == "already-claimed"
    capsys.readouterr()


def test_two_clones_changing_one_handoff_both_keep_their_change(
    a: Side, b: Side, remote: Path
) -> None:
    from passdown._git import project_name
    from passdown.coordinator._lifecycle import Lifecycle

    handoff_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    with b.store() as store:
        Lifecycle(store, _scope(project_name(b.clone))).transition(handoff_id, "claimed", by="b")
    a.use()
    with a.store() as store:
        Lifecycle(store, _scope(project_name(a.clone))).transition(handoff_id, "superseded", by="a")
    assert main(["push"]) == 0  # a first
    b.use()
    assert main(["push"]) == 0  # rejected once (a moved the ref), merged, pushed again
    (ref,) = refs_on(remote)
    files = git(remote, "ls-tree", "-r", "--name-only", ref).splitlines()
    assert {"status/published.json", "status/claimed.json", "status/superseded.json"} <= set(files)
    assert int(git(remote, "rev-list", "--count", ref)) == 4  # a's, a's, b's, the merge
    a.use()
    assert main(["pull"]) == 0
    assert status_of(a, handoff_id) == "superseded"  # the furthest status of the two


def test_the_newest_by_creation_time_wins_whatever_the_clocks(
    a: Side, b: Side, monkeypatch: pytest.MonkeyPatch
) -> None:
    import passdown._pipeline as pipeline

    # b's clock runs a day ahead: its own handoff, written before a's, is "newer"
    monkeypatch.setattr(pipeline, "now_iso", lambda: "2099-01-02T00:00:00Z")
    b_id = b.export()
    monkeypatch.undo()
    a.use()
    a_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    assert active_of(b) == b_id  # a's is older by creation time: b's own stays active
    assert json.loads((b.clone / ".agent-handoff" / "handoff.json").read_text())["id"] == b_id
    # the other way round: a's clock ahead, so a's is newer and becomes b's active one
    monkeypatch.setattr(pipeline, "now_iso", lambda: "2099-06-01T00:00:00Z")
    a.use()
    a2_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    assert active_of(b) == a2_id and a2_id != a_id


def test_detached_head_takes_the_handoff_of_that_commit(a: Side, b: Side) -> None:
    commit = git(a.clone, "rev-parse", "HEAD")
    git(a.clone, "checkout", "-q", "--detach", commit)
    handoff_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    assert active_of(b) is None  # on main: a detached handoff is no branch's
    git(b.clone, "checkout", "-q", "--detach", commit)
    assert main(["pull"]) == 0
    assert active_of(b) == handoff_id


def test_a_fork_as_origin_shares_the_scope_through_upstream(
    tmp_path: Path, a: Side, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown._git import project_name

    fork = tmp_path / "fork.git"
    git(tmp_path, "clone", "-q", "--bare", str(remote), str(fork))
    b = make_side(tmp_path, "b", fork, monkeypatch)
    assert project_name(b.clone) != project_name(a.clone)  # origin alone: another scope
    git(b.clone, "remote", "add", "upstream", str(remote))
    assert project_name(b.clone) == project_name(a.clone)
    handoff_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull", "upstream"]) == 0
    assert active_of(b) == handoff_id


def test_a_committed_scope_setting_names_one_scope_for_every_clone(
    tmp_path: Path, a: Side, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown._git import project_name

    (a.clone / ".passdown.toml").write_text('project = "acme-app"\n')
    git(a.clone, "add", ".passdown.toml")
    git(a.clone, "commit", "-q", "-m", "scope")
    git(a.clone, "push", "-q", "origin", "main")
    other = tmp_path / "elsewhere.git"  # another remote entirely: the same scope
    git(tmp_path, "clone", "-q", "--bare", str(remote), str(other))
    b = make_side(tmp_path, "b", other, monkeypatch)
    assert project_name(b.clone) == project_name(a.clone)
    assert project_name(a.clone).startswith("acme-app~")
    (b.clone / ".passdown.toml").write_text("project = [1]\n")
    b.use()
    assert main(["push"]) == 2  # an unusable setting is said, not guessed around


def test_a_shallow_clone_pushes_and_pulls(
    tmp_path: Path, a: Side, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handoff_id = a.export()
    assert main(["push"]) == 0
    b = make_side(tmp_path, "b", remote, monkeypatch, "--depth", "1", "--no-local")
    b.use()
    git(b.clone, "remote", "set-url", "origin", remote.as_uri())
    assert git(b.clone, "rev-parse", "--is-shallow-repository") == "true"
    assert main(["pull"]) == 0
    assert active_of(b) == handoff_id
    import passdown._pipeline as pipeline

    # a minute later (exports in the same second would be ordered by their ids)
    monkeypatch.setattr(pipeline, "now_iso", lambda: "2099-01-01T00:01:00Z")
    b_id = b.export()
    assert main(["push"]) == 0
    a.use()
    assert main(["pull"]) == 0
    assert active_of(a) == b_id


def test_a_repository_without_commits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(empty))
    a = make_side(tmp_path, "a", empty, monkeypatch)
    b = make_side(tmp_path, "b", empty, monkeypatch)
    handoff_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    assert active_of(b) == handoff_id
    assert (b.clone / ".agent-handoff" / "HANDOFF.md").is_file()


def test_dry_run_says_what_would_leave_and_pushes_nothing(
    a: Side, remote: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    handoff_id = a.export()
    assert main(["push", "--dry-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run"] and [i["id"] for i in report["pushed"]] == [handoff_id]
    paths = {f["path"] for f in report["files"]}
    assert {"record.json", "HANDOFF.md", "handoff.json", "digest"} <= paths
    assert "status/published.json" in paths
    assert refs_on(remote) == {}
    assert main(["push", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would be new" in out and "HANDOFF.md" in out


def test_dry_run_out_writes_exactly_the_bytes_a_push_then_sends(
    a: Side, remote: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`push --dry-run --out DIR` lets a user read what would leave: each file, byte for
    byte what the push then puts on the remote, and nothing is pushed by it."""
    a.export()
    out = tmp_path / "would-leave"
    assert main(["push", "--dry-run", "--out", str(out), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["files"]
    assert refs_on(remote) == {} and listed and all("data" not in f for f in listed)
    written = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert sorted(written) == sorted(f"{f['ref']}/{f['path']}" for f in listed)
    assert main(["push"]) == 0
    for name, data in written.items():
        parts = name.split("/")  # refs/passdown/<scope>/<branch>/<handoff>, then the path
        ref, path = "/".join(parts[:5]), "/".join(parts[5:])
        sent = subprocess.run(
            ["git", "-C", str(remote), "cat-file", "blob", f"{ref}:{path}"],
            capture_output=True,
            check=True,
        ).stdout
        assert sent == data, name
    assert main(["push", "--out", str(out)]) == 2  # --out only with --dry-run


def test_prune_keeps_the_newest_per_branch(
    a: Side, remote: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import passdown._pipeline as pipeline

    ids = []
    for day in ("01", "02", "03"):
        monkeypatch.setattr(pipeline, "now_iso", lambda d=day: f"2026-01-{d}T00:00:00Z")
        ids.append(a.export(summary=day))
        (a.clone / f"f{day}.txt").write_text(day)  # each export sees another workspace
    assert main(["push"]) == 0
    assert len(refs_on(remote)) == 3
    capsys.readouterr()
    assert main(["push", "--prune", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(i["id"] for i in report["pruned"]) == sorted(ids[:2])
    (left,) = refs_on(remote)
    assert ids[2] in left
    assert main(["push"]) == 0  # what was pruned does not come back
    assert len(refs_on(remote)) == 1


def test_two_clones_pushing_at_the_same_moment_lose_nothing(a: Side, b: Side, remote: Path) -> None:
    import os
    import subprocess
    import sys

    from passdown._git import project_name
    from passdown.coordinator._lifecycle import Lifecycle

    shared_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    with b.store() as store:
        Lifecycle(store, _scope(project_name(b.clone))).transition(shared_id, "claimed", by="b")
    b_id = b.export()
    (a.clone / "more.txt").write_text("more")
    a_id = a.export()
    with a.store() as store:
        Lifecycle(store, _scope(project_name(a.clone))).transition(shared_id, "superseded", by="a")

    def start(side: Side) -> subprocess.Popen[str]:
        env = {
            **os.environ,
            "HOME": str(side.home),
            "PASSDOWN_DATA_DIR": str(side.home / "passdown-data"),
        }
        return subprocess.Popen(
            [sys.executable, "-m", "passdown", "push", "-C", str(side.clone)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    pushes = [start(a), start(b)]
    for proc in pushes:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    names = refs_on(remote)
    for handoff_id in (shared_id, a_id, b_id):
        assert any(name.endswith("_" + handoff_id) for name in names), handoff_id
    (shared_ref,) = [n for n in names if n.endswith("_" + shared_id)]
    files = set(git(remote, "ls-tree", "-r", "--name-only", shared_ref).splitlines())
    assert {"status/claimed.json", "status/superseded.json"} <= files


def test_passdown_scope_says_where_the_scope_comes_from_and_names_it(
    a: Side, capsys: pytest.CaptureFixture[str]
) -> None:
    from passdown._git import project_name

    a.use()
    assert main(["scope", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == {"project": project_name(a.clone), "from": "the remote 'origin'"}
    git(a.clone, "remote", "add", "upstream", str(a.clone))
    assert main(["scope"]) == 0
    assert "from the remote 'upstream'" in capsys.readouterr().out
    (a.clone / ".passdown.toml").write_text('# team settings\n\n[other]\nproject = "x"\n')
    assert main(["scope", 'acme "app"', "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["from"] == ".passdown.toml" and shown["project"].startswith('acme "app"~')
    text = (a.clone / ".passdown.toml").read_text()
    assert text.startswith('project = "acme \\"app\\""\n# team settings') and "[other]" in text
    assert main(["scope", "a/b"]) == 2
    assert main(["scope", "x", "-C", str(a.home)]) == 2


def test_a_pull_merges_a_handoff_both_clones_changed(
    a: Side, b: Side, remote: Path, tmp_path: Path
) -> None:
    from passdown._git import project_name
    from passdown.coordinator._lifecycle import Lifecycle

    handoff_id = a.export()
    project = project_name(a.clone)
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    with b.store() as store:
        Lifecycle(store, _scope(project)).transition(handoff_id, "claimed", by="b")
    git(b.clone, "remote", "set-url", "origin", str(tmp_path / "offline.git"))
    assert main(["push"]) == 16  # b's change is committed locally, not pushed
    git(b.clone, "remote", "set-url", "origin", str(remote))
    a.use()
    with a.store() as store:
        Lifecycle(store, _scope(project)).transition(handoff_id, "superseded", by="a")
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0  # the two versions of the ref are merged here
    assert status_of(b, handoff_id) == "superseded"
    assert main(["push"]) == 0  # the merge is a fast-forward of the remote's
    (ref,) = refs_on(remote)
    files = set(git(remote, "ls-tree", "-r", "--name-only", ref).splitlines())
    assert {"status/claimed.json", "status/superseded.json"} <= files


def test_a_push_makes_the_files_again_only_for_handoffs_that_changed(
    a: Side, monkeypatch: pytest.MonkeyPatch
) -> None:
    import passdown.share._push as push
    from passdown._git import project_name
    from passdown.coordinator._lifecycle import Lifecycle

    a.export()
    (a.clone / "more.txt").write_text("more")
    second = a.export()
    assert main(["push"]) == 0
    made: list[str] = []
    real = push.shared_files

    def counted(record, *args):  # type: ignore[no-untyped-def]
        made.append(record.id)
        return real(record, *args)

    monkeypatch.setattr(push, "shared_files", counted)
    assert main(["push"]) == 0
    assert made == []
    with a.store() as store:
        Lifecycle(store, _scope(project_name(a.clone))).transition(second, "claimed", by="x")
    assert main(["push"]) == 0
    assert made == [second]
