#!/usr/bin/python3
"""Simulated latency of the softmax, layer-norm and attention example kernels.

usage: examples/kernels/bench_examples.py [-c CONFIG] [--dtype bf16]

Timing only (no data), one fixed shape per kernel; prints latency and the engines'
and DMA's active % as the vendor profiler defines them (README: Profiling).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "runtime", "python"))

import trnsim.kernels as tk  # noqa: E402
from examples.kernels.attention import attention  # noqa: E402
from examples.kernels.layernorm import layernorm  # noqa: E402
from examples.kernels.softmax import softmax  # noqa: E402


def cases(dtype):
    return [
        ("softmax", "[4096, 2048]", softmax, [tk.spec([4096, 2048], dtype)]),
        ("layernorm", "[4096, 2048]", layernorm,
         [tk.spec([4096, 2048], dtype), tk.spec([2048], dtype), tk.spec([2048], dtype)]),
        ("attention", "S 512, D 128, causal", attention,
         [tk.spec([512, 128], dtype), tk.spec([512, 128], dtype), tk.spec([512, 128], dtype)]),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", "--config", default="trn2")
    ap.add_argument("--dtype", default="bf16")
    a = ap.parse_args()
    print(f"example kernels, {a.dtype}, on {a.config}")
    print(f"{'kernel':10} {'shape':22} {'latency':>11} {'TE':>6} {'VE':>6} {'ACT':>6} {'DMA':>6}")
    for name, shape, kern, args in cases(a.dtype):
        _, rep = kern.benchmark(*args, config=a.config, functional=False)
        act = rep.engine_active_pct
        print(f"{name:10} {shape:22} {rep.simulated_ns / 1e3:>8.1f} us "
              f"{act['tensor']:>5.1f}% {act['vector']:>5.1f}% {act['scalar']:>5.1f}% "
              f"{act['dma']:>5.1f}%", flush=True)


if __name__ == "__main__":
    main()
