"""The agents that keep hooks as TOML arrays of tables (Kimi's and Vibe's `[[hooks]]`,
gptme's `[[hooks.scripts]]`) share one install edit (`integrations._toml_hooks.edits`):
the same behaviour for each, checked here for all three."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomlkit

from passdown.integrations import _toml_hooks as toml_hooks
from passdown.integrations._base import HookIntegration, InstallTarget
from passdown.integrations._files import Transform
from passdown.integrations._gptme import GptmeHooks
from passdown.integrations._kimi import KimiHooks
from passdown.integrations._vibe import VibeHooks

USER_HOOK = {"kimi": "Stop", "vibe": "post_agent", "gptme": "session.end"}


def entries(agent: str, text: str | None) -> list[object]:
    doc = tomlkit.parse(text or "")
    array = doc["hooks"]["scripts"] if agent == "gptme" else doc["hooks"]  # type: ignore[index]
    return list(array)  # type: ignore[arg-type]


@pytest.fixture(params=["kimi", "vibe", "gptme"])
def integration(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> HookIntegration:
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "kimi"))
    monkeypatch.setenv("VIBE_HOME", str(tmp_path / "vibe"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    classes: dict[str, type[HookIntegration]] = {
        "kimi": KimiHooks,
        "vibe": VibeHooks,
        "gptme": GptmeHooks,
    }
    return classes[request.param]()


def plan(
    integration: HookIntegration, tmp_path: Path, command: str = "/opt/bin/passdown"
) -> tuple[Transform, Transform]:
    target = InstallTarget(integration.agent, "user", tmp_path, command)
    [(_, install, uninstall)] = integration.plan(target)
    return install, uninstall


def users_hook(agent: str, text: str) -> str:
    """`text` with a hook of the user's own appended after passdown's."""
    key = "type" if agent == "vibe" else "event"
    table = "[[hooks.scripts]]" if agent == "gptme" else "[[hooks]]"
    return f'{text}\n{table}\n{key} = "{USER_HOOK[agent]}"\ncommand = "notify-send done"\n'


def test_a_repeated_install_leaves_the_file_as_it_is(
    integration: HookIntegration, tmp_path: Path
) -> None:
    """passdown's entries are in place already, before the user's own: an install with
    the same options changes not a byte (it does not move them to the end)."""
    install, _ = plan(integration, tmp_path)
    first = install(None)
    assert first is not None
    edited = users_hook(integration.agent, first)
    assert install(edited) == edited


def test_an_install_with_other_options_replaces_passdowns_entries_only(
    integration: HookIntegration, tmp_path: Path
) -> None:
    agent = integration.agent
    install, _ = plan(integration, tmp_path)
    edited = users_hook(agent, install(None) or "")
    moved, uninstall = plan(integration, tmp_path, command="/usr/local/bin/passdown")
    again = moved(edited)
    assert again is not None
    commands = [str(e["command"]) for e in entries(agent, again)]  # type: ignore[index]
    assert commands[0] == "notify-send done"  # the user's, first now
    assert commands[1:] and all(c.startswith("/usr/local/bin/passdown hook") for c in commands[1:])
    left = uninstall(again)
    assert left is not None
    assert [str(e["command"]) for e in entries(agent, left)] == ["notify-send done"]  # type: ignore[index]


def test_uninstall_removes_the_array_passdown_created(
    integration: HookIntegration, tmp_path: Path
) -> None:
    install, uninstall = plan(integration, tmp_path)
    assert uninstall(install(None)) == ""
    assert uninstall(None) is None
    assert uninstall("# mine\n") == "# mine\n"


def test_an_invalid_file_is_refused_with_its_name(
    integration: HookIntegration, tmp_path: Path
) -> None:
    from passdown.errors import UsageError

    install, _ = plan(integration, tmp_path)
    with pytest.raises(UsageError, match="not valid TOML"):
        install("[[hooks]\n")


def test_ours_are_found_by_the_agents_hook_command() -> None:
    assert toml_hooks.is_ours({"command": "/x/passdown hook kimi"}, "kimi")
    assert not toml_hooks.is_ours({"command": "/x/passdown hook kimi-two"}, "kimi")
    assert not toml_hooks.is_ours("a string", "kimi")
