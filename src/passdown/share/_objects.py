"""The git plumbing of sharing: listing refs (local and remote), reading a commit's
files, writing commits (one `git fast-import` for all of them), fetching and pushing."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from passdown.errors import ShareError
from passdown.share._gitio import Git
from passdown.share._layout import MAX_FILE_BYTES

# a rejection another push caused (it moved or held the ref meanwhile): fetch, merge, retry
_RETRY = ("fetch first", "non-fast-forward", "lock", "failed to update ref", "incorrect old value")
_REFSPECS_PER_CALL = 200  # refspecs per fetch/push: far below any command line's limit


@dataclass(slots=True)
class NewCommit:
    ref: str
    files: dict[str, bytes]
    parents: list[str] = field(default_factory=list)  # the first is the ref's current commit
    message: str = ""


@dataclass(slots=True)
class PushOutcome:
    done: dict[str, str] = field(default_factory=dict)  # ref -> "new" | "updated" | "deleted"
    behind: list[str] = field(default_factory=list)  # rejected: the remote has other commits
    refused: dict[str, str] = field(default_factory=dict)  # ref -> the remote's reason


def local_refs(git: Git, prefix: str) -> dict[str, str]:
    out = git.must("for-each-ref", "--format=%(objectname) %(refname)", prefix + "/")
    refs = {}
    for line in out.decode("utf-8", "replace").splitlines():
        oid, _, name = line.partition(" ")
        refs[name] = oid
    return refs


def local_subjects(git: Git, prefix: str) -> dict[str, str]:
    """{ref: the subject of its commit} of the local refs under `prefix`."""
    out = git.must("for-each-ref", "--format=%(refname)%09%(contents:subject)", prefix + "/")
    found = {}
    for line in out.decode("utf-8", "replace").splitlines():
        name, _, subject = line.partition("\t")
        found[name] = subject
    return found


def remote_refs(git: Git, remote: str, prefix: str) -> dict[str, str]:
    """The remote's refs under `prefix`, by name only (`git ls-remote`: no object moves)."""
    result = git.run("ls-remote", "--refs", remote, prefix + "/*")
    if not result.ok:
        raise ShareError(
            f"cannot reach the share remote {remote!r}: {result.error}",
            hint="check the remote's name or URL and your access; nothing was shared",
        )
    refs = {}
    for line in result.out.decode("utf-8", "replace").splitlines():
        oid, _, name = line.partition("\t")
        if name.startswith(prefix + "/"):
            refs[name] = oid
    return refs


def object_types(git: Git, oids: Iterable[str]) -> dict[str, str]:
    """{oid: type} of the objects this repository has ("missing" for the others)."""
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    out = git.must("cat-file", "--batch-check", input=("\n".join(wanted) + "\n").encode())
    types = {}
    for oid, line in zip(wanted, out.decode("utf-8", "replace").splitlines(), strict=False):
        parts = line.split()
        types[oid] = parts[1] if len(parts) >= 2 and parts[1] != "missing" else "missing"
    return types


def read_blobs(git: Git, specs: list[str]) -> dict[str, bytes | None]:
    """The content of each `<object>` or `<commit>:<path>` (None: no such blob)."""
    if not specs:
        return {}
    out = git.must("cat-file", "--batch", input=("\n".join(specs) + "\n").encode())
    found: dict[str, bytes | None] = {}
    at = 0
    for spec in specs:
        end = out.index(b"\n", at)
        header = out[at:end].decode("utf-8", "replace").split()
        at = end + 1
        if len(header) == 3 and header[1] in ("blob", "commit", "tree", "tag"):
            size = int(header[2])
            found[spec] = out[at : at + size] if header[1] == "blob" else None
            at += size + 1
        else:
            found[spec] = None
    return found


def commit_files(git: Git, commit: str) -> dict[str, bytes] | str:
    """Every file of a commit's tree (paths with `/`), or why it is not a handoff's
    commit: not a commit, a file that is no regular file, or a file too large."""
    kind = object_types(git, [commit]).get(commit)
    if kind != "commit":
        return f"the ref points at a {kind or 'missing object'}, not a commit"
    result = git.run("ls-tree", "-r", "-l", "-z", "--full-tree", commit)
    if not result.ok:
        return f"its tree cannot be read ({result.error})"
    names = []
    for entry in result.out.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_name = entry.partition(b"\t")
        mode, kind, _oid, size = meta.decode("ascii", "replace").split()
        name = raw_name.decode("utf-8", "replace")
        if mode != "100644" or kind != "blob":
            return f"{name!r} is not a plain file (mode {mode})"
        if not size.isdigit() or int(size) > MAX_FILE_BYTES:
            return f"{name!r} is larger than {MAX_FILE_BYTES:,} bytes"
        names.append(name)
    blobs = read_blobs(git, [f"{commit}:{name}" for name in names])
    files = {}
    for name in names:
        data = blobs.get(f"{commit}:{name}")
        if data is None:
            return f"{name!r} cannot be read"
        files[name] = data
    return files


