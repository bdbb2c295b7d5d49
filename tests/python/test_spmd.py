"""Tests of SPMD runs (`trnsim run PROGRAM --ranks R`, runtime/spmd.h) and the
collective instructions (docs/isa.md, Collectives): all_reduce, all_gather and
reduce_scatter results against numpy references written from the spec (the ring's
order of additions, fp32 adds rounded to the dtype), rendezvous errors, the
collective time's arithmetic, and `--tp` on a PyTorch MLP against the single-core run.
Run: TRNSIM_BIN=build/runtime/trnsim python3 tests/python/test_spmd.py
Exit 77 (skipped) when numpy (torch and onnx for the MLP case) or the binary are missing.
"""

import tempfile
import unittest
from pathlib import Path

from _helpers import needs_binary, rank_times, run, run_ranks

needs_binary(("numpy",))

import numpy as np  # noqa: E402
from _collective_ref import ring_all_reduce, rounder  # noqa: E402


def program(op, dtype, n_src, n_dst, ranks, extra=""):
    """One collective on the sync queue from input x into output y."""
    group = ",".join(str(r) for r in range(ranks))
    es = 4 if dtype == "fp32" else 2
    return (".program %s\n.semaphores 1\n.tensor x [%d] %s input @0\n"
            ".tensor y [%d] %s output @%d\n.queue sync\n"
            "%s dst=hbm[1x0, @y, %s, [1,%d]] src=hbm[1x0, @x, %s, [1,%d]] group=[%s]%s\n"
            % (op, n_src, dtype, n_dst, dtype, -(-n_src * es // 4096) * 4096, op, dtype, n_dst,
               dtype, n_src, group, extra))


class Collectives(unittest.TestCase):
    def run_collective(self, op, dtype, ranks, count, config="tiny", sets=()):
        """Runs `op` on `ranks` ranks; returns the per-rank inputs and outputs."""
        rnd = rounder(dtype)
        rng = np.random.default_rng(ranks * 10 + len(op))
        n_src = count * ranks if op == "reduce_scatter" else count
        n_dst = count * ranks if op == "all_gather" else count
        xs = rnd(rng.uniform(-4, 4, size=(ranks, n_src)).astype(np.float32))
        ys, out = run_ranks(program(op, dtype, n_src, n_dst, ranks), xs, config, sets)
        return xs, ys, out

    def test_all_reduce_matches_numpy(self):
        for ranks in (2, 4):
            for dtype in ("fp32", "bf16"):
                with self.subTest(ranks=ranks, dtype=dtype):
                    # 4 ranks on tiny (2 cores a chip) sit on 2 chips: ranks 0-1 on
                    # chip 0, 2-3 on chip 1; the ring still visits them in rank order.
                    xs, ys, _ = self.run_collective("all_reduce", dtype, ranks, 1000)
                    want = ring_all_reduce(xs, rounder(dtype))
                    for r in range(ranks):
                        np.testing.assert_array_equal(ys[r], want)
                    # And close to the exact sum (bf16: a few ulps of the partial sums).
                    tol = 1e-5 if dtype == "fp32" else 2 ** -8 * ranks
                    np.testing.assert_allclose(ys[0], xs.astype(np.float64).sum(0),
                                               rtol=tol, atol=tol * 8)

    def test_all_gather_and_reduce_scatter(self):
        xs, ys, _ = self.run_collective("all_gather", "fp32", 4, 256)
        for r in range(4):
            np.testing.assert_array_equal(ys[r], xs.reshape(-1))
        xs, ys, _ = self.run_collective("reduce_scatter", "fp32", 4, 256)
        total = ring_all_reduce(xs, rounder("fp32"))
        for r in range(4):
            np.testing.assert_array_equal(ys[r], total[r * 256:(r + 1) * 256])

    def test_time_follows_the_ring_arithmetic(self):
        # tiny: chip_local 20 B/ns, 50 ns; links 10 B/ns, 100 ns; a core's DMA
        # 16 x 10 = 160 B/ns. all_reduce of 2048 fp32 over 2 ranks: 2 steps (one
        # reduce_scatter, one all_gather), each rank sending 1024 x 4 = 4096 B a step.
        # One chip: both transfers share the chip's path, 10 B/ns each:
        #   2 x (4096 / 10 + 50) = 2 x 459.6 = 919.2 ns.
        _, _, out = self.run_collective("all_reduce", "fp32", 2, 2048)
        for r, t in rank_times(out).items():
            self.assertAlmostEqual(t, 919.2, places=3, msg=out)
        # chip.cores=1: ranks on chips 0 and 1, each way on its own link at 10 B/ns:
        #   2 x (4096 / 10 + 100) = 2 x 509.6 = 1019.2 ns.
        _, _, out = self.run_collective("all_reduce", "fp32", 2, 2048, sets=("chip.cores=1",))
        times = rank_times(out)
        self.assertEqual(sorted(times), [0, 1], out)
        for r, t in times.items():
            self.assertAlmostEqual(t, 1019.2, places=3, msg=out)
        self.assertIn("communication", out)

    def test_same_cycles_every_run(self):
        outs = [self.run_collective("all_reduce", "bf16", 4, 512)[2] for _ in range(2)]
        self.assertEqual(rank_times(outs[0]), rank_times(outs[1]))
        # Timing only (no data) gives the same times.
        with tempfile.TemporaryDirectory() as d:
            Path(d, "p.tasm").write_text(program("all_reduce", "bf16", 512, 512, 4))
            base = ["run", str(Path(d, "p.tasm")), "-c", "tiny", "--ranks", "4", "--no-functional"]
            p = run(base + ["--no-fold"])
            folded = run(base)  # 4 alike ranks on 2 chips: chip 0's 2 ranks simulated
        self.assertEqual(rank_times(p.stdout), rank_times(outs[0]))
        self.assertEqual(rank_times(folded.stdout), {0: rank_times(outs[0])[0],
                                                     1: rank_times(outs[0])[1]})


class Errors(unittest.TestCase):
    def test_mismatch_names_instruction_and_ranks(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "a.tasm").write_text(program("all_reduce", "fp32", 64, 64, 2))
            # Rank 1 reduces only the first 32 elements.
            Path(d, "b.tasm").write_text(program("all_reduce", "fp32", 64, 64, 2).replace(
                "[1,64]]", "[1,32]]"))
            np.save(Path(d, "x.npy"), np.ones(64, np.float32))
            p = run(["run", str(Path(d, "a.tasm")), "-c", "tiny", "--ranks", "2",
                     "--rank-program", "1=" + str(Path(d, "b.tasm")), "--input",
                     "x=" + str(Path(d, "x.npy"))], check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("collective mismatch", p.stderr)
        self.assertIn("all_reduce (line 6)", p.stderr)
        self.assertIn("rank 0", p.stderr)
        self.assertIn("rank 1", p.stderr)

    def test_rank_that_never_arrives(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "a.tasm").write_text(program("all_reduce", "fp32", 64, 64, 2))
            # Rank 1 waits on a semaphore nobody signals before its all_reduce.
            Path(d, "b.tasm").write_text(program("all_reduce", "fp32", 64, 64, 2,
                                                 " wait=s0>=1"))
            np.save(Path(d, "x.npy"), np.ones(64, np.float32))
            p = run(["run", str(Path(d, "a.tasm")), "-c", "tiny", "--ranks", "2",
                     "--rank-program", "1=" + str(Path(d, "b.tasm")), "--input",
                     "x=" + str(Path(d, "x.npy"))], check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("ranks [0] arrived, ranks [1] never did", p.stderr)

    def test_groups_that_differ_never_complete(self):
        # Rank 0 reduces over [0,1], ranks 1 and 2 over [0,1,2]: neither completes.
        with tempfile.TemporaryDirectory() as d:
            Path(d, "a.tasm").write_text(program("all_reduce", "fp32", 64, 64, 3))
            Path(d, "b.tasm").write_text(program("all_reduce", "fp32", 64, 64, 2))
            p = run(["run", str(Path(d, "a.tasm")), "-c", "tiny", "--ranks", "3",
                     "--rank-program", "0=" + str(Path(d, "b.tasm")), "--random-inputs"],
                    check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("group [0,1] src 64 fp32 dst 64 fp32: ranks [0] arrived, ranks [1] never did",
                      p.stderr)
        self.assertIn("group [0,1,2] src 64 fp32 dst 64 fp32: ranks [1,2] arrived, ranks [0] "
                      "never did", p.stderr)

    def test_group_beyond_the_launch(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "a.tasm").write_text(program("all_reduce", "fp32", 64, 64, 4))
            p = run(["run", str(Path(d, "a.tasm")), "-c", "tiny", "--ranks", "2",
                     "--random-inputs"], check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("group names rank 2 but the launch has 2 ranks", p.stderr)

    def test_race_checker_orders_collectives_by_semaphores(self):
        # A DMA store writes t; the all_reduce reads it after waiting for the store.
        prog = """.program rc
.semaphores 2
.tensor x [128,16] fp32 input @0
.tensor t [128,16] fp32 scratch @8192
.tensor y [128,16] fp32 output @16384
.queue dma 0 0
dma_copy dst=sbuf[0:128, 0, fp32, [1,16]] src=hbm[128x16, @x, fp32, [1,16]] signal=s0+1
dma_copy dst=hbm[128x16, @t, fp32, [1,16]] src=sbuf[0:128, 0, fp32, [1,16]] wait=s0>=1 signal=s1+1
.queue sync
all_reduce dst=hbm[128x16, @y, fp32, [1,16]] src=hbm[128x16, @t, fp32, [1,16]] group=[0,1] wait=s1>=1
"""
        with tempfile.TemporaryDirectory() as d:
            Path(d, "rc.tasm").write_text(prog)
            base = ["run", str(Path(d, "rc.tasm")), "-c", "tiny", "--ranks", "2",
                    "--random-inputs", "--check-races"]
            ok = run(base)
            self.assertIn("checks: 0 race(s)", ok.stdout)
            # Wait 1 (disassembly order) is the all_reduce's: without it the store
            # and the collective's read of t race.
            bad = run(base + ["--drop-sync", "1"], check=False)
        self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
        self.assertIn("all_reduce", bad.stdout)
        self.assertRegex(bad.stdout, r"checks: [1-9]\d* race")

    def test_collective_without_ranks(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "a.tasm").write_text(program("all_reduce", "fp32", 64, 64, 2))
            p = run(["run", str(Path(d, "a.tasm")), "-c", "tiny", "--random-inputs"],
                    check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("--ranks", p.stderr)


class TensorParallel(unittest.TestCase):
    """`--tp N` on Linear -> GELU -> Linear exported from PyTorch: each rank holds
    a column shard of the first weight and a row shard of the second, and one
    all_reduce sums the partial outputs; rank outputs equal the single-core run's
    within the bf16 tolerance of a different summation order."""

    @classmethod
    def setUpClass(cls):
        needs_binary(("numpy", "torch", "onnx"))
        import torch

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.GELU(),
                                    torch.nn.Linear(512, 128)).eval()
        cls.dir = tempfile.TemporaryDirectory()
        d = Path(cls.dir.name)
        x = torch.randn(64, 128)
        torch.onnx.export(model, (x,), str(d / "mlp.onnx"), opset_version=17,
                          input_names=["x"], output_names=["y"])
        np.save(d / "x.npy", x.numpy())
        with torch.no_grad():
            cls.eager = model(x).numpy()
        p = run(["run", str(d / "mlp.onnx"), "-c", "tiny", "--input", "x=" + str(d / "x.npy"),
                 "--output-dir", str(d / "one")])
        cls.single_out = p.stdout
        cls.single = np.load(d / "one" / "y.npy")

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def tp_run(self, n):
        d = Path(self.dir.name)
        p = run(["run", str(d / "mlp.onnx"), "-c", "tiny", "--tp", str(n), "--input",
                 "x=" + str(d / "x.npy"), "--output-dir", str(d / ("tp%d" % n))])
        return p.stdout, [np.load(d / ("tp%d" % n) / ("rank%d" % r) / "y.npy") for r in range(n)]

    def test_tp_matches_single_core(self):
        for n in (2, 4):
            with self.subTest(tp=n):
                out, ys = self.tp_run(n)
                self.assertIn("%d collectives" % 1, out)
                for y in ys:
                    # bf16 matmul operands either way; only the order of the second
                    # matmul's sums over the hidden axis differs (per shard, then the
                    # ring's fp32 adds).
                    np.testing.assert_allclose(y, self.single, rtol=1e-3, atol=1e-3)
                    np.testing.assert_allclose(y, self.eager, rtol=3e-2, atol=3e-2)
                    np.testing.assert_array_equal(y, ys[0])

    def test_data_parallel_replicas(self):
        # --tp 2 --dp 2: the batch of 64 rows splits in two; ranks 0-1 hold replica 0
        # (group [0,1], rows 0-31), ranks 2-3 replica 1 (group [2,3], rows 32-63). A
        # `{replica}` file holds that replica's rows.
        d = Path(self.dir.name)
        x = np.load(d / "x.npy")
        np.save(d / "x0.npy", x[:32])
        np.save(d / "x1.npy", x[32:])
        p = run(["run", str(d / "mlp.onnx"), "-c", "tiny", "--tp", "2", "--dp", "2", "--input",
                 "x=" + str(d / "x{replica}.npy"), "--output-dir", str(d / "tpdp"),
                 "--stats", str(d / "tpdp.json")])
        for r in range(4):
            y = np.load(d / "tpdp" / ("rank%d" % r) / "y.npy")
            want = self.single[32 * (r // 2):32 * (r // 2) + 32]
            np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
        import json
        ranks = json.loads((d / "tpdp.json").read_text())["ranks"]
        self.assertEqual(sorted(ranks), ["rank0", "rank1", "rank2", "rank3"])
        self.assertEqual([ranks["rank%d" % r]["collectives"] for r in range(4)], [1] * 4, p.stdout)
        # --dp alone: the whole model on each rank's rows, no collective.
        p = run(["run", str(d / "mlp.onnx"), "-c", "tiny", "--dp", "2", "--input",
                 "x=" + str(d / "x{replica}.npy"), "--output-dir", str(d / "dp")])
        self.assertIn("communication 0.0 ns", p.stdout)
        for r in range(2):
            np.testing.assert_allclose(np.load(d / "dp" / ("rank%d" % r) / "y.npy"),
                                       self.single[32 * r:32 * r + 32], rtol=1e-3, atol=1e-3)

    def test_attention_splits_by_heads(self):
        # Attention (4 heads) + residual + LayerNorm + MLP: Q, K and V split by heads,
        # the output projection by rows (one all_reduce), the MLP as above (another).
        import math

        import torch

        class Block(torch.nn.Module):
            def __init__(self, d=128, h=4, f=256):
                super().__init__()
                self.h = h
                self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
                self.ln = torch.nn.LayerNorm(d)
                self.f1, self.f2 = torch.nn.Linear(d, f), torch.nn.Linear(f, d)

            def forward(self, x):
                b, s, d = x.shape
                h, dh = self.h, d // self.h
                q, k, v = (m(x).view(b, s, h, dh).transpose(1, 2) for m in (self.q, self.k, self.v))
                a = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / math.sqrt(dh)), dim=-1)
                x = x + self.o((a @ v).transpose(1, 2).reshape(b, s, d))
                return x + self.f2(torch.nn.functional.gelu(self.f1(self.ln(x))))

        torch.manual_seed(1)
        d = Path(self.dir.name)
        x = torch.randn(2, 32, 128)
        torch.onnx.export(Block().eval(), (x,), str(d / "blk.onnx"), opset_version=17,
                          input_names=["x"], output_names=["y"])
        np.save(d / "bx.npy", x.numpy())
        run(["run", str(d / "blk.onnx"), "-c", "tiny", "--input", "x=" + str(d / "bx.npy"),
             "--output-dir", str(d / "b1")])
        single = np.load(d / "b1" / "y.npy")
        for n in (2, 4):
            p = run(["run", str(d / "blk.onnx"), "-c", "tiny", "--tp", str(n), "--input",
                     "x=" + str(d / "bx.npy"), "--output-dir", str(d / ("b%d" % n))])
            self.assertIn("2 collectives", p.stdout)
            for r in range(n):
                y = np.load(d / ("b%d" % n) / ("rank%d" % r) / "y.npy")
                np.testing.assert_allclose(y, single, rtol=1e-3, atol=1e-3)
        # 8 ranks cannot split 4 heads: attention stays whole on every rank, the MLP
        # (256 / 8) still splits.
        p = run(["run", str(d / "blk.onnx"), "-c", "tiny", "--tp", "8", "--input",
                 "x=" + str(d / "bx.npy"), "--output-dir", str(d / "b8")])
        self.assertIn("1 collectives", p.stdout)
        np.testing.assert_allclose(np.load(d / "b8" / "rank7" / "y.npy"), single, rtol=1e-3,
                                   atol=1e-3)

    def test_hidden_size_must_divide(self):
        d = Path(self.dir.name)
        p = run(["run", str(d / "mlp.onnx"), "-c", "tiny", "--tp", "3", "--random-inputs"],
                check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("not a multiple of --tp 3", p.stderr)


if __name__ == "__main__":
    unittest.main()
