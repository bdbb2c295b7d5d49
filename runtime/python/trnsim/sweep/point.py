"""One point: compile (through the cache) and simulate, into the point's folder.

`run_point(task)` is the unit of work for every executor (local worker processes and
Dask workers alike): it only needs the task dict and a shared file system. The folder
holds point.json (identity ingredients), config.yaml (resolved config), log.txt,
stats.json and status.json; status.json is written last, atomically, and records the
SHA-256 of stats.json, so a folder is finished exactly when `read_status` validates.

Failure classes: config_error (the simulator refused the config: never retried),
error (it refused the workload: rerun only with --retry-failed), crash (killed by a
signal or wrote no valid stats: retried once), timeout, oom (hit the memory limit).
"""

import fcntl
import hashlib
import json
import os
import re
import socket
import time

from trnsim.sweep.procs import run_limited
from trnsim.sweep.run_keys import drop_unsplit, partitioned, split_sets

STATUS_OK = "ok"
STATUS_FAILED = "failed"
CRASH_RETRIES = 1


def atomic_write(path, data):
    """Writes via a unique temp file + fsync + rename: readers see old or new, never torn."""
    if isinstance(data, str):
        data = data.encode()
    tmp = f"{path}.tmp.{os.getpid()}.{time.monotonic_ns()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def atomic_json(path, obj):
    atomic_write(path, json.dumps(obj, indent=1, sort_keys=True) + "\n")


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def validate_stats(path):
    """The stats tree if `path` holds one a run wrote completely, else raises ValueError."""
    with open(path) as f:
        tree = json.load(f)
    if not isinstance(tree, dict) or not isinstance(tree.get("simulated_ns"), (int, float)):
        raise ValueError("no simulated_ns in the stats tree")
    return tree


def read_status(point_dir):
    """(status dict or None, reason): None when the folder has no valid finished state."""
    sp = os.path.join(point_dir, "status.json")
    if not os.path.exists(sp):
        if os.path.exists(os.path.join(point_dir, "point.json")):
            return None, "started before but never finished (interrupted)"
        return None, "new point"
    try:
        with open(sp) as f:
            st = json.load(f)
    except (OSError, ValueError) as e:
        return None, f"status.json unreadable ({e})"
    if st.get("status") == STATUS_OK:
        stats = os.path.join(point_dir, "stats.json")
        try:
            validate_stats(stats)
            if _sha256(stats) != st.get("stats_sha256"):
                return None, "stats.json does not match the checksum in status.json"
        except (OSError, ValueError) as e:
            return None, f"stats.json invalid ({e})"
    return st, "finished"


_CONFIG_ERR = re.compile(r"--set |unknown key|config file|must be |expected a |cannot open config")
_OOM = re.compile(r"bad_alloc|Cannot allocate memory|out of memory|failed to allocate|MemoryError")


