"""Tests of SPMD runs at scale: symmetry classes (runtime/symmetry.h: a timing-only
run of alike ranks simulates chip 0 and folds the rest; the step time equals the full
simulation's; different programs per rank are not folded), `--dp D` splitting a model's
batch (runtime/data_parallel.h: rank outputs, concatenated, equal the single-core run's)
and sweeps over run keys and network keys (runtime/python/trnsim/sweep/run_keys.py).
Run: TRNSIM_BIN=build/runtime/trnsim python3 tests/python/test_scale.py
Exit 77 (skipped) when numpy (torch and onnx for the model cases) or the binary are missing.
"""

import re
import sys
import tempfile
import unittest
from pathlib import Path

from _helpers import ROOT, needs_binary, run, step_ns

REPO = Path(ROOT)
needs_binary(("numpy",))

import numpy as np  # noqa: E402


def pipeline(group, groups=6, free=256, extra=False):
    """Per iteration: DMA load, matmul, activation, DMA store, then an all_reduce of
    the stored tile over `group` and a barrier of every rank (`{all}`). `extra`: one
    more load at the end (another program, the same collectives)."""
    L = [".program pipe", ".semaphores 7", ".tensor x [128,%d] bf16 input @0" % free,
         ".tensor w [128,128] bf16 input @524288",
         ".tensor t [2,128,%d] bf16 scratch @1048576" % free,
         ".tensor y [2,128,%d] bf16 output @2097152" % free]
    q = {k: [] for k in ("dma 0 0", "tensor", "scalar", "dma 1 0", "sync", "dma 2 0")}
    q["dma 2 0"].append("dma_copy dst=sbuf[0:128, 8192, bf16, [1,128]] src=hbm[128x128, @w, bf16, "
                        "[1,128]] signal=s6+1")
    for g in range(groups):
        b, off = g % 2, (g % 2) * 128 * free * 2
        after = lambda s, n: " wait=s%d>=%d" % (s, n) if n > 0 else ""
        q["dma 0 0"].append("dma_copy dst=sbuf[0:128, %d, bf16, [1,%d]] src=hbm[128x%d, @x, bf16, "
                            "[1,%d]]%s signal=s0+1" % (b * 2048, free, free, free, after(2, g - 1)))
        q["tensor"].append("matmul dst=psum[0:128, %d, fp32, [1,%d]] stationary=sbuf[0:128, 8192, "
                           "bf16, [1,128]] moving=sbuf[0:128, %d, bf16, [1,%d]] wait=s0>=%d wait=s6>=1%s "
                           "signal=s1+1" % (b * 2048, free, b * 2048, free, g + 1, after(2, g - 1)))
        q["scalar"].append("activation dst=sbuf[0:128, %d, bf16, [1,%d]] src=psum[0:128, %d, fp32, "
                           "[1,%d]] func=gelu wait=s1>=%d%s signal=s2+1"
                           % (16384 + b * 2048, free, b * 2048, free, g + 1, after(3, g - 1)))
        q["dma 1 0"].append("dma_copy dst=hbm[128x%d, @t+%d, bf16, [1,%d]] src=sbuf[0:128, %d, bf16, "
                            "[1,%d]] wait=s2>=%d%s signal=s3+1"
                            % (free, off, free, 16384 + b * 2048, free, g + 1, after(4, g - 1)))
        q["sync"].append("all_reduce dst=hbm[128x%d, @y+%d, bf16, [1,%d]] src=hbm[128x%d, @t+%d, "
                         "bf16, [1,%d]] group=[%s] wait=s3>=%d signal=s4+1"
                         % (free, off, free, free, off, free, group, g + 1))
        q["sync"].append("barrier group=[{all}] signal=s5+1")
    if extra:
        q["dma 0 0"].append("dma_copy dst=sbuf[0:128, 24576, bf16, [1,%d]] src=hbm[128x%d, @x, "
                            "bf16, [1,%d]]" % (free, free, free))
    for name, lines in q.items():
        L += [".queue " + name] + lines
    return "\n".join(L) + "\n"


