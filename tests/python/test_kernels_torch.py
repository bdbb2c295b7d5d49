"""trnsim.kernels inside PyTorch: example kernels registered as custom operators
(torch.ops.trnsim_kernels.*) in a module's forward, computed by numpy (simulate) and
by the simulator (benchmark), against eager PyTorch; and models whose forward calls
them, exported to ONNX and run by trnsim.torch.run with the kernels spliced into the
model's program (class TorchRun).
Exit 77 (skipped) when numpy, torch, onnx or the binary are missing.

Tolerances (error = max |trnsim - eager| / max |eager|, eager = plain PyTorch ops):
fp32 1e-4 (another summation order); precision bf16 3e-2 (the Linear's operands are
rounded to bf16, 8 significant bits, K = 64).
"""

import os
import sys
import tempfile
import unittest
from pathlib import Path

from skip_unless import require

REPO = Path(__file__).resolve().parents[2]
BIN = os.environ.get("TRNSIM_BIN") or str(REPO / "build" / "runtime" / "trnsim")
require(("numpy", "torch", "onnx"), BIN)
os.environ.setdefault("TRNSIM_BIN", BIN)

import onnx  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(REPO / "runtime" / "python"))
sys.path.insert(0, str(REPO))
import trnsim.kernels as tk  # noqa: E402
import trnsim.torch  # noqa: E402
from examples.kernels import attention, layernorm, matmul, softmax  # noqa: E402
from trnsim._cli import TrnsimError  # noqa: E402


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

    def test_matmul_and_attention_examples_as_ops(self):
        # The examples layer norm and softmax do not cover, as operators in both modes,
        # against eager torch: the four matmul steps (lhsT^T @ rhs) and causal attention.
        torch.manual_seed(1)
        a, b = torch.randn(512, 256), torch.randn(512, 1024)
        q, k, v = (torch.randn(256, 64) for _ in range(3))
        mask = torch.ones(256, 256).tril().bool()
        s = (q @ k.T / 8.0).masked_fill(~mask, float("-inf"))
        want_att = torch.softmax(s, dim=-1) @ v
        for mode in ("simulate", "benchmark"):
            for name, kern in matmul.VARIANTS.items():
                kw = {"bm": 2, "bn": 2, "bk": 2} if name == "blocked" else {}
                op = kern.torch_op(mode=mode, config="trn1", name=f"mm_{name}_{mode}", **kw)
                with self.subTest(mode=mode, kernel=name), torch.no_grad():
                    want = a.T @ b
                    err = ((op(a, b) - want).abs().max() / want.abs().max()).item()
                    self.assertLess(err, 1e-4)
            op = attention.attention.torch_op(mode=mode, config="trn1", name=f"att_{mode}")
            with self.subTest(mode=mode, kernel="attention"), torch.no_grad():
                err = ((op(q, k, v) - want_att).abs().max() / want_att.abs().max()).item()
                self.assertLess(err, 1e-4)

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


def rel_err(got, want):
    return ((got.float() - want.float()).abs().max() / want.float().abs().max()).item()


class Mlp(torch.nn.Module):
    """Linear -> layer norm (kernel) -> Linear -> softmax (kernel), on [B, S, D]
    inputs: the kernels see the rows flattened (a Reshape in the graph)."""

    def __init__(self, config="trn1"):
        super().__init__()
        self.lin1 = torch.nn.Linear(64, 96)
        self.ln = torch.nn.LayerNorm(96)
        self.lin2 = torch.nn.Linear(96, 80)
        self.ln_op = layernorm.layernorm.torch_op(config=config, eps=self.ln.eps)
        self.sm_op = softmax.softmax.torch_op(config=config)

    def forward(self, x):
        h = self.lin1(x)
        h = self.ln_op(h.reshape(-1, h.shape[-1]), self.ln.weight, self.ln.bias)
        h = self.lin2(torch.relu(h))
        return self.sm_op(h).reshape(x.shape[0], x.shape[1], -1)

    def eager(self, x):  # the same model in plain PyTorch ops
        return torch.softmax(self.lin2(torch.relu(self.ln(self.lin1(x)))), dim=-1)


@tk.kernel
def too_big(x):
    # Two tiles that each fit the SBUF but not together: the tracer takes it, the
    # compiler's memory allocation refuses it.
    out = tk.output(x.shape, x.dtype)
    cols = tk.limits().sbuf_bytes // 4 // 2 + 64
    a = tk.zeros([128, cols])
    b = tk.zeros([128, cols])
    tk.store(out, tk.add(a[:, :8], b[:, :8]))  # ERR:sbuf
    return out


@tk.kernel
def half_sbuf_each(x):
    # x + 0 through two tiles of almost half a partition's SBUF each (of the config
    # the kernel is traced for).
    out = tk.output(x.shape, x.dtype)
    cols = tk.limits().sbuf_bytes // 4 // 2 - 256
    a = tk.zeros([128, cols])
    b = tk.zeros([128, cols])
    n = x.shape[1]
    tk.store(out, tk.add(tk.load(x), tk.add(a[:, :n], b[:, :n])))
    return out


@tk.kernel
def two_outs(x):
    a = tk.output(x.shape, x.dtype, name="a")
    b = tk.output(x.shape, x.dtype, name="b")
    t = tk.load(x)
    tk.store(a, tk.mul(t, 2.0))
    tk.store(b, tk.add(t, 1.0))
    return b, a  # not in the order they were declared


