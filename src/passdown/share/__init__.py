"""Handoffs that travel with the repository: `passdown push` and `passdown pull`.

    report = push_handoffs(Path("."))               # to share_remote(): origin by default
    report = push_handoffs(Path("."), dry_run=True)  # what would leave, file by file
    report = pull_handoffs(Path("."), "upstream")

Layout: one ref per handoff,

    refs/passdown/<scope>/<branch>/<created>_<head>_<id>

- `<scope>`: the 12 hex digits of the project scope (`name~<12 hex>`, see
  `passdown._git.project_name`); one remote (a separate private repository too) can
  hold the handoffs of several projects apart.
- `<branch>`: `b-` and 12 hex digits of the branch the handoff was written on
  (`detached` without one): branch names need no escaping in a ref name.
- `<created>`: the handoff's creation time in UTC (`20261206T101500.123456Z`);
  `<head>`: the first 12 hex digits of the commit it was written at (`nohead` in a
  repository without commits); `<id>`: the handoff's id.
- The ref points at a commit (passdown's own identity, no parent the user's history
  knows) whose tree is the handoff: `record.json` (the redacted record, paths made
  portable), `HANDOFF.md`, `handoff.json`, `status/<status>.json` (its status records:
  published, claimed, ...) and `digest` (sha256 over the other files' sha256s).

Why one ref per handoff and not one per branch: a pull chooses without fetching
anything, from `git ls-remote` alone (the newest of a branch, or the one written at the
detached HEAD's commit, is in the names), and fetches only the refs whose commit
differs from this clone's; a claim moves one small ref, so two clones rarely touch the
same ref, and when they do (both changed one handoff's status), the push is rejected
(never forced), the ref fetched, the two trees merged by file (each status record
either side has; of two versions of one, the earlier), and pushed again, at most
`PUSH_ATTEMPTS` times. Pruning is deleting refs.

What leaves (privacy): only the handoff records a `passdown export` stored, as the
store keeps them, never a session file or a transcript; every string is redacted again
at the edge; the repository's root is a token (a pull puts the clone's own root there),
the home folder `~`, any other absolute path only its last name, the session file's path
only its name. A pulled handoff is checked (file names, digest, record schema, this
project's scope, the ref's name matching its record) and refused whole when any check
fails; the digest catches a change made after the push, not a forger with write access
to the remote: who can push to the remote is who is trusted.
"""

from __future__ import annotations

from passdown.share._common import (
    FileItem,
    Item,
    PullReport,
    PushReport,
    share_remote,
)
from passdown.share._pull import pull_handoffs
from passdown.share._push import PUSH_ATTEMPTS, push_handoffs

__all__ = [
    "PUSH_ATTEMPTS",
    "FileItem",
    "Item",
    "PullReport",
    "PushReport",
    "pull_handoffs",
    "push_handoffs",
    "share_remote",
]
