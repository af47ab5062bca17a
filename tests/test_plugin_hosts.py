"""Factory Droid and Codex CLI run passdown's Claude Code plugin, pi and opencode their
own packages (issue 31). Under Droid and Codex,
the launcher turns the plugin's hooks into `passdown hook droid` / `passdown hook codex`,
`passdown install` for that agent writes nothing where its plugin fires (for Droid: the
user scope, or a project that enables it), and `passdown doctor` lists the plugin. The
records are those `droid plugin install` 0.225, `codex plugin add` 0.171 and `pi
install` 0.73 write (`tests/e2e/test_droid_plugin.py`, `test_codex_plugin.py` and
`test_pi_package.py` make them with the real CLIs; `test_opencode_package.py` for
`opencode plugin PATH -g` 1.18; `test_cline_plugin.py` for `cline plugin install PATH`
3.0, `test_gptme_plugin.py` for gptme 0.35's `[plugins] paths`, `test_hermes_plugin.py`
for `hermes plugins install URL --enable` 0.19)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import passdown
from passdown.integrations._base import SKILLS_DIR
from passdown.integrations._cline import ClineHooks
from passdown.integrations._opencode import OpenCodeHooks
from passdown.integrations._pi import PiHooks
from passdown.integrations._plugins import LAUNCHER_PLACES
from test_agent_plugins import LAUNCHER, _bare_path, _fake_passdown
from test_doctor_scopes import BARE_PATH, console_script, doctor, environ, run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the launcher is POSIX sh")


def test_under_droid_the_claude_plugins_hook_runs_passdown_hook_droid(tmp_path: Path) -> None:
    fake = _fake_passdown(tmp_path / "bin")
    env = {
        "HOME": str(tmp_path),
        "PATH": f"{fake.parent}:{_bare_path(tmp_path)}",
        "TMPDIR": str(tmp_path),
    }
    end = '{"hook_event_name":"SessionEnd","session_id":"d-1","cwd":"/w"}'

    def launch(extra: dict[str, str]) -> Any:
        return subprocess.run(
            ["sh", str(LAUNCHER), "hook", "claude"],
            env={**env, **extra},
            input=end,
            capture_output=True,
            text=True,
            timeout=30,
            executable=shutil.which("sh"),
        )

    under_droid = launch({"DROID_PROJECT_DIR": "/w", "DROID_PLUGIN_ROOT": "/p"})
    assert under_droid.returncode == 0, under_droid.stderr
    assert under_droid.stdout == f"ran: hook droid\n{end}"  # the payload as Droid sent it
    under_claude = launch({"CLAUDE_PROJECT_DIR": "/w"})
    assert under_claude.stdout == f"ran: hook claude\n{end}"


def test_under_codex_the_claude_plugins_hook_runs_passdown_hook_codex(tmp_path: Path) -> None:
    """Codex runs the plugin from its cache with PLUGIN_ROOT set; a PLUGIN_ROOT elsewhere
    (another agent that sets the name) leaves the hook Claude Code's."""
    fake = _fake_passdown(tmp_path / "bin")
    home = tmp_path / "home"
    env = {"HOME": str(home), "PATH": f"{fake.parent}:{_bare_path(tmp_path)}"}
    end = '{"hook_event_name":"SessionEnd","session_id":"x-1","cwd":"/w"}'

    def launch(extra: dict[str, str]) -> Any:
        return subprocess.run(
            ["sh", str(LAUNCHER), "hook", "claude"],
            env={**env, "TMPDIR": str(tmp_path), **extra},
            input=end,
            capture_output=True,
            text=True,
            timeout=30,
            executable=shutil.which("sh"),
        )

    cached = "/plugins/cache/passdown/passdown/0.1.0"
    default_home = launch({"PLUGIN_ROOT": f"{home}/.codex{cached}"})
    assert default_home.stdout == f"ran: hook codex\n{end}", default_home.stderr
    codex_home = launch({"CODEX_HOME": "/c", "PLUGIN_ROOT": f"/c{cached}"})
    assert codex_home.stdout == f"ran: hook codex\n{end}"
    elsewhere = launch({"CODEX_HOME": "/c", "PLUGIN_ROOT": f"{home}/.codex{cached}"})
    assert elsewhere.stdout == f"ran: hook claude\n{end}"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """(passdown script, HOME, a git project, an environment with `droid` and `codex`
    and the script on PATH, as the plugin's launcher would find it)."""
    home = tmp_path / "home"
    (home / ".factory").mkdir(parents=True)
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    script = console_script(tmp_path / "venv" / "bin")
    agents = tmp_path / "agents"
    agents.mkdir()
    for name in ("droid", "codex", "pi", "opencode", "kilo", "cline", "gptme", "hermes"):
        (agents / name).write_text("#!/bin/sh\nexit 0\n")
        (agents / name).chmod(0o755)
    return script, home, project, environ(home, f"{script.parent}:{agents}:{BARE_PATH}")


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def droid_plugin(home: Path, scope: str = "user", project: Path | None = None) -> Path:
    """What `droid plugin install passdown@passdown [--scope project]` writes: the record
    (no project named in it) and `enabledPlugins` in the scope's settings file."""
    install = home / ".factory/plugins/cache/passdown-1/passdown-2/d2929b8b8e77"
    _write(install / "hooks" / "hooks.json", {"hooks": {}})
    _write(
        home / f".factory/plugins/installed_plugins/passdown-passdown-{scope}-e4f1.json",
        {
            "schemaVersion": 1,
            "pluginId": "passdown@passdown",
            "entry": {"scope": scope, "installPath": str(install), "source": "passdown"},
        },
    )
    settings = (project or home) / ".factory" / "settings.json"
    data = json.loads(settings.read_text(encoding="utf-8")) if settings.exists() else {}
    data.setdefault("enabledPlugins", {})["passdown@passdown"] = True
    _write(settings, data)
    return settings


