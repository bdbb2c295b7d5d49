"""Tests of `trnsim fuzz` (runtime/python/trnsim/fuzz): the graph generator, the
shrinker, the outcome classifier and process handling, the float64 oracle, the
regression models in tests/e2e/fuzz_regressions/, and a short fuzz run.
Run: PYTHONPATH=runtime/python TRNSIM_BIN=build/runtime/trnsim python3 tests/python/test_fuzz.py
Exit 77 (skipped) when onnx/numpy or the trnsim binary are missing.
"""

import collections
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path

from skip_unless import require

REPO = Path(__file__).resolve().parents[2]
PYDIR = REPO / "runtime" / "python"
sys.path.insert(0, str(PYDIR))
BIN = os.environ.get("TRNSIM_BIN") or str(REPO / "build" / "runtime" / "trnsim")
REGRESS = REPO / "tests" / "e2e" / "fuzz_regressions"

require(("onnx", "numpy"), BIN)
os.environ["TRNSIM_BIN"] = BIN

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from trnsim.fuzz import gen, oracle, runner, shrink  # noqa: E402


def all_shapes(m):
    """Every value's shape after shape inference (inputs, intermediates, outputs)."""
    inf = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    for vi in list(inf.graph.input) + list(inf.graph.value_info) + list(inf.graph.output):
        yield vi.name, [d.dim_value for d in vi.type.tensor_type.shape.dim]


class Generator(unittest.TestCase):
    def test_same_seed_same_case(self):
        for seed in (0, 7, 12345):
            a, b = gen.generate(seed), gen.generate(seed)
            self.assertEqual(a.model.SerializeToString(), b.model.SerializeToString())
            self.assertEqual((a.precision, a.config, a.sets, a.ops),
                             (b.precision, b.config, b.sets, b.ops))
        self.assertNotEqual(gen.generate(1).model.SerializeToString(),
                            gen.generate(2).model.SerializeToString())

    def test_models_are_checker_valid_and_bounded(self):
        for seed in range(150):
            c = gen.generate(seed)
            onnx.checker.check_model(c.model, full_check=True)
            m = c.model
            self.assertEqual(m.opset_import[0].version, gen.OPSET)
            self.assertGreaterEqual(len(m.graph.output), 1)
            for name, shape in all_shapes(m):
                # A big case has 4x the elements of MAX_NUMEL at most.
                self.assertLessEqual(int(np.prod(shape)), 4 * gen.MAX_NUMEL, (seed, name))
            # Every output is computed: no graph input or constant is an output.
            computed = {o for n in m.graph.node for o in n.output}
            for o in m.graph.output:
                self.assertIn(o.name, computed, seed)

    def test_coverage_over_seeds(self):
        ops, node_ops, dims = collections.Counter(), collections.Counter(), collections.Counter()
        precisions, configs, outs, nodes = set(), set(), [], []
        for seed in range(400):
            c = gen.generate(seed)
            ops.update(c.ops)
            node_ops.update(n.op_type for n in c.model.graph.node)
            for _, s in all_shapes(c.model):
                dims.update(s)
            precisions.add(c.precision)
            configs.add(c.config)
            outs.append(len(c.model.graph.output))
            nodes.append(len(c.model.graph.node))
        for op in ("MatMul", "Gemm", "Softmax", "LogSoftmax", "LayerNormalization", "RMSNorm",
                   "Gelu", "ReduceSum", "ReduceMean", "ReduceMax", "Conv", "MaxPool",
                   "Reshape", "Transpose", "Concat", "Split", "Slice", "Pad", "Expand", "Tile",
                   "Gather", "GatherIdx", "Add", "Div", "Pow", "Exp", "Log", "where", "cast"):
            self.assertIn(op, ops)
        # Tails around a 128-partition tile and odd sizes.
        for d in (1, 3, 127, 129, 200):
            self.assertIn(d, dims)
        self.assertEqual(precisions, {"fp32", "bf16", "fp8"})
        self.assertTrue({"tiny", "trn2"} <= configs)
        self.assertGreater(max(outs), 2)  # several outputs sometimes
        self.assertEqual(min(nodes), 1)
        self.assertGreater(max(nodes), 20)  # guards and patterns add nodes

    def test_diamonds_reuse_values(self):
        # Some graph reads one computed value from two nodes.
        found = False
        for seed in range(50):
            m = gen.generate(seed).model
            computed = {o for n in m.graph.node for o in n.output}
            reads = collections.Counter(i for n in m.graph.node for i in set(n.input)
                                        if i in computed)
            found = found or any(k > 1 for k in reads.values())
        self.assertTrue(found)

    def test_exclude(self):
        for seed in range(60):
            c = gen.generate(seed, exclude={"Pad", "MatMul", "Gemm"})
            self.assertFalse({"Pad", "MatMul", "Gemm"} & set(c.ops), seed)
            self.assertNotIn("Pad", {n.op_type for n in c.model.graph.node})

    def test_validate_args(self):
        c = gen.generate(3)
        a = c.validate_args()
        self.assertIn("--no-fallback", a)
        self.assertIn("--random-inputs=3", a)
        self.assertEqual(a[a.index("--precision") + 1], c.precision)


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


