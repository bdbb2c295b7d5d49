#!/usr/bin/python3
"""Simulated latency of the four matmul kernels of matmul.py at a large shape.

usage: examples/kernels/bench_matmul.py [-c CONFIG] [--shape M K N] [--dtype bf16]
                                        [--sample S] [--only NAME]... [--blocked K=V]...

Timing only (no data). The first three variants repeat the same work per M tile, so
by default 1/S of their M rows is simulated and the time scaled by S (--sample 1:
the whole kernel); the blocked one runs whole. Prints latency, tensor-engine active
%, achieved TFLOP/s and DMA active % per variant. --blocked K=V sets an integer
argument of matmul_blocked (bm, bn, bk, bufs; e.g. --blocked bk=16 --blocked bufs=1).
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "runtime", "python"))

import trnsim.kernels as tk  # noqa: E402
from examples.kernels import matmul  # noqa: E402


def bench(name, m, k, n, dtype, config, sample, args):
    kern = matmul.VARIANTS[name]
    kw = args if name == "blocked" else {}
    lim = tk.config_limits(config)
    # Sampled variants: at least one M block (2 tiles for block_free).
    block = lim.partitions * (2 if name == "block_free" else 1)
    rows = m if name == "blocked" or sample <= 1 else max(block, m // sample // block * block)
    t0 = time.time()
    _, rep = kern.benchmark(tk.spec([k, rows], dtype), tk.spec([k, n], dtype), config=config,
                            functional=False, **kw)
    scale = m / rows
    return {"name": name, "latency_us": rep.simulated_ns * scale / 1e3,
            "te_active_pct": rep.engine_active_pct["tensor"],
            "dma_active_pct": rep.engine_active_pct["dma"],
            "tflops": rep.tflops, "scale": scale, "wall_s": time.time() - t0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", "--config", default="trn1")
    ap.add_argument("--shape", nargs=3, type=int, default=[4096, 8192, 8192],
                    metavar=("M", "K", "N"))
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--sample", type=int, default=8)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--blocked", action="append", default=[], metavar="K=V")
    a = ap.parse_args()
    m, k, n = a.shape
    print(f"matmul [{m},{k}] @ [{k},{n}] {a.dtype} on {a.config}")
    print(f"{'variant':12} {'latency':>12} {'TE active':>10} {'TFLOP/s':>8} {'DMA active':>11}"
          f"  simulated")
    for name in matmul.VARIANTS:
        if a.only and name not in a.only:
            continue
        r = bench(name, m, k, n, a.dtype, a.config, a.sample,
                  {kv.split("=")[0]: int(kv.split("=")[1]) for kv in a.blocked})
        part = "whole" if r["scale"] == 1 else f"1/{r['scale']:g} of M, x{r['scale']:g}"
        print(f"{name:12} {r['latency_us']:>9.1f} us {r['te_active_pct']:>9.1f}% "
              f"{r['tflops']:>8.2f} {r['dma_active_pct']:>10.1f}%  {part} "
              f"({r['wall_s']:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
