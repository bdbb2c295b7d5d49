"""Executors: where `run_point` runs. Both call the same function on the same task dicts.

local: N worker processes forked from the runner's main thread, each asking the kernel
for SIGKILL when the runner dies (PR_SET_PDEATHSIG) and handing the same request on to
the simulator it starts, so killing the runner, even with SIGKILL, leaves no process
behind. A worker that dies mid-point is replaced and its point requeued once.

dask: an existing Debian `python3-distributed` cluster (`--scheduler ADDRESS` or a
scheduler JSON file). The runner ships the trnsim package to every worker (a zip through
Dask's UploadFile plugin, also given to workers that join later), so workers need no
PYTHONPATH; then it checks each worker before the first point: trnsim imports from that
zip, the simulator binary (`--worker-binary`, default the runner's path) exists and
runs, and the output folder and inputs are visible at the same paths (a shared file
system). A failed check names the worker and what failed, and nothing runs. A killed
worker's simulator dies with it (parent-death signal); the scheduler reruns its point
on another worker.
"""

import hashlib
import multiprocessing as mp
import os
import signal
import tempfile
import time
import traceback
import uuid
import zipfile
from collections import deque
from multiprocessing.connection import wait
from pathlib import Path

from trnsim.sweep.point import run_point
from trnsim.sweep.procs import set_pdeathsig


def _internal_failure(task, what):
    return {"id": task["id"], "status": "failed", "cls": "crash", "message": what,
            "attempts": 1, "host_seconds": 0.0, "compile": "none", "internal": True}


def _worker(conn, parent):
    set_pdeathsig(signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            res = run_point(task)
        except Exception:  # a runner bug or a full disk: report, keep the worker alive
            res = _internal_failure(task, "runner error: " + traceback.format_exc(limit=3))
        conn.send(res)


class LocalExecutor:
    name = "local"

    def __init__(self, jobs):
        self.jobs = max(1, int(jobs))

    def run(self, tasks, on_result, should_stop, tick=lambda: None):
        """Runs tasks; on_result(task, status) per finished point. Stops submitting when
        should_stop() is true and kills the points in flight (left unfinished)."""
        ctx = mp.get_context("fork")
        pending = deque(tasks)
        requeued = set()
        workers = {}  # slot -> [process, conn, task or None]

        def start(slot):
            a, b = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(b, os.getpid()), daemon=True)
            p.start()
            b.close()
            workers[slot] = [p, a, None]

        try:
            for slot in range(min(self.jobs, len(pending))):
                start(slot)
            while True:
                stopping = should_stop()
                if not stopping:
                    for w in workers.values():
                        if w[2] is None and pending:
                            w[2] = pending.popleft()
                            w[1].send(w[2])
                busy = {slot: w for slot, w in workers.items() if w[2] is not None}
                if not busy or (stopping and busy):
                    break
                ready = wait([w[1] for w in busy.values()] + [w[0].sentinel for w in busy.values()],
                             timeout=0.5)
                for slot, w in list(busy.items()):
                    p, conn, task = w
                    if conn in ready:
                        try:
                            res = conn.recv()
                        except EOFError:
                            res = None
                        if res is not None:
                            w[2] = None
                            on_result(task, res)
                            continue
                    if p.sentinel in ready or not p.is_alive():
                        # The worker died mid-point (killed, OOM killer): requeue once.
                        p.join()
                        conn.close()
                        if task["id"] not in requeued:
                            requeued.add(task["id"])
                            pending.appendleft(task)
                        else:
                            on_result(task, _internal_failure(
                                task, f"worker died twice (exit {p.exitcode})"))
                        start(slot)
                tick()
        finally:
            for p, conn, task in workers.values():
                if task is None and p.is_alive():
                    try:
                        conn.send(None)
                    except OSError:
                        pass
            deadline = time.monotonic() + 2
            for p, conn, task in workers.values():
                if task is not None:
                    p.kill()  # its simulator gets SIGKILL from the parent-death signal
                p.join(max(0.0, deadline - time.monotonic()))
                if p.is_alive():
                    p.kill()
                    p.join()
                conn.close()


class DaskSetupError(ValueError):
    """The cluster cannot run points: no worker, or a worker failed its check."""


