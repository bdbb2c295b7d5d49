"""GPT-2 and ViT forms on the chip: a small torchvision VisionTransformer (patch
embedding Conv, nn.MultiheadAttention) and the GPT-2 stack of examples/models.py
compile to fused attention (trn.Attention, one per layer), the ViT's patch Conv to a
MatMul, and no Split/Slice copies of the fused q/k/v projection are left; the ViT's
outputs match eager PyTorch (fp32 1e-4, bf16 3e-2 of the largest output, as
test_bench_models.py). Exits 77 when numpy, torch or torchvision is missing (fails
under CI=true).
"""

import re
import sys
import unittest

from _helpers import ROOT, compile_printing_after, expect_matches_eager, needs

sys.path.insert(0, ROOT)  # examples.models

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch", "torchvision"), __name__)
if not MISSING:
    import torch
    import torchvision
    from examples.models import gpt2_stack


def small_vit():
    torch.manual_seed(0)
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                 num_heads=2, hidden_dim=64, mlp_dim=128,
                                                 num_classes=10).eval()
    torch.nn.init.normal_(model.heads.head.weight)  # torchvision starts it at zero
    return model, (torch.randn(2, 3, 32, 32),)


def ops_after_fuse_patterns(module, inputs):
    """{op: count} of the graph after fuse_patterns, from `trnsim compile --print-after`."""
    r = compile_printing_after(module, inputs, "fuse_patterns")
    ops = {}
    for m in re.finditer(r"= ([A-Za-z.]+)\(", r.stdout + r.stderr):
        ops[m.group(1)] = ops.get(m.group(1), 0) + 1
    return ops


class Vit(unittest.TestCase):
    def test_fused_forms(self):
        ops = ops_after_fuse_patterns(*small_vit())
        self.assertEqual(ops.get("trn.Attention"), 2, ops)
        self.assertNotIn("Conv", ops)
        self.assertNotIn("Slice", ops)
        self.assertNotIn("Softmax", ops)

    def test_matches_eager(self):
        expect_matches_eager(self, *small_vit())


class Gpt2(unittest.TestCase):
    def test_fused_forms(self):
        ops = ops_after_fuse_patterns(*gpt2_stack(layers=2, seq=24, d=64, heads=4, ff=128))
        self.assertEqual(ops.get("trn.Attention"), 2, ops)
        self.assertNotIn("Split", ops)
        self.assertNotIn("Softmax", ops)


if __name__ == "__main__":
    unittest.main()
