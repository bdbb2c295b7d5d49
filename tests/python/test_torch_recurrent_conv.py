"""PyTorch recurrent, transposed and 3-D convolution layers through `trnsim run`
(trnsim.torch.run), every op on the chip (fallback=False: an op the compiler cannot
lower fails the test), compared with eager PyTorch.

nn.LSTM / nn.GRU / nn.RNN export to ONNX LSTM/GRU/RNN nodes (the unroll_rnn graph
pass unrolls them), nn.ConvTranspose1d/2d to ConvTranspose (lowered as the conv of
the flipped kernel over the zero-inserted input), nn.Conv3d / ConvTranspose3d /
MaxPool3d / AvgPool3d to 3-D ones (the decompose_3d graph pass makes them 2-D).

Tolerance, error = max |trnsim - eager| / max |eager| over every output tensor:
fp32 1e-4 (another summation order; fp32-accurate transcendentals), bf16 3e-2
(matmul/conv operands rounded to 8 significant bits, fp32 accumulation; a few steps
of recurrence carry the rounding forward).
Run as a script: exits 77 (ctest's skip code) when numpy or torch is not installed,
and fails instead under CI=true (skip_unless.py).
"""

import sys
import unittest

from _helpers import needs, rel_err

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch"), __name__)
if MISSING:
    torch = None
else:  # installed but failing to import is an error, not a skip
    import torch
    from torch import nn
    import trnsim.torch as tt


def flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in flat(o)]


class Case(unittest.TestCase):
    def check(self, module, inputs, fp32_tol=1e-4, bf16_tol=3e-2):
        module.eval()
        with torch.no_grad():
            want = flat(module(*inputs))
        for p in ("fp32", "bf16"):
            with self.subTest(precision=p):
                out, rep = tt.run(module, inputs, config="trn2", precision=p, fallback=False)
                got = flat(out)
                self.assertEqual(rep.fallback_ops, [])
                self.assertEqual(len(got), len(want))
                err = max(rel_err(g, w) for g, w in zip(got, want))
                print(f"{type(module).__name__} {p}: error {err:.2e}, simulated "
                      f"{rep.simulated_us:.1f} us", file=sys.stderr)
                self.assertLess(err, fp32_tol if p == "fp32" else bf16_tol)


class Recurrent(Case):
    def test_lstm_two_layers_bidirectional(self):
        torch.manual_seed(1)
        self.check(nn.LSTM(6, 10, num_layers=2, bidirectional=True), (torch.randn(5, 2, 6),))

    def test_lstm_batch_first_initial_state(self):
        torch.manual_seed(2)
        m = nn.LSTM(6, 8, batch_first=True)
        h0, c0 = torch.randn(1, 3, 8), torch.randn(1, 3, 8)

        # Initial states as graph inputs: a wrapper takes them positionally.
        class WithState(nn.Module):
            def __init__(self):
                super().__init__()
                self.m = m

            def forward(self, x, h, c):
                return self.m(x, (h, c))

        self.check(WithState(), (torch.randn(3, 4, 6), h0, c0))

    def test_gru_two_layers_bidirectional_batch_first(self):
        torch.manual_seed(3)
        self.check(nn.GRU(6, 10, num_layers=2, bidirectional=True, batch_first=True),
                   (torch.randn(2, 5, 6),))

    def test_rnn_tanh_and_relu(self):
        torch.manual_seed(4)
        self.check(nn.RNN(6, 10), (torch.randn(5, 2, 6),))
        self.check(nn.RNN(6, 10, nonlinearity="relu", num_layers=2, bidirectional=True),
                   (torch.randn(4, 3, 6),))


class ConvTranspose(Case):
    def test_convtranspose2d_stride_pad_output_padding_groups(self):
        torch.manual_seed(5)
        self.check(nn.ConvTranspose2d(6, 8, 3, stride=2, padding=1, output_padding=1, groups=2),
                   (torch.randn(2, 6, 5, 7),))

    def test_convtranspose2d_dilation_and_1d(self):
        torch.manual_seed(6)
        self.check(nn.ConvTranspose2d(4, 5, (3, 2), stride=(1, 3), padding=(2, 0), dilation=2),
                   (torch.randn(1, 4, 6, 5),))
        self.check(nn.ConvTranspose1d(5, 3, 4, stride=2, padding=1), (torch.randn(2, 5, 9),))

    def test_dcgan_generator(self):
        # 160 input channels (two slabs per tap), BatchNorm + ReLU / Tanh fused into
        # the ConvTranspose epilogues.
        torch.manual_seed(9)
        g = nn.Sequential(
            nn.ConvTranspose2d(64, 160, 4, 1, 0, bias=False), nn.BatchNorm2d(160), nn.ReLU(),
            nn.ConvTranspose2d(160, 96, 4, 2, 1, bias=False), nn.BatchNorm2d(96), nn.ReLU(),
            nn.ConvTranspose2d(96, 3, 4, 2, 1, bias=False), nn.Tanh())
        for m in g.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
        self.check(g, (torch.randn(2, 64, 1, 1),))


class ThreeD(Case):
    def test_conv3d(self):
        torch.manual_seed(7)
        self.check(nn.Conv3d(4, 6, 3, stride=(1, 2, 2), padding=1, groups=2),
                   (torch.randn(2, 4, 5, 7, 6),))

    def test_convtranspose3d(self):
        torch.manual_seed(10)
        self.check(nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
                   (torch.randn(1, 4, 3, 4, 3),))

    def test_pools3d(self):
        torch.manual_seed(8)
        self.check(nn.MaxPool3d(3, stride=2, padding=1), (torch.randn(1, 3, 6, 7, 8),))
        self.check(nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                   (torch.randn(2, 2, 5, 6, 7),))


if __name__ == "__main__":
    unittest.main()
