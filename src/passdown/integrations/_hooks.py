"""`passdown hook AGENT`: what agents run from their hooks.

The agent's integration (`passdown.integrations`) reads the payload (JSON on stdin, or
Codex notify's last argument) and says what the event means:

- session start: inject a short pointer to an unclaimed handoff from another session
  (`continuity.pickup`), printed in the form the agent adds to its context;
- session end, compaction, a turn that stopped on an API error (Claude Code
  `StopFailure`: the rate or usage limit hit), a completed turn: export the session the
  payload names (`export_for_payload`, the one call into the export path), recording
  how the session ended when the payload knows better than the session file.

A hook must never break the agent: every failure (bad payload, no session, a store
error, a bug) is appended to `data_dir()/logs/hooks.log` and the hook still exits 0.
It prints nothing but the pickup pointer.

A new session waits for the session-start hook, so that path stays light: `passdown
hook` reaches `main` before click loads (`passdown.cli.main`), a built-in agent's
integration is found without its agent module (`integrations.BUILTIN`), and pickup reads
the store without the models (`continuity.pickup`). benchmarks/bench_pickup.py times it.
"""

from __future__ import annotations

import os
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from passdown.integrations import HookIntegration

LOG_MAX_BYTES = 1_000_000


def check_report(agent: str | None) -> dict[str, str]:
    """What `passdown hook --check` prints (as JSON): this passdown, and the agent's
    integration loaded as the hook loads it."""
    from importlib.metadata import PackageNotFoundError, version

    from passdown.integrations import integration_for
    from passdown.integrations._command import this_package

    try:
        installed = version("passdown")
    except PackageNotFoundError:  # a source checkout on PYTHONPATH
        installed = "unknown"
    report = {"passdown": installed, "package": this_package(), "python": sys.executable}
    if agent:
        report["agent"] = integration_for(agent).agent
    return report


def log_path() -> Path:
    from passdown._paths import private_data_dir

    return private_data_dir("logs") / "hooks.log"


def run_hook(agent: str, args: list[str], stdin_text: str | None) -> int:
    """Always 0; what happened goes to the hook log; the pickup pointer to stdout."""
    event = "?"
    try:
        from passdown.errors import UsageError
        from passdown.integrations import integration_for
        from passdown.integrations._base import SESSION_START

        integration = integration_for(agent)
        payload = _payload(integration, args, stdin_text)
        event = integration.event(payload)
        if event == SESSION_START:
            output, outcome = _pickup(integration, payload)
            if output:  # the pointer first: a claimed handoff must reach its session
                sys.stdout.write(output + "\n")
                sys.stdout.flush()
            if outcome:
                _log(f"pickup {integration.agent} {outcome}")
            return 0
        spec = integration.session_spec(payload)
        if spec is None:  # the newest session of the folder may be another one's
            raise UsageError(
                f"the hook payload names no session ({_described(stdin_text, payload)}): "
                "nothing exported, rather than guess the workspace's newest session"
            )
        failure = integration.failure(payload)
        if failure is not None:
            earlier = _same_failure_handed_off(integration, payload, failure[0])
            if earlier is not None:
                _log(f"skip {agent} {event}: a retry of the failure handed off as {earlier}")
                return 0
        record_id = export_for_payload(agent, spec, integration.cwd(payload), failure)
        _log(f"ok {agent} {event} stored={record_id or '-'}")
        if failure is not None:
            _remember_failure(integration, payload, failure[0], record_id)
    except Exception as exc:  # the agent must not notice: log and carry on
        from passdown.errors import PassdownError

        detail = exc.message if isinstance(exc, PassdownError) else str(exc)
        trace = None if isinstance(exc, PassdownError) else traceback.format_exc()  # a bug
        _log(f"error {agent} {event}: {type(exc).__name__}: {detail}", trace)
    return 0


