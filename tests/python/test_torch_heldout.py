"""Held-out PyTorch models through trnsim.torch.run with host fallback allowed: small
models each built around one op the device may or may not run (recurrent layers, a
scripted branch, Resize, TopK, Einsum, transposed and 3-D convolution, 3-D pooling,
instance/group norm, CumSum, Trilu, ArgMax, OneHot, GatherElements/ScatterElements,
NonZero, CumSum on float64 (host only: the chip has no fp64), a scripted loop appending
to a list (ONNX sequence ops, resolved at import)). Each must match eager PyTorch (fp32: max error within 1e-4 of the largest
output magnitude; the bf16 subset within 3e-2; integer outputs exactly), and the ops
that ran on the host must be exactly those in EXPECTED_FALLBACK, each reported by its
ONNX op type and the node name the exported ONNX file gives it.

EXPECTED_FALLBACK is the one table to update when an op moves onto the device.
Run as a script: exits 77 (ctest's skip code) when numpy, torch or onnx is missing,
and fails instead under CI=true (skip_unless.py).
"""

import os
import sys
import tempfile
import unittest

from _helpers import needs, rel_err_f64 as rel_err

# Model name -> the ONNX op types that run on the host (the report's fallback_ops as
# a set). An op a helper moves onto the device leaves its entry here.
EXPECTED_FALLBACK = {
    "lstm": set(),
    "gru": set(),
    "rnn": set(),
    "scripted_if": set(),
    "resize_nearest": set(),
    "resize_bilinear": set(),
    "topk": set(),
    "einsum": set(),
    "conv_transpose2d": set(),
    "conv3d": set(),
    "pool3d": set(),
    "instance_norm": set(),
    "group_norm": set(),
    "cumsum": set(),
    "trilu": set(),
    "argmax": set(),
    "one_hot": {"OneHot"},
    "gather_scatter": {"GatherElements", "ScatterElements"},
    "cumsum_fp64": {"CumSum"},
    "scripted_list": set(),
}

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch", "onnx"), __name__)
if MISSING:
    torch = None
else:  # installed but failing to import is an error, not a skip
    import onnx
    import torch
    import torch.nn.functional as F
    from torch import nn
    import trnsim.torch as tt

CONFIG = "tiny"


