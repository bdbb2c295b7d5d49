"""`trnsim run --tp N` on the Llama decode step of examples/models.py (small shapes):
the KV cache inputs split by heads like the attention (tensor_parallel.h), so each
rank reads only its heads' share of the cache; the new token's key and value (split
graph outputs) are gathered back by the runtime. References: eager PyTorch.
Run: TRNSIM_BIN=build/runtime/trnsim python3 tests/python/test_decode_tp.py
Exit 77 (skipped) when numpy, torch or onnx or the binary are missing.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = Path(HERE).parents[1]
sys.path.insert(0, HERE)
sys.path.insert(0, str(REPO))
BIN = os.environ.get("TRNSIM_BIN") or str(REPO / "build" / "runtime" / "trnsim")

from skip_unless import require  # noqa: E402

require(("numpy", "torch", "onnx"), BIN)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from examples.models import llama_decode  # noqa: E402

# 8 heads of 32 so that --tp 2, 4 and 8 all split them.
SHAPE = dict(batch=2, ctx=64, d=256, heads=8, ff=512)


def run(args, check=True):
    p = subprocess.run([BIN] + args, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("trnsim %s failed (%d):\n%s%s" % (args, p.returncode, p.stdout,
                                                            p.stderr))
    return p


def export(where, name, **kw):
    """The decode step exported to where/name.onnx with its inputs saved; returns the eager
    outputs (y, k, v)."""
    model, inputs = llama_decode(**kw)
    torch.onnx.export(model, inputs, str(where / (name + ".onnx")), opset_version=17,
                      input_names=["x", "k_cache", "v_cache"], output_names=["y", "k", "v"])
    for n, t in zip(("x", "kc", "vc"), inputs):
        np.save(where / ("%s_%s.npy" % (name, n)), t.numpy())
    with torch.no_grad():
        return [t.numpy() for t in model(*inputs)], model


def dma_bytes(stats, core):
    """Bytes core `core`'s DMA queues moved (its HBM reads, and its few writes), from
    the --stats JSON."""
    queues = stats["dma"]["queues"]["core%d" % core]
    return sum(q["bytes"] for engine in queues.values() for q in engine.values())


class DecodeTp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)
        cls.eager, model = export(cls.dir, "dec", **SHAPE)
        b, h, c, hd = SHAPE["batch"], SHAPE["heads"], SHAPE["ctx"], SHAPE["d"] // SHAPE["heads"]
        cls.cache_bytes = 2 * b * h * c * hd * 4  # two fp32 cache inputs
        # Matmul weights at bf16 (cast at compile time).
        cls.weight_bytes = sum(p.numel() * 2 for p in model.parameters() if p.dim() == 2)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def inputs(self, name="dec"):
        d = self.dir
        return ["--input", "x=%s" % (d / (name + "_x.npy")),
                "--input", "k_cache=%s" % (d / (name + "_kc.npy")),
                "--input", "v_cache=%s" % (d / (name + "_vc.npy"))]

    def test_split_cache_matches_eager(self):
        d = self.dir
        for n in (2, 4, 8):
            with self.subTest(tp=n):
                out = d / ("tp%d" % n)
                p = run(["run", str(d / "dec.onnx"), "-c", "tiny", "--tp", str(n),
                         "--output-dir", str(out), "--stats", str(d / ("tp%d.json" % n))]
                        + self.inputs())
                stats = json.loads((d / ("tp%d.json" % n)).read_text())
                for r in range(n):
                    got = dma_bytes(stats, r)
                    # Each rank reads its 1/n of the cache and of the matmul weights
                    # (plus x, norm weights, its partial sums: small), not the whole
                    # cache: with the cache whole, rank r would read >= cache_bytes.
                    share = (self.cache_bytes + self.weight_bytes) / n
                    self.assertGreater(got, 0.9 * share, "rank %d" % r)
                    self.assertLess(got, 1.3 * share, "rank %d read %d bytes" % (r, got))
                # Attention's output projection and the MLP's down projection.
                self.assertIn("2 collectives", p.stdout)
                for r in range(n):
                    for name, want in zip(("y", "k", "v"), self.eager):
                        got = np.load(out / ("rank%d" % r) / (name + ".npy"))
                        # bf16 operands; whole k, v gathered from the ranks' heads.
                        self.assertEqual(got.shape, want.shape, name)
                        err = np.abs(got - want).max() / np.abs(want).max()
                        self.assertLess(err, 3e-2, "rank %d output %s" % (r, name))

    def test_heads_must_divide(self):
        # 4 heads on 8 ranks: the cache cannot split by heads; the error names it.
        d = self.dir
        export(d, "h4", **dict(SHAPE, heads=4))
        p = run(["run", str(d / "h4.onnx"), "-c", "tiny", "--tp", "8", "--no-functional"],
                check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("input 'k_cache' [2,4,64,64]", p.stderr)
        self.assertIn("not a multiple of --tp 8", p.stderr)


if __name__ == "__main__":
    unittest.main()
