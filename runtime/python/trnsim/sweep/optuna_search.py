"""Adaptive search (`strategy: optuna`, Debian's python3-optuna) beside a random baseline.

    strategy: optuna
    samples: 12                     # the budget: configs per method
    seed: 0
    optuna: {batch: 2, startup: 4}  # configs asked per round; random-start trials
    axes:                           # lists -> categorical; ranges as for random / lhs
      core.tensor.rows: [32, 64, 128]
      core.sbuf.partition_size: {range: [48KiB, 192KiB], step: 16KiB}
    constraints: [core.tensor.cols <= core.tensor.rows]

Objectives, both minimised, per config: latency, the geometric mean of m.simulated_ns
over the config's workload x precision points (every workload weighs the same whatever
its scale), and the `cost` column (cost.py). A config with a point that did not finish
ok has no objectives: optuna is told the trial failed and it is on no front.

Budget: `samples` distinct configs allowed by the constraints, per method. A config a
constraint excludes costs no simulation: it is told as failed and not counted. Nor is a
config the method already picked: TPE re-proposes its best config again and again in a
small discrete space, so a repeat is told as failed (it teaches nothing) and a random
config (seeded) is asked next in its place. A config the simulator refuses, or whose
run fails, counts. A method stops early after ask_limit(samples) draws when the space
is too small or too constrained for the budget.

The random baseline is the first `samples` such configs of the `strategy: random`
stream of the same axes and seed (with no constraint and no repeat: exactly the spec
run as `strategy: random`). It runs first. Both methods add their configs to one Plan,
so a config both pick has one id and one folder and is simulated once.

Determinism and resume: the study lives in memory. Each run re-creates it from the seed
and replays the search from the first trial: trials are asked in rounds of `batch`
(not -j, so the points do not depend on the worker count), the round's points run
(finished ones are cache hits read back from their folders), and results are told in
ask order. The simulator is deterministic, so a rerun asks the same configs and reruns
nothing finished; an interrupted search goes on past its last finished point.
(--retry-failed can turn a failed trial into a result and so change the later ones.)

Outputs besides results.csv/jsonl (with columns search and trial): OUTDIR/pareto_optuna.csv
and pareto_random.csv (each method's front by cost), search.json, and a comparison line:
per method the Pareto configs, best latency, best cost and the hypervolume against one
reference point for both (1.1 x the worst cost and latency either method saw).
"""

import csv
import io
import math
import os
import sys
import time
import warnings

import numpy as np

from trnsim.sweep import identity
from trnsim.sweep.config import INT_TYPES, Schema
from trnsim.sweep.plots import pareto_front
from trnsim.sweep.point import atomic_json, atomic_write, read_status
from trnsim.sweep.results import build_rows, write_tables
from trnsim.sweep.runner import Plan, decide, execute, write_manifest
from trnsim.sweep.spec import SpecError, _range_bounds, _snap, axis_values, expand_settings

METHODS = ("optuna", "random")
REF_FACTOR = 1.1


def ask_limit(budget):
    """Draws a method may take for `budget` configs: room for constraints and repeats,
    bounded when the space holds fewer configs than the budget."""
    return 20 * budget + 100


def _optuna(spec):
    try:
        import optuna
    except ImportError as e:
        raise SpecError(f"{spec.path}: strategy optuna needs Debian's python3-optuna "
                        f"({e})") from e
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class Axis:
    """A spec axis as an optuna distribution, and the map from a sampled value to the
    config value (snapped as random sampling snaps it)."""

    def __init__(self, key, dist, to_value, text):
        self.key, self.dist, self.to_value, self.text = key, dist, to_value, text


