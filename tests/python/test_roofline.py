"""The roofline in the Python report (trnsim.torch.run(...).report.roofline) and in
the sweep's result columns (trnsim.sweep.results): the fields exist, are consistent
with each other, and no run beats its roofline.
Exit 77 (skipped) when numpy, torch, onnx or the binary are missing.
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
require(("numpy", "torch", "onnx"), BIN)
os.environ.setdefault("TRNSIM_BIN", BIN)

import torch  # noqa: E402

sys.path.insert(0, str(REPO / "runtime" / "python"))
import trnsim.torch  # noqa: E402
from trnsim.sweep import results  # noqa: E402

ROW_KEYS = {"flops", "min_bytes", "compute_ns", "memory_ns", "roofline_ns", "simulated_ns",
            "efficiency_pct", "bound"}


class Report(unittest.TestCase):
    def test_report_exposes_the_roofline(self):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.ReLU(),
                                    torch.nn.Linear(96, 32), torch.nn.Softmax(dim=-1))
        _, rep = trnsim.torch.run(model, (torch.randn(128, 64),), config="trn2",
                                  functional=False)
        rl = rep.roofline
        self.assertTrue(rl["from_compiler"])
        self.assertLessEqual(ROW_KEYS, set(rl["total"]))
        self.assertIn(rl["total"]["bound"], ("compute", "memory"))
        self.assertEqual(rep.roofline_ns, rl["total"]["roofline_ns"])
        self.assertEqual(rep.roofline_bound, rl["total"]["bound"])
        self.assertEqual(rl["total"]["simulated_ns"], rep.simulated_ns)
        self.assertGreater(rep.roofline_efficiency_pct, 0)
        self.assertLessEqual(rep.roofline_efficiency_pct, 100)
        # Linear exports as Gemm (or MatMul + Add); Softmax is its own kind.
        mm = [k for k in rl["kinds"] if k in ("Gemm", "MatMul")]
        self.assertTrue(mm, rl["kinds"].keys())
        self.assertIn("Softmax", rl["kinds"])
        for name, k in rl["kinds"].items():
            self.assertLessEqual(ROW_KEYS | {"count"}, set(k), name)
            self.assertGreaterEqual(k["count"], 1, name)
            if k["simulated_ns"]:
                self.assertLessEqual(k["efficiency_pct"], 100, name)
        # Per-kind FLOPs add up to the program's; two Linears' matmul FLOPs at least.
        self.assertAlmostEqual(sum(k["flops"] for k in rl["kinds"].values()),
                               rl["total"]["flops"])
        self.assertGreaterEqual(rl["total"]["flops"], 2 * 128 * (64 * 96 + 96 * 32))
        self.assertIn("roofline", str(rep))
        self.assertIn("roofline_ns", rep.as_dict())

    def test_sweep_columns(self):
        for c in ("m.roofline.roofline_ns", "m.roofline.efficiency_pct",
                  "m.roofline.compute_bound"):
            self.assertIn(c, results.columns([]))
        # A compiled program (what a sweep runs): the whole-program line only.
        with tempfile.TemporaryDirectory(prefix="trnsim-roofline-") as d:
            stats = os.path.join(d, "s.json")
            subprocess.run([BIN, "run", str(REPO / "tests/e2e/programs/matmul_gelu.tasm"),
                            "-c", "tiny", "--no-functional", "--stats", stats], check=True,
                           capture_output=True)
            with open(stats) as f:
                tree = json.load(f)
        self.assertEqual(tree["roofline"]["from_compiler"], 0)
        self.assertNotIn("kinds", tree["roofline"])
        m = results.metrics(tree)
        self.assertGreater(m["m.roofline.roofline_ns"], 0)
        self.assertGreater(m["m.roofline.efficiency_pct"], 0)
        self.assertLessEqual(m["m.roofline.efficiency_pct"], 100)
        self.assertIn(m["m.roofline.compute_bound"], (0, 1))


if __name__ == "__main__":
    unittest.main()