class Symmetry(unittest.TestCase):
    """tiny: 2 cores a chip, 4 chips: 8 ranks are 4 alike chips."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = Path(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = self.d / name
        path.write_text(text.replace("{all}", ",".join(map(str, range(8)))))
        return str(path)

    def test_folded_step_equals_full_simulation(self):
        # Every rank: all_reduce over its replica's 4 ranks (2 chips), then a barrier.
        progs = [self.write("r%d.tasm" % r, pipeline("0,1,2,3" if r < 4 else "4,5,6,7"))
                 for r in range(8)]
        base = ["run", progs[0], "-c", "tiny", "--ranks", "8", "--no-functional"]
        base += sum((["--rank-program", "%d=%s" % (r, progs[r])] for r in range(1, 8)), [])
        full = run(base + ["--no-fold"])
        folded = run(base)
        self.assertIn("symmetry: not folded (--no-fold)", full.stdout)
        self.assertIn("symmetry: 8 ranks in 2 classes", folded.stdout)
        self.assertEqual(len(re.findall(r"^  rank \d+:", full.stdout, re.M)), 8)
        self.assertEqual(len(re.findall(r"^  rank \d+:", folded.stdout, re.M)), 2)
        self.assertEqual(step_ns(folded.stdout), step_ns(full.stdout))
        # Each rank's collective time is its group's: the same in both runs.
        per_rank = lambda out: re.findall(r"collectives: ([0-9.]+) ns", out)
        self.assertEqual(per_rank(folded.stdout), per_rank(full.stdout)[:2])
        self.assertGreater(float(per_rank(full.stdout)[0]), 0)

    def test_folded_hbm_bound_step_equals_full(self):
        # Every rank streams 4 DMA queues x 8 loads of [128,64] bf16 (16 KiB each) from
        # HBM, then a barrier. Each chip has its own HBM in the full run as in the
        # folded one (platform/chip.h), so chip 0's 2 ranks see the same memory and
        # the same step.
        L = [".program hbmload", ".semaphores 2", ".tensor x [4,128,64] bf16 input @0"]
        for e in range(4):
            L.append(".queue dma %d 0" % e)
            L += ["dma_copy dst=sbuf[0:128, %d, bf16, [1,64]] src=hbm[128x64, @x+%d, bf16, "
                  "[1,64]] signal=s0+1" % (e * 128, e * 128 * 64 * 2)] * 8
        L += [".queue sync", "barrier group=[{all}] wait=s0>=32 signal=s1+1"]
        prog = self.write("hbm.tasm", "\n".join(L) + "\n")
        # 4 channels a stack, 10 GB/s: HBM, not the DMA engines, bounds the step.
        base = ["run", prog, "-c", "tiny", "--ranks", "8", "--no-functional",
                "--set", "hbm.channels_per_stack=4", "--set", "hbm.bandwidth=10GB/s"]
        full, folded = step_ns(run(base + ["--no-fold"]).stdout), step_ns(run(base).stdout)
        # HBM-bound: 2 ranks x 32 x 16384 B over 10 B/ns = 104857.6 ns at least.
        self.assertGreater(full, 2 * 32 * 16384 / 10)
        self.assertEqual(folded, full)

    def test_different_programs_are_not_folded(self):
        # Rank 5 loads once more (asymmetric): every rank is simulated.
        prog = self.write("p.tasm", pipeline("0,1,2,3,4,5,6,7"))
        other = self.write("q.tasm", pipeline("0,1,2,3,4,5,6,7", extra=True))
        p = run(["run", prog, "-c", "tiny", "--ranks", "8", "--no-functional",
                 "--rank-program", "5=" + other])
        self.assertIn("symmetry: not folded (rank 5", p.stdout)
        self.assertEqual(len(re.findall(r"^  rank \d+:", p.stdout, re.M)), 8)

    def test_functional_runs_every_rank(self):
        prog = self.write("p.tasm", pipeline("0,1,2,3,4,5,6,7", groups=2))
        p = run(["run", prog, "-c", "tiny", "--ranks", "8", "--random-inputs"])
        self.assertNotIn("symmetry:", p.stdout)
        self.assertEqual(len(re.findall(r"^  rank \d+:", p.stdout, re.M)), 8)


def hbm_stream(name="stream"):
    """4 DMA queues x 8 loads of [128,64] bf16 (16 KiB each) from HBM: 512 KiB."""
    L = [".program " + name, ".semaphores 1", ".tensor x [4,128,64] bf16 input @0"]
    for e in range(4):
        L.append(".queue dma %d 0" % e)
        L += ["dma_copy dst=sbuf[0:128, %d, bf16, [1,64]] src=hbm[128x64, @x+%d, bf16, "
              "[1,64]] signal=s0+1" % (e * 128, e * 128 * 64 * 2)] * 8
    return "\n".join(L) + "\n"


class ChipMemory(unittest.TestCase):
    """Each chip of a multi-chip SPMD run has its own HBM (platform/chip.h): tiny has
    one 64 MiB HBM channel a chip; chip.cores=1 puts 2 ranks on 2 chips."""

    STREAM = 32 * 16384  # bytes each rank reads

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.d = Path(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = self.d / name
        path.write_text(text)
        return str(path)

    def run_step(self, args, stats=None):
        extra = ["--stats", stats] if stats else []
        out = run(["run"] + args + ["-c", "tiny", "--no-functional", "--no-fold",
                                    "--set", "hbm.bandwidth=10GB/s"] + extra).stdout
        return step_ns(out)

    def test_ranks_on_two_chips_each_stream_their_own_hbm(self):
        prog = self.write("stream.tasm", hbm_stream())
        idle = self.write("idle.tasm", ".program idle\n.semaphores 1\n")  # no instruction
        alone = self.run_step([prog, "--ranks", "1"])
        stats = str(self.d / "two.json")
        two_chips = self.run_step([prog, "--ranks", "2", "--set", "chip.cores=1"], stats)
        one_chip = self.run_step([prog, "--ranks", "2"])
        one_busy = self.run_step([prog, "--ranks", "2", "--set", "chip.cores=1",
                                  "--rank-program", "1=" + idle])
        # 4 loads in flight ask 4 x 10 B/ns of one 10 B/ns HBM channel: HBM-bound.
        # One rank: 100 ns DMA fixed cost of the first load, then its channel busy
        # with 32 x 16384 B = 524288 B / 10 B/ns = 52428.8 ns, then 100 ns HBM latency
        # of the last: 52628.8 ns.
        self.assertAlmostEqual(alone, 100 + self.STREAM / 10 + 100, places=1)
        # Two chips: each rank has its chip's channel, as a rank alone does.
        self.assertEqual(two_chips, alone)
        # Nor does an idle rank on the other chip lend its HBM to rank 0.
        self.assertEqual(one_busy, alone)
        # One chip: the two ranks' 2 x 524288 B share its channel: 100 + 104857.6 +
        # 100 = 105057.6 ns.
        self.assertAlmostEqual(one_chip, 100 + 2 * self.STREAM / 10 + 100, places=1)
        import json
        d = json.loads(Path(stats).read_text())
        for k in ("chip0", "chip1"):
            self.assertEqual(d[k]["hbm"]["read_bytes"], self.STREAM)
            self.assertEqual(d[k]["hbm"]["peak_bytes_per_ns"], 10)
        self.assertEqual(d["hbm"]["chips"], 2)
        self.assertEqual(d["hbm"]["read_bytes"], 2 * self.STREAM)
        # MBU against both chips' 10 B/ns: 2 x 524288 B / step / 20 B/ns.
        self.assertAlmostEqual(d["hbm"]["mbu_pct"], 100 * 2 * self.STREAM / two_chips / 20,
                               places=9)

    def test_program_over_its_chips_hbm_names_rank_and_chip(self):
        # 20 MiB a rank; rank 3 runs a 48 MiB program. Chip 0 holds ranks 0 and 1
        # (40 MiB), chip 1 ranks 2 and 3: 20 + 48 = 68 MiB = 71303168 B > 64 MiB =
        # 67108864 B (the four together would fit 2 chips' 128 MiB).
        def prog(name, cols):
            return self.write(name + ".tasm", ".program %s\n.semaphores 1\n"
                              ".tensor x [128,%d] bf16 input @0\n.queue dma 0 0\n"
                              "dma_copy dst=sbuf[0:128, 0, bf16, [1,64]] src=hbm[128x%d, @x, "
                              "bf16, [1,64]] signal=s0+1\n" % (name, cols, cols))
        small, big = prog("small", 81920), prog("big", 196608)  # 128 x cols x 2 B
        args = ["run", small, "-c", "tiny", "--no-functional", "--ranks", "4"]
        # A chip a rank (chip.cores=1): rank 3 has chip 3's 64 MiB to itself.
        self.assertIn("step:", run(args + ["--rank-program", "3=" + big,
                                           "--set", "chip.cores=1"]).stdout)
        p = run(args + ["--rank-program", "3=" + big], check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("rank 3 on core 3 (chip 1, core 1): programs need 71303168 bytes of HBM; "
                      "chip 1 has 67108864", p.stdout + p.stderr)


class DataParallel(unittest.TestCase):
    """--dp D on models exported from PyTorch: replica d runs rows [d B/D, (d+1) B/D)."""

    @classmethod
    def setUpClass(cls):
        needs_binary(("numpy", "torch", "onnx"))
        import torch

        sys.path.insert(0, str(REPO))
        from examples.models import TpBlock

        torch.manual_seed(0)
        cls.dir = tempfile.TemporaryDirectory()
        d = Path(cls.dir.name)
        mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
                                  torch.nn.Linear(256, 64)).eval()
        x = torch.randn(32, 64)
        torch.onnx.export(mlp, (x,), str(d / "mlp.onnx"), opset_version=17,
                          input_names=["x"], output_names=["y"])
        np.save(d / "x.npy", x.numpy())
        with torch.no_grad():
            cls.mlp_eager = mlp(x).numpy()
        blk = TpBlock(128, 4, 256).eval()
        bx = torch.randn(4, 16, 128)
        torch.onnx.export(blk, (bx,), str(d / "blk.onnx"), opset_version=17,
                          input_names=["x"], output_names=["y"])
        np.save(d / "bx.npy", bx.numpy())
        with torch.no_grad():
            cls.blk_eager = blk(bx).numpy()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def single(self, model, x, out):
        d = Path(self.dir.name)
        run(["run", str(d / model), "-c", "tiny", "--input", "x=" + str(d / x),
             "--output-dir", str(d / out)])
        return np.load(d / out / "y.npy")

    def test_dp_splits_the_batch(self):
        d = Path(self.dir.name)
        single = self.single("mlp.onnx", "x.npy", "one")
        for dp in (2, 4):
            p = run(["run", str(d / "mlp.onnx"), "-c", "tiny", "--dp", str(dp), "--input",
                     "x=" + str(d / "x.npy"), "--output-dir", str(d / ("dp%d" % dp))])
            ys = [np.load(d / ("dp%d" % dp) / ("rank%d" % r) / "y.npy") for r in range(dp)]
            for y in ys:
                self.assertEqual(y.shape, (32 // dp, 64))
            y = np.concatenate(ys)
            # The same bf16 matmuls on fewer rows: only tiling may order sums differently.
            np.testing.assert_allclose(y, single, rtol=1e-3, atol=1e-3)
            np.testing.assert_allclose(y, self.mlp_eager, rtol=3e-2, atol=3e-2)
            self.assertIn("communication 0.0 ns", p.stdout)

    def test_tp_and_dp_on_a_block(self):
        # --tp 2 --dp 2: ranks 0-1 run batch rows 0-1 split by heads, ranks 2-3 rows 2-3.
        d = Path(self.dir.name)
        single = self.single("blk.onnx", "bx.npy", "b1")
        run(["run", str(d / "blk.onnx"), "-c", "tiny", "--tp", "2", "--dp", "2", "--input",
             "x=" + str(d / "bx.npy"), "--output-dir", str(d / "b22")])
        for r in range(4):
            y = np.load(d / "b22" / ("rank%d" % r) / "y.npy")
            rows = slice(2 * (r // 2), 2 * (r // 2) + 2)
            np.testing.assert_allclose(y, single[rows], rtol=1e-3, atol=1e-3)
            np.testing.assert_allclose(y, self.blk_eager[rows], rtol=3e-2, atol=3e-2)

    def test_batch_not_divisible(self):
        d = Path(self.dir.name)
        p = run(["run", str(d / "mlp.onnx"), "-c", "tiny", "--dp", "3", "--random-inputs"],
                check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("input 'x' has batch (dim 0) 32 in [32,64], which --dp 3 does not divide",
                      p.stderr)


    def test_fixed_batch_reshape_is_refused(self):
        # view(b, ...) exports b as a constant: the half batch cannot take that shape.
        import torch

        class Fixed(torch.nn.Module):
            def forward(self, x):
                b, s, d = x.shape
                return x.view(b, s, 2, d // 2).transpose(1, 2).reshape(b, 2 * s, d // 2)

        d = Path(self.dir.name)
        torch.onnx.export(Fixed().eval(), (torch.randn(4, 8, 16),), str(d / "fixed.onnx"),
                          opset_version=17, input_names=["x"], output_names=["y"])
        p = run(["run", str(d / "fixed.onnx"), "-c", "tiny", "--dp", "2", "--random-inputs"],
                check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("node '/Reshape'", p.stderr)
        self.assertIn("needs an export with a dynamic batch axis", p.stderr)


class Sweep(unittest.TestCase):
    """run.tp and network.link_bandwidth as sweep axes, results and plots."""

    def test_sweep_over_tp_and_link_bandwidth(self):
        needs_binary(("numpy", "torch", "onnx", "yaml", "matplotlib"))
        import json

        import torch

        with tempfile.TemporaryDirectory() as td:
            d = Path(td)
            torch.manual_seed(0)
            mlp = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.GELU(),
                                      torch.nn.Linear(512, 64)).eval()
            torch.onnx.export(mlp, (torch.randn(64, 64),), str(d / "mlp.onnx"), opset_version=17,
                              input_names=["x"], output_names=["y"])
            (d / "spec.yaml").write_text(
                "base: tiny\nworkloads:\n  - {onnx: mlp.onnx}\ntiming_only: true\n"
                "axes:\n  run.tp: [1, 4]\n  network.link_bandwidth: [1GB/s, 100GB/s]\n")
            out = d / "out"
            run(["sweep", str(d / "spec.yaml"), "-o", str(out), "-j", "1"])
            rows = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
            t = {(r["p.run.tp"], r["p.network.link_bandwidth"]): r["m.simulated_ns"]
                 for r in rows if r.get("status") == "ok"}
            self.assertEqual(len(t), 4, rows)
            # tp 4 spans 2 tiny chips: its all_reduce crosses the link, so a slower
            # link is a longer step; tp 1 has no collective and does not see it.
            self.assertGreater(t[(4, 1e9)], t[(4, 1e11)])
            self.assertEqual(t[(1, 1e9)], t[(1, 1e11)])
            p = run(["plot", str(out), "--x", "run.tp", "--x", "network.link_bandwidth"])
            self.assertIn("simulated_ns_vs_run_tp.png", p.stdout)
            self.assertIn("simulated_ns_vs_network_link_bandwidth.png", p.stdout)


if __name__ == "__main__":
    unittest.main()
