"""Tests of the PyTorch front door (runtime/python/trnsim/torch.py) against the real
`trnsim` binary (TRNSIM_BIN, else the repo's build/). Run as a script: exits 77 (ctest's
skip code) when numpy, torch or onnx is not installed, and fails instead under CI=true
(skip_unless.py); `python3 -m unittest` skips each class instead. Nothing else skips.

Tolerances (error = max |trnsim - eager| / max |eager| unless said otherwise):
- fp32: the chip computes in fp32 with another summation order: rtol 1e-4 per element
  for the MLP; 1e-3 for the CNN / transformer (longer chains: conv-as-matmul, softmax,
  LayerNorm over 128).
- bf16: each matmul operand is rounded to bf16 (8 significant bits: relative error up to
  2^-9 ~ 0.2% per operand) and accumulated in fp32; through two or three layers with
  K <= 1024 the output error stays under BF16_TOL = 2% of the output's largest magnitude
  (5% for the CNN / transformer).
"""

import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
sys.path.insert(0, ROOT)

from skip_unless import missing_modules, require  # noqa: E402

NEEDED = ("numpy", "torch", "onnx")
if __name__ == "__main__":
    require(NEEDED)  # exit 77, or 1 under CI=true, when one is missing

# Only a missing package makes the classes skip (under `python3 -m unittest`); an
# installed package that fails to import is an error.
MISSING = missing_modules(NEEDED)
if MISSING:
    trnsim = torch = None
else:
    import torch
    from torch import nn

    import trnsim
    import trnsim.torch as tt
    from examples.models import mlp, small_cnn, transformer_block

BF16_TOL = 2e-2
needs_torch = unittest.skipIf(bool(MISSING), f"not installed: {', '.join(MISSING)}")


def small_mlp():
    # 2 * batch * (64*128 + 128*128 + 128*32) = 2 * 32 * 28672 = 1835008 matmul FLOPs
    return mlp(batch=32, d_in=64, hidden=128, d_out=32, seed=1)


def reversed_cols(rows, cols):
    """Indices for torch.gather(t, 1, ...) reversing t's columns: a GatherElements,
    which the chip does not run (the tests' host-fallback op)."""
    return torch.arange(cols - 1, -1, -1).expand(rows, cols)


def rel_err(a, b):
    return float((a.double() - b.double()).abs().max() / b.double().abs().max())


