"""LayerNorm folded into the Linears that read it: on the chip, a LayerNorm with a
non-trivial scale and bias feeding two Linears (and a small GPT-2 stack, whose
ln1 feeds q/k/v and ln2 the MLP) compiles to a trn.LayerNorm without parameters
(--print-after fuse_patterns) and still matches LayerNorm then Linear written in
numpy from the definitions and eager PyTorch (fp32 1e-4, bf16 3e-2 of the largest
output). Exits 77 when numpy or torch is missing (fails under CI=true).
"""

import re
import sys
import unittest

from _helpers import ROOT, compile_printing_after, expect_matches_eager, needs

sys.path.insert(0, ROOT)  # examples.models

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch"), __name__)
if not MISSING:
    import numpy as np
    import torch
    import trnsim.torch as tt
    from examples.models import gpt2_stack


class NormTwoLinears(torch.nn.Module if not MISSING else object):
    def __init__(self, d=96, n1=64, n2=80):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.a = torch.nn.Linear(d, n1)
        self.b = torch.nn.Linear(d, n2)

    def forward(self, x):
        y = self.ln(x)
        return torch.cat([self.a(y), self.b(y)], dim=-1)


def norm_block():
    torch.manual_seed(0)
    m = NormTwoLinears().eval()
    with torch.no_grad():  # a LayerNorm starts at scale 1, bias 0: make them matter
        m.ln.weight.uniform_(0.5, 1.5)
        m.ln.bias.uniform_(-0.5, 0.5)
    return m, (torch.randn(2, 70, 96) * 2 + 0.5,)


def numpy_reference(m, x):
    """LayerNorm (population variance, eps inside the sqrt) then the two Linears."""
    x = x.numpy().astype(np.float64)
    p = {k: v.detach().numpy().astype(np.float64) for k, v in m.state_dict().items()}
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + m.ln.eps) * p["ln.weight"] + p["ln.bias"]
    return np.concatenate([y @ p["a.weight"].T + p["a.bias"], y @ p["b.weight"].T + p["b.bias"]],
                          axis=-1)


def norms_after_fuse_patterns(module, inputs):
    """The trn.LayerNorm lines of the graph after fuse_patterns."""
    r = compile_printing_after(module, inputs, "fuse_patterns")
    return re.findall(r"trn\.LayerNorm\([^)]*\)", r.stdout)


class Fold(unittest.TestCase):
    def test_norm_has_no_parameters(self):
        for module, inputs in (norm_block(),
                               gpt2_stack(layers=2, seq=24, d=64, heads=4, ff=128)):
            norms = norms_after_fuse_patterns(module, inputs)
            self.assertTrue(norms)
            # ln_f of GPT-2 is the output: it keeps its scale and bias.
            folded = [n for n in norms if "," not in n]
            self.assertGreaterEqual(len(folded), len(norms) - 1, norms)

    def test_block_matches_numpy_and_eager(self):
        module, inputs = norm_block()
        want = numpy_reference(module, inputs[0])
        with torch.no_grad():
            eager = module(*inputs).numpy()
        self.assertLess(np.abs(eager - want).max() / np.abs(want).max(), 1e-5)
        for p, tol in (("fp32", 1e-4), ("bf16", 3e-2)):
            with self.subTest(precision=p):
                out, rep = tt.run(module, inputs, precision=p, fallback=False)
                self.assertEqual(rep.fallback_ops, [])
                err = float(np.abs(out.numpy() - want).max() / np.abs(want).max())
                self.assertLess(err, tol)

    def test_gpt2_matches_eager(self):
        expect_matches_eager(self, *gpt2_stack(layers=2, seq=24, d=64, heads=4, ff=128))


if __name__ == "__main__":
    unittest.main()
