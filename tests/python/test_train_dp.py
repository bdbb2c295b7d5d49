"""Data-parallel training on the simulator (trnsim.train with dp=N) against eager
PyTorch on the full batch.

Gradients: with dp ranks each computing its slice of the batch and the gradients
averaged by bucketed all-reduces, every gradient must equal eager autograd of the
full batch within 1e-4 of its largest magnitude (fp32), for an MLP and a GPT-style
block. Training: ten SGD-with-momentum steps at dp=2 and dp=4 give eager's full-batch
losses and final parameters. Overlap: the report's all-reduce time splits into the
part compute hid and the exposed rest, and buckets follow DDP's rule (reverse
parameter order, closed at the cap). Errors: a dp that does not divide the batch.

Run as a script: exits 77 (ctest's skip code) when numpy, torch or onnx is missing, and
fails instead under CI=true (skip_unless.py).
"""

import copy
import os
import unittest

from _helpers import needs, rel_err_f64 as rel_err

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch", "onnx"), __name__)
if MISSING:
    torch = None
else:
    import torch
    import torch.nn.functional as F
    from torch import nn

    import trnsim.train as tt
    from trnsim import _dp
    from test_train import GPTBlock, token_ce

CONFIG = "tiny"  # two cores a chip, four chips: dp=4 spans two chips
TOL = 1e-4


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(),
                         nn.Linear(64, 10))


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Gradients(unittest.TestCase):
    def check(self, model, loss_fn, batch, dp, cap_mb=_dp.DEFAULT_BUCKET_CAP_MB):
        eager = copy.deepcopy(model)
        loss, grads, report = tt.gradients(model, loss_fn, batch, config=CONFIG,
                                           precision="fp32", dp=dp, bucket_cap_mb=cap_mb)
        want = loss_fn(eager(batch[0]), *batch[1:])  # the full batch on one rank
        want.backward()
        self.assertAlmostEqual(loss, want.item(), delta=TOL * max(1.0, abs(want.item())))
        eager_params = dict(eager.named_parameters())
        self.assertEqual(set(grads), set(eager_params))
        for name, g in grads.items():
            self.assertLess(rel_err(g, eager_params[name].grad), TOL, f"dp={dp}: grad of {name}")
        self.assertEqual(report.fallback_ops, [])
        return report

    def test_mlp(self):
        batch = (torch.randn(16, 32), torch.randint(0, 10, (16,)))
        for dp in (2, 4):
            with self.subTest(dp=dp):
                # 1 KiB buckets: several all-reduces, each bucket its own Concat/Split
                self.check(mlp(), F.cross_entropy, batch, dp, cap_mb=1 / 1024)
        self.check(mlp(), F.cross_entropy, batch, 2)  # one bucket holds every gradient

    def test_gpt_block(self):
        torch.manual_seed(0)
        model = GPTBlock()
        gen = torch.Generator().manual_seed(3)
        batch = (torch.randint(0, 64, (4, 8), generator=gen),
                 torch.randint(0, 64, (4, 8), generator=gen))
        for dp in (2, 4):
            with self.subTest(dp=dp):
                self.check(model, token_ce, batch, dp, cap_mb=16 / 1024)


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Training(unittest.TestCase):
    def run_both(self, dp, steps=10):
        model = mlp()
        eager = copy.deepcopy(model)
        gen = torch.Generator().manual_seed(1)
        batches = [(torch.randn(16, 32, generator=gen),
                    torch.randint(0, 10, (16,), generator=gen)) for _ in range(5)]

        def make(ps):
            return torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3)

        opt_sim, opt_eager = make(model.parameters()), make(eager.parameters())
        result = tt.train(model, F.cross_entropy, opt_sim, batches, config=CONFIG,
                          precision="fp32", steps=steps, dp=dp, bucket_cap_mb=8 / 1024)
        want = []
        for s in range(steps):
            x, y = batches[s % len(batches)]
            opt_eager.zero_grad()
            loss = F.cross_entropy(eager(x), y)
            loss.backward()
            opt_eager.step()
            want.append(loss.item())
        self.assertEqual(len(result.losses), steps)
        for s, (got, w) in enumerate(zip(result.losses, want)):
            self.assertAlmostEqual(got, w, delta=TOL * max(1.0, abs(w)), msg=f"step {s}")
        self.assertLess(want[-1], want[0])
        for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
            self.assertLess(rel_err(p.detach(), q.detach()), TOL, name)
        for p, q in zip(opt_sim.param_groups[0]["params"], opt_eager.param_groups[0]["params"]):
            self.assertLess(rel_err(opt_sim.state[p]["momentum_buffer"],
                                    opt_eager.state[q]["momentum_buffer"]), TOL)
        rep = result.report
        self.assertEqual(rep["dp"], dp)
        self.assertEqual(rep["fallback_ops"], [])
        self.assertEqual(rep["compiled"], "once")
        self.assertEqual(len(rep["step_ns"]), steps)
        n = sum(p.numel() for p in model.parameters())
        self.assertEqual(rep["allreduce_bytes_per_step"], 4 * n)  # every fp32 gradient once
        self.assertIn(f"data parallel     {dp} ranks", str(result))
        return result

    def test_dp2(self):
        self.run_both(2)

    def test_dp4(self):
        self.run_both(4)


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Overlap(unittest.TestCase):
    def test_buckets_follow_ddp(self):
        # Reverse parameter order, a bucket closed once it reaches the cap.
        self.assertEqual(_dp.buckets([40, 8, 40, 8], 48), [[3, 2], [1, 0]])
        self.assertEqual(_dp.buckets([40, 8, 40, 8], 100), [[3, 2, 1, 0]])
        self.assertEqual(_dp.buckets([4, 400, 8, 8], 10), [[3, 2], [1], [0]])
        self.assertEqual(_dp.buckets([4, 400, 8, 8], 0), [[3], [2], [1], [0]])
        # The first bucket closes at 1 MiB (DDP's), the others at the cap.
        mib = 2**20
        self.assertEqual(_dp.buckets([mib, 3 * mib, 3 * mib, mib // 2, mib // 2], 4 * mib),
                         [[4, 3], [2, 1], [0]])

    def test_report(self):
        # Four layers, one bucket each (the cap is smaller than any layer): the first
        # buckets' all-reduces run while the earlier layers' backward computes.
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                              nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
        gen = torch.Generator().manual_seed(1)
        batch = (torch.randn(32, 64, generator=gen), torch.randint(0, 10, (32,), generator=gen))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        result = tt.train(model, F.cross_entropy, opt, [batch], config=CONFIG, steps=1, dp=2,
                          bucket_cap_mb=1 / 1024)
        rep = result.report
        self.assertEqual(len(rep["bucket_bytes"]), 4)  # weight + bias of each layer
        ov = rep["overlap"]
        self.assertEqual(ov["collectives"], 4)
        self.assertEqual(len(ov["per_rank"]), 2)
        self.assertGreater(ov["comm_ns"], 0)
        self.assertAlmostEqual(ov["hidden_ns"] + ov["exposed_ns"], ov["comm_ns"], delta=1e-6)
        self.assertGreater(ov["hidden_ns"], 0)  # issued before the backward ends
        self.assertGreater(ov["exposed_ns"], 0)  # the last bucket has nothing to hide under
        self.assertLess(ov["comm_ns"], rep["step_ns"][0])
        self.assertIn("hidden under compute", str(result))

    def test_overlap_arithmetic(self):
        # comm [0,10) and [20,30); compute [5,25): hidden 5 + 5.
        c = _dp._union([(20, 30), (0, 10)])
        busy = _dp._union([(5, 12), (11, 25)])
        self.assertEqual(c, [[0, 10], [20, 30]])
        self.assertEqual(_dp._covered(c, busy), 10)


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Errors(unittest.TestCase):
    def test_dp_not_dividing_batch(self):
        model = mlp()
        batches = [(torch.randn(6, 32), torch.randint(0, 10, (6,)))]
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with self.assertRaises(ValueError) as e:
            tt.train(model, F.cross_entropy, opt, batches, config=CONFIG, dp=4)
        self.assertIn("dp=4", str(e.exception))
        self.assertIn("batch size 6", str(e.exception))
        with self.assertRaises(ValueError) as e:
            tt.gradients(model, F.cross_entropy, batches[0], config=CONFIG, dp=0)
        self.assertIn("dp=0", str(e.exception))
        with self.assertRaises(ValueError) as e:
            tt.train(model, F.cross_entropy, opt, batches, config=CONFIG, dp=2,
                     bucket_cap_mb=-1)
        self.assertIn("bucket_cap_mb=-1", str(e.exception))
        # A 0-d batch tensor has no batch axis to split; without dp it is not checked.
        self.assertEqual(_dp.check_dp(1, [(torch.tensor(1.0),)]), 1)
        with self.assertRaises(ValueError) as e:
            _dp.check_dp(2, [(torch.randn(4, 3), torch.tensor(1.0))])
        self.assertIn("dp=2 does not divide the batch size (a 0-d tensor)", str(e.exception))

    def test_collective_import(self):
        # The step's all-reduces are ONNX nodes of the trnsim.collective domain: another
        # op of it, or an AllReduce without its group, is an error naming the node.
        import subprocess
        import tempfile

        import onnx
        from onnx import TensorProto, helper
        from trnsim._cli import find_binary

        def compile_with(node):
            x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
            y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
            m = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", 17),
                                                 helper.make_opsetid(_dp.COLLECTIVE_DOMAIN, 1)])
            with tempfile.TemporaryDirectory(prefix="trnsim-dp-import-") as d:
                onnx.save(m, os.path.join(d, "m.onnx"))
                return subprocess.run([find_binary(), "compile", os.path.join(d, "m.onnx"), "-o",
                                       os.path.join(d, "m.tbin"), "-c", CONFIG],
                                      capture_output=True, text=True)

        ok = compile_with(helper.make_node("AllReduce", ["x"], ["y"], name="ar",
                                           domain=_dp.COLLECTIVE_DOMAIN, group=[0, 1]))
        self.assertEqual(ok.returncode, 0, ok.stderr)
        for node, want in (
                (helper.make_node("Broadcast", ["x"], ["y"], name="bc",
                                  domain=_dp.COLLECTIVE_DOMAIN), "not a collective"),
                (helper.make_node("AllReduce", ["x"], ["y"], name="ar",
                                  domain=_dp.COLLECTIVE_DOMAIN), "'group'")):
            with self.subTest(op=node.op_type):
                proc = compile_with(node)
                self.assertNotEqual(proc.returncode, 0)
                self.assertIn(f"node '{node.name}'", proc.stderr)
                self.assertIn(want, proc.stderr)


if __name__ == "__main__":
    unittest.main()