def search_space(spec, schema):
    """[Axis] over the spec's axes, in spec order (the order optuna samples them)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
    where = f"{spec.path}: axes"
    out = []
    for key, v in spec.axes.items():
        if isinstance(v, list) or (isinstance(v, dict) and "values" in v):
            vals = list(dict.fromkeys(axis_values(schema, key, v, where)))
            out.append(Axis(key, CategoricalDistribution(vals), lambda x: x,
                            "one of " + ", ".join(schema.human(key, x) for x in vals)))
            continue
        lo, hi, scale, step = _range_bounds(schema, key, v, where)
        text = (f"{schema.human(key, lo)} .. {schema.human(key, hi)}"
                + (", log" if scale == "log" else "")
                + (f", step {schema.human(key, step)}" if step else ""))

        def snap(x, key=key, lo=lo, hi=hi, step=step):
            return _snap(schema, key, x, lo, hi, step)
        if step and scale == "linear":
            # The step grid by index: no value falls between two steps.
            n = int(math.floor((hi - lo) / step + 1e-9))
            out.append(Axis(key, IntDistribution(0, n),
                            lambda k, lo=lo, step=step, snap=snap: snap(lo + k * step),
                            f"{text} ({n + 1} values)"))
        elif schema.vtype(key) in INT_TYPES and not step:
            out.append(Axis(key, IntDistribution(int(lo), int(hi), log=scale == "log"), int,
                            f"{text} (integers)"))
        else:
            out.append(Axis(key, FloatDistribution(float(lo), float(hi), log=scale == "log"),
                            snap, text))
    return out


def random_params(space, rng):
    """Uniform (log-uniform for log axes) params for every axis: the repeat replacement."""
    from optuna.distributions import CategoricalDistribution, IntDistribution
    out = {}
    for a in space:
        d = a.dist
        if isinstance(d, CategoricalDistribution):
            out[a.key] = d.choices[int(rng.integers(len(d.choices)))]
        elif isinstance(d, IntDistribution) and d.log:
            x = math.exp(rng.uniform(math.log(d.low), math.log(d.high + 1)))
            out[a.key] = min(int(x), d.high)
        elif isinstance(d, IntDistribution):
            out[a.key] = int(rng.integers(d.low, d.high + 1))
        elif d.log:
            out[a.key] = min(max(math.exp(rng.uniform(math.log(d.low), math.log(d.high))),
                                 d.low), d.high)
        else:
            out[a.key] = float(rng.uniform(d.low, d.high))
    return out


def config_key(settings, judged):
    """Configs are the same when they resolve the same (or, refused, set the same)."""
    if judged.resolved is not None:
        return "r" + identity.config_hash(judged.resolved)
    return "s" + identity.canonical_json(settings)


def baseline_configs(spec, plan):
    """([(settings, judged)], draws): the first `samples` allowed, distinct configs of the
    random stream and the number of distinct draws examined."""
    picked, seen, n = [], set(), 0
    for n, s in enumerate(expand_settings(spec, plan.schema, ask_limit(spec.samples)), 1):
        j = plan.judge(s)
        if not j.allowed:
            continue
        key = config_key(s, j)
        if key in seen:
            continue
        seen.add(key)
        picked.append((s, j))
        if len(picked) == spec.samples:
            break
    return picked, n


def objectives(points):
    """(latency ns, cost) of one config's points, or None unless every one finished ok.
    Latency: the geometric mean of simulated_ns over the points."""
    ns = []
    for p in points:
        if p.error is not None:
            return None
        st, _ = read_status(p.dir)
        if not st or st.get("status") != "ok":
            return None
        ns.append(float(st["simulated_ns"]))
    if not ns:
        return None
    if len(ns) == 1:
        return ns[0], points[0].cost  # exactly, not exp(log(x))
    lat = 0.0 if min(ns) <= 0 else math.exp(sum(math.log(x) for x in ns) / len(ns))
    return lat, points[0].cost


def hypervolume(front, ref):
    """Area dominated by the points [(x, y)] (both minimised) inside the box below ref.

    Sweeping by ascending x, a point that lowers the best y so far adds the slab
    [x, ref_x] x [y, best y so far]; dominated points and points beyond ref add nothing."""
    rx, ry = ref
    hv, best = 0.0, ry
    for x, y in sorted(front):
        if x < rx and y < best:
            hv += (rx - x) * (best - y)
            best = y
    return hv


def _sampler(optuna, spec):
    # TPE rather than NSGA-II: a budget of tens of configs is smaller than NSGA-II's first
    # generation (50 random individuals by default), which would make it random sampling;
    # multi-objective TPE models the results from `startup` trials on. multivariate: the
    # axes interact (array size against SBUF size). Seeded: its RandomState and its
    # startup RandomSampler come from the seed, so the same told history gives the same
    # asks. No constant liar: optuna 3.1's TPE ignores running trials with two objectives.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # multivariate is flagged experimental
        return optuna.samplers.TPESampler(
            seed=spec.seed, multivariate=True, n_startup_trials=spec.optuna["startup"],
            warn_independent_sampling=False)


class Totals:
    """Run counters summed over rounds, in execute()'s summary shape."""

    KEYS = ("ran", "ok", "failed", "cached", "skipped_failed", "unfinished", "compile_hits",
            "compile_misses", "seconds")

    def __init__(self):
        self.s = {k: 0 for k in self.KEYS}
        self.s.update(by_class={}, stopped=False, interrupted=False)

    def add(self, summary):
        for k in self.KEYS:
            self.s[k] += summary.get(k, 0)
        for c, n in summary.get("by_class", {}).items():
            self.s["by_class"][c] = self.s["by_class"].get(c, 0) + n
        self.s["stopped"] |= bool(summary.get("stopped"))
        self.s["interrupted"] |= bool(summary.get("interrupted"))

    def summary(self, plan):
        s = dict(self.s)
        s["points"], s["configs"] = len({p.id for p in plan.points}), plan.configs
        done = s["ok"] + s["failed"]
        s["points_per_hour"] = done / s["seconds"] * 3600 if s["seconds"] else 0
        return s


