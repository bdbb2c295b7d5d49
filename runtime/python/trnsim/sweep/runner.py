"""The sweep driver: plan (expand, resolve, identify), decide what to run, run, tabulate."""

import fcntl
import json
import os
import sys
import time

import yaml

from trnsim.sweep import identity
from trnsim.sweep.config import ConfigError, Resolver, Schema
from trnsim.sweep.cost import CostModel
from trnsim.sweep.point import atomic_json, read_status
from trnsim.sweep.results import build_rows, columns, write_tables
from trnsim.sweep.run_keys import is_run_key
from trnsim.sweep.spec import SpecError, constraints, expand_settings
from trnsim.sweep.workloads import prepare


class Point:
    __slots__ = ("index", "slot", "settings", "resolved", "error", "workload", "precision", "id",
                 "dir", "cost", "compile_key", "compile_sets", "sets", "search", "trial")


class Judged:
    """A config's resolution: resolved config or the simulator's refusal, and whether the
    spec's constraints allow it (a refused config is allowed: it becomes a config_error)."""
    __slots__ = ("resolved", "error", "allowed")

    def __init__(self, resolved, error, allowed):
        self.resolved, self.error, self.allowed = resolved, error, allowed


class Plan:
    """Every point of a spec, with ids, folders and the warnings found on the way.

    `settings` replaces the spec's expansion (an adaptive search passes [] and adds
    configs as it picks them with add_config)."""

    def __init__(self, spec, outdir, binary, version=None, log=None, settings=None):
        self.spec = spec
        self.outdir = os.path.abspath(outdir)
        self.binary = binary
        self.version = version or identity.trnsim_version()
        self.warnings = []
        self.excluded = 0
        self.configs = 0
        self.schema = Schema.from_binary(binary)
        self.resolver = Resolver(binary, spec.base, self.schema)
        try:
            self.base = self.resolver.resolve({})
        except ConfigError as e:
            raise SpecError(f"{spec.path}: base '{spec.base}': {e}") from e
        self.targets = identity.Targets(binary, spec.base, self.resolver)
        try:
            self.cost = CostModel(spec.cost)
        except ValueError as e:
            raise SpecError(f"{spec.path}: {e}") from e
        if settings is None:
            settings = expand_settings(spec, self.schema)
        else:
            spec.check_keys(self.schema)
        self.cons = constraints(spec, self.schema)
        self.param_keys = [k for k in spec.keys() if k not in spec.compile_pin
                           or k in spec.axes or any(k in s for s in settings)]
        self.tagged = spec.strategy == "optuna"
        self._dead_knobs(settings)
        self.workloads = prepare(spec.workloads, self.outdir)
        self.points = []
        for s in settings:
            self.add_config(s)

    def judge(self, s):
        resolved, error = None, None
        try:
            resolved = self.resolver.resolve(s)
        except ConfigError as e:
            error = str(e)
        allowed = resolved is None or all(c(resolved) for c in self.cons)
        return Judged(resolved, error, allowed)

    def add_config(self, s, judged=None, search=None, trial=None):
        """Appends config `s` x workloads x precisions; returns its points, or None when a
        constraint excludes it. search/trial tag the rows of an adaptive search."""
        j = judged or self.judge(s)
        slot = self.configs + self.excluded
        if not j.allowed:
            self.excluded += 1
            return None
        self.configs += 1
        pts = []
        for w in self.workloads:
            for prec in self.spec.precisions:
                p = self._point(len(self.points), slot, s, j.resolved, j.error, w, prec)
                p.search, p.trial = search, trial
                self.points.append(p)
                pts.append(p)
        return pts

    def columns(self):
        return columns(self.param_keys, tagged=self.tagged)

    def _point(self, idx, slot, s, resolved, error, w, prec):
        p = Point()
        p.index, p.slot, p.settings, p.resolved, p.error = idx, slot, s, resolved, error
        p.workload, p.precision = w, prec
        schema = self.schema
        p.sets = [f"{k}={schema.cli(k, v)}" for k, v in sorted(s.items())]
        if resolved is None:
            # Unresolvable: identified by the overrides themselves.
            ident = {k: v for k, v in sorted(s.items())}
            ident["<base>"] = self.spec.base
            resolved_for_id = ident
        else:
            resolved_for_id = resolved
        pin = set(self.spec.compile_pin)
        # Run keys are `trnsim run` options: a split model compiles inside the run.
        p.compile_sets = [x for x, k in zip(p.sets, sorted(s))
                          if k not in pin and not is_run_key(k)]
        pins = {}
        if resolved is not None and p.compile_sets != p.sets and \
                self._target(p.compile_sets) != self._target(p.sets):
            # Compiled for another config than simulated: another program, another point.
            pins = {k: self.base[k] for k in pin if resolved.get(k) != self.base[k]}
        p.id = identity.point_id(resolved_for_id, w["hash"], prec, self.spec.timing_only,
                                 self.version, pins)
        p.dir = os.path.join(self.outdir, "points", p.id[:16])
        p.cost = self.cost(resolved) if resolved is not None else None
        p.compile_key = None  # compile_key(p), when the point runs
        return p

    def _target(self, sets):
        """The compiler's target for base + sets, or the refusal's text (also a value
        that compares unequal to every target)."""
        try:
            return self.targets.get(sets)
        except ConfigError as e:
            return f"refused: {e}"

    def compile_key(self, p):
        """Same key, same program (identity.compile_key); a compile config the simulator
        refuses gets a key of its own and fails in the compile step with its message."""
        if p.compile_key is None:
            target = self._target(p.compile_sets)
            if target.startswith("refused: "):
                target = identity.canonical_json({"base": self.spec.base,
                                                  "sets": sorted(p.compile_sets)})
            p.compile_key = identity.compile_key(target, p.workload["hash"], p.precision,
                                                 self.version)
        return p.compile_key

    def check_knobs(self, settings):
        self._dead_knobs(settings)

    def _dead_knobs(self, settings):
        """A swept key whose every value resolves to the base config is a dead knob; a
        pinned key none of whose values changes the compiler's target pins nothing."""
        for k in self.spec.compile_pin:
            values = []
            for s in settings:
                if k in s and s[k] not in values:
                    values.append(s[k])
            if values and all(self._target([f"{k}={self.schema.cli(k, v)}"]) ==
                              self._target([]) for v in values):
                self.warnings.append(f"compile_pin: '{k}' does not change what the compiler "
                                     "is given (no compiler-read value changes); pinning it changes "
                                     "nothing")
        for k in self.spec.keys():
            if k in self.spec.compile_pin and not any(k in s for s in settings):
                continue
            values = []
            for s in settings:
                if k in s and s[k] not in values:
                    values.append(s[k])
            changed = False
            for v in values:
                try:
                    if self.resolver.resolve({k: v}) != self.base:
                        changed = True
                        break
                except ConfigError:
                    changed = True  # refused alone; judged with its partners per point
                    break
            if values and not changed:
                shown = ", ".join(self.schema.human(k, v) for v in values)
                self.warnings.append(
                    f"dead knob: '{k}' does not change the resolved config (values {shown} "
                    f"all resolve to the base '{self.spec.base}')")
            elif len(values) > 1 and len({json.dumps(v) for v in values}) < len(values):
                self.warnings.append(f"'{k}': some values are equal after unit normalisation")

    def task(self, p, opts):
        record = {"id": p.id, "index": p.index, "workload": p.workload["name"],
                  "workload_path": p.workload["path"], "workload_hash": p.workload["hash"],
                  "precision": p.precision, "timing_only": self.spec.timing_only,
                  "version": self.version, "base": self.spec.base,
                  "settings": {k: v for k, v in sorted(p.settings.items())},
                  "config_hash": identity.config_hash(p.resolved) if p.resolved else None,
                  "compile_key": self.compile_key(p)}
        cfg_text = yaml.safe_dump(p.resolved or {}, sort_keys=True)
        return {"id": p.id, "dir": p.dir, "binary": self.binary, "base": self.spec.base,
                "sets": p.sets, "compile_sets": p.compile_sets,
                "compile_key": self.compile_key(p),
                "cache_dir": opts.cache_dir or os.path.join(self.outdir, "cache"),
                "precision": p.precision, "timing_only": self.spec.timing_only,
                "workload": {"name": p.workload["name"], "path": p.workload["path"]},
                "timeout": opts.timeout, "mem_bytes": opts.mem_bytes, "record": record,
                "config_text": cfg_text}

    def describe(self, p):
        s = ", ".join(f"{k}={self.schema.human(k, v)}" for k, v in p.settings.items())
        return f"#{p.index} {p.workload['name']} {p.precision} {s}"