class Shrinker(unittest.TestCase):
    def test_shrinks_to_the_culprit(self):
        # A synthetic failure: "the graph still has a Softmax over a row longer than 8".
        def fails(m):
            shapes = dict(all_shapes(m))
            return any(n.op_type == "Softmax" and shapes[n.input[0]][-1] > 8 for n in m.graph.node)

        seed = next(s for s in range(100) if "Softmax" in gen.generate(s).ops and
                    len(gen.generate(s).model.graph.node) >= 6 and fails(gen.generate(s).model))
        big = gen.generate(seed).model
        tried = []

        def pred(m):
            onnx.checker.check_model(m, full_check=True)  # every variant tried is valid
            tried.append(m)
            return fails(m)

        small = shrink.shrink(big, pred)
        self.assertTrue(fails(small))
        self.assertEqual([n.op_type for n in small.graph.node], ["Softmax"])
        self.assertLess(shrink.size_of(small), shrink.size_of(big))
        # Dims shrank as far as the predicate allows: a row of 9..16 elements.
        row = dict(all_shapes(small))[small.graph.node[0].input[0]][-1]
        self.assertTrue(8 < row <= 16, row)
        self.assertGreater(len(tried), 3)

    def test_keeps_the_original_when_nothing_smaller_fails(self):
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [3, 4])], [vi("y", [3, 4])])
        out = shrink.shrink(m, lambda v: False)
        self.assertEqual(out.SerializeToString(), shrink.finalize(m).SerializeToString())

    def test_subst_dim_crops_weights_and_rewrites_shapes(self):
        w = np.arange(6 * 4, dtype=np.float32).reshape(6, 4)
        m = model([helper.make_node("MatMul", ["x", "w"], ["h"]),
                   helper.make_node("Reshape", ["h", "s"], ["y"])],
                  [vi("x", [2, 6])], [vi("y", [8])],
                  [numpy_helper.from_array(w, "w"), numpy_helper.from_array(
                      np.array([8], np.int64), "s")])
        v = shrink.finalize(shrink.subst_dim(m, 6, 3))
        self.assertIsNotNone(v)
        self.assertEqual([d.dim_value for d in v.graph.input[0].type.tensor_type.shape.dim],
                         [2, 3])
        np.testing.assert_array_equal(numpy_helper.to_array(v.graph.initializer[0]), w[:3])
        # 4 -> 2 also rewrites nothing in the shape argument 8: the product no longer
        # matches, so the variant is rejected rather than made invalid.
        self.assertIsNone(shrink.finalize(shrink.subst_dim(m, 4, 2)))

    def test_cut_and_bypass_make_valid_models(self):
        c = gen.generate(5)
        for phase in (shrink._cuts, shrink._bypasses, shrink._retargets, shrink._unbroadcasts):
            for v in phase(c.model):
                f = shrink.finalize(v)
                if f is not None:
                    onnx.checker.check_model(f, full_check=True)
                    self.assertLessEqual(len(f.graph.node), len(c.model.graph.node))


BAD = "FAIL (7 elements outside tolerance, first at 3)"
TABLE = textwrap.dedent(f"""\
    validate m.onnx on tiny (precision fp32; reference: the interpreter)
      output                     elements      max abs      max rel max abs (fp32)  result
      y                               100    3.000e-01    1.000e+00      3.000e-01  {BAD}
      z                                10    0.000e+00    0.000e+00      0.000e+00  pass
    """)


