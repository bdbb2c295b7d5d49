"""How convolutions are lowered, at small shapes: results against eager PyTorch and
the DMA traffic the lowering promises (descriptor counts from the run's stats).

Every op on the chip (fallback=False). Error = max |trnsim - eager| / max |eager|:
fp32 1e-4 (another summation order), bf16 3e-2 (conv operands rounded to 8
significant bits, fp32 accumulation; a residual block rounds twice).
Run as a script: exits 77 (ctest's skip code) when numpy or torch is not installed,
and fails instead under CI=true (skip_unless.py).
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))

from skip_unless import missing_modules, require  # noqa: E402

NEEDED = ("numpy", "torch")
if __name__ == "__main__":
    require(NEEDED)  # exit 77, or 1 under CI=true, when one is missing

MISSING = missing_modules(NEEDED)
if MISSING:
    torch = None
else:  # installed but failing to import is an error, not a skip
    import torch
    from torch import nn
    import trnsim.torch as tt


def rel_err(got, want):
    return float((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-12))


def descriptors(report):
    """DMA descriptors (contiguous chunks) every engine of core 0 moved."""
    dma = report.stats["chip"]["core0"]["dma"]
    return sum(v["descriptors"] for k, v in dma.items() if k.startswith("engine"))


if torch is not None:
    class Bottleneck(nn.Module):
        """A ResNet bottleneck: 1x1, 3x3 (stride), 1x1 convs with BatchNorm and ReLU,
        a strided 1x1 projection on the shortcut, the residual add and ReLU."""

        def __init__(self, cin, mid, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid)
            self.c2 = nn.Conv2d(mid, mid, 3, stride=stride, padding=1, bias=False)
            self.b2 = nn.BatchNorm2d(mid)
            self.c3, self.b3 = nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                      nn.BatchNorm2d(cout))
            for bn in (self.b1, self.b2, self.b3, self.down[1]):  # non-trivial running stats
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.data.uniform_(0.5, 1.5)
                bn.bias.data.uniform_(-0.2, 0.2)

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = torch.relu(self.b2(self.c2(y)))
            return torch.relu(self.b3(self.c3(y)) + self.down(x))


class Case(unittest.TestCase):
    def check(self, module, inputs, bf16_tol=3e-2):
        module.eval()
        with torch.no_grad():
            want = module(*inputs)
        for p in ("fp32", "bf16"):
            with self.subTest(precision=p):
                got, rep = tt.run(module, inputs, config="trn2", precision=p, fallback=False)
                err = rel_err(got, want)
                print(f"{p}: error {err:.2e}, simulated {rep.simulated_us:.1f} us", file=sys.stderr)
                self.assertLess(err, 1e-4 if p == "fp32" else bf16_tol)


class Strided(Case):
    """Column-strided convs gather each input row's whole span (one contiguous run)
    and the matmul reads every stride-th column of it."""

    def test_stem_7x7_stride2(self):
        torch.manual_seed(0)
        self.check(nn.Conv2d(3, 16, 7, stride=2, padding=3), (torch.randn(2, 3, 21, 20),))

    def test_3x3_stride2_relu(self):
        torch.manual_seed(1)
        m = nn.Sequential(nn.Conv2d(40, 24, 3, stride=2, padding=1), nn.ReLU())
        self.check(m, (torch.randn(1, 40, 15, 16),))

    def test_1x1_stride2_and_dilated_stride3(self):
        torch.manual_seed(2)
        self.check(nn.Conv2d(8, 12, 1, stride=2), (torch.randn(3, 8, 9, 11),))
        self.check(nn.Conv2d(5, 6, 3, stride=3, padding=2, dilation=2), (torch.randn(1, 5, 17, 19),))

    def test_1d_stride2(self):
        torch.manual_seed(3)
        self.check(nn.Conv1d(4, 8, 5, stride=2, padding=2), (torch.randn(2, 4, 33),))

    def test_stem_descriptors(self):
        # Conv2d(3, 64, 7, stride 2, pad 3) on 64x64: 32x32 outputs. Gathering
        # element by element (stride-2 columns) takes one descriptor per element of
        # the im2col operand: 3 * 49 taps * 32 * 32 = 150528. Whole row spans take
        # one per (channel, tap, output row): 3 * 49 * 32 = 4704, plus the weights'
        # and the output's (at most 64 * 2 per chunk): far below a quarter.
        torch.manual_seed(4)
        m = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).eval()
        _, rep = tt.run(m, (torch.randn(1, 3, 64, 64),), config="trn2", precision="bf16",
                        functional=False, fallback=False)
        self.assertLess(descriptors(rep), 150528 // 4)


class ResidualBlock(Case):
    def test_bottleneck_batch2(self):
        torch.manual_seed(5)
        self.check(Bottleneck(32, 16, 64, 2), (torch.randn(2, 32, 12, 12),), bf16_tol=4e-2)


if __name__ == "__main__":
    unittest.main()
