"""The benchmark models of examples/models.py (llama_layer, gpt2_stack) at small shapes
against eager PyTorch, every op on the chip; and scripts/bench_models.py end to end
on them (compile with --timings, timing-only and functional runs, figures parsed).

Tolerances, error = max |trnsim - eager| / max |eager|: fp32 1e-4 (another summation
order, fp32-accurate transcendentals), bf16 3e-2 (matmul operands rounded to bf16, as
in test_torch_models.py for one block). Exits 77 when numpy or torch is missing (fails
under CI=true).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from _helpers import ROOT, expect_matches_eager, needs

sys.path.insert(0, ROOT)  # examples.models

# Run as a script: exit 77, or 1 under CI=true, when one is missing.
MISSING = needs(("numpy", "torch"), __name__)
if not MISSING:
    import torch
    import trnsim.torch as tt
    from examples.models import gpt2_stack, llama_decode, llama_layer

LLAMA = dict(seq=32, d=128, heads=4, ff=256)
GPT2 = dict(layers=2, seq=24, d=64, heads=4, ff=128)
DECODE = dict(batch=3, ctx=300, d=256, heads=4, ff=1024)  # gate, up: N = 2 PSUM chunks


class Models(unittest.TestCase):
    def check(self, build, kw):
        expect_matches_eager(self, *build(**kw))

    def test_llama_layer(self):
        self.check(llama_layer, LLAMA)

    def test_gpt2_stack(self):
        self.check(gpt2_stack, GPT2)

    def test_llama_decode(self):
        # The layer's output and the new token's key and value, every op on the chip
        # (the attention reads the cache and the new token as separate inputs).
        expect_matches_eager(self, *llama_decode(**DECODE))

    def test_causal(self):
        # The last position's output depends on earlier ones, the first one's not on later.
        module, (x,) = llama_layer(**LLAMA)
        y = x.clone()
        y[0, -1] += 1.0
        with torch.no_grad():
            a, b = module(x), module(y)
        self.assertTrue(torch.equal(a[0, :-1], b[0, :-1]))
        self.assertFalse(torch.equal(a[0, -1], b[0, -1]))


class Bench(unittest.TestCase):
    def test_script(self):
        spec = lambda name, kw: name + ":" + ",".join(f"{k}={v}" for k, v in kw.items())
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "bench.json")
            r = subprocess.run(
                [sys.executable, os.path.join(ROOT, "scripts", "bench_models.py"),
                 spec("llama_layer", LLAMA), spec("gpt2_12", GPT2), "--passes", "--json", out],
                capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(out) as f:
                res = json.load(f)
        self.assertEqual([x["model"] for x in res], ["llama_layer", "gpt2_12"])
        self.assertEqual(res[1]["args"], GPT2)
        for x in res:
            self.assertNotIn("error", x)
            self.assertGreater(x["instructions"], 0)
            self.assertGreater(x["compile_rss_mib"], 0)
            for phase in ("import", "lower", "tile.schedule", "tile.insert_sync", "codegen",
                          "total"):
                self.assertIn(phase, x["passes"])
            for mode in ("timing", "functional"):
                self.assertGreater(x[mode]["latency_ms"], 0)
                self.assertGreater(x[mode]["te_active_pct"], 0)
                self.assertGreater(x[mode]["dma_active_pct"], 0)
                self.assertIn("mfu_pct", x[mode])
            # Timing-only and functional runs simulate the same time.
            self.assertEqual(x["timing"]["latency_ms"], x["functional"]["latency_ms"])
        self.assertIn("tile.keep_on_chip", r.stdout)

    def test_sgemm(self):
        # --functional-only --sgemm: no timing-only run; the host sgemm's rate and the
        # functional run's time over the sgemm time of the same FLOPs.
        spec = "llama_layer:" + ",".join(f"{k}={v}" for k, v in LLAMA.items())
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "bench.json")
            r = subprocess.run(
                [sys.executable, os.path.join(ROOT, "scripts", "bench_models.py"), spec,
                 "--functional-only", "--sgemm", "--no-timings", "--json", out],
                capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(out) as f:
                res = json.load(f)
        wall, cpu = res["host_sgemm_gflops"]
        self.assertGreater(wall, 0)
        self.assertGreater(cpu, 0)
        (x,) = res["models"]
        self.assertNotIn("timing", x)
        f = x["functional"]
        self.assertGreater(f["gflop"], 0)
        self.assertGreater(f["cpu_s"], 0)
        self.assertAlmostEqual(f["sgemm_cpu_s"], f["gflop"] / cpu, delta=0.01)
        self.assertAlmostEqual(f["ratio_cpu"], f["cpu_s"] / f["sgemm_cpu_s"],
                               delta=0.01 * f["ratio_cpu"] + 0.01)
        self.assertIn("host sgemm", r.stdout)

    def test_threads_give_the_same_run(self):
        # A functional run with the matmuls on worker threads: the same output bytes,
        # simulated time and statistics as with one thread.
        module, inputs = llama_layer(**LLAMA)
        trnsim = os.environ.get("TRNSIM_BIN", os.path.join(ROOT, "build", "runtime", "trnsim"))
        with tempfile.TemporaryDirectory() as d:
            onnx_path, prog = os.path.join(d, "m.onnx"), os.path.join(d, "m.tbin")
            tt._export(tt._exportable(module, 1), inputs, onnx_path, ["input_0"], ["output"])
            r = subprocess.run([trnsim, "compile", onnx_path, "-o", prog], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            runs = {}
            for n in (1, 3):
                out = os.path.join(d, f"out{n}")
                r = subprocess.run([trnsim, "run", prog, "--random-inputs", "--threads", str(n),
                                    "--output-dir", out, "--stats-text",
                                    os.path.join(d, f"stats{n}.txt")],
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                with open(os.path.join(out, "output.npy"), "rb") as f:
                    npy = f.read()
                with open(os.path.join(d, f"stats{n}.txt")) as f:
                    stats = [line for line in f if "host_seconds" not in line]
                report = [line for line in r.stdout.splitlines()
                          if "host time" not in line and "wrote" not in line]
                runs[n] = (npy, stats, report)
        self.assertEqual(runs[1][0], runs[3][0])
        self.assertEqual(runs[1][1], runs[3][1])
        self.assertEqual(runs[1][2], runs[3][2])

    def test_unknown_model(self):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_models.py"),
                            "bert"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unknown model 'bert'", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