def test_install_droid_writes_nothing_where_droids_plugin_fires(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    settings = droid_plugin(home)
    before = settings.read_text(encoding="utf-8")
    for scope in ("user", "project"):
        proc = run(script, env, project, "install", "droid", "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        (agent,) = json.loads(proc.stdout)["agents"]
        assert agent["changed"] is False and agent["events"] == []
        assert any("Claude Code plugin (in Droid) passdown@passdown" in n for n in agent["notes"])
    assert settings.read_text(encoding="utf-8") == before
    assert not (project / ".factory").exists()
    code, agents = doctor(script, env, project, "droid")
    droid = agents["droid"]
    assert code == 0 and droid["status"] == "ok", droid
    assert [p["name"] for p in droid["plugins"]] == ["passdown@passdown"]
    assert droid["programs"][0]["used_by"][0]["what"] == "plugin passdown@passdown"


def test_a_project_install_of_droids_plugin_fires_only_where_enabled(
    setup: tuple[Path, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    script, home, project, env = setup
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    droid_plugin(home, "project", other)
    proc = run(script, env, project, "install", "droid", "--scope", "project")
    assert proc.returncode == 0, proc.stderr
    assert "hook droid" in (project / ".factory" / "settings.json").read_text(encoding="utf-8")
    proc = run(script, env, other, "install", "droid", "--scope", "project", "--json")
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["changed"] is False and "hooks" not in json.loads(
        (other / ".factory" / "settings.json").read_text(encoding="utf-8")
    )


def test_install_codex_writes_nothing_where_codexs_plugin_is_enabled(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    env = {**env, "CODEX_HOME": str(home / ".codex")}
    # what `codex plugin marketplace add REPO && codex plugin add passdown@passdown` write
    cached = home / ".codex/plugins/cache/passdown/passdown/0.1.0"
    _write(cached / "hooks" / "hooks.json", {"hooks": {}})
    config = home / ".codex" / "config.toml"
    config.write_text(
        '[marketplaces.passdown]\nsource_type = "local"\nsource = "/repo"\n\n'
        '[plugins."passdown@passdown"]\nenabled = true\n',
        encoding="utf-8",
    )
    before = config.read_text(encoding="utf-8")
    proc = run(script, env, project, "install", "codex", "--json")
    assert proc.returncode == 0, proc.stderr
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["changed"] is False and agent["events"] == []
    assert any("Claude Code plugin (in Codex) passdown@passdown" in n for n in agent["notes"])
    assert any("/hooks" in n for n in agent["notes"])  # Codex asks the user to trust them
    assert config.read_text(encoding="utf-8") == before
    assert not (home / ".codex" / "skills").exists()
    code, agents = doctor(script, env, project, "codex")
    codex = agents["codex"]
    assert code == 0 and codex["status"] == "ok", codex
    assert codex["plugins"] == [
        {
            "name": "passdown@passdown",
            "scope": "user",
            "path": str(cached),
            "project": None,
            "enabled": True,
        }
    ]

    config.write_text(before.replace("enabled = true", "enabled = false"), encoding="utf-8")
    assert run(script, env, project, "install", "codex").returncode == 0  # off: install writes
    assert "[mcp_servers.passdown]" in config.read_text(encoding="utf-8")


# -- pi's package --------------------------------------------------------------------------

PI_PACKAGE = LAUNCHER.parents[2] / "pi"


def test_the_pi_package_carries_the_extension_install_writes_and_the_skill() -> None:
    manifest = json.loads((PI_PACKAGE / "package.json").read_text(encoding="utf-8"))
    assert manifest["version"] == passdown.__version__
    assert "pi-package" in manifest["keywords"]
    assert manifest["pi"] == {"extensions": ["./extensions"], "skills": ["./skills"]}
    skill = PI_PACKAGE / "skills" / "passdown-takeover" / "SKILL.md"
    assert skill.read_bytes() == (SKILLS_DIR / "passdown-takeover" / "SKILL.md").read_bytes()
    extension = (PI_PACKAGE / "extensions" / "passdown.ts").read_text(encoding="utf-8")
    generated = PiHooks.template
    for line in (  # the events and the payload of `passdown install pi`'s extension
        'pi.on("agent_end", async (_event: any, ctx: any) => { await run("agent_end", ctx); });',
        'pi.on("session_compact", async (_event: any, ctx: any) => '
        '{ await run("session_compact", ctx); });',
        "    transcript_path: ctx.sessionManager?.getSessionFile?.(),",
    ):
        assert line in generated and line in extension, line
    for place in LAUNCHER_PLACES:  # it looks where the launcher and doctor look
        parts = ", ".join(json.dumps(p) for p in place.split("/"))
        assert f"[{parts}]" in extension, place


def pi_package(settings: Path, source: str) -> None:
    """What `pi install SOURCE` (`-l`: the project's settings) writes."""
    data = json.loads(settings.read_text(encoding="utf-8")) if settings.exists() else {}
    data.setdefault("packages", []).append(source)
    _write(settings, data)


def test_install_pi_writes_nothing_where_the_pi_package_is_installed(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    settings = home / ".pi" / "agent" / "settings.json"
    pi_package(settings, os.path.relpath(PI_PACKAGE, settings.parent))  # as pi writes it
    before = settings.read_text(encoding="utf-8")
    for scope in ("user", "project"):
        proc = run(script, env, project, "install", "pi", "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        (agent,) = json.loads(proc.stdout)["agents"]
        assert agent["changed"] is False and agent["events"] == []
        assert any("pi package passdown-pi" in n for n in agent["notes"])
    assert settings.read_text(encoding="utf-8") == before
    assert not (home / ".pi" / "agent" / "extensions").exists()
    assert not (project / ".pi").exists()
    code, agents = doctor(script, env, project, "pi")
    pi = agents["pi"]
    assert code == 0 and pi["status"] == "ok", pi
    assert [(p["name"], p["path"]) for p in pi["plugins"]] == [("passdown-pi", str(PI_PACKAGE))]


def test_a_projects_pi_package_leaves_the_user_scope_and_other_packages_to_install(
    setup: tuple[Path, Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    script, home, project, env = setup
    other = tmp_path / "someone-else"
    _write(other / "package.json", {"name": "not-passdown"})
    settings = home / ".pi" / "agent" / "settings.json"
    pi_package(settings, str(other))
    pi_package(settings, "npm:passdown-pi")  # not a folder: not looked into
    pi_package(project / ".pi" / "settings.json", str(PI_PACKAGE))
    proc = run(script, env, project, "install", "pi", "--scope", "project", "--json")
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["changed"] is False  # the project's package fires there
    assert run(script, env, project, "install", "pi").returncode == 0  # the user's: written
    assert (home / ".pi" / "agent" / "extensions" / "passdown.ts").is_file()


# -- opencode's plugin package -----------------------------------------------------------

OPENCODE_PACKAGE = LAUNCHER.parents[2] / "opencode"


def test_the_opencode_package_carries_the_plugin_install_writes() -> None:
    manifest = json.loads((OPENCODE_PACKAGE / "package.json").read_text(encoding="utf-8"))
    assert manifest["version"] == passdown.__version__
    assert (manifest["type"], manifest["main"]) == ("module", "index.js")
    module = (OPENCODE_PACKAGE / "index.js").read_text(encoding="utf-8")
    assert len(re.findall(r"^export ", module, re.M)) == 1  # opencode runs every export
    generated = OpenCodeHooks.template
    for part in (
        'type !== "session.idle" && type !== "session.compacted"',
        "runDetached({ hook_event_name: type, cwd: directory, session_id: "
        "event?.properties?.sessionID });",
        '"experimental.chat.system.transform": async (input, output) => {',
        'pointers.set(session, run({ hook_event_name: "session_start", cwd: directory, '
        "session_id: session }));",
    ):
        assert part in generated and part in module, part
    for place in LAUNCHER_PLACES:
        parts = ", ".join(json.dumps(p) for p in place.split("/"))
        assert f"[{parts}]" in module, place


def test_install_opencode_writes_nothing_where_the_opencode_plugin_is_configured(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    config = home / ".config" / "opencode" / "opencode.jsonc"
    config.parent.mkdir(parents=True)
    config.write_text(  # as `opencode plugin PATH -g` leaves it, with a comment of the user's
        '{\n  // mine\n  "$schema": "https://opencode.ai/config.json",\n'
        f'  "plugin": ["some-npm-plugin", {json.dumps(str(OPENCODE_PACKAGE))},],\n}}\n',
        encoding="utf-8",
    )
    before = config.read_text(encoding="utf-8")
    for scope in ("user", "project"):
        proc = run(script, env, project, "install", "opencode", "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        (agent,) = json.loads(proc.stdout)["agents"]
        assert agent["changed"] is False and agent["events"] == []
        assert any("opencode plugin passdown-opencode" in n for n in agent["notes"])
    assert config.read_text(encoding="utf-8") == before
    assert not (home / ".config" / "opencode" / "plugins").exists()
    assert not (project / ".opencode").exists()
    code, agents = doctor(script, env, project, "opencode")
    opencode = agents["opencode"]
    assert code == 0 and opencode["status"] == "ok", opencode
    assert [p["path"] for p in opencode["plugins"]] == [str(OPENCODE_PACKAGE)]

    config.write_text('{"plugin": ["passdown-opencode"]}', encoding="utf-8")  # npm: not ours
    assert run(script, env, project, "install", "opencode").returncode == 0
    assert (home / ".config" / "opencode" / "plugins" / "passdown.js").is_file()


def test_install_kilo_writes_nothing_where_kilo_loads_the_opencode_plugin(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    config = home / ".config" / "kilo" / "opencode.json"  # where `kilo plugin PATH -g` adds it
    _write(config, {"plugin": [str(OPENCODE_PACKAGE)]})
    proc = run(script, env, project, "install", "kilo", "--json")
    assert proc.returncode == 0, proc.stderr
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["changed"] is False
    assert any("opencode plugin (in Kilo) passdown-opencode" in n for n in agent["notes"])
    assert not (home / ".config" / "kilo" / "plugins").exists()
    _code, agents = doctor(script, env, project, "kilo", "opencode")
    assert [p["path"] for p in agents["kilo"]["plugins"]] == [str(OPENCODE_PACKAGE)]
    assert agents["opencode"]["plugins"] == []  # opencode's own config does not name it


# -- Cline's plugin ------------------------------------------------------------------------

CLINE_PLUGIN = LAUNCHER.parents[2] / "cline"


def test_the_cline_plugins_after_run_hook_sends_the_payload_hook_cline_reads(
    tmp_path: Path,
) -> None:
    """Run under node as Cline runs it: `setup` with the session and the workspace, then
    `afterRun`; the passdown it finds gets the TaskComplete script's payload on stdin."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    manifest = json.loads((CLINE_PLUGIN / "package.json").read_text(encoding="utf-8"))
    assert manifest["version"] == passdown.__version__
    assert (manifest["name"], manifest["main"]) == ("passdown-cline", "index.js")
    module = (CLINE_PLUGIN / "index.js").read_text(encoding="utf-8")
    for place in LAUNCHER_PLACES:  # it looks where the launcher and doctor look
        parts = ", ".join(json.dumps(p) for p in place.split("/"))
        assert f"[{parts}]" in module, place
    got = tmp_path / "got"
    got.mkdir()
    fake = tmp_path / "home" / ".local" / "bin" / "passdown"  # off PATH: the README's place
    fake.parent.mkdir(parents=True)
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys, uuid\n"
        "data = {'args': sys.argv[1:], 'payload': json.load(sys.stdin)}\n"
        f"tmp = os.path.join({str(tmp_path)!r}, uuid.uuid4().hex)\n"
        "open(tmp, 'w').write(json.dumps(data))\n"
        f"os.replace(tmp, os.path.join({str(got)!r}, os.path.basename(tmp)))\n"
    )
    fake.chmod(0o755)
    driver = tmp_path / "drive.mjs"
    driver.write_text(
        f"const plugin = (await import({json.dumps((CLINE_PLUGIN / 'index.js').as_uri())})).default;\n"
        "const rules = [];\n"
        "await plugin.setup({ registerRule: (r) => rules.push(r) },"
        " { session: { sessionId: 's-1' }, workspaceInfo: { rootPath: '/w' } });\n"
        "await plugin.hooks.afterRun({ result: { status: 'completed' }, snapshot: {} });\n"
        "await plugin.hooks.afterRun({ result: { status: 'failed', error: new Error('Rate limit"
        " reached') }, snapshot: {} });\n"
        "console.log(JSON.stringify({ name: plugin.name, rules: rules.length,"
        " capabilities: plugin.manifest.capabilities }));\n",
        encoding="utf-8",
    )
    env = {"HOME": str(tmp_path / "home"), "PATH": _bare_path(tmp_path)}
    proc = subprocess.run(
        [node, str(driver)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"name": "passdown", "rules": 0, "capabilities": ["hooks"]}
    for _ in range(200):  # the hooks run detached
        if len(list(got.iterdir())) == 2:
            break
        time.sleep(0.05)
    calls = [json.loads(p.read_text(encoding="utf-8")) for p in got.iterdir()]
    assert [c["args"] for c in calls] == [["hook", "cline"]] * 2
    payloads = [c["payload"] for c in calls]
    names = sorted(p["hookName"] for p in payloads)
    assert names == ["agent_end", "agent_error"]
    hooks = ClineHooks()
    for payload in payloads:
        assert hooks.session_id(payload) == "s-1" and hooks.cwd(payload) == "/w"
    (failed,) = [p for p in payloads if p["hookName"] == "agent_error"]
    assert hooks.failure(failed) == ("rate_limit", "Rate limit reached")

    fake.unlink()  # no passdown anywhere: the session is told, in a rule
    proc = subprocess.run(
        [node, str(driver)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    told = json.loads(proc.stdout)
    assert told["rules"] == 1 and "rules" in told["capabilities"]


def cline_plugin(folder: Path) -> Path:
    """What `cline plugin install PATH` (`--cwd PROJECT`: FOLDER is `PROJECT/.cline`)
    copies: the package under `plugins/_installed/local/SLUG/package`."""
    install = folder / "plugins" / "_installed" / "local" / "cline-840dab22b41c"
    _write(install / "package.json", {"name": "cline", "private": True})
    shutil.copytree(CLINE_PLUGIN, install / "package")
    return install


def test_install_cline_writes_nothing_where_the_cline_plugin_is_installed(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    in_project = cline_plugin(project / ".cline")
    proc = run(script, env, project, "install", "cline", "--json")  # user scope: writes
    assert proc.returncode == 0, proc.stderr
    assert (home / ".cline" / "hooks" / "TaskComplete").is_file()
    proc = run(script, env, project, "install", "cline", "--scope", "project", "--json")
    assert proc.returncode == 0, proc.stderr
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["changed"] is False and agent["events"] == []
    assert any("Cline plugin passdown-cline" in n for n in agent["notes"]), agent["notes"]
    assert not (project / ".clinerules").exists()
    assert run(script, env, project, "uninstall", "cline").returncode == 0

    installed = cline_plugin(home / ".cline")
    for scope in ("user", "project"):
        proc = run(script, env, project, "install", "cline", "--scope", scope, "--json")
        assert proc.returncode == 0, proc.stderr
        (agent,) = json.loads(proc.stdout)["agents"]
        assert agent["changed"] is False and agent["events"] == []
    assert not (home / ".cline" / "hooks").exists()
    _code, agents = doctor(script, env, project, "cline")
    assert sorted(p["path"] for p in agents["cline"]["plugins"]) == sorted(
        [str(installed), str(in_project)]
    )


# -- gptme's plugin ------------------------------------------------------------------------

GPTME_PLUGIN = LAUNCHER.parents[2] / "gptme"
GPTME_STUB = {  # the part of gptme's API the plugin uses, recording what it registers
    "gptme/__init__.py": "",
    "gptme/hooks.py": (
        "import enum\n"
        "class HookType(enum.Enum):\n"
        "    SESSION_START = 'session.start'\n"
        "    SESSION_END = 'session.end'\n"
        "REGISTERED = {}\n"
        "def register_hook(name, hook_type, func):\n"
        "    REGISTERED[hook_type.value] = func\n"
    ),
    "gptme/message.py": (
        "class Message:\n"
        "    def __init__(self, role, content):\n"
        "        self.role, self.content = role, content\n"
    ),
}
GPTME_DRIVER = """
import json, sys, types
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from gptme.hooks import REGISTERED
from passdown_gptme.hooks import passdown
passdown.register()
if "session.end" in REGISTERED:
    manager = types.SimpleNamespace(logdir=Path("/logs/2026-conv"), workspace=Path("/w"))
    list(REGISTERED["session.end"](manager))
told = list(REGISTERED["session.start"](Path("/l"), None, [])) if "session.start" in REGISTERED else []
print(json.dumps({"events": sorted(REGISTERED), "told": [[m.role, m.content] for m in told]}))
"""


def test_the_gptme_plugins_session_end_hook_runs_passdown_hook_gptme(tmp_path: Path) -> None:
    """Loaded as gptme loads a folder plugin (`passdown_gptme.hooks.passdown`,
    `register()`): at `session.end` the passdown it finds runs as `hook gptme` with the
    environment of gptme's script hooks; without one, the session is told at its start."""
    for name, text in GPTME_STUB.items():
        (tmp_path / "stub" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "stub" / name).write_text(text, encoding="utf-8")
    got = tmp_path / "got.json"
    fake = tmp_path / "home" / ".local" / "bin" / "passdown"  # off PATH: the README's place
    fake.parent.mkdir(parents=True)
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "env = {k: v for k, v in os.environ.items() if k.startswith('GPTME_')}\n"
        f"open({str(got)!r}, 'w').write(json.dumps({{'args': sys.argv[1:], 'env': env}}))\n"
    )
    fake.chmod(0o755)
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": _bare_path(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",  # nothing written into the repository's plugin
    }
    argv = [sys.executable, "-c", GPTME_DRIVER, str(tmp_path / "stub"), str(GPTME_PLUGIN)]

    def load() -> dict[str, Any]:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout))

    assert load() == {"events": ["session.end"], "told": []}
    assert json.loads(got.read_text(encoding="utf-8")) == {
        "args": ["hook", "gptme"],
        "env": {
            "GPTME_HOOK_EVENT": "session.end",
            "GPTME_LOGDIR": "/logs/2026-conv",
            "GPTME_WORKSPACE": "/w",
        },
    }
    module = (GPTME_PLUGIN / "passdown_gptme" / "hooks" / "passdown.py").read_text(encoding="utf-8")
    for place in LAUNCHER_PLACES:  # it looks where the launcher and doctor look
        parts = ", ".join(json.dumps(p) for p in place.split("/"))
        assert f"[{parts}]" in module, place

    fake.unlink()
    got.unlink()
    told = load()
    assert told["events"] == ["session.start"] and not got.exists()
    ((role, text),) = told["told"]
    assert role == "system" and "passdown is not installed where this plugin looks" in text


def test_install_gptme_writes_nothing_where_the_gptme_plugin_is_configured(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    config = home / ".config" / "gptme" / "config.toml"
    config.parent.mkdir(parents=True)
    installed = f'# mine\n[plugins]\npaths = ["/elsewhere", {json.dumps(str(GPTME_PLUGIN))}]\n'
    config.write_text(installed, encoding="utf-8")
    proc = run(script, env, project, "install", "gptme", "--json")
    assert proc.returncode == 0, proc.stderr
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["changed"] is False and agent["events"] == []
    assert any("gptme plugin passdown_gptme" in n for n in agent["notes"]), agent["notes"]
    assert config.read_text(encoding="utf-8") == installed
    _code, agents = doctor(script, env, project, "gptme")
    assert [p["path"] for p in agents["gptme"]["plugins"]] == [str(GPTME_PLUGIN / "passdown_gptme")]

    config.write_text(installed + 'enabled = ["another"]\n', encoding="utf-8")  # not allowed
    assert run(script, env, project, "install", "gptme").returncode == 0
    assert "passdown hook gptme" in config.read_text(encoding="utf-8")


# -- Hermes's plugin -----------------------------------------------------------------------

HERMES_PLUGIN = LAUNCHER.parents[2] / "hermes"
HERMES_DRIVER = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("passdown_plugin", sys.argv[1])
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
hooks = {}
class Ctx:
    def register_hook(self, name, callback):
        hooks[name] = callback
plugin.register(Ctx())
answers = {}
if "pre_llm_call" in hooks:
    answers["first"] = hooks["pre_llm_call"](session_id="h-1", user_message="hi")
    answers["again"] = hooks["pre_llm_call"](session_id="h-1", user_message="more")
if "on_session_end" in hooks:
    answers["end"] = hooks["on_session_end"](session_id="h-1", completed=True, model="m")
print(json.dumps({"events": sorted(hooks), "answers": answers}))
"""


def test_the_hermes_plugins_hooks_run_passdown_hook_hermes(tmp_path: Path) -> None:
    """Loaded as Hermes loads a plugin (`register(ctx)`): its hooks send the payload of
    Hermes's shell hooks to the passdown it finds and pass a pickup pointer on; without
    passdown, the session's first turn is told."""
    got = tmp_path / "got"
    got.mkdir()
    fake = tmp_path / "home" / ".local" / "bin" / "passdown"  # off PATH: the README's place
    fake.parent.mkdir(parents=True)
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys, uuid\n"
        "data = json.load(sys.stdin)\n"
        f"open({str(got)!r} + '/' + uuid.uuid4().hex, 'w').write(json.dumps(["
        "sys.argv[1:], data]))\n"
        "if data['hook_event_name'] == 'pre_llm_call':\n"
        "    print(json.dumps({'context': 'A handoff is waiting.'}))\n"
    )
    fake.chmod(0o755)
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": _bare_path(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    argv = [sys.executable, "-c", HERMES_DRIVER, str(HERMES_PLUGIN / "__init__.py")]

    def load() -> dict[str, Any]:
        proc = subprocess.run(
            argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        return dict(json.loads(proc.stdout))

    loaded = load()
    assert loaded["events"] == ["on_session_end", "on_session_finalize", "pre_llm_call"]
    assert loaded["answers"]["first"] == {"context": "A handoff is waiting."}
    assert loaded["answers"]["end"] is None
    calls = [json.loads(p.read_text(encoding="utf-8")) for p in got.iterdir()]
    assert all(args == ["hook", "hermes"] for args, _ in calls)
    (end,) = [data for _, data in calls if data["hook_event_name"] == "on_session_end"]
    assert end == {
        "hook_event_name": "on_session_end",
        "session_id": "h-1",
        "cwd": str(tmp_path),
        "extra": {"completed": True, "model": "m"},
    }
    manifest = (HERMES_PLUGIN / "plugin.yaml").read_text(encoding="utf-8")
    assert f"version: {passdown.__version__}" in manifest
    module = (HERMES_PLUGIN / "__init__.py").read_text(encoding="utf-8")
    for place in LAUNCHER_PLACES:  # it looks where the launcher and doctor look
        parts = ", ".join(json.dumps(p) for p in place.split("/"))
        assert f"[{parts}]" in module, place

    fake.unlink()
    told = load()
    assert told["events"] == ["pre_llm_call"]
    assert (
        "passdown is not installed where this plugin looks" in told["answers"]["first"]["context"]
    )
    assert told["answers"]["again"] is None  # once per session


def test_install_hermes_writes_nothing_where_the_hermes_plugin_is_enabled(
    setup: tuple[Path, Path, Path, dict[str, str]],
) -> None:
    script, home, project, env = setup
    installed = home / ".hermes" / "plugins" / "passdown"  # as `hermes plugins install` keeps it
    shutil.copytree(HERMES_PLUGIN, installed)
    config = home / ".hermes" / "config.yaml"
    enabled = (
        "model:\n  default: m\nplugins:\n  enabled:\n    - other\n    - passdown\n  disabled: []\n"
    )
    config.write_text(enabled, encoding="utf-8")
    proc = run(script, env, project, "install", "hermes", "--json")
    assert proc.returncode == 0, proc.stderr
    (agent,) = json.loads(proc.stdout)["agents"]
    assert agent["changed"] is False and agent["events"] == []
    assert any("Hermes plugin passdown" in n for n in agent["notes"]), agent["notes"]
    assert config.read_text(encoding="utf-8") == enabled
    assert not (home / ".hermes" / "shell-hooks-allowlist.json").exists()
    _code, agents = doctor(script, env, project, "hermes")
    assert [p["path"] for p in agents["hermes"]["plugins"]] == [str(installed)]

    config.write_text(  # `hermes plugins disable passdown`: install writes its hooks
        "plugins:\n  enabled: [other, passdown]\n  disabled:\n  - passdown\n", encoding="utf-8"
    )
    assert run(script, env, project, "install", "hermes").returncode == 0
    assert "hook hermes" in config.read_text(encoding="utf-8")
