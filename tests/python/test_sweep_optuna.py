"""Tests of `strategy: optuna` (runtime/python/trnsim/sweep/optuna_search.py).

The sweeps run against test_sweep.py's stub simulator (simulated_ns = 1000 + 1e15 / HBM
B/s; hbm.latency 101ns fails), except OptunaReal, which runs the trnsim binary on a
small generated ONNX matmul.
Run: PYTHONPATH=runtime/python TRNSIM_BIN=build/runtime/trnsim \
     python3 tests/python/test_sweep_optuna.py
Exit 77 (skipped) when the real binary, yaml, numpy or optuna are missing.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from skip_unless import require  # noqa: E402

require(("optuna",))

from test_sweep import PY, PYDIR, REAL_BIN, StubBase, optional, read_rows, wait_for  # noqa: E402

from trnsim.sweep.config import Schema  # noqa: E402
from trnsim.sweep.optuna_search import (hypervolume, objectives,  # noqa: E402
                                        random_params, search_space)
from trnsim.sweep.spec import Spec, SpecError  # noqa: E402

import numpy as np  # noqa: E402

HEAD = {"base": "tiny", "workloads": [{"onnx": "m.onnx"}]}


def by_search(rows):
    out = {"optuna": [], "random": []}
    for r in rows:
        out[r["search"]].append(r)
    return out


def front(outdir, method):
    import csv
    with open(os.path.join(outdir, f"pareto_{method}.csv")) as f:
        return list(csv.DictReader(f))


class OptunaUnits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = Schema.from_binary(REAL_BIN)

    def spec(self, **data):
        return Spec(dict(HEAD, strategy="optuna", **data))

    def test_spec_errors(self):
        axes = {"hbm.bandwidth": ["100GB/s", "200GB/s"]}
        with self.assertRaisesRegex(SpecError, "samples: strategy optuna needs a positive "
                                    "integer point budget"):
            self.spec(axes=axes)
        with self.assertRaisesRegex(SpecError, "samples: strategy optuna"):
            self.spec(axes=axes, samples=0)
        with self.assertRaisesRegex(SpecError, "optuna: only with strategy optuna"):
            Spec(dict(HEAD, axes=axes, optuna={"batch": 2}))
        with self.assertRaisesRegex(SpecError, "optuna: unknown key 'batches'"):
            self.spec(axes=axes, samples=4, optuna={"batches": 2})
        with self.assertRaisesRegex(SpecError, "optuna.batch: expected a positive integer"):
            self.spec(axes=axes, samples=4, optuna={"batch": 0})
        with self.assertRaisesRegex(SpecError, "zip: not with strategy optuna"):
            self.spec(samples=4, zip=[{"core.tensor.rows": [32], "core.tensor.cols": [32]}])
        with self.assertRaisesRegex(SpecError, "points: not with strategy optuna"):
            self.spec(samples=4, axes=axes, points=[{"core.tensor.rows": 32}])
        # Defaults: rounds of 2; a third of the budget starts the model, at least 1.
        self.assertEqual(self.spec(axes=axes, samples=12).optuna, {"batch": 2, "startup": 4})
        self.assertEqual(self.spec(axes=axes, samples=2).optuna, {"batch": 2, "startup": 1})

    def test_bad_axes_name_the_key(self):
        def space(axes):
            return search_space(self.spec(samples=4, axes=axes), self.schema)
        with self.assertRaisesRegex(SpecError, "axes: hbm.bandwidth: range: expected"):
            space({"hbm.bandwidth": {"range": ["100GB/s"]}})
        with self.assertRaisesRegex(SpecError, "core.tensor.throttle: a boolean key takes a "
                                    "list"):
            space({"core.tensor.throttle": {"range": [False, True]}})
        with self.assertRaisesRegex(SpecError, "hbm.bandwidth: empty value list"):
            space({"hbm.bandwidth": []})
        with self.assertRaisesRegex(SpecError, "hbm.latency: a log scale needs a positive"):
            space({"hbm.latency": {"range": ["0ns", "1us"], "scale": "log"}})
        with self.assertRaisesRegex(SpecError, "core.tensor.rows.*expected a list of values"):
            space({"core.tensor.rows": 32})

    def test_space_maps_onto_the_random_values(self):
        sp = search_space(self.spec(samples=4, axes={
            "hbm.latency": ["100ns", "0.1us", "200ns"],
            "core.sbuf.partition_size": {"range": ["48KiB", "192KiB"], "step": "16KiB"},
            "core.dma.engines": {"range": [1, 16], "scale": "log"},
            "hbm.bandwidth": {"range": ["100GB/s", "1.6TB/s"], "scale": "log"}}), self.schema)
        lat, sbuf, dma, bw = sp
        # 100ns and 0.1us are one value: two choices.
        self.assertEqual(lat.dist.choices, (1e-07, 2e-07))
        # (192 - 48) / 16 = 9 steps: indices 0..9 -> 48KiB + k x 16KiB.
        self.assertEqual((sbuf.dist.low, sbuf.dist.high), (0, 9))
        self.assertEqual([sbuf.to_value(k) for k in (0, 1, 9)], [48 << 10, 64 << 10, 192 << 10])
        self.assertTrue(dma.dist.log)
        self.assertEqual((dma.dist.low, dma.dist.high), (1, 16))
        self.assertEqual(bw.to_value(1e11 * 1.0000000000001), 1e11)  # canonical 12 digits
        a = random_params(sp, np.random.default_rng([0, 1]))
        b = random_params(sp, np.random.default_rng([0, 1]))
        self.assertEqual(a, b)
        self.assertIn(a["hbm.latency"], (1e-07, 2e-07))
        self.assertTrue(0 <= a["core.sbuf.partition_size"] <= 9)
        self.assertTrue(1 <= a["core.dma.engines"] <= 16)
        self.assertTrue(1e11 <= a["hbm.bandwidth"] <= 1.6e12)

    def test_latency_is_the_geometric_mean_over_points(self):
        import hashlib
        from types import SimpleNamespace
        with tempfile.TemporaryDirectory() as d:
            def point(name, ns, status="ok"):
                pdir = os.path.join(d, name)
                os.makedirs(pdir)
                data = json.dumps({"simulated_ns": ns}).encode()
                Path(pdir, "stats.json").write_bytes(data)
                Path(pdir, "status.json").write_text(json.dumps(
                    {"status": status, "simulated_ns": ns,
                     "stats_sha256": hashlib.sha256(data).hexdigest()}))
                return SimpleNamespace(dir=pdir, error=None, cost=7.5)
            a, b, bad = point("a", 1000.0), point("b", 4000.0), point("c", 1.0, "failed")
            # sqrt(1000 x 4000) = sqrt(4e6) = 2000 ns; the cost is the config's.
            lat, cost = objectives([a, b])
            self.assertAlmostEqual(lat, 2000.0, places=9)
            self.assertEqual(cost, 7.5)
            self.assertEqual(objectives([a]), (1000.0, 7.5))
            self.assertIsNone(objectives([a, bad]))  # a failed point: no objectives

    def test_hypervolume_arithmetic(self):
        # Front (1,4), (2,2), (3,1) below the reference (5,5), as vertical strips:
        #   x in [1,2): y from 4 to 5 -> 1 x 1 = 1
        #   x in [2,3): y from 2 to 5 -> 1 x 3 = 3
        #   x in [3,5): y from 1 to 5 -> 2 x 4 = 8          total 12
        front = [(2, 2), (1, 4), (3, 1)]
        self.assertEqual(hypervolume(front, (5, 5)), 12.0)
        # A dominated point (4,3) and one outside the box (6,0) add nothing.
        self.assertEqual(hypervolume(front + [(4, 3), (6, 0)], (5, 5)), 12.0)
        # One point: the rectangle to the reference, (5-1) x (5-4) = 4.
        self.assertEqual(hypervolume([(1, 4)], (5, 5)), 4.0)
        self.assertEqual(hypervolume([], (5, 5)), 0.0)


class OptunaStub(StubBase):
    def runs(self):
        """Stub `run` processes so far (each pid file holds its arguments)."""
        return sum(1 for p in self.pids.iterdir() if p.read_text().startswith("run"))

    def test_dry_run_prints_budget_axes_and_the_random_baseline(self):
        body = ("strategy: {}\nsamples: 5\nseed: 3\naxes:\n"
                "  hbm.bandwidth: {{range: [100GB/s, 1.6TB/s], scale: log}}\n"
                "  core.sbuf.partition_size: [32KiB, 64KiB]\n")
        p = self.sweep(self.spec(body.format("optuna")), "--dry-run", check=0)
        self.assertIn("budget 5 configs x 1 workloads x 1 precisions = 5 points per method",
                      p.stdout)
        self.assertIn("hbm.bandwidth: 100GB/s .. 1.6TB/s, log", p.stdout)
        self.assertIn("core.sbuf.partition_size: one of 32KiB, 64KiB", p.stdout)
        self.assertIn("adaptive: points chosen during the run", p.stdout)
        # With no constraint and no repeat, the baseline is the spec run as random.
        r = self.sweep(self.spec(body.format("random"), name="random.yaml"), "--dry-run",
                       check=0)
        def ids(text):
            return [line.split(" id ")[1] for line in text.splitlines() if " id " in line]
        self.assertEqual(len(ids(r.stdout)), 5)
        self.assertEqual(ids(p.stdout), ids(r.stdout))
        self.assertEqual(list(self.pids.iterdir()), [])  # a dry run runs nothing

    def test_seeded_budget_constraints_and_resume(self):
        body = ("strategy: optuna\nsamples: 6\nseed: {}\noptuna: {{batch: 2, startup: 2}}\n"
                "axes:\n  hbm.bandwidth: {{range: [100GB/s, 1.6TB/s], scale: log}}\n"
                "  core.sbuf.partition_size: [32KiB, 64KiB, 128KiB]\n"
                "constraints: [hbm.bandwidth <= 800GB/s]\n")
        spec = self.spec(body.format(7))
        p = self.sweep(spec, "-j", "2", out="a", check=0)
        self.assertIn("compare: optuna ", p.stdout)
        a = read_rows(self.dir / "a")
        self.assertEqual(self.runs(), len({r["id"] for r in a}))
        groups = by_search(a)
        for m in ("optuna", "random"):
            rows = groups[m]
            # The budget: 6 distinct configs per method, all allowed by the constraint.
            self.assertEqual(len(rows), 6)
            self.assertEqual(len({r["id"] for r in rows}), 6)
            self.assertEqual(sorted(int(r["trial"]) for r in rows), list(range(6)))
            self.assertTrue(all(float(r["p.hbm.bandwidth"]) <= 8e11 for r in rows))
            self.assertEqual({r["status"] for r in rows}, {"ok"})
            f = front(self.dir / "a", m)
            self.assertGreaterEqual(len(f), 1)
            self.assertEqual(list(f[0])[:3], ["search", "trial", "points"])
            # Both objectives on the front: no front config is dominated by any row.
            for x in f:
                c, t = float(x["cost"]), float(x["latency_ns"])
                self.assertFalse(any(float(r["cost"]) <= c and float(r["m.simulated_ns"]) < t
                                     for r in rows), x)
        res = json.loads((self.dir / "a" / "search.json").read_text())
        self.assertEqual(res["budget"], 6)
        self.assertGreaterEqual(res["baseline_draws"], 6)
        # Same seed, another folder and -j 1: the same points in the same order.
        self.sweep(spec, "-j", "1", out="b", check=0)
        key = lambda rows: [(r["search"], r["trial"], r["id"]) for r in rows]  # noqa: E731
        self.assertEqual(key(read_rows(self.dir / "b")), key(a))
        # Another seed: other optuna points.
        self.sweep(self.spec(body.format(8), name="seed8.yaml"), "-j", "2", out="c", check=0)
        self.assertNotEqual({r["id"] for r in by_search(read_rows(self.dir / "c"))["optuna"]},
                            {r["id"] for r in groups["optuna"]})
        # Resume: the replayed search asks the same configs; every point is a cache hit.
        before = self.runs()
        p = self.sweep(spec, "-j", "2", out="a", check=0)
        self.assertIn("ran 0 points", p.stdout)
        self.assertEqual(self.runs(), before)
        strip = lambda rows: [{k: v for k, v in r.items() if k != "host_seconds"}  # noqa: E731
                              for r in rows]
        self.assertEqual(strip(read_rows(self.dir / "a")), strip(a))

    def test_killed_search_resumes_on_the_same_points(self):
        # hbm.latency 105ns at a gate: 4 of the 10 points finish, the next is held; then
        # the runner is killed with SIGKILL. The rerun replays the seeded search from the
        # cache and ends with the points of an uninterrupted run.
        import signal
        spec = self.spec("strategy: optuna\nsamples: 5\nseed: 2\naxes:\n  hbm.latency: [105ns]\n"
                         "  hbm.bandwidth: {range: [100GB/s, 1.6TB/s], scale: log}\n")
        out = self.dir / "out"
        gate = self.dir / "gate"
        gate.mkdir()
        proc = subprocess.Popen([PY, "-m", "trnsim.sweep", spec, "-o", str(out), "-j", "2"],
                                env=dict(self.env, STUB_GATE=str(gate), STUB_FREE="4"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            done = lambda: len(list(out.glob("points/*/status.json")))  # noqa: E731
            self.assertTrue(wait_for(lambda: done() == 4 and any(gate.glob("blocked-*"))
                                     or proc.poll() is not None),
                            "the search did not reach 4 finished points and a held one")
            self.assertIsNone(proc.poll(), "the runner exited before it was killed")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        self.assertTrue(wait_for(lambda: not self.survivors()), "a stub outlived the runner")
        finished = len(list(out.glob("points/*/status.json")))
        self.assertEqual(finished, 4)
        self.env["STUB_SLOW"] = "0.01"
        p = self.sweep(spec, "-j", "2", check=0)
        self.assertIn(f"{finished} cached", p.stdout)
        self.sweep(spec, "-j", "2", out="fresh", check=0)
        key = lambda rows: [(r["search"], r["trial"], r["id"]) for r in rows]  # noqa: E731
        self.assertEqual(key(read_rows(out)), key(read_rows(self.dir / "fresh")))
        self.assertEqual(len(read_rows(out)), 10)

    def test_shared_points_run_once_in_a_small_space(self):
        # 3 configs, budget 4: each method finds all 3, stops at its ask limit, and the 3
        # points both picked run once.
        spec = self.spec("strategy: optuna\nsamples: 4\nseed: 0\n"
                         "axes:\n  hbm.bandwidth: [100GB/s, 200GB/s, 400GB/s]\n")
        p = self.sweep(spec, "-j", "2", check=0)
        self.assertIn("random baseline: 3 of 4 configs", p.stderr)
        self.assertIn("optuna: 3 of 4 configs in 180 asks", p.stderr)  # 20 x 4 + 100
        self.assertIn("ran 3 points", p.stdout)
        self.assertEqual(self.runs(), 3)
        groups = by_search(read_rows(self.dir / "out"))
        self.assertEqual({r["id"] for r in groups["optuna"]}, {r["id"] for r in groups["random"]})
        self.assertEqual(len(groups["optuna"]), 3)
        # Every config is on both fronts: more bandwidth costs more and runs faster. The
        # fronts are equal, and so are the hypervolumes.
        res = json.loads((self.dir / "out" / "search.json").read_text())
        hv = {m: res["methods"][m]["hypervolume"] for m in ("optuna", "random")}
        self.assertEqual(hv["optuna"], hv["random"])
        self.assertEqual(res["hypervolume_ratio"], 1.0)
        self.assertEqual(len(front(self.dir / "out", "optuna")), 3)
        # Its arithmetic: latency = 1000 + 1e15 / B/s ns; the reference is 1.1 x the worst.
        lat = {bw: 1000 + 1e15 / bw for bw in (1e11, 2e11, 4e11)}
        costs = {float(r["p.hbm.bandwidth"]): float(r["cost"]) for r in groups["random"]}
        ref = (1.1 * max(costs.values()), 1.1 * lat[1e11])
        self.assertAlmostEqual(res["reference"]["latency_ns"], ref[1])
        expect = hypervolume([(costs[bw], lat[bw]) for bw in lat], ref)
        self.assertAlmostEqual(hv["random"] / expect, 1.0, places=9)

    def test_failed_configs_are_on_no_front(self):
        # hbm.latency 101ns makes the stub fail: 2 of the 4 configs fail for both methods.
        spec = self.spec("strategy: optuna\nsamples: 4\nseed: 1\naxes:\n"
                         "  hbm.latency: [100ns, 101ns]\n  hbm.bandwidth: [100GB/s, 200GB/s]\n")
        p = self.sweep(spec, "-j", "2", check=1)
        self.assertIn("2 failed (error 2)", p.stdout)
        res = json.loads((self.dir / "out" / "search.json").read_text())
        for m in ("optuna", "random"):
            self.assertEqual(res["methods"][m]["configs"], 4)
            self.assertEqual(res["methods"][m]["ok_configs"], 2)
            for x in front(self.dir / "out", m):
                self.assertEqual(round(float(x["p.hbm.latency"]) * 1e9), 100)
        p = self.sweep(spec, "-j", "2", check=1)
        self.assertIn("ran 0 points", p.stdout)
        self.assertIn("2 points failed before and were skipped", p.stdout)

    def test_bad_spec_exits_2_before_running(self):
        spec = self.spec("strategy: optuna\nsamples: 4\naxes:\n"
                         "  hbm.bandwidth: {range: [100GB/s], scale: log}\n")
        p = self.sweep(spec, check=2)
        self.assertIn("spec.yaml: axes: hbm.bandwidth: range: expected [low, high]", p.stderr)
        self.assertEqual(list(self.pids.iterdir()), [])


@optional("onnx")
class OptunaReal(unittest.TestCase):
    def test_small_real_search_writes_both_fronts(self):
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        with tempfile.TemporaryDirectory(prefix="sweep-optuna-") as d:
            w = numpy_helper.from_array(
                np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32), "w")
            g = helper.make_graph(
                [helper.make_node("MatMul", ["x", "w"], ["y"]),
                 helper.make_node("Relu", ["y"], ["output"])], "mm",
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 256])],
                [helper.make_tensor_value_info("output", TensorProto.FLOAT, [256, 256])], [w])
            onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
                      d + "/mm.onnx")
            spec = Path(d) / "s.yaml"
            spec.write_text(textwrap.dedent("""\
                base: tiny
                workloads: [{onnx: mm.onnx}]
                timing_only: true
                strategy: optuna
                samples: 3
                seed: 0
                axes:
                  core.tensor.rows: [32, 64, 128]
                  core.tensor.cols: [32, 128]
                  core.tensor.tile_size: [32]
                """))
            env = dict(os.environ, PYTHONPATH=str(PYDIR), TRNSIM_BIN=REAL_BIN)
            p = subprocess.run([PY, "-m", "trnsim.sweep", str(spec), "-o", d + "/out", "-j",
                                "2"], env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("compare: optuna ", p.stdout)
            rows = read_rows(d + "/out")
            self.assertEqual({r["status"] for r in rows}, {"ok"})
            self.assertEqual(len(by_search(rows)["optuna"]), 3)
            ns = {r["id"][:16]: float(r["m.simulated_ns"]) for r in rows}
            for m in ("optuna", "random"):
                f = front(d + "/out", m)
                self.assertGreaterEqual(len(f), 1)
                for x in f:
                    # One workload: a config's latency is its point's simulated time.
                    self.assertEqual(float(x["latency_ns"]), ns[x["points"]])
                    self.assertTrue(math.isfinite(float(x["cost"])))
                costs = [float(x["cost"]) for x in f]
                self.assertEqual(costs, sorted(costs))


if __name__ == "__main__":
    unittest.main()
