"""End-to-end PyTorch models through `trnsim run` (trnsim.torch.run), compared with
eager PyTorch, every op on the chip (fallback=False: an op the compiler cannot lower
fails the test instead of running on the host).

Tolerances, error = max |trnsim - eager| / max |eager|:
- fp32 (--precision fp32): the chip computes in fp32 in another summation order, and
  the scalar engine's transcendental functions are fp32-accurate: 1e-4 for one-block
  models, 1e-3 for the deep CNNs (resnet18: 20 layers; mobilenet_v2: 52).
- bf16 (the default precision): every matmul / conv operand rounded to bf16 (8
  significant bits, up to 2^-9 relative per operand), fp32 accumulation and
  elementwise: 3 % for one block, 6 % for the deep CNNs (errors add up over the
  layers; BatchNorm folded into conv weights is rounded with them).
Run as a script: exits 77 (ctest's skip code) when numpy, torch or torchvision is not
installed, and fails instead under CI=true (skip_unless.py).
"""

import sys
import unittest

from _helpers import needs, rel_err

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch", "torchvision"), __name__)
if MISSING:
    torch = None
else:  # installed but failing to import is an error, not a skip
    import torch
    from torch import nn
    import torchvision
    import trnsim.torch as tt


if torch is not None:
    class GptBlock(nn.Module):
        """Token + position embeddings, causal self-attention with explicit matmuls and
        a masked_fill causal mask, LayerNorms and a GELU (tanh form) MLP."""

        def __init__(self, vocab=97, seq=24, d=64, heads=4):
            super().__init__()
            self.h, self.dk = heads, d // heads
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

        def forward(self, idx):
            b, t = idx.shape
            # Clamped: the chip looks up only token ids proven in range (it cannot check
            # them at run time; unproven ones go to the host).
            v = self.tok.num_embeddings
            x = self.tok(idx.clamp(-v, v - 1)) + self.pos(torch.arange(t))
            q, k, v = self.qkv(self.ln1(x)).split(self.h * self.dk, dim=-1)
            q, k, v = (z.reshape(b, t, self.h, self.dk).transpose(1, 2) for z in (q, k, v))
            a = (q @ k.transpose(-1, -2)) / self.dk ** 0.5
            a = a.masked_fill(self.mask[:t, :t], float("-inf")).softmax(-1)
            x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, -1))
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class RmsNormSiluMlp(nn.Module):
        """RMSNorm (as LLaMA writes it) and a SiLU-gated MLP."""

        def __init__(self, d=96, hidden=160):
            super().__init__()
            self.w = nn.Parameter(torch.rand(d) + 0.5)
            self.gate, self.up, self.down = nn.Linear(d, hidden), nn.Linear(d, hidden), nn.Linear(hidden, d)

        def forward(self, x):
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
            return self.down(nn.functional.silu(self.gate(x)) * self.up(x))

    class GeluErfMlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(200, 300), nn.GELU(), nn.Linear(300, 130))

        def forward(self, x):
            return self.net(x)


@unittest.skipIf(bool(MISSING), f"not installed: {', '.join(MISSING)}")
class Models(unittest.TestCase):
    def check(self, module, inputs, fp32_tol, bf16_tol, precisions=("fp32", "bf16")):
        torch.manual_seed(0)
        module.eval()
        with torch.no_grad():
            want = module(*inputs)
        for p in precisions:
            with self.subTest(precision=p):
                out, rep = tt.run(module, inputs, config="trn2", precision=p, fallback=False)
                err = rel_err(out, want)
                print(f"{type(module).__name__} {p}: error {err:.2e}, simulated "
                      f"{rep.simulated_us:.1f} us, host {rep.wall_seconds:.1f} s", file=sys.stderr)
                self.assertEqual(rep.fallback_ops, [])
                self.assertGreater(rep.simulated_ns, 0)
                self.assertLess(err, fp32_tol if p == "fp32" else bf16_tol)

    def test_resnet18(self):
        torch.manual_seed(1)
        self.check(torchvision.models.resnet18(), (torch.randn(1, 3, 32, 32),), 1e-3, 6e-2)

    def test_mobilenet_v2(self):
        torch.manual_seed(2)
        self.check(torchvision.models.mobilenet_v2(), (torch.randn(1, 3, 32, 32),), 1e-3, 6e-2)

    def test_gpt_block(self):
        torch.manual_seed(3)
        self.check(GptBlock(), (torch.randint(0, 97, (2, 24)),), 1e-4, 3e-2)

    def test_transformer_encoder_layer(self):
        torch.manual_seed(4)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        self.check(layer, (torch.randn(2, 20, 64),), 1e-4, 3e-2)

    def test_rmsnorm_silu(self):
        torch.manual_seed(5)
        self.check(RmsNormSiluMlp(), (torch.randn(3, 40, 96),), 1e-4, 3e-2)

    def test_gelu_erf(self):
        torch.manual_seed(6)
        self.check(GeluErfMlp(), (torch.randn(150, 200),), 1e-4, 3e-2)


if __name__ == "__main__":
    unittest.main()
