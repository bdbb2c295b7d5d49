"""Training on the simulator beyond the step itself (trnsim.train): stochastic rounding,
the step's HBM breakdown, activation recomputation, the Perfetto trace and the
`trnsim train` command.

StochasticRounding: on the device (a vector-engine write, DMA casts of matmul
operands), values a fixed fraction of a bf16 ulp above 1 round up in that fraction of
the draws (bound from the number of draws), repeat with the seed and change with
another; `trnsim validate` passes with it; a bf16 training run with it tracks eager.
Memory: the parameter and optimizer-state figures equal the torch model's numel x 4.
Recompute: the same gradients as without, fewer saved-activation bytes.
Trace: the file parses and has engine tracks. Cli: a script trains; bad ones fail
with the file and the reason.

Run as a script: exits 77 (ctest's skip code) when numpy, torch or onnx is missing, and
fails instead under CI=true (skip_unless.py).
"""

import contextlib
import copy
import io
import json
import math
import os
import subprocess
import tempfile
import unittest

from _helpers import ROOT, needs

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch", "onnx"), __name__)
if not MISSING:
    import numpy as np
    import onnx
    import torch
    import torch.nn.functional as F
    from onnx import TensorProto, helper
    from torch import nn

    import trnsim.train as tt
    import trnsim.train_cli as train_cli
    from trnsim._cli import find_binary, run_model
    from test_train import case, rel_err

CONFIG = "tiny"


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 10))


def mlp_batches(n):
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 32, generator=gen), torch.randint(0, 10, (16,), generator=gen))
            for _ in range(n)]


@unittest.skipIf(MISSING, f"missing {MISSING}")
class StochasticRounding(unittest.TestCase):
    M, K, N = 128, 128, 8

    def matmul(self, a, seed=None):
        """A @ ones at precision bf16: each element of A is cast to bf16 once, and
        the row sums (exact in fp32 here) count how many rounded up."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mm.onnx")
            g = helper.make_graph(
                [helper.make_node("MatMul", ["a", "b"], ["y"])], "mm",
                [helper.make_tensor_value_info("a", TensorProto.FLOAT, [self.M, self.K]),
                 helper.make_tensor_value_info("b", TensorProto.FLOAT, [self.K, self.N])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [self.M, self.N])])
            onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
            set_ = None if seed is None else {"core.rounding.stochastic": "true",
                                              "core.rounding.seed": str(seed)}
            outs, _ = run_model(path, {"a": a, "b": np.ones((self.K, self.N), np.float32)},
                                config=CONFIG, precision="bf16", set=set_,
                                output_names=["y"], workdir=d)
            return outs["y"]

    def test_unbiased_on_the_device(self):
        ulp = 2.0 ** -7  # bf16 spacing in [1, 2)
        for frac in (0.3, 0.8):
            a = np.full((self.M, self.K), 1.0 + frac * ulp, np.float32)
            exact = float(a[0, 0])
            frac = (exact - 1.0) / ulp  # as fp32 holds it
            y = self.matmul(a, seed=5)
            self.assertTrue(np.all(y == y[:, :1]), "columns of one row differ")
            ups = (y[:, 0] - self.K) / ulp  # elements of each row that rounded up
            self.assertTrue(np.allclose(ups, np.round(ups)), ups[:4])
            # n Bernoulli(frac) draws: the fraction up has standard deviation
            # sqrt(frac (1 - frac) / n); 6 of them bound it.
            n = self.M * self.K
            got = ups.sum() / n
            self.assertLess(abs(got - frac), 6 * math.sqrt(frac * (1 - frac) / n),
                            f"fraction rounded up {got}, expected {frac}")
            # Round to nearest: every element goes to the nearer neighbour.
            y_rne = self.matmul(a)
            self.assertTrue(np.all(y_rne == self.K * (1.0 + ulp * round(frac))), y_rne[0])

    # A vector-engine copy writes fp32 values as bf16 (the DMA out moves bf16 as it is).
    COPY = """.program sr_copy