@needs_torch
class Mlp(unittest.TestCase):
    def test_fp32_matches_eager(self):
        model, (x,) = small_mlp()
        y, report = tt.run(model, (x,), config="trn2", precision="fp32")
        with torch.no_grad():
            ref = model(x)
        self.assertEqual(y.shape, ref.shape)
        self.assertEqual(y.dtype, torch.float32)
        torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-5)
        self.assertEqual(list(report.errors), ["output"])
        self.assertLess(report.errors["output"]["max_rel"], 1e-4)
        self.assertEqual(report.mfu_dtype, "fp32")
        self.assertEqual(report.fallback_ops, [])  # Gemm / Relu all on the chip

    def test_bf16_within_tolerance(self):
        model, (x,) = small_mlp()
        y, report = tt.run(model, (x,), precision="bf16")
        _, report32 = tt.run(model, (x,), precision="fp32")
        with torch.no_grad():
            ref = model(x)
        err = rel_err(y, ref)
        self.assertLess(err, BF16_TOL)
        self.assertAlmostEqual(report.max_rel_err, err, places=6)
        # bf16 rounding really happened: worse than the fp32 run, and bf16 is the
        # dtype MFU is measured against.
        self.assertGreater(report.max_abs_err, report32.max_abs_err)
        self.assertEqual(report.mfu_dtype, "bf16")

    def test_report_fields(self):
        model, (x,) = small_mlp()
        model.train()  # run() evaluates in eval mode and restores the modes after
        model[1].eval()
        with tempfile.TemporaryDirectory() as d:
            trace, stats = os.path.join(d, "t.json"), os.path.join(d, "sub", "s.json")
            _, r = tt.run(model, x, trace=trace, stats=stats)
            self.assertEqual([m.training for m in model], [True, False, True, True, True])
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
            self.assertTrue(any(e.get("name") == "matmul" for e in events))
            with open(stats) as f:
                self.assertEqual(json.load(f), r.stats)
        self.assertGreater(r.simulated_ns, 0)
        self.assertAlmostEqual(r.simulated_us, r.simulated_ns / 1e3)
        self.assertEqual(r.simulated_ns, r.stats["simulated_ns"])
        self.assertEqual(r.flops, 1835008)  # see small_mlp
        self.assertGreater(r.tflops, 0)
        self.assertAlmostEqual(r.tflops, r.flops / r.simulated_ns / 1e3, places=6)
        self.assertGreater(r.mfu_pct, 0)
        self.assertLessEqual(r.mfu_pct, 100)
        self.assertEqual(set(r.engine_active_pct),
                         {"tensor", "vector", "scalar", "gpsimd", "sync", "dma"})
        for engine, pct in r.engine_active_pct.items():
            self.assertGreaterEqual(pct, 0, engine)
            self.assertLessEqual(pct, 100, engine)
        self.assertGreater(r.engine_active_pct["tensor"], 0)
        # Weights (64*128 + 128*128 + 128*32 = 28672 values) are read at least once in
        # bf16; the output (32*32 fp32) is written.
        self.assertGreaterEqual(r.hbm_read_bytes, 28672 * 2)
        self.assertGreaterEqual(r.hbm_write_bytes, 32 * 32 * 4)
        # bytes per ns is GB/s
        self.assertAlmostEqual(r.hbm_gbps, (r.hbm_read_bytes + r.hbm_write_bytes) /
                               r.simulated_ns)
        self.assertGreater(r.mbu_pct, 0)
        self.assertLessEqual(r.mbu_pct, 100)
        self.assertEqual(r.fallback_ops, [])
        self.assertGreater(r.host_seconds, 0)
        self.assertGreaterEqual(r.wall_seconds, r.host_seconds)
        text = str(r)
        for word in ("simulated latency", "TFLOP/s", "MFU", "tensor", "GB/s",
                     "max error vs eager", "host time"):
            self.assertIn(word, text)

    def test_timing_only(self):
        model, (x,) = small_mlp()
        y, r = tt.run(model, (x,), functional=False)
        _, r_functional = tt.run(model, (x,))
        self.assertIsNone(y)
        self.assertEqual(r.errors, {})
        self.assertEqual(r.simulated_ns, r_functional.simulated_ns)  # same cycles

    def test_config_overrides_change_timing(self):
        model, (x,) = small_mlp()
        _, fast = tt.run(model, (x,), functional=False)
        _, slow = tt.run(model, (x,), functional=False, set={"hbm.bandwidth": "10GB/s"})
        self.assertGreater(slow.simulated_ns, fast.simulated_ns)


class TwoHeads(nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 32)
        self.b = nn.Linear(64, 48)

    def forward(self, x):
        h = self.a(x)
        return h, [torch.relu(self.b(x)), h * 2.0]


