"""trnsim.kernels inside PyTorch: example kernels registered as custom operators
(torch.ops.trnsim_kernels.*) in a module's forward, computed by numpy (simulate) and
by the simulator (benchmark), against eager PyTorch.
Exit 77 (skipped) when numpy, torch or the binary are missing.
"""

import os
import sys
import unittest
from pathlib import Path

from skip_unless import require

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("TRNSIM_BIN") or str(REPO / "build" / "runtime" / "trnsim")
require(("numpy", "torch"), BIN)
os.environ.setdefault("TRNSIM_BIN", BIN)

import torch  # noqa: E402

sys.path.insert(0, str(REPO / "runtime" / "python"))
sys.path.insert(0, str(REPO))
from examples.kernels import layernorm, softmax  # noqa: E402


class Block(torch.nn.Module):
    """Linear, then layer norm and softmax as trnsim kernels."""

    def __init__(self, mode):
        super().__init__()
        self.lin = torch.nn.Linear(64, 96)
        self.ln = torch.nn.LayerNorm(96)
        self.ln_op = layernorm.layernorm.torch_op(mode=mode, config="trn1", eps=self.ln.eps)
        self.sm_op = softmax.softmax.torch_op(mode=mode, config="trn1")

    def forward(self, x):
        h = self.ln_op(self.lin(x), self.ln.weight, self.ln.bias)
        return self.sm_op(h)

    def eager(self, x):
        return torch.softmax(self.ln(self.lin(x)), dim=-1)


class Torch(unittest.TestCase):
    def test_kernels_in_a_forward(self):
        torch.manual_seed(0)
        x = torch.randn(130, 64)  # 130 rows: a full and a partial tile
        for mode in ("simulate", "benchmark"):
            with self.subTest(mode=mode), torch.no_grad():
                m = Block(mode)
                m.ln.weight.normal_()
                m.ln.bias.normal_()
                got, want = m(x), m.eager(x)
                self.assertEqual(got.dtype, torch.float32)
                self.assertEqual(got.shape, want.shape)
                self.assertLess((got - want).abs().max().item(), 1e-5)
                if mode == "benchmark":
                    self.assertGreater(m.sm_op.last_report.simulated_ns, 0)
                else:
                    self.assertIsNone(m.sm_op.last_report)

    def test_bf16_tensors_keep_their_dtype(self):
        op = softmax.softmax.torch_op(config="trn1")
        x = torch.randn(8, 40).bfloat16()
        y = op(x)
        self.assertEqual(y.dtype, torch.bfloat16)
        self.assertLess((y.float() - torch.softmax(x.float(), -1)).abs().max().item(), 3e-2)

    def test_gradients_are_refused(self):
        op = softmax.softmax.torch_op(config="trn1")
        with self.assertRaisesRegex(RuntimeError, "forward only"):
            op(torch.randn(4, 8, requires_grad=True))


if __name__ == "__main__":
    unittest.main()
