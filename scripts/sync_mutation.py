#!/usr/bin/env python3
"""Sync mutation check: does the race detector catch every missing semaphore wait?

For each model, compiles it once, then for a sample of its semaphore waits runs the
program with that one wait removed (`trnsim run --drop-sync N --check-races`,
timing-only) and counts the runs in which the detector reports a race. A miss is a
detector bug or a redundant wait; each miss is listed with the wait that was removed
so it can be looked at (`trnsim compile MODEL -o p.tasm` shows the program).

Usage: sync_mutation.py [--config trn2] [--samples 12] [--seed 1] [--precision bf16]
                        [--min-rate 1.0] [--out DIR] [MODEL ...]
MODEL: an example of examples/models.py (mlp, cnn, transformer), resnet18,
mobilenet_v2, or a path to an .onnx file; default: the examples.
Exits 1 when the catch rate of any model is below --min-rate.
"""

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
sys.path.insert(0, ROOT)


def trnsim_bin():
    b = os.environ.get("TRNSIM_BIN") or os.path.join(ROOT, "build", "runtime", "trnsim")
    if not os.path.exists(b):
        sys.exit(f"sync_mutation: no trnsim binary at {b} (build first, or set TRNSIM_BIN)")
    return b


def need_module(module):
    """Exits 77 (ctest's skip code) when `module` is not installed, except under CI=true,
    where a missing package is a failure (exit 1): the test suites' rule, shared."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from skip_unless import require
    require((module,))


def export(name, path):
    """Writes model `name` as ONNX to `path` (examples, torchvision models or a file)."""
    if name.endswith(".onnx"):
        return name
    need_module("torch")
    import torch
    from examples.models import EXAMPLES
    if name in EXAMPLES:
        module, inputs = EXAMPLES[name].build()
    elif name in ("resnet18", "mobilenet_v2"):
        need_module("torchvision")
        import torchvision
        torch.manual_seed(0)
        module = getattr(torchvision.models, name)().eval()
        inputs = (torch.randn(1, 3, 32, 32),)
    else:
        sys.exit(f"sync_mutation: unknown model '{name}' (examples: {', '.join(EXAMPLES)}; "
                 "resnet18, mobilenet_v2, or an .onnx path)")
    from trnsim.torch import _export  # the front door's export (handles the encoder fast path)
    _export(module, inputs, path, [f"in{i}" for i in range(len(inputs))], None)
    return path


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def check_model(name, args, work):
    onnx_path = export(name, os.path.join(work, f"{os.path.basename(name)}.onnx"))
    prog = os.path.join(work, f"{os.path.basename(name)}.tbin")
    rc, out = run([trnsim_bin(), "compile", onnx_path, "-o", prog, "-c", args.config,
                   "--precision", args.precision])
    if rc != 0:
        sys.exit(f"sync_mutation: compiling {name} failed:\n{out}")
    waits = int(re.search(r"(\d+) semaphore waits", out).group(1))
    base = [trnsim_bin(), "run", prog, "-c", args.config, "--no-functional", "--check-races",
            "--races=warn"]
    # The unmutated program must be clean, or every catch below means nothing.
    rc, out = run(base)
    m = re.search(r"checks: (\d+) race", out)
    if rc != 0 or not m:
        sys.exit(f"sync_mutation: {name} does not run:\n{out}")
    if int(m.group(1)):
        sys.exit(f"sync_mutation: {name} races without any mutation:\n{out}")
    # Evenly spread sample, with a seeded offset.
    n = min(args.samples, waits)
    off = random.Random(f"{args.seed}:{name}").random()
    picks = sorted({int((i + off) * waits / n) for i in range(n)}) if n else []
    caught, missed = 0, []
    t0 = time.perf_counter()
    for k in picks:
        rc, out = run(base + ["--drop-sync", str(k)])
        m = re.search(r"checks: (\d+) race", out)
        removed = re.search(r"removed (.*)", out)
        if rc != 0 or not m:
            sys.exit(f"sync_mutation: {name} --drop-sync {k} failed to run:\n{out}")
        if int(m.group(1)):
            caught += 1
        else:
            missed.append(f"{k}: {removed.group(1) if removed else '?'}")
    secs = time.perf_counter() - t0
    rate = caught / len(picks) if picks else 1.0
    print(f"{name}: {waits} waits, {len(picks)} dropped one at a time, {caught} caught "
          f"({100 * rate:.0f} %), {secs:.1f} s", flush=True)
    for m in missed:
        print(f"  missed: drop-sync {m}")
    return rate, caught, len(picks), missed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", "-c", default="trn2")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--samples", type=int, default=12, help="waits dropped per model")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-rate", type=float, default=1.0)
    ap.add_argument("--out", help="keep the exported models and programs here")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    if args.samples < 1:
        ap.error("--samples must be at least 1")
    models = args.models or ["mlp", "cnn", "transformer"]
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or tmp
        os.makedirs(work, exist_ok=True)
        total_caught = total = 0
        bad = []
        for name in models:
            rate, caught, n, _ = check_model(name, args, work)
            total_caught += caught
            total += n
            if rate < args.min_rate:
                bad.append(name)
    print(f"catch rate: {total_caught}/{total} dropped waits caught "
          f"({100 * total_caught / max(total, 1):.1f} %)")
    if bad:
        print(f"below --min-rate {args.min_rate}: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
