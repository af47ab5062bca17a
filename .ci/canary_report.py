"""Per agent: how many e2e tests exercised it against its newest release, and which failed.

A test counts for an agent when the agent's name is a word of its id (file, function or
parameters), which is how the e2e tests are named (test_switch_matrix[claude-codex], ...).
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def agent_names(*pins_paths: str) -> list[str]:
    """The agents of the pin files: npm's (name, package, version) and PyPI's (name,
    package, version, python)."""
    names = []
    for pins_path in pins_paths:
        for line in Path(pins_path).read_text(encoding="utf-8").splitlines():
            fields = line.split()
            if len(fields) in (3, 4) and not line.startswith("#"):
                names.append(fields[0])
    return names


def main(junit_path: str, *pins_paths: str) -> None:
    names = agent_names(*pins_paths)
    ran = {n: 0 for n in names}
    failed: dict[str, list[str]] = {n: [] for n in names}
    unattributed: list[str] = []
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        words = set(re.split(r"[^a-z0-9]+", test_id.lower()))
        broken = case.find("failure") is not None or case.find("error") is not None
        agents = [name for name in names if name in words]
        for name in agents:
            ran[name] += 1
            if broken:
                failed[name].append(test_id)
        if broken and not agents:
            unattributed.append(test_id)
    print(f"\n{'agent':<9} {'tests':>5} {'failed':>6}")
    for name in names:
        print(f"{name:<9} {ran[name]:>5} {len(failed[name]):>6}")
        for test_id in failed[name]:
            print(f"    {test_id}")
    if unattributed:
        print("failed, naming no agent (read the test):")
        for test_id in unattributed:
            print(f"    {test_id}")


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:])