class Runner(unittest.TestCase):
    def test_classify(self):
        c = runner.classify
        self.assertEqual(c(0, "PASS\n", "").cls, "pass")
        o = c(1, TABLE + "FAIL: outputs differ\n", "")
        self.assertEqual(o.cls, "mismatch")
        self.assertIn("7 elements outside", o.message)
        self.assertEqual(o.mismatch_stats(), (7 / 110, False))
        poison = ("poisoned read of never-written chip.core0.sbuf partitions 1..4 bytes 0..3\n"
                  "  by chip.core0.dma3.q1 instruction 0: dma_copy ...\n"
                  "checks: 0 race(s), 1 poisoned read(s)\n")
        o = c(1, poison + TABLE.replace(BAD, "pass"), "")
        self.assertEqual(o.cls, "poison")
        self.assertIn("by chip.core0.dma3.q1", o.message)
        self.assertEqual(c(1, "race (write after read) on ...\nchecks: 2 race(s), 0 poisoned "
                              "read(s)\n", "").cls, "race")
        # "0 race(s)" in a clean summary is not a race.
        self.assertEqual(c(1, "checks: 0 race(s), 0 poisoned read(s)\n" + TABLE, "").cls,
                         "mismatch")
        o = c(1, "", "trnsim: error: simulation fault:\n  chip.core0.dma6.q1: instruction 42: x\n")
        self.assertEqual(o.cls, "error")
        self.assertIn("instruction 42", o.message)
        self.assertEqual(c(-11, "", "").cls, "crash")
        self.assertIn("SIGSEGV", c(-11, "", "").message)
        self.assertEqual(c(3, "", "boom").cls, "crash")
        self.assertEqual(c(None, "", "", timed_out=True).cls, "timeout")

    def test_signature_blanks_names_and_numbers(self):
        a = runner.classify(1, "", "trnsim: error: node 'n3_Add' needs 6144 bytes of [1x2]\n")
        b = runner.classify(1, "", "trnsim: error: node 'n9_Mul' needs 12288 bytes of [4x5]\n")
        self.assertEqual(a.signature(), b.signature())
        other = runner.classify(1, "", "trnsim: error: other\n")
        self.assertNotEqual(a.signature(), other.signature())

    def test_same_failure_rejects_a_new_blowup(self):
        orig = runner.classify(1, TABLE, "")
        inf_table = TABLE.replace("3.000e-01    1.000e+00", "      inf    1.000e+00")
        self.assertTrue(runner.classify(1, TABLE, "").same_failure(orig))
        self.assertFalse(runner.classify(1, inf_table, "").same_failure(orig))
        few = TABLE.replace("(7 elements", "(1 elements")
        self.assertFalse(runner.classify(1, few, "").same_failure(orig))

    def test_timeout_kills_the_process_group(self):
        with tempfile.TemporaryDirectory() as d:
            stub = Path(d) / "stub"
            pidfile = Path(d) / "child"
            stub.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nwait\n")
            stub.chmod(0o755)
            o = runner.run_validate(str(stub), "m.onnx", [], timeout=1.0)
            self.assertEqual(o.cls, "timeout")
            child = int(pidfile.read_text())
            for _ in range(600):  # the grandchild went with the group (a hang guard only)
                try:
                    os.kill(child, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                os.kill(child, signal.SIGKILL)
                self.fail("the grandchild survived the timeout")

    def test_refusal_is_recognised(self):
        # Sin has no lowering: refused, not an error.
        m = model([helper.make_node("Sin", ["x"], ["y"])], [vi("x", [3, 5])], [vi("y", [3, 5])])
        o = runner.validate_model(BIN, m, ["-c", "tiny", "--no-fallback", "--random-inputs=1"], 60)
        self.assertEqual(o.cls, "refused")
        m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [3, 5])], [vi("y", [3, 5])])
        self.assertEqual(runner.validate_model(
            BIN, m, ["-c", "tiny", "--no-fallback", "--random-inputs=1"], 60).cls, "pass")

    def test_summary_line(self):
        s = runner.Summary()
        for c in ("pass", "pass", "refused", "mismatch", "inexact", "timeout"):
            s.add(c)
        s.seconds = 2.0
        self.assertEqual(s.line(), "fuzz: 6 cases in 2.0 s (3.00 cases/s): 2 passed, 1 inexact, "
                         "1 refused, 2 failed (mismatch 1, timeout 1)")


