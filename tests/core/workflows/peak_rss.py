"""Run a Python command and record its peak resident memory: `python peak_rss.py OUT SECONDS ARGS...`.

Linux counts into a child's peak the memory its parent had when it forked (the peak of the
pre-`exec` image is kept), so a test process that has grown to hundreds of megabytes cannot
measure its own child. This small launcher, started fresh, forks the command instead: the
command's peak is then its own. It writes the peak in KiB to OUT (or `timeout` after SECONDS,
killing the command) and exits with the command's status.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def main() -> int:
    out, seconds, *command = sys.argv[1:]
    process = subprocess.Popen([sys.executable, *command])
    deadline = time.monotonic() + float(seconds)
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            process.kill()
            os.wait4(process.pid, 0)
            with open(out, "w") as file:
                file.write("timeout")
            return 124
        time.sleep(0.05)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    peak_kib = usage.ru_maxrss // (1024 if sys.platform == "darwin" else 1)  # bytes on macOS
    with open(out, "w") as file:
        file.write(str(peak_kib))
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())
