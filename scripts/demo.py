#!/usr/bin/env python3
"""The demo: runs each example PyTorch model (examples/models.py) on the simulator
through trnsim.torch.run and prints its report; writes a Perfetto trace per model.

Usage: demo.py [--config trn2] [--precision bf16] [--out out/demo] [MODEL ...]
Exits non-zero only when every model fails.
"""

import argparse
import importlib.util
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
sys.path.insert(0, ROOT)

if importlib.util.find_spec("torch") is None:
    sys.exit("demo: PyTorch is not installed (Debian: apt-get install python3-torch)")

import trnsim  # noqa: E402
import trnsim.torch  # noqa: E402
from examples.models import EXAMPLES  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", "-c", default="trn2")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "demo"))
    ap.add_argument("models", nargs="*", help=f"models to run: {', '.join(EXAMPLES)} [all]")
    args = ap.parse_args()
    unknown = [m for m in args.models if m not in EXAMPLES]
    if unknown:
        ap.error(f"unknown model {', '.join(unknown)} (have {', '.join(EXAMPLES)})")
    names = args.models or list(EXAMPLES)
    os.makedirs(args.out, exist_ok=True)
    print(f"trnsim binary: {trnsim.find_binary()}")

    summary = []
    for name in names:
        ex = EXAMPLES[name]
        print(f"\n== {name}: {ex.description} ({args.config}, {args.precision})")
        module, inputs = ex.build()
        trace = os.path.join(args.out, f"{name}.trace.json")
        stats = os.path.join(args.out, f"{name}.stats.json")
        t0 = time.perf_counter()
        try:
            _, report = trnsim.torch.run(module, inputs, config=args.config,
                                         precision=args.precision, trace=trace, stats=stats,
                                         name=name)
        except trnsim.TrnsimError as e:
            # One line: the compiler's list of lowerable ops is cut off.
            print(f"  FAILED: {e.message.splitlines()[0].split('; lowerable:')[0]}")
            summary.append((name, None, time.perf_counter() - t0))
            continue
        print(report)
        summary.append((name, report, time.perf_counter() - t0))

    print("\n== summary")
    print(f"  {'model':<12}{'latency':>12}{'TFLOP/s':>10}{'MFU':>8}{'HBM GB/s':>10}"
          f"{'max rel err':>13}{'host s':>8}")
    for name, r, secs in summary:
        if r is None:
            print(f"  {name:<12}{'failed (see above)':>40}{'':>21}{secs:>8.2f}")
            continue
        err = r.max_rel_err
        print(f"  {name:<12}{r.simulated_us:>9.2f} us{r.tflops:>10.3f}{r.mfu_pct:>7.2f}%"
              f"{r.hbm_gbps:>10.1f}{err if err is not None else float('nan'):>13.2e}"
              f"{secs:>8.2f}")
    ok = [n for n, r, _ in summary if r is not None]
    if ok:
        print(f"\nPerfetto traces in {args.out}/ ({', '.join(n + '.trace.json' for n in ok)}): "
              "open https://ui.perfetto.dev, click 'Open trace file' and pick one.")
        print(f"Stats trees (every figure, with units) in {args.out}/<model>.stats.json.")
    print("host s = export + compile + simulate + eager reference, per model; "
          "max rel err = max |trnsim - eager| / max |eager|.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
