#!/usr/bin/env python3
"""GEMM benchmark of the compiler: an ONNX MatMul of two inputs, compiled by
`trnsim run MODEL.onnx` and simulated timing-only (--no-functional) on one core.
Prints the simulated time, the GEMM's utilisation of the tensor-engine peak
(useful FLOPs 2*M*K*N over simulated time and the config's peak for the operand
type), tensor-engine active %, HBM traffic and host time.

The issue's target: bf16 [4096,8192] @ [8192,8192] on trn1 (the defaults) at
>= 85 % of peak (the vendor's hand-tuned kernel reaches 85.2 % on hardware).

usage: scripts/bench_gemm.py [--m M --k K --n N] [--config trn1] [--dtype bf16|fp32]
                             [--precision P] [--trnsim PATH]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_model(path, m, k, n, dtype):
    import onnx
    from onnx import TensorProto, helper
    t = {"bf16": TensorProto.BFLOAT16, "fp32": TensorProto.FLOAT}[dtype]
    g = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["Y"])], "gemm",
        [helper.make_tensor_value_info("A", t, [m, k]),
         helper.make_tensor_value_info("B", t, [k, n])],
        [helper.make_tensor_value_info("Y", t, [m, n])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--m", type=int, default=4096)
    ap.add_argument("--k", type=int, default=8192)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--config", default="trn1")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"],
                    help="element type of the ONNX inputs and output [bf16]")
    ap.add_argument("--precision", default="bf16", help="trnsim --precision [bf16]")
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build", "runtime", "trnsim"))
    a = ap.parse_args()
    if not os.access(a.trnsim, os.X_OK):
        sys.exit(f"bench_gemm: {a.trnsim} not found; build first (bash scripts/build.sh)")
    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "gemm.onnx")
        stats = os.path.join(d, "stats.json")
        write_model(model, a.m, a.k, a.n, a.dtype)
        t0 = time.time()
        r = subprocess.run([a.trnsim, "run", model, "-c", a.config, "--precision", a.precision,
                            "--no-functional", "--stats", stats],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wall = time.time() - t0
        if r.returncode != 0:
            sys.exit(f"bench_gemm: trnsim failed:\n{r.stdout}")
        s = json.load(open(stats))
    ns = s["simulated_ns"]
    peak_tflops = s["tflops"] / (s["mfu_pct"] / 100.0)  # config peak for the dtype used
    useful = 2.0 * a.m * a.k * a.n
    util = useful / (ns * 1e-9) / (peak_tflops * 1e12)
    te = s["engines"]["tensor"]
    print(f"gemm {a.dtype} [{a.m},{a.k}] @ [{a.k},{a.n}] on {a.config} (--precision "
          f"{a.precision}, timing-only)")
    print(f"  simulated time        {ns / 1e6:.3f} ms ({s['instructions']} instructions)")
    print(f"  GEMM utilisation      {100 * util:.1f} % of the {peak_tflops:.1f} TFLOP/s peak "
          f"({useful / 1e9:.1f} GFLOP useful)")
    print(f"  tensor engine active  {te['active_pct']:.1f} %")
    print(f"  HBM                   read {s['hbm']['read_bytes'] / 2**20:.0f} MiB, "
          f"write {s['hbm']['write_bytes'] / 2**20:.0f} MiB, MBU {s['hbm']['mbu_pct']:.1f} %")
    print(f"  host time             {wall:.1f} s wall (compile + simulate), "
          f"{s['host_seconds']:.2f} s simulating")


if __name__ == "__main__":
    main()