@needs_torch
class Outputs(unittest.TestCase):
    def test_nested_tuple_outputs(self):
        torch.manual_seed(3)
        model, x = TwoHeads().eval(), torch.randn(16, 64)
        out, report = tt.run(model, (x,), precision="fp32")
        with torch.no_grad():
            ref = model(x)
        self.assertIsInstance(out, tuple)
        self.assertIsInstance(out[1], list)
        self.assertEqual([t.shape for t in (out[0], *out[1])], [(16, 32), (16, 48), (16, 32)])
        torch.testing.assert_close(out[0], ref[0], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(out[1][0], ref[1][0], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(out[1][1], ref[1][1], rtol=1e-4, atol=1e-5)
        self.assertEqual(sorted(report.errors), ["output_0", "output_1", "output_2"])
        self.assertEqual(report.fallback_ops, [])


@needs_torch
class Backend(unittest.TestCase):
    def test_symbolic_traced_module(self):
        torch.manual_seed(4)
        model, x = TwoHeads().eval(), torch.randn(8, 64)
        gm = torch.fx.symbolic_trace(model)
        compiled = tt.backend(gm, [x])
        self.assertIsNone(compiled.last_report)
        out = compiled(x)
        with torch.no_grad():
            ref = model(x)
        self.assertIsInstance(out, tuple)
        self.assertLess(rel_err(out[0], ref[0]), BF16_TOL)
        self.assertLess(rel_err(out[1][0], ref[1][0]), BF16_TOL)
        self.assertIsInstance(compiled.last_report, trnsim.Report)
        self.assertGreater(compiled.last_report.simulated_ns, 0)
        self.assertEqual(compiled.last_report.fallback_ops, [])

    def test_make_backend_options(self):
        model, (x,) = small_mlp()
        compiled = tt.make_backend(precision="fp32", config="trn1")(
            torch.fx.symbolic_trace(model), [x])
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        self.assertEqual(compiled.last_report.config, "trn1")

    def test_cache_per_input_signature(self):
        # The first call with a signature exports and compiles; a second call with the
        # same shapes and dtypes only simulates the kept program; new shapes compile.
        model, (x,) = small_mlp()
        compiled = tt.make_backend(precision="fp32", config="tiny")(
            torch.fx.symbolic_trace(model), [x])
        exports = []
        real_export = tt._export

        def counting_export(*args, **kwargs):
            exports.append(args[2])
            return real_export(*args, **kwargs)

        with mock.patch.object(tt, "_export", counting_export):
            compiled(x)
            self.assertEqual(compiled.last_report.compiled, "compiled")
            x2 = torch.randn(x.shape)
            cmds = []
            real_run = subprocess.run

            def recording_run(cmd, *args, **kwargs):
                cmds.append(cmd)
                return real_run(cmd, *args, **kwargs)

            with mock.patch.object(subprocess, "run", recording_run):
                y2 = compiled(x2)
            self.assertEqual(compiled.last_report.compiled, "cached")
            self.assertEqual((len(exports), compiled.compiles), (1, 1))
            # One simulator call, `trnsim run` of the kept program: no compile.
            self.assertEqual([c[1:3] for c in cmds], [["run", cmds[0][2]]])
            self.assertTrue(cmds[0][2].endswith("model.tbin"), cmds[0])
            with torch.no_grad():
                self.assertLess(rel_err(y2, model(x2)), 1e-4)
            self.assertLess(compiled.last_report.max_rel_err, 1e-4)
            x3 = torch.randn(5, x.shape[1])
            y3 = compiled(x3)
            self.assertEqual(compiled.last_report.compiled, "compiled")
            self.assertEqual((len(exports), compiled.compiles), (2, 2))
            with torch.no_grad():
                self.assertLess(rel_err(y3, model(x3)), 1e-4)
            compiled(x.double().float())
            self.assertEqual(compiled.last_report.compiled, "cached")
            self.assertEqual(len(exports), 2)

    def test_unknown_option_is_refused(self):
        with self.assertRaisesRegex(TypeError, "unknown option.*precison"):
            tt.make_backend(precison="fp32")

    def test_cache_with_host_fallback(self):
        # A model with host fallback is no single program file: its export is kept and
        # `trnsim run` compiles it again on later calls.
        idx = reversed_cols(6, 10)

        def f(t):
            return torch.relu(torch.gather(t, 1, idx))
        x = torch.randn(6, 10)
        gm = torch.fx.symbolic_trace(f)
        compiled = tt.make_backend(precision="fp32", config="tiny")(gm, [x])
        with mock.patch.object(tt, "_export", wraps=tt._export) as export:
            compiled(x)
            self.assertEqual(compiled.last_report.compiled, "compiled")
            y = compiled(x * 2)
            self.assertEqual(compiled.last_report.compiled, "recompiled")
            self.assertEqual(export.call_count, 1)
        self.assertEqual(compiled.last_report.fallback_ops, ["GatherElements"])
        torch.testing.assert_close(y, f(x * 2), rtol=1e-4, atol=1e-4)

    def test_int_outputs_through_a_cached_program(self):
        # A compiled program holds integers as fp32: the cached path gives them back in
        # the eager dtype.
        def f(t):
            return (t > 0).sum(1), torch.clamp(t, -3, 3).round().long()
        x = torch.randn(4, 9) * 4
        compiled = tt.make_backend(precision="fp32", config="tiny")(torch.fx.symbolic_trace(f), [x])
        for k in range(2):
            out = compiled(x + k)
            want = f(x + k)
            for o, w in zip(out, want):
                self.assertEqual(o.dtype, w.dtype)
                self.assertTrue(torch.equal(o, w), (o, w))

    def test_torch_compile_registration(self):
        # Registered only from torch 2 on; checked with a stand-in registry so the
        # guard is exercised on torch 1.13 too.
        registered = []
        fake = types.ModuleType("torch._dynamo")
        fake.register_backend = lambda name: lambda fn: registered.append((name, fn)) or fn
        with mock.patch.dict(sys.modules, {"torch._dynamo": fake}):
            with mock.patch.object(torch, "__version__", "1.13.1"):
                tt._register_with_torch_compile()
            self.assertEqual(registered, [])
            with mock.patch.object(torch, "__version__", "2.1.0"):
                tt._register_with_torch_compile()
            self.assertEqual(registered, [("trnsim", tt.backend)])
        if int(torch.__version__.split(".")[0]) >= 2:
            dynamo = importlib.import_module("torch._dynamo")
            self.assertIn("trnsim", dynamo.list_backends())


@needs_torch
class Errors(unittest.TestCase):
    def test_cli_error_becomes_exception(self):
        model, (x,) = small_mlp()
        with self.assertRaises(trnsim.TrnsimError) as cm:
            tt.run(model, (x,), config="no_such_preset")
        self.assertIn("unknown preset 'no_such_preset'", cm.exception.message)
        self.assertIn("no_such_preset", str(cm.exception))
        self.assertEqual(cm.exception.returncode, 1)
        self.assertIsNone(cm.exception.unlowered_op)
        with self.assertRaisesRegex(trnsim.TrnsimError, "no.such.key: unknown key"):
            tt.run(model, (x,), set=["no.such.key=1"])

    def test_not_a_module_or_tensor(self):
        model, (x,) = small_mlp()
        with self.assertRaisesRegex(TypeError, "module is a int; give a torch.nn.Module"):
            tt.run(42, (x,))
        with self.assertRaisesRegex(TypeError, "example input 0 is a str"):
            tt.run(model, ("abc",))

    def test_missing_binary(self):
        model, (x,) = small_mlp()
        with mock.patch.dict(os.environ, {"TRNSIM_BIN": "/nonexistent/trnsim"}):
            with self.assertRaisesRegex(trnsim.TrnsimError, "TRNSIM_BIN=/nonexistent/trnsim"):
                tt.run(model, (x,))

    def test_timeout(self):
        model, (x,) = small_mlp()
        with self.assertRaisesRegex(trnsim.TrnsimError, "did not finish within"):
            tt.run(model, (x,), timeout=1e-4)

    def test_tracer_warning_is_shown(self):
        # A data-dependent branch is fixed at export: torch warns, and the warning
        # reaches the caller (the run itself goes on with the traced branch).
        def branchy(x):
            return x * 2 if bool(x.sum() > 0) else x - 1
        x = torch.ones(4, 8)
        with self.assertWarns(torch.jit.TracerWarning):
            out, _ = tt.run(branchy, (x,), config="tiny")
        self.assertTrue(torch.equal(out, x * 2))

    def test_unlowered_op_parsing(self):
        e = trnsim.TrnsimError
        self.assertEqual(e("lowering: node '/a/Slice' (op Slice): op type 'Slice' cannot be "
                           "lowered to the chip yet; lowerable: Abs").unlowered_op, "Slice")
        self.assertEqual(e("lowering: node '/c/Conv' (op trn.MatMulEpilogue): epilogue anchor "
                           "'Conv' is not lowered (only MatMul(%0, %1))").unlowered_op, "Conv")
        self.assertEqual(e("lowering: node 'n_CumSum_9' (op CumSum): the CumSum axis holds "
                           "8192 elements: rows that long do not stay resident in SBUF "
                           "(at most 3072)").unlowered_op, "CumSum")
        self.assertIsNone(e("x.onnx: cannot open file").unlowered_op)


class AddsOneInPlace(nn.Module if torch is not None else object):
    def forward(self, x):
        x.add_(1.0)
        return x * 2.0


class Scaled(nn.Module if torch is not None else object):
    """forward has parameters beyond the example inputs: defaults, a keyword-only one."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(24, 16)

    def forward(self, x, scale=2.0, shift=None, *, negate=False):
        y = self.lin(x) * scale
        if shift is not None:
            y = y + shift
        return -y if negate else y


class ScaledByDefault(nn.Module if torch is not None else object):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(24, 16)

    def forward(self, x, scale=2.0):
        return self.lin(x) * scale


@needs_torch
class InPlace(unittest.TestCase):
    """A module writing its input in place: the eager reference and the simulator both
    start from the caller's values, which stay as they were."""

    def test_add_in_place(self):
        torch.manual_seed(5)
        x = torch.randn(16, 40)
        before = x.clone()
        y, report = tt.run(AddsOneInPlace(), (x,), precision="fp32")
        torch.testing.assert_close(x, before, rtol=0, atol=0)
        torch.testing.assert_close(y, (before + 1.0) * 2.0, rtol=1e-6, atol=1e-6)
        self.assertLess(report.max_rel_err, 1e-6)  # eager saw the original values too
        self.assertEqual(report.fallback_ops, [])

    def test_inplace_relu_on_the_input(self):
        torch.manual_seed(6)
        model = nn.Sequential(nn.ReLU(inplace=True), nn.Linear(40, 8)).eval()
        x = torch.randn(16, 40)
        before = x.clone()
        y, report = tt.run(model, (x,), precision="fp32")
        torch.testing.assert_close(x, before, rtol=0, atol=0)  # negatives kept
        with torch.no_grad():
            want = before.clamp_min(0) @ model[1].weight.T + model[1].bias
        torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-5)
        self.assertEqual(report.fallback_ops, [])


@needs_torch
class Callables(unittest.TestCase):
    """Plain functions and lambdas run like modules; parameters of forward beyond the
    example inputs keep their Python defaults instead of becoming graph inputs."""

    def test_plain_function(self):
        def scaled_relu_matmul(a, b):
            return torch.relu(a @ b) * 0.5

        torch.manual_seed(7)
        a, b = torch.randn(32, 48), torch.randn(48, 24)
        y, report = tt.run(scaled_relu_matmul, (a, b), precision="fp32")
        torch.testing.assert_close(y, torch.relu(a @ b) * 0.5, rtol=1e-4, atol=1e-5)
        self.assertEqual(report.model, "scaled_relu_matmul")
        self.assertEqual(report.fallback_ops, [])

    def test_lambda(self):
        torch.manual_seed(8)
        x = torch.randn(8, 40)
        y, report = tt.run(lambda t: torch.sigmoid(t) + 1.0, x, precision="fp32")
        torch.testing.assert_close(y, torch.sigmoid(x) + 1.0, rtol=1e-5, atol=1e-5)
        self.assertEqual(report.model, "lambda")
        self.assertEqual(report.fallback_ops, [])

    def test_forward_defaults_are_not_graph_inputs(self):
        import onnx
        torch.manual_seed(9)
        x = torch.randn(12, 24)
        for model in (Scaled().eval(), ScaledByDefault().eval()):
            with self.subTest(model=type(model).__name__):
                y, report = tt.run(model, (x,), precision="fp32")
                with torch.no_grad():
                    want = (x @ model.lin.weight.T + model.lin.bias) * 2.0
                torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-5)
                self.assertEqual(report.fallback_ops, [])
                # The exported graph has the example input and nothing for the defaults.
                with tempfile.TemporaryDirectory() as d:
                    path = os.path.join(d, "m.onnx")
                    tt._export(tt._exportable(model, 1), (x,), path, ["x"], ["output"])
                    self.assertEqual([i.name for i in onnx.load(path).graph.input], ["x"])


