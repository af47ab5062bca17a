"""passdown's own settings (`<data folder>/config.json`, `passdown config`): the fallback
chain, pickup on or off and its oldest handoff, the share remote."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from passdown.errors import UsageError

PICKUP_ENV = "PASSDOWN_PICKUP"
MAX_AGE_ENV = "PASSDOWN_PICKUP_MAX_AGE_DAYS"
DEFAULT_MAX_AGE_DAYS = 7.0
MAX_AGE_LIMIT_DAYS = 36_500  # a century: far beyond use, far below timedelta's limit

SETTINGS: dict[str, str] = {
    "fallback": "the agents `passdown run` falls over to, in order (comma-separated)",
    "pickup": "on|off: inject an unclaimed handoff's pointer at session start",
    "pickup_max_age_days": "the oldest handoff a session start picks up (days, default 7)",
    "share_remote": "the git remote (name or URL) `passdown push`/`pull` use (default origin)",
}


def config_path() -> Path:
    from passdown._paths import data_dir

    return data_dir() / "config.json"


def load_config() -> dict[str, Any]:
    try:
        data = json.loads(config_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"cannot read {config_path()}: {exc}",
            hint="fix or delete the file; `passdown config` rewrites it",
        ) from None
    return data if isinstance(data, dict) else {}


def set_config(key: str, value: str | None) -> Any:
    """Set (or with None, unset) one setting; returns the stored value."""
    if key not in SETTINGS:
        raise UsageError(f"unknown setting {key!r}: expected one of {', '.join(SETTINGS)}")
    from passdown._fsio import ensure_private_dir, write_private

    config = load_config()
    if value is None:
        config.pop(key, None)
        stored: Any = None
    else:
        stored = _parse_setting(key, value)
        config[key] = stored
    ensure_private_dir(config_path().parent)
    write_private(config_path(), json.dumps(config, indent=2, sort_keys=True) + "\n")
    return stored


def _parse_setting(key: str, value: str) -> Any:
    if key == "fallback":
        from passdown.agents._registry import get_agent

        chain = [name.strip() for name in value.split(",") if name.strip()]
        for name in chain:
            get_agent(name)  # unknown agent: exit 13 before anything is stored
        return chain
    if key == "pickup":
        return _on_off(value, key)
    if key == "share_remote":
        if not value.strip() or value.startswith("-") or "\0" in value:
            raise UsageError(f"{key} takes a git remote's name or URL, not {value!r}")
        return value.strip()
    try:
        days = float(value)
    except ValueError:
        raise UsageError(f"{key} takes a number of days, not {value!r}") from None
    if not 0 < days <= MAX_AGE_LIMIT_DAYS:  # nan and inf too: they broke every pickup
        raise UsageError(f"{key} must be more than 0 and at most {MAX_AGE_LIMIT_DAYS:,} days")
    return days


def _on_off(value: str, what: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "on", "true", "yes"):
        return True
    if lowered in ("0", "off", "false", "no"):
        return False
    raise UsageError(f"{what} takes on or off, not {value!r}")


def pickup_enabled() -> bool:
    env = os.environ.get(PICKUP_ENV)
    if env is not None and env.strip():
        return _on_off(env, PICKUP_ENV)
    return bool(load_config().get("pickup", True))


def max_age() -> timedelta:
    """`$PASSDOWN_PICKUP_MAX_AGE_DAYS`, else the setting, else 7 days; a value that is
    no usable number of days (text, nan, inf, 0 or less: hand-edited, or from an
    environment) counts as unset rather than breaking every pickup."""
    for raw in (os.environ.get(MAX_AGE_ENV), load_config().get("pickup_max_age_days")):
        if raw is None or raw == "":
            continue
        try:
            days = float(raw)
        except (TypeError, ValueError):
            continue
        if 0 < days <= MAX_AGE_LIMIT_DAYS:
            return timedelta(days=days)
    return timedelta(days=DEFAULT_MAX_AGE_DAYS)


def fallback_chain() -> list[str]:
    chain = load_config().get("fallback", [])
    return [str(a) for a in chain] if isinstance(chain, list) else []