def package_zip(folder):
    """Path of a zip of the trnsim package (its .py files) in `folder`, named by a hash of
    its content so that a worker tells this copy from any other."""
    root = Path(__file__).resolve().parents[1]  # .../trnsim
    files = sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    h = hashlib.sha256()
    for p in files:
        rel = p.relative_to(root.parent).as_posix()
        h.update(rel.encode() + b"\0" + p.read_bytes() + b"\0")
    path = os.path.join(folder, f"trnsim-{h.hexdigest()[:16]}.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p in files:
            info = zipfile.ZipInfo(p.relative_to(root.parent).as_posix(), (1980, 1, 1, 0, 0, 0))
            z.writestr(info, p.read_bytes())
    return path


# Runs on each worker through client.run. Defined outside any importable module so that
# cloudpickle sends the function itself: it has to run where trnsim does not import, to
# say so.
_CHECK_SOURCE = """
def check_worker(zip_name, binary, marker, token, paths):
    import importlib, os, socket, subprocess, sys
    problems = []
    try:
        old = sys.modules.get("trnsim.sweep.point")
        if old is not None and zip_name not in (getattr(old, "__file__", "") or ""):
            # Imported before from elsewhere (an earlier sweep, PYTHONPATH): drop that copy
            # so the tasks unpickle the uploaded one.
            for m in [m for m in sys.modules if m == "trnsim" or m.startswith("trnsim.")]:
                del sys.modules[m]
            importlib.invalidate_caches()
        import trnsim.sweep.point
        where = trnsim.sweep.point.__file__
        if zip_name not in where:
            problems.append(f"imports trnsim from {where}, not the uploaded {zip_name}")
    except Exception as e:
        problems.append(f"cannot import trnsim.sweep.point: {type(e).__name__}: {e}")
    if not os.path.isabs(binary):
        problems.append(f"simulator binary {binary!r} is not an absolute path")
    elif not os.path.isfile(binary):
        problems.append(f"no simulator binary at {binary} (build it there or give its path "
                        "on the workers with --worker-binary)")
    elif not os.access(binary, os.X_OK):
        problems.append(f"simulator binary {binary} is not executable")
    else:
        try:
            p = subprocess.run([binary, "info", "--keys"], capture_output=True, text=True,
                               timeout=120)
            if p.returncode != 0:
                last = (p.stderr.strip().splitlines() or [""])[-1]
                problems.append(f"{binary} info --keys failed (exit {p.returncode}): {last}")
        except (OSError, subprocess.SubprocessError) as e:
            problems.append(f"cannot run {binary}: {e}")
    try:
        with open(marker) as f:
            if f.read() != token:
                problems.append(f"{marker} holds another sweep's token")
        probe = f"{marker}.{socket.gethostname()}.{os.getpid()}"
        with open(probe, "w"):
            pass
        os.unlink(probe)
    except OSError as e:
        problems.append(f"cannot read and write the output folder {os.path.dirname(marker)} "
                        f"({e.strerror}): workers need it at the same path (a shared file "
                        "system)")
    for path in paths:
        if not os.path.isfile(path):
            problems.append(f"cannot see input {path}")
    return {"host": socket.gethostname(), "pid": os.getpid(), "problems": problems}
"""


def _check_function():
    ns = {"__name__": "trnsim_dask_worker_check"}
    exec(compile(_CHECK_SOURCE, "<trnsim dask worker check>", "exec"), ns)
    return ns["check_worker"]


class DaskExecutor:
    name = "dask"

    def __init__(self, scheduler, worker_binary=None, wait_workers=60.0):
        if not scheduler:
            raise ValueError("--executor dask needs --scheduler ADDRESS or a scheduler file")
        self.scheduler = scheduler
        self.worker_binary = worker_binary
        self.wait_workers = wait_workers
        self.zip_name = None  # set once the package is on the cluster and workers checked

    def client(self):
        from distributed import Client
        try:
            if os.path.isfile(self.scheduler):
                return Client(scheduler_file=self.scheduler, timeout="30s")
            return Client(self.scheduler, timeout="30s")
        except (OSError, TimeoutError) as e:
            raise DaskSetupError(f"dask: cannot connect to the scheduler {self.scheduler}: "
                                 f"{e}") from e

    def prepare(self, client, tasks):
        """Ships the trnsim package to the workers and checks each; raises DaskSetupError."""
        from distributed.diagnostics.plugin import UploadFile
        try:
            client.wait_for_workers(1, timeout=self.wait_workers)
        except (TimeoutError, OSError) as e:
            raise DaskSetupError(f"dask: no worker joined the scheduler {self.scheduler} within "
                                 f"{self.wait_workers:.0f} s") from e
        with tempfile.TemporaryDirectory(prefix="trnsim-dask-") as tmp:
            path = package_zip(tmp)
            try:
                # One name: a later sweep replaces the plugin instead of stacking copies.
                client.register_worker_plugin(UploadFile(path), name="trnsim-package")
            except Exception as e:
                raise DaskSetupError(f"dask: installing the trnsim package on the workers "
                                     f"failed: {type(e).__name__}: {e}") from e
        zip_name = os.path.basename(path)
        t = tasks[0]
        outdir = os.path.dirname(os.path.dirname(t["dir"]))
        token = uuid.uuid4().hex
        marker = os.path.join(outdir, f".dask-check-{token[:8]}")
        with open(marker, "w") as f:
            f.write(token)
        paths = sorted({x["workload"]["path"] for x in tasks}
                       | ({t["base"]} if t["base"].endswith((".yaml", ".yml")) else set()))
        try:
            res = client.run(_check_function(), zip_name, t["binary"], marker, token, paths,
                             on_error="return")
        finally:
            os.unlink(marker)
        bad = []
        for addr, r in sorted(res.items()):
            if isinstance(r, BaseException):
                bad.append(f"worker {addr}: the check failed: {type(r).__name__}: {r}")
            elif r["problems"]:
                bad.append(f"worker {addr} (host {r['host']}, pid {r['pid']}): "
                           + "; ".join(r["problems"]))
        if not res:
            bad.append("no worker answered")
        if bad:
            raise DaskSetupError("dask: workers cannot run points (nothing ran):\n  "
                                 + "\n  ".join(bad))
        self.zip_name = zip_name

    def run(self, tasks, on_result, should_stop, tick=lambda: None):
        from distributed import as_completed
        if self.worker_binary:
            tasks = [dict(t, binary=self.worker_binary) for t in tasks]
        client = self.client()
        try:
            if self.zip_name is None:
                self.prepare(client, tasks)
            nonce = uuid.uuid4().hex[:8]
            futures = {}
            for t in tasks:
                f = client.submit(run_point, t, key=f"trnsim-point-{t['id'][:24]}-{nonce}",
                                  pure=False)
                futures[f] = t
            ac = as_completed(futures)
            for f in ac:
                task = futures[f]
                try:
                    res = f.result()
                except Exception as e:  # the scheduler gave up (workers kept dying)
                    res = _internal_failure(task, f"dask: {type(e).__name__}: {e}")
                on_result(task, res)
                tick()
                if should_stop():
                    for g in futures:
                        if not g.done():
                            g.cancel()
                    break
        finally:
            client.close()