@needs_torch
class OnChip(unittest.TestCase):
    """One op family per model, each on the chip: a regression that moved one to the
    host would show in fallback_ops. GatherElements, which the chip does not run, shows
    there."""

    def test_ops_do_not_fall_back(self):
        torch.manual_seed(10)
        w = torch.randn(64, 48)
        cases = {
            "Conv": (nn.Conv2d(4, 8, 3, padding=1), torch.randn(1, 4, 10, 10)),
            "Softmax": (nn.Softmax(-1), torch.randn(6, 40)),
            "MatMul": (lambda t: t @ w, torch.randn(20, 64)),
            "Linear": (nn.Linear(64, 48), torch.randn(20, 64)),
            "GELU": (nn.GELU(), torch.randn(16, 40)),
            "LayerNorm": (nn.LayerNorm(40), torch.randn(16, 40)),
        }
        for op, (model, x) in cases.items():
            with self.subTest(op=op):
                y, report = tt.run(model, (x,), precision="fp32")
                self.assertEqual(report.fallback_ops, [])
                self.assertGreater(report.simulated_ns, 0)
                with torch.no_grad():
                    self.assertLess(rel_err(y, model(x)), 1e-3)

    def test_host_fallback_is_reported(self):
        torch.manual_seed(11)
        x = torch.randn(16, 40)
        idx = reversed_cols(16, 40)
        y, report = tt.run(lambda t: torch.relu(torch.gather(t, 1, idx)), (x,), precision="fp32")
        self.assertEqual(report.fallback_ops, ["GatherElements"])
        torch.testing.assert_close(y, torch.relu(torch.gather(x, 1, idx)), rtol=1e-4, atol=1e-4)
        with self.assertRaises(trnsim.TrnsimError) as cm:
            tt.run(lambda t: torch.relu(torch.gather(t, 1, idx)), (x,), fallback=False)
        self.assertEqual(cm.exception.unlowered_op, "GatherElements")

    def test_fallback_report_agrees_with_the_cli(self):
        # The report of a run partly on the host: the ONNX node names, the link and
        # device shares of the simulated time, and the engine and DMA active % the CLI
        # prints.
        torch.manual_seed(12)
        x = torch.randn(32, 64)
        w = torch.randn(64, 48)
        idx = reversed_cols(32, 48)
        _, r = tt.run(lambda t: torch.gather(t @ w, 1, idx) @ w.T, (x,), precision="fp32",
                      config="tiny")
        self.assertEqual(r.fallback_ops, ["GatherElements"])
        self.assertEqual(r.fallback_nodes, [("GatherElements", "/GatherElements")])
        self.assertGreater(r.link_ns, 0)
        self.assertEqual(r.link_bytes, 2 * 32 * 48 * 4)
        self.assertAlmostEqual(r.simulated_ns, r.device_ns + r.link_ns, delta=1e-6 * r.simulated_ns)
        self.assertGreater(r.host_compute_seconds, 0)
        for key in ("dma", "sbuf", "psum", "chip", "flops_by_dtype", "engines", "hbm", "host"):
            self.assertIn(key, r.stats)
        cli = {}
        for line in r.text.splitlines():
            m = re.match(r"\s+(tensor|vector|scalar|gpsimd|sync|dma)\s+\d+\s+\S+ \S+\s+"
                         r"([0-9.]+)%", line)
            if m:
                cli[m.group(1)] = float(m.group(2))
        self.assertEqual(sorted(cli), sorted(r.engine_active_pct))
        self.assertGreater(r.engine_active_pct["dma"], 0)
        for e, pct in cli.items():
            self.assertAlmostEqual(r.engine_active_pct[e], pct, delta=0.051, msg=e)
        self.assertIn("host fallback", str(r))
        self.assertIn("GatherElements '/GatherElements'", str(r))

    def test_wholly_on_the_host(self):
        # Nothing on the device: the simulated time is the link time of the input down
        # and the output up, not zero; the device figures are all zero.
        x = torch.randn(16, 40)
        idx = reversed_cols(16, 40)
        _, r = tt.run(lambda t: torch.gather(t, 1, idx), (x,), precision="fp32", config="tiny")
        self.assertEqual(r.fallback_ops, ["GatherElements"])
        self.assertGreater(r.simulated_ns, 0)
        self.assertEqual(r.device_ns, 0)
        self.assertAlmostEqual(r.simulated_ns, r.link_ns, delta=1e-6 * r.link_ns)
        self.assertEqual(r.link_bytes, 2 * 16 * 40 * 4)
        self.assertEqual(r.instructions, 0)
        self.assertEqual(set(r.engine_active_pct.values()), {0.0})