.semaphores 2
.tensor x [128,512] fp32 input @0
.tensor y [128,512] bf16 output @262144
.queue dma 0 0
dma_copy dst=sbuf[0:128, 0, fp32, [1,512]] src=hbm[128x512, @x, fp32, [1,512]] signal=s0+1
dma_copy dst=hbm[128x512, @y, bf16, [1,512]] src=sbuf[0:128, 2048, bf16, [1,512]] wait=s1>=1
.queue vector
tensor_copy dst=sbuf[0:128, 2048, bf16, [1,512]] src=sbuf[0:128, 0, fp32, [1,512]] \
wait=s0>=1 signal=s1+1
"""  # the backslash joins the tensor_copy line

    def engine_copy(self, x, seed=None):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "copy.tasm")
            with open(path, "w") as f:
                f.write(self.COPY)
            set_ = None if seed is None else {"core.rounding.stochastic": "true",
                                              "core.rounding.seed": str(seed)}
            outs, _ = run_model(path, {"x": x}, config=CONFIG, set=set_, output_names=["y"],
                                workdir=d)
            return outs["y"].astype(np.float32)

    def test_engine_write(self):
        ulp = 2.0 ** -7
        x = np.full((128, 512), 1.0 + 0.3 * ulp, np.float32)
        frac = (float(x[0, 0]) - 1.0) / ulp
        y = self.engine_copy(x, seed=9)
        self.assertTrue(np.all((y == 1.0) | (y == 1.0 + ulp)))
        n = y.size
        got = float(np.mean(y == 1.0 + ulp))
        self.assertLess(abs(got - frac), 6 * math.sqrt(frac * (1 - frac) / n), got)
        self.assertTrue(np.array_equal(y, self.engine_copy(x, seed=9)))
        self.assertFalse(np.array_equal(y, self.engine_copy(x, seed=10)))
        self.assertTrue(np.all(self.engine_copy(x) == 1.0))  # off: to nearest

    def test_seeded(self):
        rng = np.random.default_rng(0)
        a = rng.uniform(-2, 2, (self.M, self.K)).astype(np.float32)
        y1, y1b, y2 = self.matmul(a, 1), self.matmul(a, 1), self.matmul(a, 2)
        self.assertTrue(np.array_equal(y1.view(np.uint32), y1b.view(np.uint32)))
        self.assertFalse(np.array_equal(y1, y2))
        self.assertFalse(np.array_equal(y1, self.matmul(a)))

    def test_validate_tolerance(self):
        # `trnsim validate` keeps its round-to-nearest reference: stochastic rounding's
        # error (under one bf16 ulp per operand) stays inside the bf16 tolerance.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mlp.onnx")
            torch.onnx.export(mlp(), torch.randn(16, 32), path)
            p = subprocess.run([find_binary(), "validate", path, "-c", CONFIG,
                                "--precision", "bf16", "--random-inputs=3",
                                "--set", "core.rounding.stochastic=true"],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("validate: PASS", p.stdout)

    def test_training_tracks_eager(self):
        # bf16 matmul operands rounded stochastically, fp32 master weights: the losses
        # stay within bf16 rounding of eager fp32 training (test_train's bf16 bound),
        # and differ from round-to-nearest's (the switch reaches the step).
        runs = {}
        for sr in (False, True):
            model = mlp()
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            runs[sr] = tt.train(model, F.cross_entropy, opt, mlp_batches(4), config=CONFIG,
                                precision="bf16", phase_times=False,
                                stochastic_rounding=sr, seed=3)
        eager = mlp()
        opt = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
        for s, (x, y) in enumerate(mlp_batches(4)):
            opt.zero_grad()
            loss = F.cross_entropy(eager(x), y)
            loss.backward()
            opt.step()
            self.assertAlmostEqual(runs[True].losses[s], loss.item(),
                                   delta=2e-2 * max(1.0, loss.item()), msg=f"step {s}")
        self.assertNotEqual(runs[True].losses, runs[False].losses)
        self.assertTrue(runs[True].report["stochastic_rounding"])
        self.assertEqual(runs[True].report["fallback_ops"], [])


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Memory(unittest.TestCase):
    def test_breakdown(self):
        model = mlp()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        r = tt.train(model, F.cross_entropy, opt, mlp_batches(1), config=CONFIG,
                     precision="fp32", phase_times=False).report
        # Independently of the program: every trainable parameter in fp32, and AdamW's
        # two moments of each.
        pbytes = sum(p.numel() * 4 for p in model.parameters())
        hbm = r["hbm_breakdown"]
        self.assertEqual(hbm["parameters"], pbytes)
        self.assertEqual(hbm["optimizer_state"], 2 * pbytes)
        self.assertEqual(hbm["new_parameters_and_state"], 3 * pbytes)
        self.assertEqual(sum(hbm.values()), r["hbm_peak_bytes"])
        # Live at once: at least the inputs and outputs (live throughout), at most all.
        self.assertLessEqual(r["hbm_live_peak_bytes"], r["hbm_peak_bytes"])
        self.assertGreaterEqual(r["hbm_live_peak_bytes"], 6 * pbytes)
        for kind in ("gradients", "saved_activations", "other"):
            self.assertGreater(hbm[kind], 0, kind)
        # The batch (16 x 32 fp32 inputs) at least is "other".
        self.assertGreaterEqual(hbm["other"], 16 * 32 * 4)
        self.assertEqual(hbm["unused"], 0)  # the compiler drops untouched scratch

    def test_peak_near_live_peak(self):
        # Scratch reuses dead tensors' bytes: the allocated peak stays near the bytes
        # live at once (in node order; the compiler's own order and alignment differ
        # a little), with and without recomputation. With a range per tensor it was
        # the sum of all (here 284676 and 311044 bytes against live peaks of 169228
        # and 153612: 1.68x and 2.02x).
        model, loss_fn, batch = case("gpt")
        for rc in (False, True):
            m = copy.deepcopy(model)
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            r = tt.train(m, loss_fn, opt, [batch], config=CONFIG, phase_times=False,
                         recompute=rc).report
            hbm = r["hbm_breakdown"]
            self.assertEqual(sum(hbm.values()), r["hbm_peak_bytes"])
            self.assertLess(hbm["reused"], 0)
            self.assertLessEqual(r["hbm_peak_bytes"], 1.15 * r["hbm_live_peak_bytes"], rc)


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Recompute(unittest.TestCase):
    def test_same_gradients_fewer_saved_bytes(self):
        model, loss_fn, batch = case("gpt")
        loss0, g0, _ = tt.gradients(model, loss_fn, batch, config=CONFIG)
        loss1, g1, _ = tt.gradients(model, loss_fn, batch, config=CONFIG, recompute=True)
        self.assertAlmostEqual(loss0, loss1, delta=1e-6 * abs(loss0))
        for name in g0:
            self.assertLess(rel_err(g1[name], g0[name]), 1e-5, name)
        saved, live = {}, {}
        for rc in (False, True):
            m = copy.deepcopy(model)
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            r = tt.train(m, loss_fn, opt, [batch], config=CONFIG, phase_times=False,
                         recompute=rc).report
            saved[rc] = r["hbm_breakdown"]["saved_activations"]
            live[rc] = r["hbm_live_peak_bytes"]
            self.assertEqual(r["fallback_ops"], [])
        self.assertGreater(r["recomputed_nodes"], 0)
        self.assertLess(saved[True], saved[False])
        # Recomputed values live from just before their use: fewer bytes at once.
        self.assertLess(live[True], live[False])

    def test_bad_mode(self):
        model, loss_fn, batch = case("mlp")
        with self.assertRaisesRegex(ValueError, "recompute='some'"):
            tt.gradients(model, loss_fn, batch, config=CONFIG, recompute="some")


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Trace(unittest.TestCase):
    def test_perfetto_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sub", "step.json")
            model = mlp()
            opt = torch.optim.SGD(model.parameters(), lr=0.05)
            r = tt.train(model, F.cross_entropy, opt, mlp_batches(2), config=CONFIG,
                         phase_times=False, trace=path).report
            self.assertEqual(r["trace"], path)
            with open(path) as f:
                events = json.load(f)
        events = events["traceEvents"] if isinstance(events, dict) else events
        threads = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
        for engine in ("tensor", "vector"):
            self.assertTrue(any(engine in t for t in threads), threads)
        slices = [e for e in events if e.get("ph") == "X"]
        self.assertGreater(len(slices), 0)


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Cli(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([find_binary(), "train", *args], capture_output=True, text=True,
                              timeout=300)

    def test_script(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "r.json")
            p = self.run_cli(os.path.join(ROOT, "examples", "train_mlp.py"), "-c", CONFIG,
                             "--steps", "2", "--no-phase-times", "--json", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("HBM peak", p.stdout)
            with open(out) as f:
                r = json.load(f)
        self.assertEqual(len(r["losses"]), 2)
        self.assertEqual(r["report"]["steps"], 2)

    def test_bad_scripts(self):
        with tempfile.TemporaryDirectory() as d:
            def script(name, text):
                path = os.path.join(d, name)
                with open(path, "w") as f:
                    f.write(text)
                return path

            ok = ("import torch\nfrom torch import nn\n"
                  "def model(): return nn.Linear(4, 2)\n"
                  "loss_fn = torch.nn.functional.mse_loss\n"
                  "def optimizer(ps): return torch.optim.SGD(ps, lr=0.1)\n")
            cases = [
                (os.path.join(d, "none.py"), "none.py: no such file"),
                (script("syntax.py", "def model(:\n"), "syntax.py:1: syntax error"),
                (script("missing.py", ok), "missing.py: defines no batches"),
                (script("notmodule.py", ok.replace("nn.Linear(4, 2)", "3") +
                        "def batches(): return []\n"), "model() returned a int"),
                (script("raises.py", ok + "def batches(): raise RuntimeError('no data')\n"),
                 "raises.py: batches() raised RuntimeError: no data"),
                (script("empty.py", ok + "def batches(): return []\n"), "gave no batch"),
                (script("badbatch.py", ok + "def batches(): return [(1, 2)]\n"),
                 "batch 0 is not a tensor"),
            ]
            # The binary once (it hands over to trnsim.train_cli), the rest in process.
            p = self.run_cli(cases[0][0], "-c", CONFIG)
            self.assertEqual(p.returncode, 2, (p.stdout, p.stderr))
            self.assertIn(cases[0][1], p.stderr)
            for path, msg in cases:
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    rc = train_cli.main([path, "-c", CONFIG])
                self.assertEqual(rc, 2, (path, err.getvalue()))
                self.assertIn(msg, err.getvalue())
                self.assertNotIn("Traceback", err.getvalue())


if __name__ == "__main__":
    unittest.main()
