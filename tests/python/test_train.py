"""Training steps on the simulator (trnsim.train) against eager PyTorch.

Gradients: one step's loss and the gradient of every parameter, computed on the
simulated chip in fp32 from the captured forward + backward graph, must match eager
autograd within 1e-4 of each gradient's largest magnitude, for an MLP, a small CNN with
BatchNorm in training mode (batch statistics; its running statistics too), a
transformer encoder layer and a GPT-style block (causal attention, tied embeddings,
cross-entropy). Training: ten steps of SGD with momentum and of AdamW give the losses
and final parameters of eager training from the same seed and data, with the model and
the optimizer state updated in place as eager leaves them; a step has no host fallback.

Run as a script: exits 77 (ctest's skip code) when numpy, torch or onnx is missing, and
fails instead under CI=true (skip_unless.py).
"""

import copy
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

CONFIG = "tiny"
GRAD_TOL = 1e-4


if torch is not None:
    class GPTBlock(nn.Module):
        """Token + position embeddings, one pre-norm block with causal self-attention and
        a GELU MLP, a final LayerNorm and an LM head tied to the token embedding."""

        def __init__(self, vocab=64, dim=32, heads=4, seq=8):
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(torch.randn(seq, dim) * 0.02)
            self.ln1, self.ln2, self.lnf = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
            self.head = nn.Linear(dim, vocab, bias=False)
            self.head.weight = self.emb.weight
            self.heads = heads
            self.register_buffer("causal", torch.tril(torch.ones(seq, seq)).bool(),
                                 persistent=False)

        def forward(self, idx):
            b, t = idx.shape
            x = self.emb(idx) + self.pos[:t]
            d = x.shape[-1]
            hd = d // self.heads
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / hd ** 0.5
            att = att.masked_fill(~self.causal[:t, :t], float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, d)
            x = x + self.proj(y)
            x = x + self.fc2(F.gelu(self.fc(self.ln2(x))))
            return self.head(self.lnf(x))

    class DupColumns(nn.Module):
        def forward(self, x):
            return x.unsqueeze(-1).expand(*x.shape, 2).reshape(*x.shape[:-1], -1)

    class Cumsum(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, dim=1)

    def token_ce(logits, targets):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def case(name):
        """name -> (module, loss_fn, batch), seeded."""
        torch.manual_seed(0)
        if name == "mlp":
            m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(),
                              nn.Linear(64, 10))
            return m, F.cross_entropy, (torch.randn(16, 32), torch.randint(0, 10, (16,)))
        if name == "cnn":
            # Convolutions before BatchNorm have no bias: its gradient is zero in exact
            # arithmetic, rounding noise in both, and no test of anything.
            m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                              nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
                              nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                              nn.Flatten(), nn.Linear(16, 10))
            return m, F.cross_entropy, (torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,)))
        if name == "encoder":
            m = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
            return m, F.mse_loss, (torch.randn(2, 8, 32), torch.randn(2, 8, 32))
        if name == "gpt":
            m = GPTBlock()
            return m, token_ce, (torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 8)))
        if name == "lenet":
            m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.Tanh(), nn.AvgPool2d(2),
                              nn.Conv2d(4, 8, 3), nn.Sigmoid(), nn.AvgPool2d(2), nn.Flatten(),
                              nn.Linear(8, 10))
            return m, F.cross_entropy, (torch.randn(3, 1, 8, 8), torch.randint(0, 10, (3,)))
        if name == "maxpool":
            # Every column duplicated before the pool: each window holds its maximum twice,
            # and torch's gradient goes to the first copy only (to both would double it).
            m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), DupColumns(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(128, 10))
            return m, F.cross_entropy, (torch.randn(3, 1, 8, 8), torch.randint(0, 10, (3,)))
        if name == "depthwise":
            # MobileNet's depthwise-separable block: a depthwise 3x3 of stride 2, then a
            # pointwise 1x1.
            m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU6(),
                              nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8, bias=False),
                              nn.BatchNorm2d(8), nn.ReLU6(), nn.Conv2d(8, 16, 1),
                              nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
            return m, F.cross_entropy, (torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,)))
        if name == "grouped":
            # ResNeXt-style grouped convolutions (2 and 4 groups, one of stride 2), then a
            # dilated one.
            m = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1, groups=2), nn.Tanh(),
                              nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=4), nn.Tanh(),
                              nn.Conv2d(8, 8, 3, padding=2, dilation=2), nn.Tanh(),
                              nn.Flatten(), nn.Linear(128, 10))
            return m, F.cross_entropy, (torch.randn(2, 4, 8, 8), torch.randint(0, 10, (2,)))
        if name == "resnet_stem":
            # ResNet's stem: a 3x3 max pool of stride 2 and padding 1 (overlapping windows)
            # after a ReLU, and one with ceil_mode.
            m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), DupColumns(), nn.Tanh(),
                              nn.MaxPool2d(3, stride=2, padding=1),
                              nn.MaxPool2d(2, stride=2, ceil_mode=True), nn.Flatten(),
                              nn.Linear(32, 10))
            return m, F.cross_entropy, (torch.randn(2, 3, 7, 7), torch.randint(0, 10, (2,)))
        if name == "cumsum":
            # CumSum (forward, and its backward: flip, cumsum, flip) runs on the host:
            # the device scans rows that stay in SBUF, and 8192 fp32 do not on tiny
            # (3/4 of a 64 KiB partition over 4 row tiles holds 3072).
            m = nn.Sequential(nn.Linear(8, 8192), Cumsum())
            return m, F.mse_loss, (torch.randn(5, 8), torch.randn(5, 8192))
        if name == "padding":
            # padding_idx: that embedding row gets no gradient; ignore_index: those
            # targets count in neither the loss nor the mean's divisor.
            m = nn.Sequential(nn.Embedding(12, 16, padding_idx=0), nn.Linear(16, 12))
            ids = torch.tensor([[0, 3, 5, 0], [7, 0, 11, 2]])
            tgt = torch.tensor([[1, 0, 4, 0], [0, 9, 3, 0]])
            return m, lambda out, t: F.cross_entropy(out.reshape(-1, 12), t.reshape(-1),
                                                     ignore_index=0), (ids, tgt)
        raise KeyError(name)


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Gradients(unittest.TestCase):
    def check(self, name):
        model, loss_fn, batch = case(name)
        model.train()
        eager = copy.deepcopy(model)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        loss, grads, report = tt.gradients(model, loss_fn, batch, config=CONFIG,
                                           precision="fp32")
        want = loss_fn(eager(batch[0]), *batch[1:])
        want.backward()
        self.assertAlmostEqual(loss, want.item(), delta=1e-5 * max(1.0, abs(want.item())))
        eager_params = dict(eager.named_parameters())
        self.assertEqual(set(grads), set(eager_params))
        worst = 0.0
        for pname, g in grads.items():
            e = rel_err(g, eager_params[pname].grad)
            worst = max(worst, e)
            self.assertLess(e, GRAD_TOL, f"{name}: gradient of {pname}")
        print(f"{name}: {len(grads)} gradients, max rel error {worst:.2e}, "
              f"fallback {report.fallback_ops}")
        for k, v in model.state_dict().items():  # nothing modified
            self.assertTrue(torch.equal(v, before[k]), k)
        return report

    def test_mlp(self):
        report = self.check("mlp")
        self.assertEqual(report.fallback_ops, [])

    def test_cnn_batchnorm(self):
        self.check("cnn")

    def test_encoder_layer(self):
        self.check("encoder")

    def test_gpt_block(self):
        self.check("gpt")

    def test_lenet_avgpool(self):
        report = self.check("lenet")
        self.assertEqual(report.fallback_ops, [])

    def test_maxpool_ties(self):
        self.check("maxpool")

    def test_activations(self):
        # Each activation's backward (torch's own decompositions, or/and of bool masks).
        for act in (nn.SiLU(), nn.LeakyReLU(0.1), nn.ELU(), nn.Softplus(), nn.Hardtanh(),
                    nn.Mish(), nn.Hardswish(), nn.GELU("tanh"), nn.Tanh(), nn.Sigmoid()):
            with self.subTest(act=type(act).__name__):
                torch.manual_seed(0)
                model = nn.Sequential(nn.Linear(16, 32), act, nn.LayerNorm(32),
                                      nn.Linear(32, 4))
                batch = (torch.randn(8, 16), torch.randint(0, 4, (8,)))
                eager = copy.deepcopy(model)
                _, grads, report = tt.gradients(model, F.cross_entropy, batch, config=CONFIG)
                F.cross_entropy(eager(batch[0]), batch[1]).backward()
                for pname, p in eager.named_parameters():
                    self.assertLess(rel_err(grads[pname], p.grad), GRAD_TOL, pname)
                self.assertEqual(report.fallback_ops, [])

    def test_dropout(self):
        # Dropout's masks are drawn on the host from torch's generator in eager's order:
        # the same seed gives eager's masks, and the caller's generator ends where
        # eager's does (the capture's own draws are undone).
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 8),
                              nn.Dropout(0.5), nn.Linear(8, 4))
        batch = (torch.randn(8, 16), torch.randint(0, 4, (8,)))
        eager = copy.deepcopy(model)
        torch.manual_seed(5)
        loss, grads, report = tt.gradients(model, F.cross_entropy, batch, config=CONFIG)
        after_sim = torch.rand(3)
        torch.manual_seed(5)
        want = F.cross_entropy(eager(batch[0]), batch[1])
        want.backward()
        self.assertTrue(torch.equal(after_sim, torch.rand(3)))
        self.assertAlmostEqual(loss, want.item(), delta=1e-5)
        for pname, p in eager.named_parameters():
            self.assertLess(rel_err(grads[pname], p.grad), GRAD_TOL, pname)
        self.assertEqual(report.fallback_ops, [])

    def test_depthwise_conv(self):
        report = self.check("depthwise")
        self.assertEqual(report.fallback_ops, [])

    def test_grouped_conv(self):
        report = self.check("grouped")
        self.assertEqual(report.fallback_ops, [])

    def test_overlapping_maxpool(self):
        report = self.check("resnet_stem")
        self.assertEqual(report.fallback_ops, [])

    def test_padding_and_ignore_index(self):
        self.check("padding")

    def test_host_fallback(self):
        # CumSum, and the flips of its backward (Slice, step -1) over the same long axis.
        report = self.check("cumsum")
        self.assertEqual(set(report.fallback_ops), {"CumSum", "Slice"})


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Training(unittest.TestCase):
    def run_both(self, make_opt, steps=10, name="mlp", precision="fp32", tol=1e-4):
        model, loss_fn, (x0, y0) = case(name)
        model.train()
        eager = copy.deepcopy(model)
        gen = torch.Generator().manual_seed(1)
        batches = [(torch.randn(x0.shape, generator=gen),
                    torch.randint(0, 10, y0.shape, generator=gen)) for _ in range(5)]
        opt_sim, opt_eager = make_opt(model.parameters()), make_opt(eager.parameters())
        result = tt.train(model, loss_fn, opt_sim, batches, config=CONFIG, precision=precision,
                          steps=steps)
        want = []
        for s in range(steps):
            x, y = batches[s % len(batches)]
            opt_eager.zero_grad()
            loss = loss_fn(eager(x), y)
            loss.backward()
            opt_eager.step()
            want.append(loss.item())
        self.assertEqual(len(result.losses), steps)
        for s, (got, w) in enumerate(zip(result.losses, want)):
            self.assertAlmostEqual(got, w, delta=tol * max(1.0, abs(w)), msg=f"step {s}")
        if steps >= 10:  # it trains (fewer steps: five different batches, no trend yet)
            self.assertLess(want[-1], want[0])
        for (pname, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
            self.assertLess(rel_err(p.detach(), q.detach()), tol, pname)  # updated in place
            self.assertTrue(torch.equal(result.params[pname], p.detach()))
        rep = result.report
        self.assertEqual(rep["fallback_ops"], [])
        self.assertEqual(rep["compiled"], "once")
        self.assertEqual(len(rep["step_ns"]), steps)
        self.assertTrue(all(t > 0 for t in rep["step_ns"]))
        self.assertEqual(len(set(rep["step_ns"])), 1)  # one program, same time every step
        self.assertGreater(rep["hbm_read_bytes_per_step"], 0)
        phases = rep["phase_ns_separate_programs"]
        self.assertEqual(sorted(phases), ["backward", "forward", "optimizer"])
        self.assertTrue(all(t > 0 for t in phases.values()), phases)
        self.assertEqual(sorted(rep["phase_hbm_bytes_separate_programs"]), sorted(phases))
        self.assertEqual(rep["phase_fallback_ops"], {})
        for (bname, b), (_, c) in zip(model.named_buffers(), eager.named_buffers()):
            self.assertLess(rel_err(b.double(), c.double()), tol, bname)  # BatchNorm stats
        n = sum(p.numel() for p in model.parameters())
        # 6 x params x tokens, a token being a sample here
        self.assertEqual(rep["model_flops_per_step"], 6 * n * x0.shape[0])
        return model, eager, opt_sim, opt_eager

    def test_sgd_momentum(self):
        _, _, opt_sim, opt_eager = self.run_both(
            lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3))
        for p, q in zip(opt_sim.param_groups[0]["params"], opt_eager.param_groups[0]["params"]):
            self.assertLess(rel_err(opt_sim.state[p]["momentum_buffer"],
                                    opt_eager.state[q]["momentum_buffer"]), 1e-4)

    def test_cnn_batchnorm_sgd(self):
        # Three steps: BatchNorm's running statistics and num_batches_tracked follow eager.
        self.run_both(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), steps=3,
                      name="cnn")

    def test_sgd_bf16(self):
        # bf16 matmul operands, fp32 master weights and momentum: within bf16 rounding of
        # eager fp32 training. (SGD: AdamW's normalised update turns the sign of a tiny
        # rounded gradient into a whole lr-sized step, so its weights are no measure.)
        self.run_both(lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
                      precision="bf16", tol=2e-2)

    def test_gpt_sgd_tied(self):
        # Three SGD steps of the GPT block: the tied embedding / LM head weight is one
        # parameter, updated once with the sum of both uses' gradients, as in eager.
        # (Not AdamW: the key bias has a gradient of zero in exact arithmetic, which Adam
        # normalises from rounding noise into whole lr-sized steps.)
        model, loss_fn, _ = case("gpt")
        eager = copy.deepcopy(model)
        gen = torch.Generator().manual_seed(2)
        batches = [(torch.randint(0, 64, (2, 8), generator=gen),
                    torch.randint(0, 64, (2, 8), generator=gen)) for _ in range(3)]
        opt_sim = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        opt_eager = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
        result = tt.train(model, loss_fn, opt_sim, batches, config=CONFIG, precision="fp32",
                          phase_times=False)
        for s, (x, y) in enumerate(batches):
            opt_eager.zero_grad()
            loss = loss_fn(eager(x), y)
            loss.backward()
            opt_eager.step()
            self.assertAlmostEqual(result.losses[s], loss.item(), delta=1e-4 * loss.item())
        self.assertIs(model.head.weight, model.emb.weight)
        for (pname, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
            self.assertLess(rel_err(p.detach(), q.detach()), 1e-4, pname)
        self.assertEqual(result.report["fallback_ops"], [])
        self.assertEqual(result.report["tokens_per_step"], 16)  # token ids: B x T

    def test_host_fallback_steps(self):
        # A step with a host op is no single program file: compiled on every run, the
        # losses still eager's, the host op named in the report and in its phase.
        model, loss_fn, batch = case("cumsum")
        eager = copy.deepcopy(model)
        opt_sim = torch.optim.SGD(model.parameters(), lr=0.1)
        opt_eager = torch.optim.SGD(eager.parameters(), lr=0.1)
        result = tt.train(model, loss_fn, opt_sim, [batch], config=CONFIG, steps=2)
        for s in range(2):
            opt_eager.zero_grad()
            loss = loss_fn(eager(batch[0]), batch[1])
            loss.backward()
            opt_eager.step()
            # The loss sums 8192-long prefix sums (about 600): fp32 rounding of the
            # summation order, relative.
            self.assertAlmostEqual(result.losses[s], loss.item(), delta=1e-5 * abs(loss.item()))
        rep = result.report
        self.assertEqual(rep["fallback_ops"], ["CumSum", "Slice"])
        self.assertEqual(rep["compiled"], "per step (host fallback)")
        self.assertEqual(rep["phase_fallback_ops"], {"forward": ["CumSum"],
                                                     "backward": ["Slice", "CumSum",
                                                                  "Slice"]})

    def test_adam_l2(self):
        # Adam's weight decay is an L2 term added to the gradient (AdamW's decays the
        # weights): a different update, also on the device.
        self.run_both(lambda ps: torch.optim.Adam(ps, lr=1e-2, weight_decay=0.05), steps=4)

    def test_dropout_steps(self):
        # Three steps, three different masks per dropout, each eager's.
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 4))
        eager = copy.deepcopy(model)
        batch = (torch.randn(8, 16), torch.randint(0, 4, (8,)))
        opt_sim = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        opt_eager = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
        torch.manual_seed(7)
        result = tt.train(model, F.cross_entropy, opt_sim, [batch], config=CONFIG, steps=3)
        torch.manual_seed(7)
        for s in range(3):
            opt_eager.zero_grad()
            loss = F.cross_entropy(eager(batch[0]), batch[1])
            loss.backward()
            opt_eager.step()
            self.assertAlmostEqual(result.losses[s], loss.item(), delta=1e-5)
        self.assertEqual(len(set(result.losses)), 3)
        for (pname, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
            self.assertLess(rel_err(p.detach(), q.detach()), 1e-4, pname)

    def test_param_groups(self):
        # GPT-style AdamW groups: weights decayed, biases not, each its own lr; and SGD
        # groups with and without momentum.
        def adamw(ps):
            ps = list(ps)
            return torch.optim.AdamW([{"params": [p for p in ps if p.dim() == 2],
                                       "weight_decay": 0.1},
                                      {"params": [p for p in ps if p.dim() != 2],
                                       "weight_decay": 0.0, "lr": 3e-3}], lr=1e-2)

        def sgd(ps):
            ps = list(ps)
            return torch.optim.SGD([{"params": ps[:2], "momentum": 0.9},
                                    {"params": ps[2:], "lr": 0.02}], lr=0.05)

        self.run_both(adamw, steps=4)
        _, _, opt_sim, opt_eager = self.run_both(sgd, steps=4)
        for p, q in zip(opt_sim.param_groups[1]["params"], opt_eager.param_groups[1]["params"]):
            self.assertEqual("momentum_buffer" in opt_sim.state[p],
                             opt_eager.state[q].get("momentum_buffer") is not None)

    def test_sgd_nesterov_dampening(self):
        # Nesterov momentum; dampening, whose first step's buffer is the undamped
        # gradient, and which carries on from a buffer eager training left.
        self.run_both(lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
                      steps=4)
        model, eager, opt_sim, opt_eager = self.run_both(
            lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, dampening=0.3), steps=3)
        x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
        result = tt.train(model, F.cross_entropy, opt_sim, [(x, y)], config=CONFIG, steps=1,
                          phase_times=False)
        opt_eager.zero_grad()
        F.cross_entropy(eager(x), y).backward()
        opt_eager.step()
        for (pname, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
            self.assertLess(rel_err(p.detach(), q.detach()), 1e-4, pname)
        self.assertEqual(result.report["fallback_ops"], [])

    def test_adamw(self):
        _, _, opt_sim, opt_eager = self.run_both(
            lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.05))
        for p, q in zip(opt_sim.param_groups[0]["params"], opt_eager.param_groups[0]["params"]):
            for key in ("exp_avg", "exp_avg_sq"):
                self.assertLess(rel_err(opt_sim.state[p][key], opt_eager.state[q][key]), 1e-4)
            self.assertEqual(float(opt_sim.state[p]["step"]), float(opt_eager.state[q]["step"]))


