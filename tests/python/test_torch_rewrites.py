"""Ops the compiler rewrites for the chip (the decompose graph pass): torch.einsum,
F.interpolate (nearest, bilinear, bicubic, trilinear) and InstanceNorm / GroupNorm, exported
by torch and run through `trnsim run` (trnsim.torch.run with fallback=False: an op
left on the host fails the test), against eager PyTorch.

Error = max |trnsim - eager| / max |eager|: below 1e-4 in fp32, 3e-2 in bf16 (the
matmul operands, interpolation weights included, rounded to bf16).
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
    import torch.nn.functional as F
    import trnsim.torch as tt


@unittest.skipIf(bool(MISSING), f"not installed: {', '.join(MISSING)}")
class Rewrites(unittest.TestCase):
    def check(self, fn, inputs, what):
        if isinstance(fn, nn.Module):
            fn.eval()
        with torch.no_grad():
            want = fn(*inputs)
        for p, tol in (("fp32", 1e-4), ("bf16", 3e-2)):
            with self.subTest(what=what, precision=p):
                out, rep = tt.run(fn, inputs, config="tiny", precision=p, fallback=False)
                err = rel_err(out, want)
                print(f"{what} {p}: error {err:.2e}, simulated {rep.simulated_us:.1f} us",
                      file=sys.stderr)
                self.assertEqual(rep.fallback_ops, [])
                self.assertGreater(rep.simulated_ns, 0)
                self.assertLess(err, tol)

    def test_einsum(self):
        torch.manual_seed(0)
        r = torch.randn
        cases = [
            ("bhqd,bhkd->bhqk", r(2, 3, 5, 8), r(2, 3, 7, 8)),  # attention scores
            ("bhqk,bhkd->bqhd", r(2, 3, 5, 7), r(2, 3, 7, 8)),  # attention output
            ("ij,jk->ik", r(6, 9), r(9, 4)),
            ("bij->bji", r(2, 3, 4)),
            ("bij->b", r(2, 3, 4)),
            ("i,j->ij", r(5), r(6)),
            ("ijk,jil->kl", r(2, 3, 4), r(3, 2, 5)),
            ("...ij,...jk->...ik", r(2, 1, 3, 4), r(5, 4, 6)),
            ("bn,anm,bm->ba", r(2, 3), r(4, 3, 5), r(2, 5)),  # bilinear, three operands
            ("bii->bi", r(2, 5, 5)),  # diagonal
            ("ii", r(6, 6)),  # trace
        ]
        for eq, *xs in cases:
            self.check(lambda *t, eq=eq: torch.einsum(eq, *t), tuple(xs), f"einsum {eq}")

    def test_interpolate(self):
        torch.manual_seed(1)
        x = torch.randn(2, 3, 6, 7)
        cases = [
            ("nearest scale 2", dict(scale_factor=2, mode="nearest")),
            ("nearest size 9x10", dict(size=(9, 10), mode="nearest")),
            ("nearest size 4x5 (down)", dict(size=(4, 5), mode="nearest")),
            ("bilinear scale 2", dict(scale_factor=2, mode="bilinear", align_corners=False)),
            ("bilinear scale 2 align_corners",
             dict(scale_factor=2, mode="bilinear", align_corners=True)),
            ("bilinear size 11x5", dict(size=(11, 5), mode="bilinear", align_corners=False)),
            ("bilinear size 11x5 align_corners",
             dict(size=(11, 5), mode="bilinear", align_corners=True)),
            ("bicubic scale 2", dict(scale_factor=2, mode="bicubic", align_corners=False)),
            ("bicubic size 11x5 align_corners",
             dict(size=(11, 5), mode="bicubic", align_corners=True)),
        ]
        for what, kw in cases:
            self.check(lambda t, kw=kw: F.interpolate(t, **kw), (x,), what)
        self.check(lambda t: F.interpolate(t, size=13, mode="linear"), (torch.randn(2, 3, 6),),
                   "linear 1-D size 13")
        self.check(lambda t: F.interpolate(t, scale_factor=2, mode="trilinear"),
                   (torch.randn(1, 2, 3, 4, 5),), "trilinear scale 2")
        self.check(lambda t: F.interpolate(t, scale_factor=2, mode="nearest"),
                   (torch.randn(1, 2, 3, 4, 5),), "nearest 3-D scale 2")

    def test_norms(self):
        torch.manual_seed(2)
        inorm = nn.InstanceNorm2d(6, affine=True)
        gnorm = nn.GroupNorm(3, 6)
        for m in (inorm, gnorm):  # parameters other than the initial ones and zeros
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
        x = torch.randn(2, 6, 9, 11) * 3 + 1
        self.check(inorm, (x,), "InstanceNorm2d affine")
        self.check(nn.InstanceNorm2d(6), (x,), "InstanceNorm2d")
        self.check(gnorm, (x,), "GroupNorm(3, 6)")
        self.check(nn.InstanceNorm1d(4, affine=True), (torch.randn(3, 4, 20),), "InstanceNorm1d")
        self.check(nn.GroupNorm(2, 4), (torch.randn(1, 4, 3, 4, 5),), "GroupNorm 3-D")


if __name__ == "__main__":
    unittest.main()
