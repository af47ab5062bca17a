"""What leaves with `passdown push`: every object reachable from refs/passdown/* on the
remote is walked; none holds a secret the redaction knows (its own test corpus) or an
absolute path outside the repository, even when the store held them (the edge redacts
and makes paths portable again)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from passdown.cli import main
from share_world import Side, git, make_remote, make_side
from test_redact import PLANTED, REALISTIC, SELF_EVIDENT


def every_object(remote: Path) -> bytes:
    """The raw content of every object reachable from the remote's passdown refs."""
    refs = git(remote, "for-each-ref", "--format=%(refname)", "refs/passdown/").split()
    assert refs
    listing = git(remote, "rev-list", "--objects", *refs)
    oids = "\n".join(line.split()[0] for line in listing.splitlines()) + "\n"
    out = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=remote,
        input=oids.encode(),
        capture_output=True,
        check=True,
    ).stdout
    assert out.count(b" blob ") >= 5 and out.count(b" commit ") >= 1 and out.count(b" tree ") >= 2
    return out


def test_no_secret_and_no_outside_path_in_any_pushed_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import passdown.store._base as base
    from passdown._git import project_name

    remote = make_remote(tmp_path)
    a: Side = make_side(tmp_path, "a", remote, monkeypatch)
    handoff_id = a.export()
    project = project_name(a.clone)
    secrets = [template.format(s=secret) for _, secret, template in SELF_EVIDENT]
    outside = [
        str(a.home / ".ssh" / "config"),
        str(tmp_path / "elsewhere" / "notes.txt"),
        "C:\\Users\\bob\\Desktop\\keys.txt",
        "/etc/ssl/private/server.key",
    ]
    inside = str(a.clone / "src" / "app.py")
    # the store redacts what it stores: let these through, as an older or foreign
    # writer's record could hold them, so that only the push's own edge stands between
    monkeypatch.setattr(base, "_redacted", lambda record: record)
    with a.store() as store:
        record = store.retrieve(project, handoff_id).model_dump(mode="json")
        steps = record["passdown_handoff"]["state"]["next_steps"]
        steps += [*secrets, REALISTIC, *outside, f"Edit {inside}"]
        record["title"] += " " + secrets[0]
        record["annotations"].append({"kind": "note", "value": REALISTIC})
        store.store(record, new_version=True)
        status = store.retrieve(project, f"{handoff_id}#published").model_dump(mode="json")
        status["content"] = f"published from {a.home} with {secrets[1]}"
        store.store(status, new_version=True)
        assert secrets[0] in store.retrieve(project, handoff_id).title  # held as is
    monkeypatch.undo()
    a.use()
    assert main(["push"]) == 0

    raw = every_object(remote)
    text = raw.decode("utf-8", "replace")
    for _, secret, _ in SELF_EVIDENT:
        assert secret not in text, secret
    for secret in PLANTED:
        assert secret not in text, secret
    for path in (str(tmp_path), str(a.home), "C:\\Users", "C:\\\\Users", "/etc/ssl"):
        assert path not in text, path
    assert "[REDACTED:" in text
    assert "{passdown-workspace}/src/app.py" in text  # inside the repository: relative
    absolute = re.compile(r"(?<![\w.~}>:/\\-])/(?:[\w.@+-]+/)+[\w.@+-]+")
    assert absolute.findall(text) == []
    assert "passdown@localhost" in text and "t@example.invalid" not in text  # no one's e-mail


def test_the_pulled_handoff_names_only_this_clones_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passdown._git import project_name

    remote = make_remote(tmp_path)
    a = make_side(tmp_path, "a", remote, monkeypatch)
    b = make_side(tmp_path, "b", remote, monkeypatch)
    handoff_id = a.export()
    assert main(["push"]) == 0
    b.use()
    assert main(["pull"]) == 0
    with b.store() as store:
        data = json.dumps(store.retrieve(project_name(b.clone), handoff_id).model_dump(mode="json"))
    assert str(a.clone) not in data and str(a.home) not in data
    assert str(b.clone) in data and "{passdown-workspace}" not in data
