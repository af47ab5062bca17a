"""What a byte-level pass 1 would save on Claude sessions (a prototype, not product code).

Claude Code writes `parentUuid` as the first key of every conversation record and
`isSidechain` right after it, so pass 1 could read a record's place in the tree by
slicing bytes instead of decoding JSON, falling back to the decoder for any other line.
The top-level `uuid` is not at a fixed place and nested objects can carry a `uuid` key,
so this prototype takes the last `"uuid":"` of the line, which is not guaranteed to be
the record's own: that is why it is a measurement and not in passdown. It prints the CPU
time of the real pass 1 and of the byte-level one on the same grown file, and whether
they found the same branch.

Usage: python benchmarks/proto_fast_pass1.py [--size 300]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realshape
from bench_export import MB

_PREFIX = b'{"parentUuid":'
_SIDECHAIN = b',"isSidechain":'
_UUID = b'"uuid":"'


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=float, default=300)
    args = parser.parse_args()
    from passdown.agents import _tree, claude
    from passdown.transcript import Diagnostics, SessionInfo

    fixture = realshape.fixtures()["claude"]
    work = Path(tempfile.mkdtemp(prefix="passdown-fastpass1-"))
    try:
        path = realshape.install(fixture, work / "claude")
        realshape.Grower(fixture).write(path, int(args.size * MB))
        info = SessionInfo(agent="claude", session_id="s", path=path)

        def exact(diag: Diagnostics):  # type: ignore[no-untyped-def]
            return claude._node_reader(info, diag)

        def fast(diag: Diagnostics):  # type: ignore[no-untyped-def]
            node_type = _tree.Node
            slow = exact(diag)

            def read(offset: int, line: bytes, tail: int) -> object:
                if line.startswith(_PREFIX):
                    if line[14] == 34:  # '"'
                        parent: str | None = line[15:51].decode()
                        rest = 52
                    else:
                        parent, rest = None, 18
                    if line.startswith(_SIDECHAIN, rest) and line[rest + 15] == 102:  # false
                        at = line.rfind(_UUID)
                        if at > 0 and line.find(b'"type":"system"') < 0:
                            return node_type(line[at + 8 : at + 44].decode(), parent)
                return slow(offset, line, tail)

            return read

        results = {}
        for name, reader in (("decoder", exact), ("byte-level", fast)) * 2:
            diag = Diagnostics()
            start = time.process_time()
            branch = _tree.find_active_branch(path, diag, reader(diag))
            spent = time.process_time() - start
            results.setdefault(name, []).append((spent, bytes(branch.runs), branch.broken))
        same = results["decoder"][0][1:] == results["byte-level"][0][1:]
        size = path.stat().st_size / 1e6
        print(
            f"claude {size:.0f} MB pass 1 CPU: decoder "
            f"{min(r[0] for r in results['decoder']):.2f} s, byte-level "
            f"{min(r[0] for r in results['byte-level']):.2f} s; same branch: {same}; "
            f"load {os.getloadavg()[0]:.1f}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
