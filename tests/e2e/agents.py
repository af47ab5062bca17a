"""Find the pinned real agent CLIs and run them in an isolated environment.

The binaries come from `.ci/install-agents.sh` (a test-only npm prefix). When they are
missing we fail loudly: an e2e suite that silently skips would pass without testing anything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO_ROOT / ".ci" / "install-agents.sh"
PINS_FILE = REPO_ROOT / ".ci" / "agent-pins.txt"


def _pinned_versions() -> dict[str, str]:
    """name -> version from the one pin file; PASSDOWN_<NAME>_VERSION overrides (the canary)."""
    versions = {}
    for line in PINS_FILE.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and not line.startswith("#"):
            name, _package, version = fields
            versions[name] = os.environ.get(f"PASSDOWN_{name.upper()}_VERSION") or version
    return versions


VERSIONS = _pinned_versions()
CLAUDE_VERSION = VERSIONS["claude"]
CODEX_VERSION = VERSIONS["codex"]
# Tools Claude may use without asking (as root, --dangerously-skip-permissions is refused).
CLAUDE_TOOLS = "Write Edit Bash TaskCreate TaskUpdate TaskList TodoWrite Read"
CODEX_MODEL = "gpt-5.5"
GEMINI_VERSION = VERSIONS["gemini"]
QWEN_VERSION = VERSIONS["qwen"]
OPENCODE_VERSION = VERSIONS["opencode"]
PI_VERSION = VERSIONS["pi"]
COPILOT_VERSION = VERSIONS["copilot"]
KILO_VERSION = VERSIONS["kilo"]
DROID_VERSION = VERSIONS["droid"]
# Droid names a custom (BYOK) model `custom:<displayName>-<index in customModels>`.
DROID_MODEL = "custom:Scripted-0"
# A 2.x model: Gemini CLI only offers its plan tool `write_todos` to non-preview Gemini 2
# models (the default 3.x preview gets no write_todos), and naming one skips its router.
GEMINI_MODEL = "gemini-2.5-pro"
# The model name the chat-completions agents ask for; the scripted server echoes it.
CHAT_MODEL = "scripted-model"
CHAT_PROVIDER = "scripted"  # provider name in opencode's and pi's config
FAKE_KEY = "sk-test-local-scripted-server"  # never a real credential; servers ignore it


class AgentsMissing(RuntimeError):
    pass


# Resolved at import, before the autouse fixture points HOME at a temp folder per test:
# the pinned CLIs live under the real home's cache.
_DEFAULT_E2E_HOME = Path.home() / ".cache" / "passdown-e2e"


def e2e_home() -> Path:
    return Path(os.environ.get("PASSDOWN_E2E_HOME") or _DEFAULT_E2E_HOME)


def npm_bin_dir() -> Path:
    return e2e_home() / "npm" / "bin"


def find_agent(name: str) -> Path:
    """Path of an installed pinned agent CLI; raises (never skips) when absent."""
    path = npm_bin_dir() / name
    if not (path.exists() and os.access(path, os.X_OK)):
        raise AgentsMissing(
            f"{name} not found at {path}; run `bash {INSTALL_SCRIPT.relative_to(REPO_ROOT)}` "
            "(the e2e tests require the real pinned agent CLIs)"
        )
    return path


def ensure_agents() -> Path:
    """Install the pinned CLIs if needed and return their bin folder.

    Always runs the install script: it is idempotent and cached (~0.3 s when up to date) and
    it verifies the installed versions, so a stale cache cannot pass for the pinned build.
    """
    proc = subprocess.run(
        ["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=900, check=False
    )
    if proc.returncode != 0:
        raise AgentsMissing(f"install-agents.sh failed ({proc.returncode}):\n{proc.stderr}")
    for name in VERSIONS:
        find_agent(name)
    return npm_bin_dir()


def copilot_cache_dir() -> Path:
    """XDG cache shared by every test's Copilot: it unpacks ~230 MB there on first run
    (`$XDG_CACHE_HOME/copilot/pkg`); the install script warms it once."""
    return e2e_home() / "xdg-cache"


# passdown's one switch (a full read every time): the minimal environments built here
# hand it on to every `passdown` they start, so a run with it set tests what it says.
PASSDOWN_SWITCHES = ("PASSDOWN_NO_CHECKPOINT",)


def passdown_switches() -> dict[str, str]:
    return {name: os.environ[name] for name in PASSDOWN_SWITCHES if name in os.environ}


@dataclass
class AgentEnv:
    """An isolated HOME with agent config dirs, and the environment to run agents in it."""

    root: Path
    home: Path
    claude_dir: Path
    codex_home: Path
    passdown_data: Path

    @classmethod
    def create(cls, root: Path) -> AgentEnv:
        home = root / "home"
        env = cls(
            root=root,
            home=home,
            claude_dir=home / ".claude",
            codex_home=home / ".codex",
            passdown_data=home / "passdown-data",
        )
        for d in (env.home, env.claude_dir, env.codex_home):
            d.mkdir(parents=True, exist_ok=True)
        return env

    def environ(
        self, *, anthropic_url: str | None = None, openai_url: str | None = None
    ) -> dict[str, str]:
        """A minimal environment: nothing of the developer's own agent setup leaks in."""
        env = {
            "PATH": f"{npm_bin_dir()}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
            "CLAUDE_CONFIG_DIR": str(self.claude_dir),
            "CODEX_HOME": str(self.codex_home),
            "PASSDOWN_DATA_DIR": str(self.passdown_data),
            # Claude Code: no telemetry, update checks or other calls beyond the model server.
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "GIT_AUTHOR_NAME": "e2e",
            "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
            "GIT_COMMITTER_NAME": "e2e",
            "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
            # `python -m passdown` works from the checkout even when it is not installed.
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH")) if p
            ),
            "NO_COLOR": "1",
        }
        env.update(passdown_switches())
        # Anything that points at a real endpoint would be a leak; point at 127.0.0.1 only.
        env["ANTHROPIC_BASE_URL"] = anthropic_url or "http://127.0.0.1:9"
        env["ANTHROPIC_API_KEY"] = FAKE_KEY
        env["OPENAI_API_KEY"] = FAKE_KEY
        env["PASSDOWN_E2E_OPENAI_KEY"] = FAKE_KEY
        if openai_url:
            self.write_codex_config(openai_url)
        return env

    def bun_tmp(self) -> Path:
        """TMPDIR for the Bun-built CLIs (opencode, Kilo): each start unpacks a 5.5 MB native
        library there and leaves it behind, so it goes in the test's own folder, not /tmp."""
        tmp = self.root / "tmp"
        tmp.mkdir(exist_ok=True)
        return tmp

    # -- the five agents of issue 7: each writes its config under HOME and returns the env --
    def gemini_environ(self, gemini_url: str) -> dict[str, str]:
        """Gemini CLI with an API key against GOOGLE_GEMINI_BASE_URL (plain http is allowed
        for localhost); settings turn off folder trust, telemetry, usage stats, updates."""
        _write_json(
            self.home / ".gemini" / "settings.json",
            {
                "security": {
                    "auth": {"selectedType": "gemini-api-key"},
                    "folderTrust": {"enabled": False},
                },
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "model": {"name": GEMINI_MODEL},
            },
        )
        return {
            **self.environ(),
            "GEMINI_API_KEY": FAKE_KEY,
            "GOOGLE_GEMINI_BASE_URL": gemini_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }

    def qwen_environ(self, chat_url: str) -> dict[str, str]:
        """Qwen Code with `--auth-type openai`; todo_write is off unless enabled in settings,
        and the managed memory agents would send extra model requests."""
        _write_json(
            self.home / ".qwen" / "settings.json",
            {
                "general": {"enableAutoUpdate": False},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "security": {"folderTrust": {"enabled": False}},
                "memory": {
                    "enableManagedAutoMemory": False,
                    "enableManagedAutoDream": False,
                    "enableAutoSkill": False,
                    "enableTeamMemory": False,
                },
                "tools": {"todoWrite": {"enabled": True}},
            },
        )
        return {
            **self.environ(),
            "OPENAI_API_KEY": FAKE_KEY,
            "OPENAI_BASE_URL": f"{chat_url}/v1",
            "OPENAI_MODEL": CHAT_MODEL,
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        }

    def opencode_environ(self, chat_url: str) -> dict[str, str]:
        """opencode with an openai-compatible provider on loopback."""
        cfg = self.home / ".config" / "opencode"
        _write_json(
            cfg / "opencode.json",
            {
                "$schema": "https://opencode.ai/config.json",
                "provider": {
                    CHAT_PROVIDER: {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Scripted",
                        "options": {"baseURL": f"{chat_url}/v1", "apiKey": FAKE_KEY},
                        "models": {CHAT_MODEL: {"name": CHAT_MODEL, "tool_call": True}},
                    }
                },
                "model": f"{CHAT_PROVIDER}/{CHAT_MODEL}",
                "small_model": f"{CHAT_PROVIDER}/{CHAT_MODEL}",
                "autoupdate": False,
                "share": "disabled",
            },
        )
        # opencode npm-installs @opencode-ai/plugin into its config dir in the background
        # unless node_modules exists and package-lock.json already lists it: pretend it does,
        # so a test run never reaches the npm registry.
        (cfg / "node_modules").mkdir(exist_ok=True)
        _write_json(
            cfg / "package-lock.json",
            {"packages": {"": {"dependencies": {"@opencode-ai/plugin": OPENCODE_VERSION}}}},
        )
        return {
            **self.environ(),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_TERMINAL_TITLE": "1",
            "TMPDIR": str(self.bun_tmp()),
        }

    def pi_environ(self, chat_url: str) -> dict[str, str]:
        """pi with a custom openai-completions provider in models.json."""
        _write_json(
            self.home / ".pi" / "agent" / "models.json",
            {
                "providers": {
                    CHAT_PROVIDER: {
                        "baseUrl": f"{chat_url}/v1",
                        "api": "openai-completions",
                        "apiKey": FAKE_KEY,
                        "compat": {
                            "supportsDeveloperRole": False,
                            "supportsReasoningEffort": False,
                        },
                        "models": [{"id": CHAT_MODEL}],
                    }
                }
            },
        )
        return {
            **self.environ(),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }

    def copilot_environ(self, chat_url: str) -> dict[str, str]:
        """Copilot CLI on a bring-your-own provider, no GitHub login, shared unpack cache."""
        return {
            **self.environ(),
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": f"{chat_url}/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_WIRE_API": "completions",
            "COPILOT_PROVIDER_API_KEY": FAKE_KEY,
            "COPILOT_MODEL": CHAT_MODEL,
            "COPILOT_AUTO_UPDATE": "false",
            "XDG_CACHE_HOME": str(copilot_cache_dir()),
        }

    def kilo_environ(self, chat_url: str) -> dict[str, str]:
        """Kilo Code (an opencode fork): opencode's config schema in ~/.config/kilo/kilo.json,
        its KILO_* switches for the model catalogue, updates, plugins, sharing, telemetry."""
        _write_json(
            self.home / ".config" / "kilo" / "kilo.json",
            {
                "provider": {
                    CHAT_PROVIDER: {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Scripted",
                        "options": {"baseURL": f"{chat_url}/v1", "apiKey": FAKE_KEY},
                        "models": {CHAT_MODEL: {"name": CHAT_MODEL, "tool_call": True}},
                    }
                },
                "model": f"{CHAT_PROVIDER}/{CHAT_MODEL}",
                "small_model": f"{CHAT_PROVIDER}/{CHAT_MODEL}",
                "autoupdate": False,
                "share": "disabled",
                # only the scripted provider: Kilo fetches the model list of its built-in
                # Kilo Gateway (api.kilo.ai) at every turn otherwise, KILO_DISABLE_MODELS_FETCH
                # or not (that switch covers models.dev only)
                "enabled_providers": [CHAT_PROVIDER],
            },
        )
        # as opencode's: no background npm install of the plugin package into the config dir
        cfg = self.home / ".config" / "kilo"
        (cfg / "node_modules").mkdir(exist_ok=True)
        _write_json(
            cfg / "package-lock.json",
            {"packages": {"": {"dependencies": {"@kilocode/plugin": KILO_VERSION}}}},
        )
        return {
            **self.environ(),
            "KILO_DISABLE_MODELS_FETCH": "1",
            "KILO_DISABLE_AUTOUPDATE": "1",
            "KILO_DISABLE_DEFAULT_PLUGINS": "1",
            "KILO_DISABLE_SHARE": "1",
            "KILO_NO_DAEMON": "1",
            "KILO_DISABLE_SESSION_INGEST": "1",
            "KILO_TELEMETRY_LEVEL": "off",
            "KILO_DISABLE_LSP_DOWNLOAD": "1",
            "TMPDIR": str(self.bun_tmp()),
        }

    def droid_environ(self, chat_url: str) -> dict[str, str]:
        """Droid with a bring-your-own-key chat-completions model in ~/.factory/settings.json
        (no Factory login: `droid exec` runs new sessions offline)."""
        update_json(  # merged: hooks passdown installed there stay
            self.home / ".factory" / "settings.json",
            {
                "customModels": [
                    {
                        "model": CHAT_MODEL,
                        "displayName": "Scripted",
                        "baseUrl": f"{chat_url}/v1",
                        "apiKey": FAKE_KEY,
                        "provider": "generic-chat-completion-api",
                        "maxOutputTokens": 8192,
                    }
                ],
                # the model a launch without -m uses (Droid's own default is Factory's)
                "sessionDefaultSettings": {"model": DROID_MODEL},
            },
        )
        return self.environ()

    def write_codex_config(self, openai_url: str) -> None:
        # A custom provider on loopback; no auth.json, no update checks, no analytics.
        # gpt-5.5 is a model 0.171 knows, so it offers apply_patch (freeform); update_plan
        # is off by default in 0.171 and must be enabled explicitly.
        (self.codex_home / "config.toml").write_text(
            f'model = "{CODEX_MODEL}"\n'
            'model_provider = "scripted"\n'
            "check_for_update_on_startup = false\n"
            "[analytics]\nenabled = false\n"
            "[feedback]\nenabled = false\n"
            "[model_providers.scripted]\n"
            'name = "scripted"\n'
            f'base_url = "{openai_url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "PASSDOWN_E2E_OPENAI_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
            "[tools.update_plan]\nenabled = true\n",
            encoding="utf-8",
        )


