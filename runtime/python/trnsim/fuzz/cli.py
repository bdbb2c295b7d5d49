"""`trnsim fuzz`: differential fuzzing of the compiler against the reference interpreter.

  trnsim fuzz --seeds N [--start S] [--time SECONDS] [-j N] [--config C] [--precision P]
              [--max-nodes N] [--exclude OP,...] [--keep DIR] [--shrink | --no-shrink]
              [--shrink-refused] [--out DIR] [--timeout S]
  trnsim fuzz --replay PATH...      validate regression models with their sidecar args
  trnsim fuzz --show SEED [--save FILE.onnx]   print (or save) the case of one seed

Each seed's graph (trnsim.fuzz.gen) is validated with `trnsim validate --no-fallback
--random-inputs=SEED` (plus --check-races --poison when this build has them); an
output beyond tolerance goes to the float64 oracle (trnsim.fuzz.oracle), which tells
a mismatch from amplified rounding (inexact). One line per refusal, inexact case or
failure, then a summary line and the refusals and failures by reason. Failures are
shrunk (trnsim.fuzz.shrink; the first of each error message only) and written to
--out (default tests/e2e/fuzz_regressions/open/) as NAME.onnx with a NAME.txt
sidecar; once the bug is fixed, moving both up into tests/e2e/fuzz_regressions/ puts
the case into the regression suite. Exit status 1 when any case failed or was
refused, 0 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import re
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional, Tuple

from trnsim.fuzz import gen, runner, shrink

REGRESS_DIR = runner.REPO / "tests" / "e2e" / "fuzz_regressions"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trnsim fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=None,
                   help="number of seeds [100; no limit with --time]")
    p.add_argument("--start", type=int, default=0, help="first seed [0]")
    p.add_argument("--time", type=float, default=None, help="stop starting cases after SECONDS")
    p.add_argument("-j", "--jobs", type=int, default=1, help="cases run at once [1]")
    p.add_argument("--config", default=None, help="run every case on this config (else per seed)")
    p.add_argument("--precision", default=None, help="fp32|bf16 for every case (else per seed)")
    p.add_argument("--max-nodes", type=int, default=12, help="main nodes per graph at most [12]")
    p.add_argument("--exclude", type=lambda v: [x for x in v.split(",") if x], default=[],
                   metavar="OP,...", help="main ops never to generate (e.g. a known bug's)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per validate run [120]")
    p.add_argument("--keep", metavar="DIR", help="save each refused/failing model and its log")
    p.add_argument("--shrink", dest="shrink", action="store_true", default=True,
                   help="shrink failures and write them to --out (default)")
    p.add_argument("--no-shrink", dest="shrink", action="store_false")
    p.add_argument("--out", default=None,
                   help="where shrunk cases go [tests/e2e/fuzz_regressions/open]")
    p.add_argument("--max-shrinks", type=int, default=10,
                   help="failures shrunk per run at most [10]")
    p.add_argument("--shrink-refused", action="store_true",
                   help="shrink refusals too (to see which pattern the lowering refuses)")
    p.add_argument("--shrink-time", type=float, default=600.0, help="seconds per shrink [600]")
    p.add_argument("--replay", nargs="+", metavar="PATH", help="validate .onnx regression files "
                   "(or directories of them) with their sidecar arguments")
    p.add_argument("--show", type=int, metavar="SEED", help="print the case of SEED")
    p.add_argument("--save", metavar="FILE", help="with --show: write the model to FILE")
    p.add_argument("-q", "--quiet", action="store_true", help="only the summary and failures")
    return p


def case_of(seed: int, a) -> gen.Case:
    c = gen.generate(seed, max_nodes=a.max_nodes, exclude=a.exclude)
    c.gen_opts = ((f" --max-nodes {a.max_nodes}" if a.max_nodes != 12 else "") +
                  (f" --exclude {','.join(a.exclude)}" if a.exclude else ""))
    if a.config:
        c.config = a.config
        c.sets = []
        c.gen_opts += f" --config {a.config}"
    if a.precision:
        c.precision = a.precision
        c.gen_opts += f" --precision {a.precision}"
    return c


def _args(case: gen.Case, binary: str) -> List[str]:
    return case.validate_args() + runner.check_flags(binary)


def _run_one(seed: int, a, binary: str) -> Tuple[gen.Case, runner.Outcome]:
    try:
        case = case_of(seed, a)
    except Exception as e:  # noqa: BLE001 -- a generator bug is a result too
        return None, runner.Outcome("error", f"generator: {type(e).__name__}: {e}")
    return case, runner.validate_model(binary, case.model, _args(case, binary), a.timeout)


def _short(text: str, n: int = 300) -> str:
    t = " / ".join(ln.strip() for ln in text.splitlines() if ln.strip())
    return t if len(t) <= n else t[:n] + "..."


def fuzz(a) -> int:
    binary = runner.find_binary()
    flags = runner.check_flags(binary)
    seeds = a.seeds if a.seeds is not None else (None if a.time else 100)
    if not a.quiet:
        print(f"fuzz: {binary} validate --no-fallback {' '.join(flags)}; seeds from {a.start}"
              + (f", {seeds} seeds" if seeds is not None else "")
              + (f", {a.time:g} s" if a.time else "") + f", -j {a.jobs}", flush=True)
    summ = runner.Summary()
    failures: List[Tuple[gen.Case, runner.Outcome]] = []
    t0 = time.monotonic()
    lock = threading.Lock()
    next_seed = [a.start]

    def more() -> Optional[int]:
        with lock:
            s = next_seed[0]
            if seeds is not None and s >= a.start + seeds:
                return None
            if a.time and time.monotonic() - t0 > a.time:
                return None
            next_seed[0] += 1
            return s

    reasons = collections.Counter()  # refusals and failures by normalised message

    def report(seed: int, case, o: runner.Outcome):
        summ.add(o.cls)
        if o.cls == "pass":
            return
        if o.cls != "inexact":
            reasons[o.signature() if o.cls != "refused" else _refusal_key(o.message)] += 1
        what = case.describe() if case else f"seed {seed}"
        print(f"{o.cls.upper()} {what}: {_short(o.message)}", flush=True)
        if o.failed or o.cls == "refused":
            if case is not None:
                failures.append((case, o))
            if a.keep and case is not None:
                d = Path(a.keep)
                d.mkdir(parents=True, exist_ok=True)
                import onnx
                onnx.save(case.model, str(d / f"seed{seed}-{o.cls}.onnx"))
                (d / f"seed{seed}-{o.cls}.log").write_text(
                    f"{case.describe()}\nargs: {' '.join(_args(case, binary))}\n\n{o.output}")

    with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        running = {}
        while True:
            while len(running) < max(1, a.jobs):
                s = more()
                if s is None:
                    break
                running[ex.submit(_run_one, s, a, binary)] = s
            if not running:
                break
            done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for f in done:
                s = running.pop(f)
                case, o = f.result()
                report(s, case, o)
            if not a.quiet and summ.cases % 50 == 0 and done:
                summ.seconds = time.monotonic() - t0
                print(summ.line(), flush=True)
    summ.seconds = time.monotonic() - t0
    print(summ.line(), flush=True)
    for why, k in reasons.most_common():
        print(f"  {k:5d} x {why[:160]}")

    if a.shrink:
        todo = [(c, o) for c, o in failures if o.failed or a.shrink_refused]
        written = shrink_failures(todo, a, binary)
        for path in written:
            print(f"wrote {path}")
    return 1 if summ.failed or summ.counts.get("refused") else 0


def _refusal_key(msg: str) -> str:
    """A refusal's reason without node names and numbers."""
    m = msg.splitlines()[0] if msg else ""
    m = re.sub(r"node '[^']*'", "node _", m)
    return "refused: " + re.sub(r"\d+", "N", m.replace("trnsim: error: ", ""))


