"""The build's one step beyond pyproject.toml: the agents' plugins ride in the wheel.

The repository's `.claude-plugin/marketplace.json` and `plugins/` are the one source of
passdown's agent plugins (a Claude Code marketplace at the repository's root, the Gemini
CLI and Qwen Code extensions). The wheel carries them as they lie in the repository,
under `passdown/agent-plugins/`, so the installed folder is the same marketplace
(`claude plugin marketplace add "$(passdown doctor --plugins-dir)"`). An editable install
reads them from the checkout itself (`passdown.integrations._plugins.plugins_dir`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# the repository's plugin files, as globs under its root; MANIFEST.in puts them in the sdist
SOURCES = (".claude-plugin/marketplace.json", "plugins/**/*")
TARGET = "passdown/agent-plugins"  # in the wheel


def plugin_files() -> list[Path]:
    """The plugin files under the root, relative to it, without Python's by-products."""
    files = {p for pattern in SOURCES for p in HERE.glob(pattern) if p.is_file()}
    return sorted(
        p.relative_to(HERE) for p in files if "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


class BuildWithPlugins(build_py):
    """build_py, then a copy of the plugin files into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout, plugins and all
        missing = [s for s in SOURCES[:1] if not (HERE / s).is_file()]
        if missing:
            raise SystemExit(f"passdown's build: {', '.join(missing)} is missing")
        for name in plugin_files():
            target = Path(self.build_lib) / TARGET / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(HERE / name, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs: list[str] = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False):
            return outputs
        return outputs + [str(Path(self.build_lib) / TARGET / n) for n in plugin_files()]


setup(cmdclass={"build_py": BuildWithPlugins})