class Oracle(unittest.TestCase):
    def test_to_bf16(self):
        x = np.array([1.0, 1.00390625, 1.01171875, -3.14159, 0.0], np.float32)
        # 1 + 2^-8 is a tie: to even (1.0); 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
        np.testing.assert_array_equal(oracle.to_bf16(x)[:3], [1.0, 1.0, 1.015625])
        self.assertEqual(oracle.to_bf16(x)[3], np.float32(-3.140625))

    def test_evaluate_matches_numpy(self):
        w = np.random.default_rng(0).uniform(-1, 1, (5, 3)).astype(np.float32)
        m = model([helper.make_node("MatMul", ["x", "w"], ["h"]),
                   helper.make_node("Softmax", ["h"], ["s"], axis=0),
                   helper.make_node("Slice", ["s", "st", "en", "ax", "sp"], ["y"])],
                  [vi("x", [4, 5])], [vi("y", [2, 3])],
                  [numpy_helper.from_array(w, "w")] +
                  [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
                   (("st", [-1]), ("en", [-100]), ("ax", [0]), ("sp", [-2]))])
        x = np.random.default_rng(1).uniform(-1, 1, (4, 5)).astype(np.float32)
        h = x.astype(np.float64) @ w
        e = np.exp(h - h.max(0))
        want = (e / e.sum(0))[[3, 1]]
        got = oracle.evaluate(m, {"x": x})["y"]
        np.testing.assert_allclose(got, want, rtol=1e-12)

    def test_judge(self):
        t = {"y": np.array([1.0, 2.0])}
        quiet = [{"y": np.array([1.0, 2.0 + 1e-9])}]
        self.assertTrue(oracle.judge({"y": np.array([1.0, 2.1])}, t, quiet, 1e-4, 1e-5)[0])
        self.assertFalse(oracle.judge({"y": np.array([1.0, 2.0 + 1e-6])}, t, quiet, 1e-4, 1e-5)[0])
        # An ill-conditioned graph: the noise model drifts as far as the simulator.
        loud = [{"y": np.array([1.0, 2.08])}]
        self.assertFalse(oracle.judge({"y": np.array([1.0, 2.1])}, t, loud, 1e-4, 1e-5)[0])

    def test_noise_model_separates_conditioning(self):
        # x - mean(x) over a nearly constant row, then normalised: rounding noise is
        # amplified; a plain sum is not.
        rows = model([helper.make_node("LayerNormalization", ["x", "g"], ["y"], epsilon=1e-12)],
                     [vi("x", [2, 64])], [vi("y", [2, 64])],
                     [numpy_helper.from_array(np.ones(64, np.float32), "g")])
        x = (1 + 1e-6 * np.random.default_rng(2).uniform(-1, 1, (2, 64))).astype(np.float32)
        t = oracle.evaluate(rows, {"x": x})["y"]
        n = oracle.evaluate(rows, {"x": x}, noise_seed=1)["y"]
        self.assertGreater(oracle._norm_err(n, t, 1e-4, 1e-5), 10)
        s = model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], [vi("x", [2, 64])],
                  [vi("y", [])])
        t = oracle.evaluate(s, {"x": x})["y"]
        n = oracle.evaluate(s, {"x": x}, noise_seed=1)["y"]
        self.assertLess(oracle._norm_err(n, t, 1e-4, 1e-5), 0.1)

    def test_oracle_agrees_with_the_simulator(self):
        # On passing cases the simulator is within tolerance of the float64 truth.
        for seed in range(1000, 1012):
            c = gen.generate(seed)
            if c.precision == "fp8":
                continue
            verdict, why = oracle.triage(BIN, c.model, c.validate_args(), 60, seed,
                                         self._fail_anyway)
            self.assertEqual(verdict, "noise", (seed, why))

    @staticmethod
    def _fail_anyway(binary, path, args, timeout):
        # validate, but reported as a mismatch so that triage judges the outputs.
        o = runner.run_validate(binary, path, args, timeout)
        if o.cls == "pass":
            o.cls = "mismatch"
        return o


class Regressions(unittest.TestCase):
    def test_fixed_regressions_pass(self):
        files = sorted(REGRESS.glob("*.onnx"))
        self.assertTrue(files, "no regression models")
        for f in files:
            args = runner.check_flags(BIN)
            side = f.with_suffix(".txt").read_text().splitlines()
            line = next(ln for ln in side if ln.startswith("args:"))
            self.assertIn("--no-fallback", line)
            with self.subTest(model=f.name):
                o = runner.run_validate(BIN, str(f), line[5:].split() + args, 120)
                self.assertEqual(o.cls, "pass", f"{f.name}: {o.message}")

    def test_replay_command(self):
        r = subprocess.run([sys.executable, "-m", "trnsim.fuzz", "--replay", str(REGRESS)],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, PYTHONPATH=str(PYDIR)))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"replayed (\d+) regression model\(s\): \1 passed, 0 failed")


class Short(unittest.TestCase):
    def test_short_run(self):
        r = subprocess.run([sys.executable, "-m", "trnsim.fuzz", "--seeds", "40", "--start", "3000",
                            "--no-shrink", "-q"], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, PYTHONPATH=str(PYDIR)))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"fuzz: 40 cases in [\d.]+ s \([\d.]+ cases/s\): \d+ passed, "
                                   r"\d+ inexact, 0 refused, 0 failed")


if __name__ == "__main__":
    unittest.main()