def write_config_error(plan, p):
    os.makedirs(p.dir, exist_ok=True)
    atomic_json(os.path.join(p.dir, "point.json"),
                {"id": p.id, "index": p.index, "workload": p.workload["name"],
                 "settings": p.settings, "version": plan.version})
    st = {"id": p.id, "status": "failed", "cls": "config_error", "message": p.error,
          "attempts": 0, "host_seconds": 0.0, "compile": "none", "version": plan.version}
    atomic_json(os.path.join(p.dir, "status.json"), st)
    return st


def _previous_manifest(outdir):
    try:
        with open(os.path.join(outdir, "manifest.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def decide(plan, retry_failed, explain=None, points=None):
    """[(point, run?, reason)] for every point (or for `points`)."""
    prev = _previous_manifest(plan.outdir)
    prev_slots = {}
    if prev:
        for e in prev.get("points", []):
            prev_slots[(e["slot"], e["workload"], e["precision"])] = e
    out = []
    for p in plan.points if points is None else points:
        st, reason = read_status(p.dir)
        if p.error is not None:
            out.append((p, False, f"config error (never retried): {p.error}"))
            continue
        if st is None:
            run = True
            if reason == "new point":
                old = prev_slots.get((p.slot, p.workload["name"], p.precision))
                if old and old["id"] != p.id:
                    reason = "new id: " + _why_new(plan, p, old)
        elif st.get("status") == "ok":
            run, reason = False, "finished (cached)"
        elif st.get("cls") == "config_error":
            run, reason = False, f"config error (never retried): {st.get('message')}"
        elif retry_failed:
            run, reason = True, f"--retry-failed: last run failed ({st.get('cls')})"
        else:
            run, reason = False, (f"failed before ({st.get('cls')}: {st.get('message')}); "
                                  "rerun with --retry-failed")
        out.append((p, run, reason))
    return out


def _why_new(plan, p, old):
    why = []
    old_rec = None
    try:
        with open(os.path.join(plan.outdir, "points", old["id"][:16], "point.json")) as f:
            old_rec = json.load(f)
    except (OSError, ValueError):
        pass
    if old.get("version") != plan.version:
        why.append(f"trnsim version {old.get('version')} -> {plan.version}")
    if old.get("workload_hash") != p.workload["hash"]:
        why.append(f"workload '{p.workload['name']}' content changed")
    if old_rec and old_rec.get("config_hash") != (identity.config_hash(p.resolved)
                                                   if p.resolved else None):
        diffs = []
        try:
            with open(os.path.join(plan.outdir, "points", old["id"][:16], "config.yaml")) as f:
                old_cfg = yaml.safe_load(f) or {}
            diffs = identity.diff_configs(old_cfg, p.resolved or {}, plan.schema.human)
        except (OSError, ValueError, KeyError):
            pass
        why.append("resolved config changed" + (f" ({'; '.join(diffs[:4])})" if diffs else ""))
    return ", ".join(why) or "identity inputs changed"


def write_manifest(plan):
    atomic_json(os.path.join(plan.outdir, "manifest.json"), {
        "spec": os.path.abspath(plan.spec.path), "base": plan.spec.base,
        "version": plan.version, "binary": plan.binary, "param_keys": plan.param_keys,
        "points": [{"index": p.index, "slot": p.slot, "id": p.id,
                    "workload": p.workload["name"], "workload_hash": p.workload["hash"],
                    "precision": p.precision, "version": plan.version,
                    "settings": {k: v for k, v in p.settings.items()}}
                   for p in plan.points]})


class Progress:
    """One line: done, cached, failed, running, rate and ETA (\\r on a tty, else periodic)."""

    def __init__(self, total, cached, failed_before, jobs, stream=sys.stderr, label=""):
        self.total, self.cached, self.failed = total, cached, failed_before
        self.label = label
        self.done = 0
        self.to_run = 0
        self.t0 = time.monotonic()
        self.jobs = jobs
        self.stream = stream
        self.tty = stream.isatty()
        self.last = 0.0

    def line(self):
        el = time.monotonic() - self.t0
        finished = self.done + self.failed_now
        left = self.to_run - finished
        eta = el / finished * left if finished else float("nan")
        eta_s = time.strftime("%H:%M:%S", time.gmtime(eta)) if eta == eta else "--:--:--"
        rate = finished / el * 3600 if el > 0 else 0
        n = self.cached + self.done + self.failed
        return (self.label + f"[{n:>{len(str(self.total))}}/{self.total}] "
                f"done {self.done}  cached {self.cached}  failed {self.failed}  "
                f"left {left}  {rate:.0f} points/h  ETA {eta_s}")

    failed_now = 0

    def show(self, force=False):
        now = time.monotonic()
        if not force and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        if self.tty:
            self.stream.write("\r" + self.line() + "\x1b[K")
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def end(self):
        self.show(force=True)
        if self.tty:
            self.stream.write("\n")


class OutdirLock:
    """One sweep per output folder at a time."""

    def __init__(self, outdir):
        os.makedirs(outdir, exist_ok=True)
        self.f = open(os.path.join(outdir, ".lock"), "a")
        try:
            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.f.close()
            raise SpecError(f"{outdir}: another sweep is running in this folder")

    def close(self):
        self.f.close()


def execute(plan, decisions, executor, opts, out=sys.stdout, err=sys.stderr, label=None,
            failures_before=0):
    """Runs the points to run; returns a summary dict. An adaptive search calls it once per
    round: `label` prefixes its progress line (counted over `decisions`, not the plan) and
    `failures_before` counts towards --max-failures."""
    to_run = [p for p, run, _ in decisions if run]
    cached = sum(1 for p, run, r in decisions if not run and r.startswith("finished"))
    skipped_failed = sum(1 for p, run, _ in decisions if not run) - cached
    for p in plan.points:
        if p.error is not None:
            st, _ = read_status(p.dir)
            if st is None:
                write_config_error(plan, p)
    write_manifest(plan)
    cols = plan.columns()
    prog = Progress(len(decisions) if label else len(plan.points), cached, skipped_failed,
                    getattr(executor, "jobs", 0), err, label or "")
    prog.to_run = len(to_run)
    counts = {"ok": 0, "failed": 0, "hit": 0, "miss": 0, "by_class": {}}
    failures = []
    last_table = [time.monotonic()]

    def on_result(task, st):
        if st.get("status") == "ok":
            counts["ok"] += 1
            prog.done += 1
        else:
            counts["failed"] += 1
            prog.failed += 1
            prog.failed_now += 1
            c = st.get("cls", "?")
            counts["by_class"][c] = counts["by_class"].get(c, 0) + 1
            failures.append((task, st))
            if opts.verbose_failures:
                err.write(("\n" if prog.tty else "") +
                          f"FAILED ({c}) {task['record']['workload']} "
                          f"{' '.join(task['sets'])}: {st.get('message', '')[:300]}\n")
        if st.get("compile") in ("hit", "miss"):
            counts[st["compile"]] += 1
        if time.monotonic() - last_table[0] > 2.0:
            write_tables(plan.outdir, cols, build_rows(plan, plan.version))
            last_table[0] = time.monotonic()
        prog.show()

    def should_stop():
        if opts.fail_fast and counts["failed"]:
            return True
        if opts.max_failures is not None and \
                counts["failed"] + failures_before >= opts.max_failures:
            return True
        return False

    tasks = [plan.task(p, opts) for p in to_run]
    if not label or prog.tty:
        prog.show(force=True)
    else:  # a round's log: its final line (and one every 5 s if it is long)
        prog.last = time.monotonic()
    t0 = time.monotonic()
    interrupted = False
    try:
        if tasks:
            executor.run(tasks, on_result, should_stop, tick=prog.show)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        prog.end()
        write_tables(plan.outdir, cols, build_rows(plan, plan.version))
    wall = time.monotonic() - t0
    unfinished = len(tasks) - counts["ok"] - counts["failed"]
    summary = {"points": len(plan.points), "configs": plan.configs, "ran": len(tasks),
               "ok": counts["ok"], "failed": counts["failed"], "cached": cached,
               "skipped_failed": skipped_failed, "unfinished": unfinished,
               "by_class": counts["by_class"], "compile_hits": counts["hit"],
               "compile_misses": counts["miss"], "seconds": wall,
               "points_per_hour": (counts["ok"] + counts["failed"]) / wall * 3600 if wall else 0,
               "stopped": should_stop() or interrupted, "interrupted": interrupted}
    atomic_json(os.path.join(plan.outdir, "last_run.json"), summary)
    return summary, failures