def target_environ(agent_env: AgentEnv, agent: str, url: str) -> dict[str, str]:
    """The environment for an agent that passdown launches (`switch --to AGENT`), pointed
    at the scripted server `url`. passdown's argv carries no provider or model flags, so
    what the run_* helpers pass as flags comes from the agent's own config here, as on a
    user's machine: pi's default provider and model in its settings.json, Qwen Code's
    auth from OPENAI_* (it picks `openai` when key, base URL and model are set)."""
    if agent == "claude":
        return agent_env.environ(anthropic_url=url)
    if agent == "codex":
        return agent_env.environ(openai_url=url)
    if agent == "pi":
        _write_json(
            agent_env.home / ".pi" / "agent" / "settings.json",
            {"defaultProvider": CHAT_PROVIDER, "defaultModel": CHAT_MODEL},
        )
    environ = {
        "gemini": agent_env.gemini_environ,
        "qwen": agent_env.qwen_environ,
        "opencode": agent_env.opencode_environ,
        "pi": agent_env.pi_environ,
        "copilot": agent_env.copilot_environ,
        "kilo": agent_env.kilo_environ,
        "droid": agent_env.droid_environ,
    }[agent]
    return environ(url)


def init_git_workspace(path: Path, files: dict[str, str] | None = None) -> Path:
    """A fresh git repo with one commit, so agents and passdown see real git state."""
    path.mkdir(parents=True, exist_ok=True)
    # A fixed, past commit date: like a real repo, its history predates the agent session
    # (git dates have 1 s resolution, so a commit made just before the session would look
    # like work done during it). It also keeps HEAD's hash stable across recordings.
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "e2e",
        "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
        "GIT_COMMITTER_NAME": "e2e",
        "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z",
        "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for name, content in (files or {"README.md": "# demo\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(content, encoding="utf-8")
    git("add", "-A")
    git("commit", "-q", "-m", "initial")
    return path


