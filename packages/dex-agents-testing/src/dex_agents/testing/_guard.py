"""``python -m dex_agents.testing._guard PARENT_PID MODULE [ARG ...]``: an orphan-proof child.

It runs ``MODULE`` as ``__main__`` (as ``python -m MODULE ARG ...`` would) beside a watchdog
thread: once ``PARENT_PID`` is no longer this process's parent, because the test process
died without cleaning up (SIGKILL, a crashed interpreter), the watchdog sends SIGTERM to this
process and, if it still runs 10 seconds later, ends it. The stack starts its engine this way.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

__all__ = ["main"]

_POLL_SECONDS = 0.25
_GRACE_SECONDS = 10.0
_ORPHANED_EXIT_CODE = 70


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(_POLL_SECONDS)
    print("dex-agents-testing: the test process is gone; stopping", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(_GRACE_SECONDS)
    os._exit(_ORPHANED_EXIT_CODE)


def main() -> None:
    """Start the watchdog, then run the module named on the command line as ``__main__``."""
    parent_pid, module, *arguments = sys.argv[1:]
    threading.Thread(
        target=_watch, args=(int(parent_pid),), name="dex-agents-testing-guard", daemon=True
    ).start()
    sys.argv = [module, *arguments]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
