"""`trnsim sweep SPEC.yaml -o OUTDIR ...` (also `python3 -m trnsim.sweep`).

Exit status: 0 every point finished ok; 1 some point failed or did not finish;
2 the spec, the options or the base config are wrong (nothing ran).
"""

import argparse
import functools
import os
import sys

from trnsim.sweep.config import ConfigError, parse_value
from trnsim.sweep.spec import DEFAULT_MAX_POINTS, SpecError, load_spec
from trnsim.sweep.workloads import WorkloadError

EPILOG = """\
Points run in OUTDIR/points/ID/ (config.yaml, point.json, log.txt, stats.json,
status.json); OUTDIR/results.csv and results.jsonl hold one row per point. A rerun
skips finished points; compiled programs are cached in OUTDIR/cache/ by (workload,
precision, trnsim version, the config's compiler-read values). results.csv is plain
CSV; results.jsonl's first line holds the schema version. Spec format: trnsim/sweep/spec.py;
examples: configs/sweeps/. Plots: trnsim plot OUTDIR. `strategy: optuna` runs an
adaptive search beside a random baseline of the same budget (optuna_search.py) and
writes OUTDIR/pareto_optuna.csv, pareto_random.csv and search.json. --executor dask
ships trnsim to the workers and checks each (binary, shared folder) before the first
point; README.md "Sweeps on a Dask cluster" says how to start one.
"""


def parser():
    ap = argparse.ArgumentParser(prog="trnsim sweep", description="Design-space sweep: run a "
                                 "spec's config points x workloads on the simulator.",
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec", help="sweep spec (YAML)")
    ap.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output folder")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="local worker processes [cpu count]")
    ap.add_argument("--executor", choices=("local", "dask"), default="local")
    ap.add_argument("--scheduler", metavar="ADDRESS_OR_FILE",
                    help="Dask scheduler address (tcp://127.0.0.1:8786) or scheduler JSON file")
    ap.add_argument("--max-points", type=int, default=DEFAULT_MAX_POINTS, metavar="N",
                    help="refuse a spec of more points (configs x workloads x precisions; "
                    f"optuna: both methods' budgets) [{DEFAULT_MAX_POINTS}]")
    ap.add_argument("--worker-binary", metavar="PATH",
                    help="the trnsim binary's absolute path on the Dask workers [the runner's]")
    ap.add_argument("--dry-run", action="store_true", help="print the expanded points and count")
    ap.add_argument("--explain", action="store_true", help="say why each point runs or is skipped")
    ap.add_argument("--retry-failed", action="store_true",
                    help="rerun failed points (config errors excepted)")
    ap.add_argument("--fail-fast", action="store_true", help="stop at the first failure")
    ap.add_argument("--max-failures", type=int, metavar="K", help="stop after K failures")
    ap.add_argument("--timeout", type=float, metavar="SECONDS", default=600.0,
                    help="time limit per point, compile + run [600]")
    ap.add_argument("--memory-limit", default="8GiB", metavar="SIZE",
                    help="address-space limit per simulator process (RLIMIT_AS) [8GiB]; 0: none")
    ap.add_argument("--cache-dir", metavar="DIR", help="compile cache [OUTDIR/cache]")
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-failure lines")
    return ap


def main(argv=None):
    args = parser().parse_args(argv)
    from trnsim import TrnsimError, find_binary
    from trnsim.sweep.runner import OutdirLock, Plan, decide, execute
    from trnsim.sweep.executors import DaskExecutor, LocalExecutor

    err = sys.stderr
    try:
        mem = parse_value("size", args.memory_limit, "--memory-limit")
    except ConfigError as e:
        err.write(f"trnsim sweep: {e}\n")
        return 2
    args.mem_bytes = mem or None
    args.verbose_failures = not args.quiet
    if args.jobs < 1:
        err.write("trnsim sweep: -j must be >= 1\n")
        return 2
    if args.max_points < 1:
        err.write("trnsim sweep: --max-points must be >= 1\n")
        return 2
    if args.executor == "dask" and not args.scheduler:
        err.write("trnsim sweep: --executor dask needs --scheduler ADDRESS_OR_FILE\n")
        return 2
    if args.worker_binary and args.executor != "dask":
        err.write("trnsim sweep: --worker-binary is for --executor dask\n")
        return 2
    lock = None
    try:
        binary = os.path.abspath(find_binary())  # workers may run in another directory
        spec = load_spec(args.spec, args.max_points)
        if not args.dry_run:
            lock = OutdirLock(args.output)
        executor = (DaskExecutor(args.scheduler, args.worker_binary)
                    if args.executor == "dask" else LocalExecutor(args.jobs))
        if spec.strategy == "optuna":
            from trnsim.sweep.optuna_search import main as search_main
            return search_main(spec, args, binary, executor)
        plan = Plan(spec, args.output, binary)
        for w in plan.warnings:
            err.write(f"trnsim sweep: warning: {w}\n")
        decisions = decide(plan, args.retry_failed)
        n_err = sum(1 for p in plan.points if p.error is not None)
        counts = (f"{len(plan.points)} points = {plan.configs} configs x {len(plan.workloads)} "
                  f"workloads x {len(spec.precisions)} precisions"
                  + (f"; {plan.excluded} configs excluded by constraints" if plan.excluded else "")
                  + (f"; {n_err} points with config errors" if n_err else ""))
        if args.dry_run or args.explain:
            for p, run, reason in decisions:
                line = f"{plan.describe(p)}  id {p.id[:12]}"
                if args.explain:
                    line += f"  -> {'run' if run else 'skip'}: {reason}"
                print(line)
            print(counts)
            print(f"to run: {sum(1 for _, r, _ in decisions if r)}")
            if args.dry_run:
                return 0
        else:
            print(counts)
        summary, failures = execute(plan, decisions, executor, args)
    except (SpecError, ConfigError, WorkloadError, TrnsimError, ValueError) as e:
        err.write(f"trnsim sweep: {e}\n")
        return 2
    finally:
        if lock:
            lock.close()
    return report(summary, args.output)


def report(s, output, out=None):
    """Prints a run's summary; returns the exit status."""
    say = functools.partial(print, file=out or sys.stdout)
    hits, misses = s["compile_hits"], s["compile_misses"]
    rate = f"{100.0 * hits / (hits + misses):.0f}%" if hits + misses else "n/a"
    say(f"ran {s['ran']} points in {s['seconds']:.1f} s ({s['points_per_hour']:.0f} points/h): "
        f"{s['ok']} ok, {s['failed']} failed"
        + (f" ({', '.join(f'{k} {v}' for k, v in sorted(s['by_class'].items()))})"
           if s["by_class"] else "")
        + (f", {s['unfinished']} not finished" if s["unfinished"] else "")
        + f"; {s['cached']} cached; compile cache {hits} hits / {misses} misses ({rate})")
    if s["skipped_failed"]:
        say(f"{s['skipped_failed']} points failed before and were skipped "
            "(--retry-failed reruns them; config errors never rerun)")
    say(f"results: {os.path.join(output, 'results.csv')} and results.jsonl")
    ok = s["failed"] == 0 and s["unfinished"] == 0 and s["skipped_failed"] == 0
    return 0 if ok else 1