@unittest.skipIf(MISSING, f"missing {MISSING}")
class Errors(unittest.TestCase):
    def test_random_op_names_node(self):
        class Noisy(nn.Module):
            def forward(self, x):
                return x + torch.rand_like(x)

        model = nn.Sequential(nn.Linear(8, 8), Noisy(), nn.Linear(8, 2))
        with self.assertRaises(tt.UnsupportedOp) as cm:
            tt.gradients(model, F.cross_entropy, (torch.randn(4, 8), torch.tensor([0, 1, 0, 1])),
                         config=CONFIG)
        self.assertIn("node 'rand_like'", str(cm.exception))
        self.assertIn("random numbers", str(cm.exception))

    def test_unsupported_optimizer(self):
        model = nn.Linear(4, 2)
        opt = torch.optim.RMSprop(model.parameters(), lr=0.1)
        with self.assertRaisesRegex(ValueError, "RMSprop is not supported"):
            tt.train(model, F.mse_loss, opt, [(torch.randn(3, 4), torch.randn(3, 2))],
                     config=CONFIG, steps=1)

    def test_batch_of_another_shape(self):
        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        batches = [(torch.randn(3, 4), torch.randn(3, 2)), (torch.randn(5, 4), torch.randn(5, 2))]
        with self.assertRaisesRegex(ValueError, r"batch 1 tensor 0 is torch.float32 \[5, 4\]"):
            tt.train(model, F.mse_loss, opt, batches, config=CONFIG)

    def test_parameter_missing_from_optimizer(self):
        model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
        opt = torch.optim.SGD(model[0].parameters(), lr=0.1)
        with self.assertRaisesRegex(ValueError, "1.weight is not in the optimizer"):
            tt.train(model, F.mse_loss, opt, [(torch.randn(3, 4), torch.randn(3, 2))],
                     config=CONFIG, steps=1)


if __name__ == "__main__":
    unittest.main()