def marked_line(tag):
    for i, line in enumerate(Path(__file__).read_text().splitlines(), start=1):
        if line.rstrip().endswith(f"# ERR:{tag}"):
            return i
    raise AssertionError(f"no line marked ERR:{tag}")


class TorchRun(unittest.TestCase):
    """trnsim.torch.run on models with kernel operators: the kernels run on the chip."""

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.model = Mlp()
        with torch.no_grad():
            cls.model.ln.weight.normal_()
            cls.model.ln.bias.normal_()
        cls.x = torch.randn(2, 65, 64)  # 130 rows: a full and a partial tile

    def test_export_writes_the_kernel_node(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            torch.onnx.export(self.model, (self.x,), path, opset_version=17)
            m = onnx.load(path)
        nodes = [n for n in m.graph.node if n.domain == "trnsim.kernels"]
        self.assertEqual([n.op_type for n in nodes], ["layernorm", "softmax"])
        attrs = {a.name: a.s.decode() for a in nodes[0].attribute}
        self.assertTrue(attrs["tir"].startswith("kernel layernorm\n"), attrs["tir"][:80])
        self.assertIn("tensor x [130,96] fp32 input", attrs["tir"])
        self.assertEqual(attrs["inputs"], "x,gamma,beta")
        self.assertEqual(attrs["outputs"], "y")
        self.assertIn("trnsim.kernels", [o.domain for o in m.opset_import])

    def test_fp32_matches_eager_on_the_chip(self):
        out, report = trnsim.torch.run(self.model, (self.x,), config="trn1", precision="fp32")
        with torch.no_grad():
            want = self.model.eager(self.x)
        self.assertEqual(out.shape, want.shape)
        self.assertLess(rel_err(out, want), 1e-4)
        self.assertEqual(report.fallback_ops, [])  # the kernel nodes did not fall back
        self.assertGreater(report.simulated_ns, 0)

    def test_bf16_matches_eager(self):
        out, report = trnsim.torch.run(self.model, (self.x,), config="trn1", precision="bf16")
        with torch.no_grad():
            want = self.model.eager(self.x)
        self.assertLess(rel_err(out, want), 3e-2)
        self.assertEqual(report.fallback_ops, [])

    def test_kernel_traced_for_the_run_config(self):
        # Made for trn2 (224 KiB of SBUF per partition), run on trn1 (192 KiB): the
        # kernel fills the SBUF of the config it is traced for, so it compiles only
        # when the export traces it for trn1.
        op = half_sbuf_each.torch_op(config="trn2")
        x = torch.randn(128, 8)
        out, report = trnsim.torch.run(lambda x: op(x * 2), (x,), config="trn1",
                                       precision="fp32")
        self.assertLess(rel_err(out, x * 2), 1e-6)
        self.assertEqual(report.fallback_ops, [])

    def test_bf16_model(self):
        # bf16 parameters and activations: the kernel is traced for bf16 tensors.
        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(32, 48)
                self.op = softmax.softmax.torch_op(config="trn1")

            def forward(self, x):
                return self.op(torch.relu(self.lin(x)))

        torch.manual_seed(1)
        m = M().bfloat16()
        x = torch.randn(70, 32).bfloat16()
        out, report = trnsim.torch.run(m, (x,), config="trn1", precision="bf16")
        self.assertEqual(out.dtype, torch.bfloat16)
        with torch.no_grad():
            want = torch.softmax(torch.relu(m.lin(x).float()), dim=-1)
        self.assertLess(rel_err(out, want), 3e-2)
        self.assertEqual(report.fallback_ops, [])

    def test_outputs_bound_in_return_order(self):
        op = two_outs.torch_op(n_outputs=2, config="trn1")
        x = torch.randn(50, 16)
        out, report = trnsim.torch.run(lambda x: (lambda p, q: p * 10 + q)(*op(x)), (x,),
                                       config="trn1", precision="fp32")
        self.assertLess(rel_err(out, (x + 1) * 10 + x * 2), 1e-6)
        self.assertEqual(report.fallback_ops, [])

    def test_beside_a_host_fallback(self):
        # GatherElements runs on the host; the kernel node stays on the chip.
        op = softmax.softmax.torch_op(config="trn1")
        x = torch.randn(40, 24)
        idx = torch.arange(23, -1, -1).expand(40, 24)
        out, report = trnsim.torch.run(lambda x: op(torch.gather(x, 1, idx) * 0.1), (x,),
                                       config="trn1", precision="fp32")
        want = torch.softmax(torch.gather(x, 1, idx) * 0.1, dim=-1)
        self.assertLess(rel_err(out, want), 1e-4)
        self.assertEqual(report.fallback_ops, ["GatherElements"])

    def test_a_kernel_the_compiler_refuses_names_the_node(self):
        op = too_big.torch_op(config="trn1")
        x = torch.randn(128, 8)
        with self.assertRaises(TrnsimError) as e:
            trnsim.torch.run(lambda x: op(x + 1), (x,), config="trn1", precision="fp32")
        msg = str(e.exception)
        self.assertIn("bytes per partition of sbuf", msg)
        self.assertRegex(msg, r"node '[^']*' \(op trn\.TileKernel\)")
        self.assertIn(f"at {os.path.basename(__file__)}:{marked_line('sbuf')}", msg)  # its line


if __name__ == "__main__":
    unittest.main()
