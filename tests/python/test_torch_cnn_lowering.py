"""How convolutions are lowered, at small shapes: results against eager PyTorch and
the DMA traffic the lowering promises (descriptor counts from the run's stats).

Every op on the chip (fallback=False). Error = max |trnsim - eager| / max |eager|:
fp32 1e-4 (another summation order), bf16 3e-2 (conv operands rounded to 8
significant bits, fp32 accumulation; a residual block rounds twice).
Run as a script: exits 77 (ctest's skip code) when numpy or torch is not installed,
and fails instead under CI=true (skip_unless.py).
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

from _helpers import ROOT, needs, rel_err

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch"), __name__)
if MISSING:
    torch = None
else:  # installed but failing to import is an error, not a skip
    import torch
    from torch import nn
    import trnsim.torch as tt


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


class Band(Case):
    """Convs of more than 32 channels read every tap's window from one band of input
    rows in SBUF; taps that leave the input write only the pixels they reach."""

    def test_two_channel_tiles_images_per_chunk(self):
        # 160 channels: a full and a partial k-tile; 9x10 = 90 pixels, 5 images per
        # 512-pixel chunk, 7 images: chunks of 5 and 2.
        torch.manual_seed(6)
        self.check(nn.Conv2d(160, 40, 3, padding=1), (torch.randn(7, 160, 9, 10),))

    def test_stride2_row_chunks_two_channel_groups(self):
        # 32x32 outputs: chunks of 16 rows; 600 output channels: two groups of <= 512.
        torch.manual_seed(7)
        m = nn.Sequential(nn.Conv2d(48, 600, 3, stride=2, padding=1), nn.ReLU())
        self.check(m, (torch.randn(1, 48, 64, 64),))

    def test_5x5_dilated_and_unpadded(self):
        torch.manual_seed(8)
        self.check(nn.Conv2d(64, 32, 5, padding=4, dilation=2), (torch.randn(2, 64, 13, 11),))
        self.check(nn.Conv2d(40, 16, 3), (torch.randn(2, 40, 8, 9),))

    def test_band_descriptors(self):
        # Conv2d(128, 128, 3, pad 1) on 2 x 28x28: 784 pixels an image, chunks of 18
        # and 10 rows. An im2col gather takes one descriptor per (tap, channel,
        # output row, image): 9 * 128 * 28 * 2 = 64512. A band takes one per
        # (channel, image, chunk): 128 * 2 * 2 = 512, plus the weights' (once:
        # 9 k-tiles * 128 rows) and the stores (128 * 18 or 10 rows * 4 chunks).
        torch.manual_seed(9)
        m = nn.Conv2d(128, 128, 3, padding=1, bias=False).eval()
        _, rep = tt.run(m, (torch.randn(2, 128, 28, 28),), config="trn2", precision="bf16",
                        functional=False, fallback=False)
        self.assertLess(descriptors(rep), 64512 // 8)


def compile_tasm(module, inputs, work):
    """The module's program as assembly text (`trnsim compile`, trn2, bf16)."""
    onnx_path, tasm = os.path.join(work, "m.onnx"), os.path.join(work, "m.tasm")
    torch.onnx.export(module.eval(), inputs, onnx_path, opset_version=17)
    subprocess.run([tt_bin(), "compile", onnx_path, "-c", "trn2", "--precision", "bf16", "-o", tasm],
                   check=True, capture_output=True)
    with open(tasm) as f:
        return f.read()


def tt_bin():
    return os.environ.get("TRNSIM_BIN", os.path.join(ROOT, "build", "runtime", "trnsim"))