def run_claude(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    argv = [
        str(find_agent("claude")),
        "-p",
        prompt,
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        CLAUDE_TOOLS,
        *extra,
    ]
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def run_codex(
    env: dict[str, str], cwd: Path, prompt: str, *, resume: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    codex = str(find_agent("codex"))
    flags = ["--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]
    if resume:
        argv = [codex, "exec", *flags, "resume", resume, prompt]
    else:
        argv = [codex, "exec", *flags, prompt]
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _run(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def run_gemini(
    env: dict[str, str], cwd: Path, prompt: str, *, resume: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`gemini -p` in yolo mode; `resume` is a session id, an index or "latest"."""
    argv = [str(find_agent("gemini")), "-m", GEMINI_MODEL, "--approval-mode", "yolo", "-o", "text"]
    if resume:
        argv += ["--resume", resume]
    return _run([*argv, "-p", prompt], env, cwd, timeout)


def run_qwen(
    env: dict[str, str], cwd: Path, prompt: str, *, resume: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`qwen PROMPT` runs once and exits; `-r ID` resumes that session."""
    argv = [
        str(find_agent("qwen")),
        "--auth-type",
        "openai",
        "--approval-mode",
        "yolo",
        "-o",
        "text",
    ]
    if resume:
        argv += ["-r", resume]
    return _run([*argv, prompt], env, cwd, timeout)


def run_opencode(
    env: dict[str, str], cwd: Path, prompt: str, *, resume: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`opencode run --auto`; `-s ID` continues that session."""
    argv = [str(find_agent("opencode")), "run", "--auto", "-m", f"{CHAT_PROVIDER}/{CHAT_MODEL}"]
    if resume:
        argv += ["-s", resume]
    return _run([*argv, prompt], env, cwd, timeout)


def run_pi(
    env: dict[str, str], cwd: Path, prompt: str, *, resume: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`pi -p`; `--session` takes a session file path or an id prefix."""
    argv = [str(find_agent("pi")), "--provider", CHAT_PROVIDER, "--model", CHAT_MODEL]
    if resume:
        argv += ["--session", resume]
    return _run([*argv, "-p", prompt], env, cwd, timeout)


def run_copilot(
    env: dict[str, str], cwd: Path, prompt: str, *, resume: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`copilot -p --allow-all-tools`; `--resume=ID` continues that session."""
    argv = [str(find_agent("copilot")), "-p", prompt, "--allow-all-tools", "--no-color"]
    if resume:
        argv.append(f"--resume={resume}")
    return _run(argv, env, cwd, timeout)


def run_kilo(
    env: dict[str, str], cwd: Path, prompt: str, *, resume: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`kilo run --auto`; `-s ID` continues that session."""
    argv = [str(find_agent("kilo")), "run", "--auto", "-m", f"{CHAT_PROVIDER}/{CHAT_MODEL}"]
    if resume:
        argv += ["-s", resume]
    return _run([*argv, prompt], env, cwd, timeout)


def run_droid(
    env: dict[str, str], cwd: Path, prompt: str, *, resume: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`droid exec --auto high`; `-s ID` would continue a session, but that needs a Factory
    login (it fetches the session from api.factory.ai), so offline runs never resume."""
    argv = [str(find_agent("droid")), "exec", "--auto", "high", "-m", DROID_MODEL]
    if resume:
        argv += ["-s", resume]
    return _run([*argv, prompt], env, cwd, timeout)


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def update_json(path: Path, patch: dict[str, Any]) -> None:
    """Merge `patch` into a JSON settings file (one level deep), creating it if needed."""
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    _write_json(path, data)


# The CLIs that run once on a prompt, `resume=` continuing a session: agent -> runner
PROMPT_RUNNERS: dict[str, Callable[..., subprocess.CompletedProcess[str]]] = {
    "codex": run_codex,
    "gemini": run_gemini,
    "qwen": run_qwen,
    "opencode": run_opencode,
    "pi": run_pi,
    "copilot": run_copilot,
    "kilo": run_kilo,
}


def run_passdown(
    env: dict[str, str], cwd: Path, *args: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """The passdown CLI as a user runs it, in the test's isolated environment."""
    return subprocess.run(
        [sys.executable, "-m", "passdown", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def which_git() -> str:
    git = shutil.which("git")
    if not git:
        raise AgentsMissing("git is required by the e2e tests")
    return git


# -- issue 23, third wave: gptme and Hermes Agent (PyPI, each in its own venv) -------------
# Both try the internet at start (gptme: a tiktoken file; Hermes: an update check and its
# scanner's download): a proxy on a closed 127.0.0.1 port makes those fail at once.
_NO_INTERNET = {
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost",
}


def gptme_environ(agent_env: AgentEnv, chat_url: str) -> dict[str, str]:
    """gptme on the scripted chat-completions server: its `local/` provider reads
    OPENAI_BASE_URL (the model is named with `-m local/MODEL`, see `run_gptme`)."""
    return {**agent_env.environ(), **_NO_INTERNET, "OPENAI_BASE_URL": f"{chat_url}/v1"}


def run_gptme(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """`gptme -n -m local/MODEL [extra] -- PROMPT` (non-interactive: runs until the model
    calls `complete` or stops using tools); `-r` resumes the workspace's last session."""
    from e2e.pyagents import pyagent

    argv = [str(pyagent("gptme")), "-n", "-m", f"local/{CHAT_MODEL}", *extra, "--", prompt]
    return _run_pyagent(argv, env, cwd, timeout)


def hermes_environ(
    agent_env: AgentEnv, chat_url: str, *, api_max_retries: int | None = None
) -> dict[str, str]:
    """Hermes 0.19 with a `custom` provider on the scripted server in ~/.hermes/config.yaml.
    Hermes tries a failing model call 3 times with a jittered backoff (about 40 s for a
    sticky 429); `api_max_retries=1` (its `agent.api_max_retries`) makes it one attempt."""
    folder = agent_env.home / ".hermes"
    folder.mkdir(parents=True, exist_ok=True)
    retries = f"agent:\n  api_max_retries: {api_max_retries}\n" if api_max_retries else ""
    (folder / "config.yaml").write_text(
        "model:\n"
        f"  default: {CHAT_MODEL}\n"
        "  provider: custom\n"
        f"  base_url: {chat_url}/v1\n"
        f"  api_key: {FAKE_KEY}\n"
        f"{retries}",
        encoding="utf-8",
    )
    return {**agent_env.environ(), **_NO_INTERNET}


def run_hermes(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`hermes chat --yolo -Q [extra] --query=PROMPT`: one turn, unattended; `--continue`
    resumes the last session."""
    from e2e.pyagents import pyagent

    argv = [str(pyagent("hermes")), "chat", "--yolo", "-Q", *extra, f"--query={prompt}"]
    return _run_pyagent(argv, env, cwd, timeout)


def _run_pyagent(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["timeout", "-k", "5", str(int(timeout)), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        check=False,
        stdin=subprocess.DEVNULL,
    )


# -- issue 23 (wave3b): Mistral Vibe and OpenHands, PyPI CLIs in venvs of their own ---------
def vibe_environ(
    agent_env: AgentEnv, chat_url: str, *, retry_budget_s: float | None = None
) -> dict[str, str]:
    """Vibe 3.0 with a chat-completions provider in ~/.vibe/config.toml (no telemetry or
    update checks). Vibe retries a 429 until `api_retry_max_elapsed_time` (300 s by
    default) is spent: `retry_budget_s` shortens it so a sticky 429 ends the turn."""
    vibe_dir = agent_env.home / ".vibe"
    vibe_dir.mkdir(parents=True, exist_ok=True)
    budget = f"api_retry_max_elapsed_time = {retry_budget_s}\n" if retry_budget_s else ""
    (vibe_dir / "config.toml").write_text(
        'active_model = "scripted"\n'
        "enable_telemetry = false\n"
        "enable_update_checks = false\n"
        "enable_auto_update = false\n"
        f"{budget}"
        "[[providers]]\n"
        'name = "scripted"\n'
        f'api_base = "{chat_url}/v1"\n'
        'api_key_env_var = "SCRIPTED_API_KEY"\n'
        'api_style = "openai"\n'
        'backend = "generic"\n'
        "[[models]]\n"
        f'name = "{CHAT_MODEL}"\n'
        'provider = "scripted"\n'
        'alias = "scripted"\n',
        encoding="utf-8",
    )
    return {**agent_env.environ(), "SCRIPTED_API_KEY": FAKE_KEY}


def run_vibe(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`vibe --trust --auto-approve --prompt=PROMPT` (one turn, then exit: the form
    passdown's launch argv uses, so a prompt may start with "-"); `-c` continues the
    newest session."""
    from e2e.pyagents import pyagent

    argv = [str(pyagent("vibe")), "--trust", "--auto-approve", *extra, f"--prompt={prompt}"]
    return subprocess.run(
        ["timeout", "-k", "5", str(int(timeout)), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 30,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def openhands_environ(agent_env: AgentEnv, chat_url: str) -> dict[str, str]:
    """OpenHands 1.16 on the scripted server through LiteLLM (`--override-with-envs` makes
    it take LLM_* from the environment). Its public-skills `git clone` from GitHub and
    any other https request go to a dead proxy on 127.0.0.1; tmux (its terminal tool)
    gets a socket folder of the test's own, so the server it leaves can be ended."""
    tmux = agent_env.root / "tmux"
    tmux.mkdir(parents=True, exist_ok=True)
    dead = "http://127.0.0.1:9"
    return {
        **agent_env.environ(),
        "LLM_MODEL": f"openai/{CHAT_MODEL}",
        "LLM_BASE_URL": f"{chat_url}/v1",
        "LLM_API_KEY": FAKE_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENHANDS_SUPPRESS_BANNER": "1",
        "HTTPS_PROXY": dead,
        "HTTP_PROXY": dead,
        "https_proxy": dead,
        "http_proxy": dead,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "TMUX_TMPDIR": str(tmux),
    }


def save_openhands_settings(home: Path, chat_url: str, *, num_retries: int = 0) -> Path:
    """The model settings OpenHands keeps in ~/.openhands/agent_settings.json (recorded
    as its 1.16 `AgentStore.save` writes them: tests/fixtures/e2e/), on the scripted
    server: what `openhands --headless` needs without `--override-with-envs` (passdown's
    launch argv has no such flag). LiteLLM retries a 429 `num_retries` times (5 by
    default, backing off 8-64 s: minutes); the waits here are 0-1 s."""
    recorded = REPO_ROOT / "tests" / "fixtures" / "e2e" / "openhands_agent_settings.json"
    settings = json.loads(recorded.read_text(encoding="utf-8"))
    for llm in (settings["llm"], settings["condenser"]["llm"]):
        llm.update(base_url=f"{chat_url}/v1", num_retries=num_retries, retry_max_wait=1)
        llm.update(model=f"openai/{CHAT_MODEL}", api_key=FAKE_KEY, retry_min_wait=0)
    path = home / ".openhands" / "agent_settings.json"
    _write_json(path, settings)
    return path


def end_openhands_tmux(env: dict[str, str]) -> None:
    """End the tmux server OpenHands' terminal tool leaves (on the test's own socket
    folder, TMUX_TMPDIR)."""
    subprocess.run(
        ["tmux", "-L", "openhands", "kill-server"],
        env=env,
        capture_output=True,
        timeout=30,
        check=False,
    )


def run_openhands(
    env: dict[str, str], cwd: Path, prompt: str, *extra: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`openhands --headless --override-with-envs --task=PROMPT` (one run, then exit);
    `--resume ID` continues a conversation. The tmux server its terminal tool starts is
    ended afterwards (`tmux -L openhands kill-server` on the test's own socket folder)."""
    from e2e.pyagents import pyagent

    argv = [str(pyagent("openhands")), "--headless", "--override-with-envs", *extra]
    try:
        return subprocess.run(
            ["timeout", "-k", "5", str(int(timeout)), *argv, f"--task={prompt}"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout + 30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    finally:
        end_openhands_tmux(env)