class Search:
    def __init__(self, spec, args, binary, executor, out, err):
        self.optuna = _optuna(spec)
        self.spec, self.args, self.executor, self.out, self.err = spec, args, executor, out, err
        # The axes are checked before Plan exports the workloads (slow for examples).
        schema = Schema.from_binary(binary)
        spec.check_keys(schema)
        self.space = search_space(spec, schema)
        self.plan = Plan(spec, args.output, binary, settings=[])
        self.baseline, self.draws = baseline_configs(spec, self.plan)
        self.plan.check_knobs([s for s, _ in self.baseline])
        self.handled = set()  # point ids decided in this run: a shared point runs once
        self.totals = Totals()
        self.configs = {m: [] for m in METHODS}  # per method: one point list per config
        self.asks = self.repeats = self.excluded = 0

    def say(self, text):
        print(text, file=self.out, flush=True)

    def header(self):
        spec, plan = self.spec, self.plan
        n, w, p = spec.samples, len(plan.workloads), len(spec.precisions)
        self.say(f"strategy optuna: budget {n} configs x {w} workloads x {p} precisions = "
                 f"{n * w * p} points per method (optuna and a random baseline, sharing "
                 f"points), seed {spec.seed}, rounds of {spec.optuna['batch']}, "
                 f"{spec.optuna['startup']} random-start trials")
        self.say("axes:")
        for a in self.space:
            self.say(f"  {a.key}: {a.text}")
        for c in spec.constraints:
            self.say(f"constraint: {c}")

    def add_baseline(self):
        for i, (s, j) in enumerate(self.baseline):
            self.configs["random"].append(self.plan.add_config(s, j, search="random", trial=i))
        if len(self.baseline) < self.spec.samples:
            self.err.write(f"trnsim sweep: warning: random baseline: {len(self.baseline)} of "
                           f"{self.spec.samples} configs in {self.draws} draws (the space is "
                           "small or mostly excluded by constraints)\n")

    def run_round(self, points, label):
        """Runs the points not yet handled in this run; returns True when the run stops."""
        fresh, ids = [], set()
        for p in points:
            if p.id not in self.handled and p.id not in ids:
                ids.add(p.id)
                fresh.append(p)
        self.handled |= ids
        decisions = decide(self.plan, self.args.retry_failed, points=fresh)
        if self.args.explain:
            for p, run, reason in decisions:
                self.say(f"[{p.search} {p.trial}] {self.plan.describe(p)}  id {p.id[:12]}  -> "
                         f"{'run' if run else 'skip'}: {reason}")
        if not any(run for _, run, _ in decisions) and \
                all(p.error is None or read_status(p.dir)[0] for p in fresh):
            # Nothing to run or record: count without execute()'s progress lines.
            cached = sum(1 for _, _, r in decisions if r.startswith("finished"))
            self.totals.add({"cached": cached, "skipped_failed": len(decisions) - cached})
            return False
        summary, _ = execute(self.plan, decisions, self.executor, self.args, self.out, self.err,
                             label=label, failures_before=self.totals.s["failed"])
        self.totals.add(summary)
        return summary["stopped"]

    def run_optuna(self):
        optuna, spec, plan = self.optuna, self.spec, self.plan
        fail = optuna.trial.TrialState.FAIL
        study = optuna.create_study(directions=["minimize", "minimize"],
                                    sampler=_sampler(optuna, spec))
        dists = {a.key: a.dist for a in self.space}
        picked, seen = self.configs["optuna"], {}
        limit, budget = ask_limit(spec.samples), spec.samples
        rng = np.random.default_rng([spec.seed, 1])  # not the baseline's stream
        stopped = False
        while not stopped and len(picked) < budget and self.asks < limit:
            asked, new = [], []
            want = min(spec.optuna["batch"], budget - len(picked))
            while len(new) < want and self.asks < limit:
                trial = study.ask(dists)
                self.asks += 1
                s = {a.key: a.to_value(trial.params[a.key]) for a in self.space}
                j = plan.judge(s)
                if not j.allowed:
                    self.excluded += 1
                    study.tell(trial, state=fail)
                    continue
                key = config_key(s, j)
                if key in seen:
                    self.repeats += 1
                    study.tell(trial, state=fail)
                    study.enqueue_trial(random_params(self.space, rng))
                    continue
                seen[key] = plan.add_config(s, j, search="optuna", trial=len(picked))
                picked.append(seen[key])
                new.append(seen[key])
                asked.append((trial, seen[key]))
            if new:
                stopped = self.run_round([p for pts in new for p in pts],
                                         f"optuna {len(picked)}/{budget}: ")
            # Told in ask order once the round is done: the same history on every run.
            for trial, pts in asked:
                v = objectives(pts)
                if v is None:
                    study.tell(trial, state=fail)
                else:
                    study.tell(trial, list(v))
        if len(picked) < budget and not stopped:
            self.err.write(f"trnsim sweep: warning: optuna: {len(picked)} of {budget} configs "
                           f"in {self.asks} asks (the space is small or mostly excluded by "
                           "constraints)\n")

    def compare(self):
        """Writes the fronts and search.json; returns the comparison line."""
        vals = {m: [objectives(pts) for pts in self.configs[m]] for m in METHODS}
        seen = [v for m in METHODS for v in vals[m] if v]
        ref = (REF_FACTOR * max(v[1] for v in seen), REF_FACTOR * max(v[0] for v in seen)) \
            if seen else None
        res = {"budget": self.spec.samples, "seed": self.spec.seed, "optuna_asks": self.asks,
               "optuna_repeats": self.repeats, "optuna_excluded": self.excluded,
               "baseline_draws": self.draws, "reference": None, "methods": {}}
        if ref:
            res["reference"] = {"cost": ref[0], "latency_ns": ref[1]}
        parts = []
        for m in METHODS:
            rows = [self._row(m, pts, v) for pts, v in zip(self.configs[m], vals[m]) if v]
            front = pareto_front(rows, x="cost", y="latency_ns")
            self._write_front(m, front)
            hv = hypervolume([(r["cost"], r["latency_ns"]) for r in front], ref) if ref else 0.0
            best_lat = min((r["latency_ns"] for r in rows), default=None)
            best_cost = min((r["cost"] for r in rows), default=None)
            res["methods"][m] = {"configs": len(self.configs[m]), "ok_configs": len(rows),
                                 "pareto": len(front), "best_latency_ns": best_lat,
                                 "best_cost": best_cost, "hypervolume": hv}
            parts.append(f"{m} {len(front)} Pareto configs of {len(self.configs[m])}, best "
                         f"latency {_us(best_lat)}, best cost {_num(best_cost)}, "
                         f"hypervolume {hv:.4g}")
        hvo, hvr = (res["methods"][m]["hypervolume"] for m in METHODS)
        res["hypervolume_ratio"] = hvo / hvr if hvr else None
        atomic_json(os.path.join(self.plan.outdir, "search.json"), res)
        line = "compare: " + "; ".join(parts)
        if ref:
            line += (f"; optuna/random hypervolume {_num(res['hypervolume_ratio'])} (cost x ns "
                     f"below the reference cost {ref[0]:.4g}, latency {_us(ref[1])})")
        return line

    def _row(self, method, pts, v):
        row = {"search": method, "trial": pts[0].trial, "points": " ".join(p.id[:16] for p in pts),
               "cost": v[1], "latency_ns": v[0]}
        p = pts[0]
        for k in self.plan.param_keys:
            row[f"p.{k}"] = p.resolved.get(k, p.settings.get(k))
        return row

    def _write_front(self, method, front):
        cols = (["search", "trial", "points"] + [f"p.{k}" for k in self.plan.param_keys]
                + ["cost", "latency_ns"])
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in front:
            w.writerow(r)
        atomic_write(os.path.join(self.plan.outdir, f"pareto_{method}.csv"), buf.getvalue())

    def finish(self):
        write_manifest(self.plan)
        plan = self.plan
        write_tables(plan.outdir, plan.columns(), build_rows(plan, plan.version))