def _payload(integration: HookIntegration, args: list[str], stdin_text: str | None) -> Any:
    """The hook's payload; one that is not a JSON object is bad input (logged as an
    error, without the traceback a bug gets), not a bug of passdown's."""
    from passdown.errors import UsageError

    try:
        return integration.payload(args, stdin_text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise UsageError(f"the hook payload is not a JSON object: {exc}") from None


def _described(stdin_text: str | None, payload: dict[str, Any]) -> str:
    """What the payload was, for the log: empty, or the keys it had (not their values)."""
    if not payload:
        return "empty payload" if not stdin_text else "an empty JSON object"
    keys = ", ".join(sorted(str(k) for k in payload)[:10])
    return f"no session id or transcript path among its keys: {keys}"


# -- one handoff per failing request, however often the agent retries it ------------------
RETRY_WINDOW_S = 15 * 60  # a streak longer than this is handed off again (fresh `ended.at`)
RETRY_TAIL_MAX = 1 << 20  # more appended than this is a new turn, whatever it holds


def _failure_mark(agent: str, session: str) -> Path:
    import hashlib

    from passdown._paths import data_dir

    name = hashlib.sha256(f"{agent}\0{session}".encode()).hexdigest()[:32]
    return data_dir() / "failures" / f"{name}.json"


def _same_failure_handed_off(
    integration: HookIntegration, payload: dict[str, Any], reason: str
) -> str | None:
    """The id of the handoff an earlier firing of this failure hook stored, when this
    firing is only another retry of the same failing request: same session, same
    reason, within RETRY_WINDOW_S, and the session file grew by nothing but what the
    agent writes between retries. None: hand off (anything unsure means a new export)."""
    import json
    import time

    from passdown._fsio import read_nofollow
    from passdown._jsonl import open_regular

    log, session = integration.retry_log(payload), integration.session_id(payload)
    if log is None or session is None:
        return None
    try:
        mark = json.loads(read_nofollow(_failure_mark(integration.agent, session)))
        start, record = int(mark["size"]), str(mark["record"])
        fresh = 0 <= time.time() - float(mark["at"]) <= RETRY_WINDOW_S
        with open_regular(log) as stream:
            size = os.fstat(stream.fileno()).st_size
            if mark["reason"] != reason or not fresh or not 0 <= size - start <= RETRY_TAIL_MAX:
                return None
            stream.seek(start)
            appended = stream.read(size - start)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if integration.only_retry_noise(appended) else None


def _remember_failure(
    integration: HookIntegration, payload: dict[str, Any], reason: str, record_id: str | None
) -> None:
    """What the next firing compares with: this handoff's id, the reason, the time and
    the session file's size now (the hook's own start record included)."""
    import json
    import time

    from passdown._fsio import write_private
    from passdown._paths import private_data_dir

    log, session = integration.retry_log(payload), integration.session_id(payload)
    if log is None or session is None or record_id is None:
        return
    try:
        size = os.stat(log).st_size
        folder = private_data_dir("failures")
        mark = {"reason": reason, "record": record_id, "size": size, "at": time.time()}
        write_private(_failure_mark(integration.agent, session), json.dumps(mark))
        for old in folder.glob("*.json"):  # marks of streaks long over
            if time.time() - old.stat().st_mtime > 24 * 3600:
                old.unlink()
    except Exception as exc:  # without the mark the next retry just exports again
        _log(f"warning {integration.agent}: could not remember the failure: {exc}")


def _pickup(integration: HookIntegration, payload: dict[str, Any]) -> tuple[str | None, str | None]:
    """(what to print for the agent, the outcome to log): the caller prints, then logs."""
    from passdown.integrations._continuity import first_time_for_session, pickup

    session = integration.session_id(payload)
    if payload.get("source") == "clear":
        return None, "cleared"  # the user asked for a fresh context
    if integration.pickup_once_per_session and not first_time_for_session(
        integration.agent, session
    ):
        return None, None
    result = pickup(integration.agent, integration.session_id(payload), integration.cwd(payload))
    output = integration.context_output(result.pointer) if result.pointer else None
    return output, result.outcome


def export_for_payload(
    agent: str, session: str | None, cwd: str | None, failure: tuple[str, str | None] | None = None
) -> str | None:
    """The one export path (`coordinator.doors.export`) on the session a hook names:
    files written, record stored and published; `failure` (reason, message) sets `ended`
    when the session file does not record how the session ended. Returns the stored id."""
    from passdown import _pipeline as pipeline
    from passdown.coordinator import _doors as doors

    here = Path(cwd or os.getcwd())

    def with_ending(coordinator: Any, package: Any) -> Any:
        ended = _ending(failure) if failure is not None else _earlier_ending(coordinator, package)
        return _with_ending(package, ended) if ended is not None else package

    # Agents fire several hooks at once (Claude Code: StopFailure, then SessionEnd while
    # the first still runs): one export per workspace at a time, so the later one sees
    # the earlier one's handoff (and its `ended`) instead of racing it.
    workspace = pipeline.workspace_for(here)
    from passdown._locks import hook_export_lock

    with hook_export_lock(workspace):
        # the payload's cwd is where the agent runs: hand off there, even for a session
        # file that recorded another folder
        request = doors.HandoffRequest(source=agent, session=session or None, workspace=workspace)
        written = doors.export(request, here, adjust=with_ending)
    for warning in written.warnings:
        _log(f"warning {agent}: {warning}")
    return written.record_id


def _ending(failure: tuple[str, str | None]) -> Any:
    from typing import cast, get_args

    from passdown._pipeline import now_iso
    from passdown._redact import redact
    from passdown.handoff import Ended
    from passdown.transcript import EndReason

    reason, message = failure
    known = cast(EndReason, reason) if reason in get_args(EndReason) else "error"
    return Ended(reason=known, at=now_iso(), message=redact(message) if message else None)


def _earlier_ending(coordinator: Any, package: Any) -> Any:
    """How the session ended, as an earlier hook of the same session recorded it (the
    `SessionEnd` that follows a `StopFailure` must not turn a rate limit into "normal"),
    when nothing happened in the session since."""
    from passdown.errors import PassdownError

    try:
        active = coordinator.lifecycle().active()
        previous = coordinator.load_handoff(active).handoff if active else None
    except PassdownError:
        return None
    current = package.handoff
    if previous is None or current is None or previous.ended.reason == "normal":
        return None
    same = (
        previous.source.session_id == current.source.session_id
        and previous.source.updated_at == current.source.updated_at
    )
    return previous.ended if same else None


def _with_ending(package: Any, ended: Any) -> Any:
    """The package with `ended` from the hook, unless the session file already said."""
    handoff = package.handoff
    if handoff is None or handoff.ended.reason != "normal":
        return package
    handoff = handoff.model_copy(update={"ended": ended})
    return package.model_copy(update={"handoff": handoff}).sealed()


def _log(line: str, detail: str | None = None) -> None:
    try:
        from passdown._fsio import append_private

        path = log_path()
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            path.replace(path.with_suffix(".log.1"))  # keep one old log, bounded size
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        from passdown._text import one_line

        # one line per event: a payload value cannot forge log lines
        append_private(
            path, f"{stamp} {one_line(_redact(line))}\n" + (_redact(detail) if detail else "")
        )
    except Exception:  # logging must not break the hook either
        pass


def _redact(text: str) -> str:
    """Redacted, and without terminal control sequences: the log is read with `cat`."""
    from passdown._redact import redact
    from passdown._text import safe_text

    return safe_text(redact(text))


def main(agent: str, args: list[str]) -> int:
    """The `passdown hook` process: load only the calling agent's module (every plugin
    would cost time the agent waits for; the check for concurrent sessions still sees
    every agent, `registry.every_agent`), read the payload, run."""
    os.environ.setdefault("PASSDOWN_AGENTS", agent)
    stdin_text = None
    try:
        from passdown.integrations import integration_for

        wants_stdin = integration_for(agent).wants_stdin(args)
    except Exception:  # an unknown agent: run_hook logs it
        wants_stdin = not args
    if wants_stdin and not sys.stdin.isatty():
        stdin_text = sys.stdin.read()
    return run_hook(agent, args, stdin_text)
