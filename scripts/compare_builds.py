#!/usr/bin/env python3
"""Do two trnsim builds give the same programs and cycles? For a refactor that must
not change results: every preset x (the hand-written programs in tests/e2e/programs,
simulated timing-only; two small ONNX models compiled at bf16/fp32/fp8) is run with
both binaries. Prints one line per case (same/DIFF) and exits 1 on any difference.

Each binary resolves presets from its own source tree (its configs/), so an old
build with full presets compares against a new one with inheriting presets.

usage: scripts/compare_builds.py --old OLD/build/runtime/trnsim [--new PATH]
                                 [--configs trn1,trn2,trn3,tiny]
"""
import argparse
import glob
import hashlib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def models(d):
    """A GEMM and a small CNN (conv, linear, layer norm, softmax), as ONNX files."""
    import onnx
    import torch
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["Y"])], "gemm",
                          [helper.make_tensor_value_info("A", TensorProto.FLOAT, [512, 1024]),
                           helper.make_tensor_value_info("B", TensorProto.FLOAT, [1024, 768])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [512, 768])])
    gemm = os.path.join(d, "gemm.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), gemm)

    class Cnn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.l = torch.nn.Linear(16 * 8 * 8, 10)
            self.n = torch.nn.LayerNorm(10)

        def forward(self, x):
            return torch.softmax(self.n(self.l(torch.relu(self.c(x)).flatten(1))), -1)

    cnn = os.path.join(d, "cnn.onnx")
    torch.manual_seed(0)
    torch.onnx.export(Cnn(), torch.randn(2, 3, 8, 8), cnn, opset_version=17)
    return [gemm, cnn]


def simulated(binary, prog, config):
    r = subprocess.run([binary, "run", prog, "-c", config, "--no-functional"],
                       capture_output=True, text=True)
    m = re.search(r"simulated time\s+(\S+ \S+)", r.stdout)
    return m.group(1) if r.returncode == 0 and m else "failed: " + r.stderr.strip()[:80]


def compiled(binary, model, config, precision, out):
    r = subprocess.run([binary, "compile", model, "-c", config, "--precision", precision,
                        "-o", out], capture_output=True, text=True)
    if r.returncode != 0:
        return "failed: " + r.stderr.strip()[:80]
    with open(out, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the reference trnsim binary")
    ap.add_argument("--new", default=os.path.join(ROOT, "build", "runtime", "trnsim"))
    ap.add_argument("--configs", default="trn1,trn2,trn3,tiny")
    a = ap.parse_args()
    diffs = cases = 0
    with tempfile.TemporaryDirectory() as d:
        onnx_models = models(d)
        for c in a.configs.split(","):
            for p in sorted(glob.glob(os.path.join(ROOT, "tests", "e2e", "programs", "*.tasm"))):
                got = [simulated(b, p, c) for b in (a.old, a.new)]
                cases += 1
                diffs += got[0] != got[1]
                print(f"{'same' if got[0] == got[1] else 'DIFF'} {c} {os.path.basename(p)}: "
                      f"{got[0]}" + ("" if got[0] == got[1] else f" vs {got[1]}"))
            for m in onnx_models:
                for prec in ("bf16", "fp32", "fp8"):
                    got = [compiled(b, m, c, prec, os.path.join(d, f"{i}.tbin"))
                           for i, b in enumerate((a.old, a.new))]
                    cases += 1
                    diffs += got[0] != got[1]
                    print(f"{'same' if got[0] == got[1] else 'DIFF'} {c} {os.path.basename(m)} "
                          f"{prec}: program {got[0]}" + ("" if got[0] == got[1] else f" vs {got[1]}"))
    print(f"{cases - diffs} of {cases} cases the same")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
