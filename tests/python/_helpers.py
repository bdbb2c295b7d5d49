"""What several Python suites share: the repository's paths (runtime/python put on
sys.path for `import trnsim`), the skip rule of a suite (skip_unless.py), running the
trnsim binary and reading its report, and the relative error the torch suites compare
with. Imports nothing beyond the standard library, so that a suite can import it
before it knows whether numpy or torch are installed.
"""
import os
import re
import subprocess
import sys
import tempfile

from skip_unless import missing_modules, require

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if os.path.join(ROOT, "runtime", "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))

BIN = os.environ.get("TRNSIM_BIN") or os.path.join(ROOT, "build", "runtime", "trnsim")


def needs(modules, module_name):
    """The modules of `modules` that are missing. A suite run as a script
    (`module_name` is "__main__") exits 77 instead, or 1 under CI=true; imported by
    another suite it only learns what is missing."""
    if module_name == "__main__":
        require(modules)
    return missing_modules(modules)


def needs_binary(modules):
    """Exits 77 (1 under CI=true) unless `modules` and the trnsim binary are there."""
    require(modules, BIN)
    return BIN


def run(args, check=True):
    """`trnsim ARGS...`; with `check`, a non-zero exit fails the test with the output."""
    p = subprocess.run([BIN] + args, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("trnsim %s failed (%d):\n%s%s" % (args, p.returncode, p.stdout,
                                                            p.stderr))
    return p


def compile_printing_after(module, inputs, pass_name):
    """Exports `module` with trnsim.torch's export path and compiles it with
    `--print-after PASS`; returns the finished `trnsim compile` (its output holds the
    graph after that pass)."""
    import trnsim.torch as tt

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        tt._export(tt._exportable(module, len(inputs)), inputs, path,
                   [f"input_{i}" for i in range(len(inputs))], ["output"])
        return run(["compile", path, "-o", os.path.join(d, "m.tbin"), "--print-after",
                    pass_name])

def step_ns(out):
    """The SPMD report's step time [ns]."""
    return float(re.search(r"step: ([0-9.]+) ns", out).group(1))


def rank_times(out):
    """rank -> collective time [ns] from the per-rank report lines."""
    return {int(m.group(1)): float(m.group(2))
            for m in re.finditer(r"rank (\d+): .*?collectives: ([0-9.]+) ns", out)}


def rel_err(got, want):
    """max |got - want| / max |want| of two torch tensors, in fp32."""
    return float((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-12))


def rel_err_f64(got, want):
    """max |got - want| / max |want| of two torch tensors, in fp64 (over 1 when want is 0)."""
    got, want = got.double(), want.double()
    scale = want.abs().max().item()
    return (got - want).abs().max().item() / (scale if scale > 0 else 1.0)


def run_ranks(program, xs, config="tiny", sets=()):
    """`trnsim run` of the assembly `program` on len(xs) ranks, rank r's input x
    being xs[r] (bf16 inputs: float32 values rounded to bf16 already); returns the
    ranks' outputs y stacked as float32, and the report."""
    import numpy as np
    from pathlib import Path

    ranks = len(xs)
    with tempfile.TemporaryDirectory() as d:
        Path(d, "p.tasm").write_text(program)
        for r in range(ranks):
            np.save(Path(d, "x%d.npy" % r), xs[r])
        args = ["run", str(Path(d, "p.tasm")), "-c", config, "--ranks", str(ranks),
                "--input", "x=" + str(Path(d, "x{rank}.npy")), "--output-dir",
                str(Path(d, "out"))]
        for s in sets:
            args += ["--set", s]
        p = run(args)
        ys = np.stack([np.load(Path(d, "out", "rank%d" % r, "y.npy")).astype(np.float32)
                       for r in range(ranks)])
    return ys, p.stdout


def expect_matches_eager(test, module, inputs, tols=(("fp32", 1e-4), ("bf16", 3e-2))):
    """`module` through trnsim.torch.run at each (precision, tolerance), every op on the
    chip: each output's rel_err against eager PyTorch below the tolerance."""
    import torch
    import trnsim.torch as tt

    with torch.no_grad():
        want = module(*inputs)
    wants = tuple(want) if isinstance(want, (tuple, list)) else (want,)
    for p, tol in tols:
        with test.subTest(precision=p):
            out, rep = tt.run(module, inputs, precision=p, fallback=False)
            test.assertEqual(rep.fallback_ops, [])
            outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            test.assertEqual(len(outs), len(wants))
            for o, w in zip(outs, wants):
                test.assertLess(rel_err(o, w), tol)
