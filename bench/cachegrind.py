"""Instruction counts from valgrind's cachegrind, for the scripts that count instead of time.

Wall and CPU times of small parts drown in the load of a shared machine; cachegrind's count of
the instructions a run executes is deterministic and blind to it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys


def instructions(script: str, *args: str) -> int:
    """The instructions `python SCRIPT ARGS...` executes under cachegrind (needs valgrind)."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    command += [sys.executable, script, *args]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0"))
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"cachegrind gave no count for {' '.join(args)}: {done.stderr[-400:]}")
    return int(found.group(1).replace(",", ""))