@needs_torch
class ReportTree(unittest.TestCase):
    """Report read from a hand-made stats tree (the keys `trnsim run --stats` writes)."""

    TREE = {
        "simulated_ns": 2000.0, "instructions": 10, "flops": 4000000, "tflops": 2.0,
        "mfu_pct": 2.5, "host_seconds": 0.01, "flops_by_dtype": {"bf16": 3000000,
                                                                 "fp32": 1000000},
        "engines": {"tensor": {"active_pct": 40.0, "instructions": 4},
                    "vector": {"active_pct": 10.0, "instructions": 6}},
        "hbm": {"read_bytes": 3000, "write_bytes": 1000, "mbu_pct": 0.1},
        "dma": {"active_pct": 5.0},
    }

    def test_figures(self):
        r = trnsim.Report(self.TREE, config="tiny", precision="bf16", model="m",
                          errors={"y": {"max_abs": 0.5, "max_rel": 0.25}})
        self.assertEqual(r.simulated_us, 2.0)
        self.assertEqual(r.mfu_dtype, "bf16")  # the dtype with the most FLOPs
        self.assertEqual(r.engine_active_pct["tensor"], 40.0)
        self.assertEqual(r.engine_active_pct["gpsimd"], 0.0)  # absent engine: idle
        self.assertEqual(r.engine_active_pct["dma"], 5.0)
        self.assertEqual(r.hbm_gbps, 2.0)  # (3000 + 1000) B / 2000 ns
        self.assertEqual((r.max_abs_err, r.max_rel_err), (0.5, 0.25))
        self.assertEqual(r.fallback_ops, [])
        self.assertIn("host fallback         none", str(r))

    def test_fallback_section(self):
        for section in (["Gather", "TopK"], {"ops": ["Gather", "TopK"]},
                        [{"op": "Gather", "node": "/g"}, {"op_type": "TopK"}]):
            r = trnsim.Report(dict(self.TREE, fallback=section))
            self.assertEqual(r.fallback_ops, ["Gather", "TopK"], section)
            self.assertIn("Gather, TopK", str(r))
        # As the runtime writes it: ONNX op types and node names, and the host group.
        tree = dict(self.TREE, fallback={"nodes": [{"op": "Gather", "node": "/g"},
                                                   {"op": "TopK", "node": "/t"}]},
                    host={"device_ns": 1500.0, "compute_wall_seconds": 0.25,
                          "link": {"time_ns": 500.0, "bytes": 2048}})
        r = trnsim.Report(tree)
        self.assertEqual(r.fallback_ops, ["Gather", "TopK"])
        self.assertEqual(r.fallback_nodes, [("Gather", "/g"), ("TopK", "/t")])
        self.assertEqual((r.device_ns, r.link_ns, r.link_bytes, r.host_compute_seconds),
                         (1500.0, 500.0, 2048, 0.25))
        self.assertIn("Gather '/g', TopK '/t'", str(r))
        self.assertIn("device 1.500 us + link 500.0 ns (2.00 KiB); host compute 0.2500 s "
                      "wall clock, not simulated", str(r))

    def test_compare(self):
        from trnsim.report import compare
        e = compare([1.0, 2.5, -4.0], [1.0, 2.0, -4.0])
        self.assertEqual(e, {"max_abs": 0.5, "max_rel": 0.125})  # 0.5 / max|ref| 4


