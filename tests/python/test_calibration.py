"""Tests of the calibration suite (scripts/calibrate.py, scripts/calibration/).

Kernels: every kernel the suite replays, at a small shape, runs through
`trnsim run KERNEL.tir` with data and gives lhsT^T @ rhs as numpy computes it from
the same (bf16-rounded) inputs: the loop nests are matmuls, whatever their timing.
Table: the DMA cases run through calibrate.py; its errors and MAPE are the
arithmetic of the published and simulated figures it writes.
Exit 77 (skipped) when numpy or the binary are missing.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from skip_unless import require

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("TRNSIM_BIN") or str(REPO / "build" / "runtime" / "trnsim")
require(("numpy",), BIN)

import numpy as np  # noqa: E402

sys.path.insert(0, str(REPO / "scripts" / "calibration"))
import kernels  # noqa: E402


def bf16(x):
    """Round float32 to bf16 (nearest even), back in float32: numpy from the format."""
    b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32)


class Kernels(unittest.TestCase):
    def run_kernel(self, text, m, k, n, dtype, config):
        rng = np.random.default_rng(1)
        a = rng.standard_normal((k, m)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            (d / "k.tir").write_text(text)
            np.save(d / "a.npy", a)
            np.save(d / "b.npy", b)
            r = subprocess.run([BIN, "run", str(d / "k.tir"), "-c", config, "--input",
                                f"lhsT={d / 'a.npy'}", "--input", f"rhs={d / 'b.npy'}",
                                "--output-dir", str(d / "out")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            got = np.load(d / "out" / "result.npy").astype(np.float32)
        if dtype == "bf16":
            a, b = bf16(a), bf16(b)
        want = a.astype(np.float64).T @ b.astype(np.float64)
        err = np.abs(got - want).max() / np.abs(want).max()
        # bf16 output rounding (2^-9 relative) or fp32 accumulation.
        self.assertLess(err, 1e-2 if dtype == "bf16" else 1e-5, text.split()[1])

    def test_every_version(self):
        for dtype, config in (("bf16", "trn1"), ("fp32", "trn2")):
            for name, (m, k, n), kw in (
                    ("tiled", (256, 512, 1024), {}),
                    ("hoisted", (256, 512, 1024), {}),
                    ("block_free", (512, 512, 2048), {}),
                    ("fully_optimized", (4096, 2048, 2048), {}),
                    ("fully_optimized", (4096, 2048, 2048), {"pack": False, "bufs": 1})):
                if dtype == "fp32" and name == "fully_optimized" and not kw:
                    continue  # fp32 needs the single-buffered variant (SBUF), as the suite's
                with self.subTest(kernel=name, dtype=dtype, **kw):
                    text = getattr(kernels, "matmul_" + name)(m, k, n, dtype, dtype, **kw)
                    self.run_kernel(text, m, k, n, dtype, config)


class Table(unittest.TestCase):
    def test_errors_and_mape_are_the_published_arithmetic(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "cal.json"
            r = subprocess.run([sys.executable, str(REPO / "scripts" / "calibrate.py"),
                                "--trnsim", BIN, "--only", "dma", "--json", str(out)],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            res = json.loads(out.read_text())
        self.assertEqual(len(res["cases"]), 3)
        per_gen = {}
        for c in res["cases"]:
            pub, sim = c["published"]["latency_us"], c["simulated"]["latency_us"]
            self.assertGreater(sim, 0)
            self.assertAlmostEqual(c["error_pct"], 100 * (sim - pub) / pub, places=9)
            per_gen.setdefault(c["gen"], []).append(abs(c["error_pct"]))
            self.assertIn("MAPE " + c["gen"], r.stdout)
        for g, errs in per_gen.items():
            self.assertAlmostEqual(res["mape_pct"][g], sum(errs) / len(errs), places=9)


if __name__ == "__main__":
    unittest.main()
