"""Claude Code: sessions under `$CLAUDE_CONFIG_DIR/projects/<encoded cwd>/<id>.jsonl`.

The conversation is a tree (uuid/parentUuid): rewinds and forks leave dead branches in
the file. Reading takes two streaming passes so memory stays flat however large the
file is: pass 1 walks the file *backwards* from the newest leaf, following parent links
(parents are always written before children), and keeps only the byte offsets of the
active branch; pass 2 reads forwards and decodes just those lines (`_claude_reader`). A
checkpointed first read on one core skips pass 1 for a session that was never rewound:
one forward pass checks the parent links as it decodes (`_tree_forward`).

Everything else follows that branch too: the plan is the replay of the branch's own plan
calls (the CLI's task files reflect whatever ran last, so they only fill gaps where they
agree), the sub-agents read are those the branch spawned (their tool calls come out
attributed with `by`, streamed from their own transcripts), and an API-error record or
an interruption on the branch becomes a `SessionEnding`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from passdown import _platform
from passdown.agents._claude_endings import api_error_reason, clean_compact_summary
from passdown.agents._claude_pass1 import _CHAIN_TYPES, _node
from passdown.agents._claude_records import (
    _ENVELOPE,
    _HEAD,
    _Envelope,
    _Head,
)
from passdown.agents._common import (
    DECODE_ERRORS,
    decode_line,
    env_path,
    file_mtime,
    is_dir,
    list_folder,
    read_head,
)
from passdown.agents._record_fields import RecordScan
from passdown.agents._tree import LeafHint, Node, TreeFormat
from passdown.agents._tree_resume import TreeSessionAgent
from passdown.agents.base import LaunchSpec, candidate_of
from passdown.transcript import (
    Diagnostics,
    SessionInfo,
    SessionRef,
)


def encode_cwd(cwd: str) -> str:
    """Claude's folder name for a cwd: every non-alphanumeric character becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _project_of(folder: str, prefix: str) -> bool:
    """Whether a project folder may hold sessions of the workspace encoded as `prefix`
    (or of a folder below it), with the file system's case rules."""
    return _platform.same_name(folder, prefix) or _platform.same_name(
        folder[: len(prefix) + 1], prefix + "-"
    )


class ClaudeCode(TreeSessionAgent):
    name = "claude"
    display_name = "Claude Code"
    program = "claude"
    store_env = ("CLAUDE_CONFIG_DIR",)

    def config_dir(self) -> Path:
        return env_path("CLAUDE_CONFIG_DIR", Path.home() / ".claude")

    def store_roots(self) -> list[Path]:
        return [self.config_dir() / "projects"]

    # -- discovery ----------------------------------------------------------------
    def discover(self, workspace: Path | None) -> Iterator[SessionRef]:
        projects = self.config_dir() / "projects"
        # an unreadable store raises: the Agent base class reports it (exit 5)
        folders = [p for p in list_folder(projects) if is_dir(p)]
        if workspace is not None:
            # The encoding is lossy: preselect by name, then confirm with the records' cwd
            # (a session none of whose first records can be read for it is listed unplaced).
            # Windows: C:\\Users\\dev\\proj is C--Users-dev-proj, `c:` is `c--`; macOS:
            # /private/tmp/x may be recorded as /tmp/x (-tmp-x)
            prefixes = [encode_cwd(s) for s in _platform.path_spellings(str(workspace))]
            folders = [f for f in folders if any(_project_of(f.name, p) for p in prefixes)]
        for folder in folders:
            for path in _session_files(folder):
                ref = self.ref_for_path(path)
                if candidate_of(ref, workspace):
                    yield ref

    def ref_for_path(self, path: Path) -> SessionRef:
        mtime, size = file_mtime(path)
        head, unplaced = _read_head_fields(path)
        session_id = _strip_suffixes(path.name)
        return SessionRef(
            agent=self.name,
            session_id=session_id,
            path=path,
            cwd=head.cwd,
            started_at=head.timestamp,
            updated_at=mtime,
            size=size,
            unplaced=unplaced,
        )

    # -- reading ------------------------------------------------------------------
    def tree_format(self) -> TreeFormat:
        from passdown.agents._claude_reader import _SessionDecoder  # to read, not to list

        config_dir = self.config_dir()
        return TreeFormat(
            node_view=_node_reader,
            decoder=lambda i, d, saved, calls: _SessionDecoder(
                i, d, saved, calls, config_dir=config_dir
            ),
        )

    # -- launching ----------------------------------------------------------------
    def launch_spec(self, prompt: str, *, workspace: Path, interactive: bool) -> LaunchSpec:
        # "--" ends the options, so a prompt starting with "-" is still the prompt.
        if interactive:
            return LaunchSpec(argv=[self.program, "--", prompt], cwd=workspace)
        # -p runs once; acceptEdits lets the takeover edit files without a person there.
        argv = [self.program, "-p", "--permission-mode", "acceptEdits", "--", prompt]
        return LaunchSpec(argv=argv, cwd=workspace)