if torch is not None:
    class Fn(nn.Module):
        """A module around a function of tensors (with parameters of its own)."""

        def __init__(self, fn, **params):
            super().__init__()
            for k, v in params.items():
                setattr(self, k, v)
            self.fn = fn

        def forward(self, *xs):
            return self.fn(self, *xs)

    class Recurrent(nn.Module):
        def __init__(self, cls):
            super().__init__()
            self.rnn = cls(6, 8, batch_first=True)

        def forward(self, x):
            return self.rnn(x)[0]

    class Branch(nn.Module):
        def forward(self, x):
            if bool(x.sum() > 0):
                return x * 2.0 + 1.0
            return x - 3.0

    class ListLoop(nn.Module):
        """A scripted loop appending to a list: SequenceEmpty, a Loop carrying the
        sequence (SequenceInsert) and ConcatFromSequence in the exported ONNX."""

        def forward(self, x):
            out = []
            for i in range(x.size(0)):
                out.append(x[i] * float(i + 1))
            return torch.stack(out, 0) + 1.0

    def models():
        """name -> (module, inputs)."""
        torch.manual_seed(0)
        r = torch.randn
        m = {
            "lstm": (Recurrent(nn.LSTM), (r(2, 5, 6),)),
            "gru": (Recurrent(nn.GRU), (r(2, 5, 6),)),
            "rnn": (Recurrent(nn.RNN), (r(2, 5, 6),)),
            "scripted_if": (torch.jit.script(Branch()), (r(3, 4),)),
            "resize_nearest": (Fn(lambda s, x: F.interpolate(x, scale_factor=2, mode="nearest")),
                               (r(1, 2, 4, 5),)),
            "resize_bilinear": (Fn(lambda s, x: F.interpolate(
                x, scale_factor=2, mode="bilinear", align_corners=False)), (r(1, 2, 4, 5),)),
            "topk": (Fn(lambda s, x: torch.topk(x, 3, dim=-1)), (r(4, 9),)),
            "einsum": (Fn(lambda s, a, b: torch.einsum("bij,bjk->bik", a, b)
                          + torch.einsum("bik,k->bi", a @ b, s.v).unsqueeze(-1),
                          v=nn.Parameter(r(7))), (r(2, 3, 5), r(2, 5, 7))),
            "conv_transpose2d": (nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1),
                                 (r(1, 3, 5, 5),)),
            "conv3d": (nn.Conv3d(2, 3, 3, padding=1), (r(1, 2, 4, 5, 5),)),
            "pool3d": (Fn(lambda s, x: F.max_pool3d(x, 2) + F.avg_pool3d(x, 2)),
                       (r(1, 2, 4, 4, 6),)),
            "instance_norm": (nn.InstanceNorm2d(3, affine=True), (r(2, 3, 5, 6),)),
            "group_norm": (nn.GroupNorm(2, 4), (r(2, 4, 3, 5),)),
            "cumsum": (Fn(lambda s, x: torch.cumsum(x, dim=1)), (r(3, 7),)),
            "trilu": (Fn(lambda s, x: torch.tril(x) + torch.triu(x, 1) * 2.0), (r(5, 6),)),
            "argmax": (Fn(lambda s, x: torch.argmax(x, dim=-1)), (r(4, 9),)),
            "one_hot": (Fn(lambda s, i: F.one_hot(i, 6).float() * 2.0),
                        (torch.tensor([[0, 5, 2], [3, 3, 1]]),)),
            "gather_scatter": (Fn(lambda s, x, i: (torch.gather(x, 1, i),
                                                   torch.zeros(3, 5).scatter(1, i, x[:, :2]))),
                               (r(3, 5), torch.tensor([[0, 4], [2, 1], [3, 4]]))),
            "cumsum_fp64": (Fn(lambda s, x: torch.cumsum(x, dim=1)), (r(3, 7).double(),)),
            "scripted_list": (torch.jit.script(ListLoop()), (r(3, 4),)),
        }
        for module, _ in m.values():
            module.eval()
        return m

    def onnx_nodes(module, inputs):
        """(op type, node name) of every node of the model as trnsim.torch exports it."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            names = tt._input_names(module, len(inputs))
            with torch.no_grad():
                n_out = len(tt._flatten(module(*inputs))[0])
            outs = ["output"] if n_out == 1 else [f"output_{i}" for i in range(n_out)]
            tt._export(tt._exportable(module, len(inputs)), inputs, path, names, outs)
            g = onnx.load(path).graph
            nodes = set()
            stack = [g]
            while stack:
                for n in stack.pop().node:
                    nodes.add((n.op_type, n.name))
                    stack += [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
            return nodes


@unittest.skipIf(bool(MISSING), f"not installed: {', '.join(MISSING)}")
class HeldOut(unittest.TestCase):
    BF16 = {"lstm", "einsum", "conv_transpose2d", "conv3d", "group_norm"}

    def check(self, name):
        module, inputs = models()[name]
        with torch.no_grad():
            want = module(*inputs)
        want_flat = tt._flatten(want)[0]
        onnx_names = onnx_nodes(module, inputs)
        for p in ("fp32", "bf16") if name in self.BF16 else ("fp32",):
            with self.subTest(precision=p):
                out, rep = tt.run(module, inputs, config=CONFIG, precision=p)
                got_flat = tt._flatten(out)[0]
                self.assertEqual(len(got_flat), len(want_flat))
                for g, w in zip(got_flat, want_flat):
                    self.assertEqual(g.shape, w.shape)
                    self.assertEqual(g.dtype, w.dtype)
                    if w.is_floating_point():
                        tol = 1e-4 if p == "fp32" else 3e-2
                        self.assertLess(rel_err(g, w), tol, f"{name} {p}")
                    else:
                        self.assertTrue(torch.equal(g, w), f"{name} {p}: {g} != {w}")
                self.assertEqual(set(rep.fallback_ops), EXPECTED_FALLBACK[name], rep.text)
                self.assertEqual([op for op, _ in rep.fallback_nodes], rep.fallback_ops)
                for op, node in rep.fallback_nodes:
                    self.assertIn((op, node), onnx_names, "not an ONNX node of the model")
                # Simulated time is device + link time, never zero (inputs and outputs
                # cross the link even when nothing runs on the device).
                self.assertGreater(rep.simulated_ns, 0)
                if rep.fallback_ops:
                    self.assertAlmostEqual(rep.simulated_ns, rep.device_ns + rep.link_ns,
                                           delta=1e-6 * rep.simulated_ns)
                print(f"{name} {p}: simulated {rep.simulated_us:.2f} us, host "
                      f"{rep.wall_seconds:.1f} s, fallback {sorted(rep.fallback_ops)}",
                      file=sys.stderr)


    def test_scripted_if_both_branches(self):
        """The scripted branch's condition is a run-time value: the host reads it and the
        chosen branch runs on the device. Inputs that take each branch match eager, no
        op falls back, and the If is reported as a host decision by its ONNX name."""
        module = models()["scripted_if"][0]
        x = torch.randn(3, 4).abs() + 0.5
        onnx_names = onnx_nodes(module, (x,))
        for sign in (1.0, -1.0):
            with self.subTest(condition=sign > 0):
                xs = x * sign
                with torch.no_grad():
                    want = module(xs)
                got, rep = tt.run(module, (xs,), config=CONFIG, precision="fp32")
                self.assertLess(rel_err(got, want), 1e-4)
                self.assertEqual(rep.fallback_ops, [], rep.text)
                self.assertEqual([op for op, _ in rep.host_decisions], ["If"], rep.text)
                self.assertIn(rep.host_decisions[0], onnx_names)
                branch = "then_branch" if sign > 0 else "else_branch"
                segs = rep.stats["fallback"]["segments"]
                self.assertEqual([s.get("branch") for s in segs if "branch" in s], [branch])
                self.assertTrue(all(s["on_device"] or "branch" in s for s in segs), segs)

    def test_nonzero_refused(self):
        """NonZero of a run-time value has a data-dependent shape: the importer refuses
        it naming the node (the exporter writes it; only constant inputs are supported)."""
        module = Fn(lambda s, x: torch.nonzero(x > 0)).eval()
        with self.assertRaises(tt.TrnsimError) as e:
            tt.run(module, (torch.randn(3, 4),), config=CONFIG, precision="fp32")
        self.assertIn("op NonZero", e.exception.message)
        self.assertIn("must be a constant", e.exception.message)


def _add_case(name):
    setattr(HeldOut, f"test_{name}", lambda self: self.check(name))


for _name in EXPECTED_FALLBACK:
    _add_case(_name)

if __name__ == "__main__":
    unittest.main()