def _name_of(model, cls: str, seed: int) -> str:
    ops = []
    for n in model.graph.node:
        o = re.sub(r"[^a-z0-9]", "", n.op_type.lower())
        if o not in ops:
            ops.append(o)
    return f"{cls}-{'-'.join(ops[:3])}-s{seed}"


def shrink_failures(failures, a, binary: str) -> List[Path]:
    out = Path(a.out) if a.out else REGRESS_DIR / "open"
    written, seen, sigs = [], set(), set()
    shrunk = 0
    for case, o in failures:
        sig = o.signature()
        if shrunk >= a.max_shrinks:
            break
        # Errors, crashes and refusals with one message are one bug: shrink the first.
        if sig != o.cls and sig in sigs:
            continue
        sigs.add(sig)
        shrunk += 1
        args = _args(case, binary)
        print(f"shrink: seed {case.seed} ({sig}), {case.describe()}", flush=True)

        def still(m, o=o, args=args):
            return runner.validate_model(binary, m, args, a.timeout).same_failure(o)

        small = shrink.shrink(case.model, still, budget_s=a.shrink_time,
                              log=(lambda s: None) if a.quiet else (lambda s: print("  " + s)))
        key = (sig, tuple(sorted(n.op_type for n in small.graph.node)))
        if key in seen:
            print(f"shrink: seed {case.seed} shrinks to a case already written", flush=True)
            continue
        seen.add(key)
        final = runner.validate_model(binary, small, args, a.timeout)
        written.append(write_regression(out, small, case, o, final, args))
    return written


