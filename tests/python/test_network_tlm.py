"""Tests of `network.model: tlm` (models/network/network_tlm.h): `trnsim run`
collectives timed on the SystemC/TLM link blocks. Results against the numpy ring
reference in _collective_ref.py (written from the spec), times against the analytic model
where no resource serves two transfers at once, determinism, and a bad value.
Run: TRNSIM_BIN=build/runtime/trnsim python3 tests/python/test_network_tlm.py
Exit 77 (skipped) when numpy or the binary are missing.
"""

import re
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

    def test_trace_has_transfer_spans_and_engine_tracks(self):
        # chip.cores=1: ranks 0 and 1 on chips 0 and 1, each way its own link. Each
        # rank sends one 4096 B block a phase (2048 fp32 over 2 ranks, 2 phases):
        # every link carries 2 transfers of 4096 / 10 = 409.6 ns, and each chip's
        # collective engine runs 2, each from its start to its arrival 409.6 + 100
        # = 509.6 ns later. The links' report lines count the same.
        import json
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(program("all_reduce", "fp32", 2048, 2048, 2))
            trace = Path(d, "t.json")
            p = run(["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "2",
                     "--random-inputs", "--no-functional", "--trace", str(trace), "--set",
                     "chip.cores=1"] + [a for s in TLM for a in ("--set", s)])
            events = json.loads(trace.read_text())["traceEvents"]
        procs = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
        net = [k for k, v in procs.items() if v == "network"][0]
        tracks = {e["tid"]: e["args"]["name"] for e in events
                  if e.get("name") == "thread_name" and e["pid"] == net}
        spans = {}
        for e in events:
            if e.get("ph") == "X" and e["pid"] == net:
                spans.setdefault(tracks[e["tid"]], []).append(e["dur"])
        engines = sorted(n for n in spans if n.endswith("collective_engine"))
        self.assertEqual(engines, ["chip0.collective_engine", "chip1.collective_engine"], spans)
        links = [n for n in spans if "link" in n]
        self.assertEqual(len(links), 2, spans)
        for n in links:
            self.assertEqual(len(spans[n]), 2, spans)
            for dur in spans[n]:
                self.assertAlmostEqual(dur, 0.4096, places=6)  # us
        for n in engines:
            self.assertEqual(len(spans[n]), 2, spans)
            for dur in spans[n]:
                self.assertAlmostEqual(dur, 0.5096, places=6)
        for n in links:
            self.assertRegex(p.stdout, re.escape(n) + r"\s+8192 bytes\s+2 transfers")

    def test_bad_value_names_the_key(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(program("all_reduce", "fp32", 64, 64, 2))
            p = run(["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "2",
                     "--no-functional", "--set", "network.model=exact"], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("network.model", p.stderr)
        self.assertIn("analytic or tlm", p.stderr)
        self.assertIn("exact", p.stderr)


class TensorParallelTlm(unittest.TestCase):
    """`trnsim run --tp 2/4` of a PyTorch MLP with the collectives on the chips'
    collective engines (network.model=tlm), whose transfers share the cores' DMA
    engines with compute DMA one by one: outputs bit-identical to the analytic
    run's, close to eager PyTorch, the same cycles every run."""

    @classmethod
    def setUpClass(cls):
        needs_binary(("numpy", "torch", "onnx"))
        import torch

        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.GELU(),
                                    torch.nn.Linear(256, 128)).eval()
        cls.dir = tempfile.TemporaryDirectory()
        d = Path(cls.dir.name)
        x = torch.randn(32, 128)
        torch.onnx.export(model, (x,), str(d / "mlp.onnx"), opset_version=17,
                          input_names=["x"], output_names=["y"])
        np.save(d / "x.npy", x.numpy())
        with torch.no_grad():
            cls.eager = model(x).numpy()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def tp_run(self, n, sets, tag):
        d = Path(self.dir.name)
        args = ["run", str(d / "mlp.onnx"), "-c", "tiny", "--tp", str(n), "--input",
                "x=" + str(d / "x.npy"), "--output-dir", str(d / tag)]
        for s in sets:
            args += ["--set", s]
        p = run(args)
        return p.stdout, [np.load(d / tag / ("rank%d" % r) / "y.npy") for r in range(n)]

    def test_tp_outputs_and_times(self):
        for n in (2, 4):
            with self.subTest(tp=n):
                a_out, a_ys = self.tp_run(n, (), "a%d" % n)
                t_out, t_ys = self.tp_run(n, TLM, "t%d" % n)
                t2_out, _ = self.tp_run(n, TLM, "u%d" % n)
                for ya, yt in zip(a_ys, t_ys):
                    np.testing.assert_array_equal(yt, ya)
                    # bf16 matmul operands: the tolerance of test_spmd's --tp test.
                    np.testing.assert_allclose(yt, self.eager, rtol=3e-2, atol=3e-2)
                ta, tt = rank_times(a_out), rank_times(t_out)
                self.assertEqual(sorted(tt), list(range(n)), t_out)
                self.assertEqual(tt, rank_times(t2_out))
                for r in range(n):
                    # The collective's transfers meet on the chip's one intra-chip
                    # path: TLM serves them in turn, analytic side by side, so
                    # single transfers end earlier or later; the path's work is the
                    # same, so the collective time stays within a quarter of it.
                    self.assertLess(abs(tt[r] - ta[r]), 0.25 * ta[r], (a_out, t_out))


if __name__ == "__main__":
    unittest.main()
