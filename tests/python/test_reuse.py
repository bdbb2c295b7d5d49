"""A stack of GPT-2 blocks compiled once and reused (`trnsim run`'s default) against
eager PyTorch and against the block-by-block compile (`--no-reuse`).

Three tiny GPT-2 blocks (examples/models.py gpt2_stack: seq 16, d 128, 4 heads, ff
256; d above 64, so that the biases are weights rather than small constants blocks
must share, compiler/repeat.h), bf16: the error against eager (max |trnsim - eager| / max |eager|) within 3 %
(bf16 operands, as tests/python/test_torch_models.py's one-block models; the three
blocks' errors stay well inside it), and the reused program's outputs equal to the
block-by-block program's (the same instructions per block, so bit for bit).
Exit 77 (skipped) when numpy, torch, onnx or the binary are missing.
"""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from skip_unless import require

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("TRNSIM_BIN") or str(REPO / "build" / "runtime" / "trnsim")
require(("numpy", "torch", "onnx"), BIN)
os.environ.setdefault("TRNSIM_BIN", BIN)

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "runtime" / "python"))
import trnsim.torch as tt  # noqa: E402
from examples.models import gpt2_stack  # noqa: E402


def compile_and_run(onnx, x_npy, d, extra):
    """`trnsim compile` (its report) and `trnsim run` of the program (its output)."""
    os.makedirs(d)
    prog = os.path.join(d, "m.tbin")
    c = subprocess.run([BIN, "compile", onnx, "-o", prog, "-c", "trn2", "--precision", "bf16"]
                       + extra, capture_output=True, text=True)
    if c.returncode != 0:
        raise AssertionError(c.stdout + c.stderr)
    r = subprocess.run([BIN, "run", prog, "-c", "trn2", "--input", "input_0=" + x_npy,
                        "--output-dir", d], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(r.stdout + r.stderr)
    return c.stdout, np.load(os.path.join(d, "output.npy"))


class Stack(unittest.TestCase):
    def test_three_gpt2_blocks(self):
        model, (x,) = gpt2_stack(layers=3, seq=16, d=128, heads=4, ff=256, seed=0)
        with torch.no_grad():
            want = model(x).numpy()
        with tempfile.TemporaryDirectory(prefix="trnsim-reuse-") as d:
            onnx = os.path.join(d, "m.onnx")
            tt._export(tt._exportable(model, 1), (x,), onnx, ["input_0"], ["output"])
            x_npy = os.path.join(d, "x.npy")
            np.save(x_npy, x.numpy())
            out_r, got_r = compile_and_run(onnx, x_npy, os.path.join(d, "r"), [])
            out_s, got_s = compile_and_run(onnx, x_npy, os.path.join(d, "s"), ["--no-reuse"])
        self.assertRegex(out_r, r"repeated blocks: 3 identical blocks of \d+ nodes \(of \d+\); "
                                r"1 compiled, 2 reusing")
        self.assertIn("each is compiled on its own", out_s)
        err = float(np.abs(got_r - want).max() / np.abs(want).max())
        self.assertLess(err, 0.03)
        np.testing.assert_array_equal(got_r, got_s)


if __name__ == "__main__":
    unittest.main()