def _us(ns):
    return "n/a" if ns is None else f"{ns / 1e3:.4g} us"


def _num(x):
    return "n/a" if x is None else f"{x:.4g}"


def main(spec, args, binary, executor, out=None, err=None):
    """`trnsim sweep` for strategy optuna; returns the exit status."""
    from trnsim.sweep.cli import report
    out, err = out or sys.stdout, err or sys.stderr
    search = Search(spec, args, binary, executor, out, err)
    for w in search.plan.warnings:
        err.write(f"trnsim sweep: warning: {w}\n")
    search.header()
    if args.dry_run:
        search.add_baseline()
        plan = search.plan
        search.say(f"random baseline: {plan.configs} configs:")
        for p, run, reason in decide(plan, args.retry_failed):
            search.say(f"{plan.describe(p)}  id {p.id[:12]}" + (f"  -> {'run' if run else 'skip'}"
                                                                f": {reason}" if args.explain
                                                                else ""))
        search.say("optuna: adaptive: points chosen during the run")
        return 0
    t0 = time.monotonic()
    try:
        search.add_baseline()
        stopped = search.run_round(list(search.plan.points), "random baseline: ")
        if not stopped:
            search.run_optuna()
    except KeyboardInterrupt:
        search.totals.s["interrupted"] = search.totals.s["stopped"] = True
    finally:
        search.finish()
    summary = search.totals.summary(search.plan)
    line = search.compare()
    summary["search_seconds"] = time.monotonic() - t0
    atomic_json(os.path.join(search.plan.outdir, "last_run.json"), summary)
    status = report(summary, args.output, out)
    search.say(f"optuna: {len(search.configs['optuna'])} configs in {search.asks} asks "
               f"({search.repeats} repeats replaced by random configs, {search.excluded} "
               f"excluded by constraints); random baseline: {len(search.configs['random'])} "
               f"configs in {search.draws} draws")
    search.say(f"fronts: {os.path.join(args.output, 'pareto_optuna.csv')} and "
               "pareto_random.csv; search.json")
    if summary["stopped"]:
        line = line.replace("compare:", "compare (stopped before the budget):", 1)
    search.say(line)
    return status
