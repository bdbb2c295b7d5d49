"""Tests of `network.model: tlm` (models/network/network_tlm.h): `trnsim run`
collectives timed on the SystemC/TLM link blocks. Results against the numpy ring
reference in _collective_ref.py (written from the spec), times against the analytic model
where no resource serves two transfers at once, determinism, and a bad value.
Run: TRNSIM_BIN=build/runtime/trnsim python3 tests/python/test_network_tlm.py
Exit 77 (skipped) when numpy or the binary are missing.
"""

import tempfile
import unittest
from pathlib import Path

from _helpers import needs_binary, rank_times, run

needs_binary(("numpy",))

import numpy as np  # noqa: E402
from _collective_ref import ring_all_reduce, rounder  # noqa: E402
from test_spmd import program  # noqa: E402

TLM = ("network.model=tlm",)


def run_all_reduce(dtype, ranks, count, sets=(), functional=True):
    """all_reduce of `count` values on `ranks` ranks of tiny; (inputs, outputs, stdout)."""
    rnd = rounder(dtype)
    rng = np.random.default_rng(ranks * 7 + count)
    xs = rnd(rng.uniform(-4, 4, size=(ranks, count)).astype(np.float32))
    with tempfile.TemporaryDirectory() as d:
        Path(d, "p.tasm").write_text(program("all_reduce", dtype, count, count, ranks))
        for r in range(ranks):
            np.save(Path(d, "x%d.npy" % r), xs[r])
        args = ["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", str(ranks),
                "--input", "x=" + str(Path(d, "x{rank}.npy")), "--output-dir",
                str(Path(d, "out"))]
        if not functional:
            args += ["--no-functional", "--no-fold"]
        for s in sets:
            args += ["--set", s]
        p = run(args)
        ys = None
        if functional:
            ys = np.stack([np.load(Path(d, "out", "rank%d" % r, "y.npy")).astype(np.float32)
                           for r in range(ranks)])
    return xs, ys, p.stdout


class NetworkModel(unittest.TestCase):
    def test_all_reduce_matches_numpy(self):
        # 2 ranks: one chip, the torus over its cores; 4 ranks: 2 chips of tiny's 4,
        # the ring in rank order (through the chips' intra-chip paths and a link).
        for ranks in (2, 4):
            for dtype in ("fp32", "bf16"):
                with self.subTest(ranks=ranks, dtype=dtype):
                    xs, ys, _ = run_all_reduce(dtype, ranks, 1000, TLM)
                    want = ring_all_reduce(xs, rounder(dtype))
                    for r in range(ranks):
                        np.testing.assert_array_equal(ys[r], want)

    def test_times_match_the_analytic_arithmetic(self):
        # tiny: links 10 B/ns, 100 ns; chip_local 20 B/ns, 50 ns; DMA 160 B/ns.
        # all_reduce of 2048 fp32 over 2 ranks, each rank sending 4096 B a phase.
        # One chip: the torus over its cores sends each block as two 2048 B halves,
        # one each way: 4 transfers, 8192 B a phase on the one intra-chip path, in turn
        # (TLM) or side by side (analytic), drained by the same instant:
        #   2 x (8192 / 20 + 50) = 2 x 459.6 = 919.2 ns.
        # chip.cores=1: one rank a chip, each way its own link:
        #   2 x (4096 / 10 + 100) = 2 x 509.6 = 1019.2 ns.
        for sets, want in (((), 919.2), (("chip.cores=1",), 1019.2)):
            with self.subTest(sets=sets):
                _, _, analytic = run_all_reduce("fp32", 2, 2048, sets, functional=False)
                _, _, tlm = run_all_reduce("fp32", 2, 2048, sets + TLM, functional=False)
                ta, tt = rank_times(analytic), rank_times(tlm)
                self.assertEqual(sorted(tt), [0, 1], tlm)
                for r in (0, 1):
                    self.assertAlmostEqual(ta[r], want, places=3, msg=analytic)
                    self.assertAlmostEqual(tt[r], want, places=3, msg=tlm)

    def test_same_cycles_every_run(self):
        outs = [run_all_reduce("bf16", 4, 512, TLM)[2] for _ in range(2)]
        self.assertEqual(rank_times(outs[0]), rank_times(outs[1]))
        self.assertTrue(rank_times(outs[0]))

    def test_bad_value_names_the_key(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(program("all_reduce", "fp32", 64, 64, 2))
            p = run(["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "2",
                     "--no-functional", "--set", "network.model=exact"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("network.model", p.stderr)
        self.assertIn("analytic or tlm", p.stderr)
        self.assertIn("exact", p.stderr)


if __name__ == "__main__":
    unittest.main()