def _message(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    picked = [re.sub(r"^trnsim: (error: )?", "", l) for l in lines if l.startswith("trnsim:")]
    return "; ".join(picked)[:500] if picked else (lines[-1][:500] if lines else "")


def classify(outcome, text):
    """(class, message) for a failed command."""
    msg = _message(text)
    if outcome.timed_out:
        return "timeout", f"did not finish within {outcome.seconds:.0f} s"
    if _OOM.search(text):
        return "oom", msg or "ran out of memory under the memory limit"
    if outcome.signal:
        return "crash", f"killed by signal {outcome.signal}" + (f": {msg}" if msg else "")
    if _CONFIG_ERR.search(msg):
        return "config_error", msg
    return "error", msg or f"exit status {outcome.returncode}"


class _Step:
    """Runs commands for one attempt, appending to log.txt and tracking the time budget."""

    def __init__(self, task, log):
        self.task = task
        self.log = log
        self.deadline = (time.monotonic() + task["timeout"]) if task.get("timeout") else None

    def run(self, cmd):
        left = None
        if self.deadline is not None:
            left = max(0.1, self.deadline - time.monotonic())
        self.log.write(f"$ {' '.join(cmd)}\n")
        start = self.log.tell()
        out = run_limited(cmd, self.log, timeout=left, mem_bytes=self.task.get("mem_bytes"),
                          env=self.task.get("env"))
        self.log.flush()
        with open(self.log.name, errors="replace") as f:
            f.seek(start)
            text = f.read()
        return out, text


def _compile(task, step):
    """Path of the program to run and "hit"/"miss"; raises _Fail."""
    cache = task["cache_dir"]
    os.makedirs(cache, exist_ok=True)
    prog = os.path.join(cache, task["compile_key"] + ".tbin")
    # One compile per key even when several workers want it at once.
    with open(prog + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(prog) and os.path.getsize(prog) > 0:
            step.log.write(f"compile cache hit: {prog}\n")
            return prog, "hit"
        tmp = f"{prog}.tmp.{os.getpid()}.tbin"
        cmd = [task["binary"], "compile", task["workload"]["path"], "-c", task["base"],
               "--precision", task["precision"], "-o", tmp]
        for s in split_sets(task["compile_sets"])[0]:
            cmd += ["--set", s]
        out, text = step.run(cmd)
        if out.returncode != 0 or out.timed_out or not os.path.exists(tmp):
            if os.path.exists(tmp):
                os.unlink(tmp)
            cls, msg = classify(out, text)
            if out.returncode == 0 and not out.timed_out:
                cls, msg = "crash", "compile wrote no program"
            raise _Fail(cls, "compile: " + msg)
        os.replace(tmp, prog)
        return prog, "miss"


class _Fail(Exception):
    def __init__(self, cls, msg):
        super().__init__(msg)
        self.cls = cls
        self.msg = msg


def _attempt(task, log, info):
    step = _Step(task, log)
    wl = task["workload"]
    compile_state = "none"
    prog = wl["path"]
    sets, run_args = split_sets(task["sets"])
    if prog.endswith(".onnx") and not partitioned(run_args):
        prog, compile_state = _compile(task, step)
        info["compile"] = compile_state
        run_args = drop_unsplit(run_args)  # tp = dp = 1: the whole model, compiled
    elif prog.endswith(".onnx"):  # split per rank: `trnsim run` compiles
        run_args += ["--precision", task["precision"]]
    stats_tmp = os.path.join(task["dir"], f"stats.json.tmp.{os.getpid()}")
    cmd = [task["binary"], "run", prog, "-c", task["base"], "--stats", stats_tmp] + run_args
    for s in sets:
        cmd += ["--set", s]
    cmd += ["--no-functional"] if task["timing_only"] else ["--random-inputs"]
    out, text = step.run(cmd)
    try:
        if out.returncode != 0 or out.timed_out:
            raise _Fail(*classify(out, text))
        try:
            tree = validate_stats(stats_tmp)
        except (OSError, ValueError) as e:
            raise _Fail("crash", f"run exited 0 but wrote no valid stats ({e})")
        final = os.path.join(task["dir"], "stats.json")
        os.replace(stats_tmp, final)
        return tree, compile_state, _sha256(final)
    finally:
        if os.path.exists(stats_tmp):
            os.unlink(stats_tmp)


def run_point(task):
    """Runs one point to a finished folder; returns its status dict (never raises for a
    failed simulation: the failure is the status)."""
    d = task["dir"]
    os.makedirs(d, exist_ok=True)
    atomic_json(os.path.join(d, "point.json"), task["record"])
    atomic_write(os.path.join(d, "config.yaml"), task["config_text"])
    t0 = time.monotonic()
    attempts = 0
    status = {"id": task["id"], "version": task["record"]["version"],
              "host": socket.gethostname(), "pid": os.getpid()}
    info = {"compile": "none"}
    with open(os.path.join(d, "log.txt"), "a") as log:
        while True:
            attempts += 1
            log.write(f"--- attempt {attempts} at {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
            try:
                tree, compile_state, sha = _attempt(task, log, info)
                status.update(status=STATUS_OK, cls="", message="", compile=compile_state,
                              stats_sha256=sha, simulated_ns=tree["simulated_ns"],
                              sim_host_seconds=tree.get("host_seconds"))
                break
            except _Fail as f:
                log.write(f"failed ({f.cls}): {f.msg}\n")
                status.update(status=STATUS_FAILED, cls=f.cls, message=f.msg,
                              compile=info["compile"])
                if f.cls == "crash" and attempts <= CRASH_RETRIES:
                    continue
                break
    status["attempts"] = attempts
    status["host_seconds"] = round(time.monotonic() - t0, 6)
    status["finished_at"] = time.time()
    atomic_json(os.path.join(d, "status.json"), status)
    return status