_HEAD_BYTES = 256 * 1024  # read and decoded whole: the records of nearly every session


def _strip_suffixes(name: str) -> str:
    for suffix in (".zst", ".jsonl"):
        name = name.removesuffix(suffix)
    return name


def _session_files(folder: Path) -> list[Path]:
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    plain = {p.name for p in entries if p.name.endswith(".jsonl")}
    files = []
    for path in entries:
        name = path.name
        if name.startswith("agent-") or not path.is_file():
            continue  # older builds kept sub-agent transcripts beside sessions
        if name.endswith(".jsonl") or (name.endswith(".jsonl.zst") and name[:-4] not in plain):
            files.append(path)
    return files


def _read_head_fields(path: Path) -> tuple[_Head, str | None]:
    """cwd and start time from the first records that carry them, and why the session
    could not be placed when no record read names its cwd before the reading stopped.
    The head is decoded line by line; records a long first prompt pushed past it (the
    CLI may write the prompt twice: in a queue record and in the first user record) are
    read on in pieces."""
    found = _Head()
    head = read_head(path, _HEAD_BYTES)
    for line in head.split(b"\n"):
        if b'"cwd"' not in line and b'"timestamp"' not in line:
            continue
        try:
            fields = _HEAD.decode(line)
        except DECODE_ERRORS:
            continue
        found.timestamp = found.timestamp or fields.timestamp
        found.cwd = found.cwd or fields.cwd
        if found.cwd and found.timestamp:
            break
    if found.cwd or len(head) < _HEAD_BYTES:  # placed, or the whole file was read
        return found, None
    scan = RecordScan(path, ("cwd", "timestamp"))
    for record in scan.records():
        found.timestamp = found.timestamp or record.get("timestamp")
        if record.get("cwd"):
            found.cwd = record["cwd"]
            return found, None
    return found, scan.unplaced() if scan.cut else None


def _node_reader(
    info: SessionInfo, diag: Diagnostics
) -> Callable[[int, bytes, int], Node | LeafHint | None]:
    """Pass 1's view of each line, called once per line of the file: the decode is tried
    inline (the lenient retry only when it fails), and the common record, on the tree and
    not a sidechain, is answered here without a further call."""

    def read(offset: int, line: bytes, tail: int) -> Node | LeafHint | None:
        try:
            env = _ENVELOPE.decode(line)
        except DECODE_ERRORS:
            mended = decode_line(_ENVELOPE, line, offset, tail, diag)
            return _node(mended, info, diag) if isinstance(mended, _Envelope) else None
        if env.type in _CHAIN_TYPES and not env.isSidechain and env.parentUuid is not None:
            return Node(env.uuid, env.parentUuid) if env.uuid else None
        return _node(env, info, diag)

    return read


__all__ = ["ClaudeCode", "api_error_reason", "clean_compact_summary", "encode_cwd"]


# Where its hooks live, which events exist, how payloads name the session (passdown.integrations).
ClaudeCode.integration = "passdown.integrations._claude:ClaudeHooks"  # type: ignore[attr-defined]