def is_ancestor(git: Git, older: str, newer: str) -> bool:
    return git.run("merge-base", "--is-ancestor", older, newer).ok


def write_commits(git: Git, commits: list[NewCommit]) -> None:
    """Write every commit and move its ref, in one `git fast-import` (which refuses to
    move a ref anywhere but forward)."""
    if not commits:
        return
    when = f"{int(time.time())} +0000"
    who = "passdown <passdown@localhost>"
    chunks: list[bytes] = [b"feature done\n"]
    for commit in commits:
        message = (commit.message or "passdown handoff").encode()
        chunks.append(f"commit {commit.ref}\n".encode())
        chunks.append(f"author {who} {when}\ncommitter {who} {when}\n".encode())
        chunks.append(b"data %d\n%s\n" % (len(message), message))
        if commit.parents:
            chunks.append(f"from {commit.parents[0]}\n".encode())
            chunks.extend(f"merge {parent}\n".encode() for parent in commit.parents[1:])
        chunks.append(b"deleteall\n")
        for name, data in sorted(commit.files.items()):
            chunks.append(f"M 100644 inline {name}\n".encode())
            chunks.append(b"data %d\n%s\n" % (len(data), data))
        chunks.append(b"\n")
    chunks.append(b"done\n")
    git.must("fast-import", "--quiet", "--done", input=b"".join(chunks))


def update_refs(git: Git, changes: Mapping[str, tuple[str | None, str | None]]) -> None:
    """Move local refs: {ref: (new or None to delete, the value it must have or None
    for any)}, all or none."""
    if not changes:
        return
    lines = ["start"]
    for ref, (new, old) in changes.items():
        verb = f"delete {ref}" if new is None else f"update {ref} {new}"
        lines.append(f"{verb} {old or ''}".rstrip())
    lines += ["prepare", "commit"]
    git.must("update-ref", "--stdin", input=("\n".join(lines) + "\n").encode())


def fetch(git: Git, remote: str, pairs: Mapping[str, str]) -> None:
    """Fetch remote refs into local ones ({remote ref: local ref}); the local ones are
    passdown's own staging refs, so they are overwritten."""
    items = list(pairs.items())
    for at in range(0, len(items), _REFSPECS_PER_CALL):
        specs = [f"+{src}:{dst}" for src, dst in items[at : at + _REFSPECS_PER_CALL]]
        result = git.run(
            "fetch", "--no-tags", "--no-write-fetch-head", "--quiet", "--no-recurse-submodules",
            remote, *specs,
        )  # fmt: skip
        if not result.ok:
            raise ShareError(
                f"cannot fetch handoffs from {remote!r}: {result.error}",
                hint="check the remote's name or URL and your access",
            )


def push(git: Git, remote: str, refspecs: list[str]) -> PushOutcome:
    """Push without force and without the repository's pre-push hook (the user's hook
    is for the user's branches); what each ref became."""
    outcome = PushOutcome()
    for at in range(0, len(refspecs), _REFSPECS_PER_CALL):
        chunk = refspecs[at : at + _REFSPECS_PER_CALL]
        result = git.run("push", "--porcelain", "--no-verify", remote, *chunk)
        said = result.out if result.ok else result.failed_out
        seen = _parse_porcelain(said.decode("utf-8", "replace"), outcome)
        if not result.ok and not seen:
            raise ShareError(
                f"cannot push handoffs to {remote!r}: {result.error}",
                hint="check the remote's name or URL and your access; nothing was shared",
            )
    return outcome


def _parse_porcelain(text: str, outcome: PushOutcome) -> bool:
    seen = False
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or len(parts[0]) != 1:
            continue
        flag, refs, summary = parts[0], parts[1], parts[2]
        ref = refs.partition(":")[2] or refs.partition(":")[0]
        seen = True
        if flag == "*":
            outcome.done[ref] = "new"
        elif flag in (" ", "+"):
            outcome.done[ref] = "updated"
        elif flag == "-":
            outcome.done[ref] = "deleted"
        elif flag == "=":
            pass
        elif flag == "!":
            if any(w in summary for w in _RETRY):
                outcome.behind.append(ref)
            else:
                outcome.refused[ref] = summary.strip("[]() ") or "rejected"
    return seen