def write_regression(out: Path, model, case: gen.Case, orig: runner.Outcome,
                     final: runner.Outcome, args: List[str]) -> Path:
    import onnx

    out.mkdir(parents=True, exist_ok=True)
    name = _name_of(model, orig.cls, case.seed)
    path = out / f"{name}.onnx"
    onnx.save(model, str(path))
    base = [x for x in args if x not in ("--check-races", "--poison")]
    ins = ", ".join(f"{i.name}{[d.dim_value for d in i.type.tensor_type.shape.dim]}"
                    for i in model.graph.input)
    try:
        rel = path.relative_to(runner.REPO)
    except ValueError:
        rel = path
    text = [
        "# trnsim fuzz regression (trnsim.fuzz): a shrunk failing case",
        f"seed: {case.seed}",
        f"class: {orig.cls}",
        f"config: {case.config}" + "".join(f" --set {kv}" for kv in case.sets),
        f"precision: {case.precision}",
        f"args: {' '.join(base)}",
        f"original: {case.describe()}",
        f"shrunk: {len(model.graph.node)} nodes "
        f"({' '.join(n.op_type for n in model.graph.node)}); inputs {ins}",
        f"reproduce: trnsim validate {rel} {' '.join(args)}",
        f"regenerate: trnsim fuzz --seeds 1 --start {case.seed}{case.gen_opts} "
        f"(generator v{gen.GEN_VERSION})",
        "failure (original):",
    ] + ["  " + ln for ln in orig.message.splitlines()] + [
        "failure (shrunk):",
    ] + ["  " + ln for ln in final.message.splitlines()]
    path.with_suffix(".txt").write_text("\n".join(text) + "\n")
    return path


def sidecar_args(model_path: Path) -> List[str]:
    """The `args:` line of a regression's sidecar (.txt next to the .onnx)."""
    side = model_path.with_suffix(".txt")
    if not side.exists():
        raise SystemExit(f"trnsim fuzz: {model_path}: no sidecar {side.name} with an args: line")
    for ln in side.read_text().splitlines():
        if ln.startswith("args:"):
            return ln[len("args:"):].split()
    raise SystemExit(f"trnsim fuzz: {side}: no 'args:' line")


def replay(paths: List[str], a) -> int:
    binary = runner.find_binary()
    files: List[Path] = []
    for p in paths:
        q = Path(p)
        files += sorted(q.glob("*.onnx")) if q.is_dir() else [q]
    if not files:
        print("fuzz: no regression models to replay")
        return 0
    bad = 0
    for f in files:
        args = sidecar_args(f) + runner.check_flags(binary)
        o = runner.run_validate(binary, str(f), args, a.timeout)
        ok = o.cls == "pass"
        bad += not ok
        print(f"{'pass' if ok else o.cls.upper():8} {f.name} ({o.seconds:.2f} s)"
              + ("" if ok else f": {_short(o.message)}"), flush=True)
    print(f"fuzz: replayed {len(files)} regression model(s): {len(files) - bad} passed, "
          f"{bad} failed")
    return 1 if bad else 0


def show(a) -> int:
    import onnx

    case = case_of(a.show, a)
    print(case.describe())
    print("args:", " ".join(case.validate_args()))
    print(onnx.helper.printable_graph(case.model.graph))
    if a.save:
        onnx.save(case.model, a.save)
        print(f"wrote {a.save}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    a = _parser().parse_args(argv)
    try:
        if a.replay:
            return replay(a.replay, a)
        if a.show is not None:
            return show(a)
        return fuzz(a)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `trnsim fuzz --show 3 | head`
        sys.stdout = None
        return 0


if __name__ == "__main__":
    sys.exit(main())
