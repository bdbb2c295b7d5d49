"""Executors: where `run_point` runs. Both call the same function on the same task dicts.

local: N worker processes forked from the runner's main thread, each asking the kernel
for SIGKILL when the runner dies (PR_SET_PDEATHSIG) and handing the same request on to
the simulator it starts, so killing the runner, even with SIGKILL, leaves no process
behind. A worker that dies mid-point is replaced and its point requeued once.

dask: an existing Debian `python3-distributed` cluster (`--scheduler ADDRESS` or a
scheduler JSON file). Workers must see the output folder at the same path and import
trnsim (PYTHONPATH=<repo>/runtime/python). A killed worker's simulator dies with it
(parent-death signal); the scheduler reruns its point on another worker.
"""

import multiprocessing as mp
import os
import signal
import time
import traceback
import uuid
from collections import deque
from multiprocessing.connection import wait

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


class DaskExecutor:
    name = "dask"

    def __init__(self, scheduler):
        if not scheduler:
            raise ValueError("--executor dask needs --scheduler ADDRESS or a scheduler file")
        self.scheduler = scheduler

    def client(self):
        from distributed import Client
        if os.path.isfile(self.scheduler):
            return Client(scheduler_file=self.scheduler, timeout="30s")
        return Client(self.scheduler, timeout="30s")

    def run(self, tasks, on_result, should_stop, tick=lambda: None):
        from distributed import as_completed
        client = self.client()
        try:
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