@needs_torch
class Cnn(unittest.TestCase):
    def test_bf16_and_fp32(self):
        model, (x,) = small_cnn(batch=2, size=16)
        y, report = tt.run(model, (x,), precision="bf16")
        with torch.no_grad():
            ref = model(x)
        self.assertEqual(y.shape, (2, 10))
        self.assertLess(rel_err(y, ref), 5e-2)
        self.assertGreater(report.flops, 0)
        self.assertEqual(report.fallback_ops, [])
        y32, report32 = tt.run(model, (x,), precision="fp32")
        self.assertLess(rel_err(y32, ref), 1e-3)
        self.assertEqual(report32.fallback_ops, [])


@needs_torch
class Transformer(unittest.TestCase):
    def test_bf16_and_fp32(self):
        model, (x,) = transformer_block(batch=1, seq=32, d_model=128, heads=4, ff=256)
        y, report = tt.run(model, (x,), precision="bf16")
        with torch.no_grad():
            ref = model(x)
        self.assertEqual(y.shape, (1, 32, 128))
        self.assertLess(rel_err(y, ref), 5e-2)
        self.assertGreater(report.flops, 0)
        self.assertEqual(report.fallback_ops, [])
        y32, report32 = tt.run(model, (x,), precision="fp32")
        self.assertLess(rel_err(y32, ref), 1e-3)
        self.assertEqual(report32.fallback_ops, [])


if __name__ == "__main__":
    unittest.main()
