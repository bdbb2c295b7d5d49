"""Running one simulator command under limits, leaving nothing behind.

Each command runs in its own session (so its own process group), with RLIMIT_AS as
the memory limit and PR_SET_PDEATHSIG(SIGKILL): if the process that started it dies
(even by SIGKILL) the kernel kills it too. On a timeout, and after every exit, the
whole group is killed, so grandchildren do not survive either.
"""

import ctypes
import os
import resource
import signal
import subprocess
import time

PR_SET_PDEATHSIG = 1
# Loaded before any fork: the child only calls into it.
_libc = ctypes.CDLL(None, use_errno=True)


def set_pdeathsig(sig=signal.SIGKILL):
    """Asks the kernel to send `sig` to this process when its parent thread exits."""
    if _libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


class Outcome:
    """How a command ended: returncode (negative: signal), timed_out, seconds."""

    def __init__(self, returncode, timed_out, seconds):
        self.returncode = returncode
        self.timed_out = timed_out
        self.seconds = seconds

    @property
    def signal(self):
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None


def _killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_limited(cmd, log, timeout=None, mem_bytes=None, env=None, cwd=None):
    """Runs cmd with stdout+stderr appended to the open file `log`; returns an Outcome."""
    parent = os.getpid()

    def pre():
        # Runs in the child between fork and exec (only async-signal-safe-ish calls).
        set_pdeathsig(signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(137)
        if mem_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    t0 = time.monotonic()
    log.flush()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=pre, env=env, cwd=cwd)
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _killpg(proc.pid)
        proc.wait()
    except BaseException:
        _killpg(proc.pid)
        proc.wait()
        raise
    _killpg(proc.pid)  # stray grandchildren of a finished command
    return Outcome(proc.returncode, timed_out, time.monotonic() - t0)