class FewChannels(Case):
    def test_kernel_rows_dilated_strided_numerics(self):
        # Fewer channels than kernel columns: slabs of kernel columns from the
        # padded, row-parity-split input (strides 2 and 3, dilation, odd sizes,
        # several images per chunk, asymmetric padding).
        torch.manual_seed(14)
        self.check(nn.Conv2d(2, 8, 5, stride=2, padding=3, dilation=2), (torch.randn(3, 2, 19, 23),))
        self.check(nn.Conv2d(1, 4, (3, 7), stride=(3, 2), padding=(1, 3)), (torch.randn(2, 1, 20, 17),))
        self.check(nn.Conv2d(3, 5, 3, stride=1, padding=(0, 2)), (torch.randn(1, 3, 6, 9),))

    def test_stem_kernel_rows_pack_k_tiles(self):
        # Conv2d(3, 64, 7, stride 2, pad 3) on 64x64: 32x32 outputs, chunks of 16
        # rows (512 pixels): 2 chunks. Slabs of 3 channels per tap, 4 per k-tile
        # (32-partition quadrants): 49 taps -> 13 k-tiles, 26 matmuls. Slabs of one
        # channel's 7 kernel columns per kernel row: 7 * 3 = 21 slabs -> 6 k-tiles,
        # 12 matmuls.
        torch.manual_seed(11)
        m = nn.Conv2d(3, 64, 7, stride=2, padding=3).eval()
        _, rep = tt.run(m, (torch.randn(1, 3, 64, 64),), config="trn2", precision="bf16",
                        functional=False, fallback=False)
        self.assertEqual(rep.stats["engines"]["tensor"]["opcodes"]["matmul"], 12)

    def test_stem_gathers_whole_rows(self):
        # The same stem conv: the padded input kept in row-parity planes makes a
        # slab row's 16 output rows of a chunk one contiguous run: 21 slabs * 7
        # rows * 2 chunks = 294 gather descriptors, where a run per output row takes
        # 3 * 49 * 32 = 4704. The rest is at most 1334: padding copies (interior
        # 3 channels * 64 rows = 192, left/right borders 3 * 2 planes * 32 rows * 2
        # = 384, top/bottom <= 12), weights (6 k-tiles * <= 103 rows = 618) and
        # stores (64 channels * 2 chunks = 128).
        torch.manual_seed(13)
        m = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).eval()
        _, rep = tt.run(m, (torch.randn(1, 3, 64, 64),), config="trn2", precision="bf16",
                        functional=False, fallback=False)
        self.assertLessEqual(descriptors(rep), 294 + 1334)

    def test_bias_loaded_once(self):
        # 4 images of 32x32 (1024 pixels): 8 chunks of 512; the bias column of the
        # 16 output channels is loaded once, not once per chunk.
        torch.manual_seed(12)
        with tempfile.TemporaryDirectory() as work:
            text = compile_tasm(nn.Conv2d(3, 16, 3, padding=1), (torch.randn(4, 3, 32, 32),), work)
        names = re.findall(r"^\.tensor (\S+) \[16\] fp32 constant", text, re.M)
        self.assertEqual(len(names), 1)
        loads = [ln for ln in text.splitlines()
                 if ln.startswith("dma_copy") and "@" + names[0] + "," in ln]
        self.assertEqual(len(loads), 1)


class Weights(Case):
    def test_weights_read_once_per_layer(self):
        # Conv2d(256, 256, 3, pad 1) on 8 x 14x14: 196 pixels an image, 2 images a
        # 512-pixel chunk, 4 chunks. Weights: 256 * 256 * 9 * 2 B (bf16) = 1179648 B;
        # input 8 * 256 * 196 * 4 B (fp32) = 1605632 B. Loaded per chunk, the
        # weights alone are 4 * 1179648 B; once, the run reads input + weights.
        torch.manual_seed(10)
        m = nn.Conv2d(256, 256, 3, padding=1, bias=False).eval()
        _, rep = tt.run(m, (torch.randn(8, 256, 14, 14),), config="trn2", precision="bf16",
                        functional=False, fallback=False)
        self.assertLess(rep.stats["hbm"]["read_bytes"], 1605632 + 2 * 1179648)


class Pools(Case):
    """2-D pooling windows combine separably: along rows over the band, then down."""

    def test_max_avg_numerics(self):
        torch.manual_seed(15)
        x = torch.randn(2, 6, 13, 15)
        self.check(nn.MaxPool2d(3, 2, 1), (x,))
        self.check(nn.MaxPool2d((2, 4), (1, 3), (1, 2), dilation=(2, 1), ceil_mode=True), (x,))
        self.check(nn.AvgPool2d(3, 2, 1, count_include_pad=False), (x,))
        self.check(nn.AvgPool2d((3, 2), 1, (1, 0), ceil_mode=True), (x,))

    def test_separable_op_count(self):
        # MaxPool2d(3, 2, pad 1) on 16 planes of 16x16: one plane tile, one band.
        # Tap by tap: a copy and 8 maxes; separably: 2 maxes along the rows and 2
        # down the columns.
        m = nn.MaxPool2d(3, 2, 1)
        _, rep = tt.run(m, (torch.randn(1, 16, 16, 16),), config="trn2", precision="bf16",
                        functional=False, fallback=False)
        ops = sum(e["opcodes"].get(k, 0) for e in rep.stats["engines"].values()
                  for k in ("tensor_tensor", "tensor_copy"))
        self.assertEqual(ops, 4)


class ResidualBlock(Case):
    def test_bottleneck_batch2(self):
        torch.manual_seed(5)
        self.check(Bottleneck(32, 16, 64, 2), (torch.randn(2, 32, 12, 12),), bf16_tol=4e-2)
        self.check(Bottleneck(64, 48, 128, 2), (torch.randn(2, 64, 12, 12),), bf16_tol=4e-2)


if __name__ == "__main__":
    unittest.main()
