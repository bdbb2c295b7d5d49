#!/usr/bin/env python3
"""Memory-bound kernels against the HBM roofline of one core: Softmax, LayerNorm and
RMSNorm (fp32 rows), and Transpose (tensor-engine block transposes).

Roofline time = (bytes the op must read + write: its input and output tensors, fp32)
/ the bandwidth one core's DMA can move: min(DMA engines x per-engine bandwidth, chip
HBM bandwidth), both read from `trnsim info -c CONFIG` (trn2: 16 x 27.2 GB/s =
435.2 GB/s < 2900 GB/s). % of roofline = roofline time / simulated time.

Usage: bench_memory.py [--config trn2] [--trnsim PATH] [--only softmax,layernorm,...]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    sys.exit("bench_memory: needs the onnx Python package")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = [(8192, 4096), (8192, 1024), (2048, 4096)]


def model(nodes, inputs, outputs, inits, path):
    g = helper.make_graph(nodes, "bench", inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def tensor(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def softmax(r, c, path):
    model([helper.make_node("Softmax", ["X"], ["Y"], axis=-1)], [tensor("X", (r, c))],
          [tensor("Y", (r, c))], [], path)


def layernorm(r, c, path):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.random(c, dtype=np.float32), n) for n in ("g", "b")]
    model([helper.make_node("LayerNormalization", ["X", "g", "b"], ["Y"], axis=-1,
                            epsilon=1e-5)],
          [tensor("X", (r, c))], [tensor("Y", (r, c))], inits, path)


def rmsnorm(r, c, path):
    # x / sqrt(mean(x^2) + eps) * g: fused to trn.RMSNorm by the compiler.
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.random(c, dtype=np.float32), "g"),
             numpy_helper.from_array(np.array(1e-6, np.float32), "e")]
    nodes = [helper.make_node("Mul", ["X", "X"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["ms", "e"], ["mse"]),
             helper.make_node("Sqrt", ["mse"], ["rt"]),
             helper.make_node("Div", ["X", "rt"], ["xn"]),
             helper.make_node("Mul", ["xn", "g"], ["Y"])]
    model(nodes, [tensor("X", (r, c))], [tensor("Y", (r, c))], inits, path)


def transpose(shape, perm):
    def build(path):
        out = [shape[p] for p in perm]
        model([helper.make_node("Transpose", ["X"], ["Y"], perm=list(perm))],
              [tensor("X", shape)], [tensor("Y", out)], [], path)
    return build


def bandwidth(trnsim, config):
    info = subprocess.run([trnsim, "info", "-c", config], check=True, capture_output=True,
                          text=True).stdout
    m = re.search(r"DMA per core\s+(\d+) engines x \d+ queues, ([\d.]+) GB/s each", info)
    h = re.search(r"HBM\s+[\d.]+ \w+, ([\d.]+) GB/s", info)
    if not m or not h:
        sys.exit("bench_memory: cannot read the DMA/HBM bandwidth from `trnsim info`")
    dma = int(m.group(1)) * float(m.group(2))
    return min(dma, float(h.group(1))), int(m.group(1)), float(m.group(2)), float(h.group(1))


def run(trnsim, config, path, tmp):
    stats = os.path.join(tmp, "stats.json")
    subprocess.run([trnsim, "run", path, "-c", config, "--no-functional", "--stats", stats],
                   check=True, capture_output=True, text=True)
    with open(stats) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", "-c", default="trn2")
    ap.add_argument("--trnsim", default=os.environ.get(
        "TRNSIM_BIN", os.path.join(ROOT, "build", "runtime", "trnsim")))
    ap.add_argument("--only", default="", help="comma-separated: softmax,layernorm,rmsnorm,"
                    "transpose")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    bw, engines, per, hbm = bandwidth(args.trnsim, args.config)
    print(f"roofline bandwidth ({args.config}): min({engines} DMA engines x {per} GB/s, "
          f"HBM {hbm} GB/s) = {bw:.1f} GB/s per core")
    cases = []
    for name, fn in (("softmax", softmax), ("layernorm", layernorm), ("rmsnorm", rmsnorm)):
        for r, c in SHAPES:
            cases.append((name, f"[{r},{c}]", lambda p, fn=fn, r=r, c=c: fn(r, c, p),
                          2 * r * c * 4))
    for shape, perm in (((4096, 4096), (1, 0)), ((2048, 1000), (1, 0)),
                        ((16, 512, 512), (0, 2, 1)), ((8, 4, 128, 64), (0, 1, 3, 2))):
        n = int(np.prod(shape))
        cases.append(("transpose", f"{list(shape)} perm {list(perm)}", transpose(shape, perm),
                      2 * n * 4))
    print(f"{'op':<10} {'shape':<28} {'sim us':>9} {'roof us':>9} {'% roof':>7} "
          f"{'HBM MiB':>8} {'vec%':>5} {'act%':>5} {'pool%':>5} {'pe%':>5} {'dma%':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, label, build, nbytes in cases:
            if only and name not in only:
                continue
            path = os.path.join(tmp, "m.onnx")
            build(path)
            s = run(args.trnsim, args.config, path, tmp)
            sim_us = s["simulated_ns"] / 1e3
            roof_us = nbytes / bw / 1e3  # bytes / (GB/s) = ns
            hbm_mib = (s["hbm"]["read_bytes"] + s["hbm"]["write_bytes"]) / 2**20
            e = s["engines"]
            print(f"{name:<10} {label:<28} {sim_us:9.1f} {roof_us:9.1f} "
                  f"{100 * roof_us / sim_us:6.1f}% {hbm_mib:8.1f} "
                  f"{e['vector']['active_pct']:5.1f} {e['scalar']['active_pct']:5.1f} "
                  f"{e['gpsimd']['active_pct']:5.1f} {e['tensor']['active_pct']:5.1f} "
                  f"{s['dma']['active_pct']:5.1f}")


if __name__ == "__main__":
    main()
