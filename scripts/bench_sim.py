#!/usr/bin/env python3
"""Simulator speed benchmark: generates a large program (N instructions spread over
the tensor, vector, scalar and GpSimd engines and 2 DMA queues, chained by
semaphores so every engine stays busy) and runs it with trnsim, timing-only and
functional. Prints simulated instructions per host second and host seconds per
simulated millisecond (host time of the simulation itself, from the --stats file;
the process time adds reading the program; timing-only: the median of --repeat
runs, each listed), and for the functional run the matmul FLOPs computed per host
second.

usage: scripts/bench_sim.py [--instructions N] [--free F] [--config C] [--trnsim PATH]
                           [--skip-functional] [--repeat R] [--program FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generate(n, free):
    """A software pipeline: DMA load -> matmul -> activation (PSUM->SBUF) -> vector
    op -> gpsimd op -> DMA store, repeated n/6 times over 2 rotating buffers."""
    groups = max(1, n // 6)
    L = [".program bench", ".semaphores 8",
         f".tensor x [128,{free}] bf16 input @0",
         f".tensor y [128,{free}] fp32 output @{128 * free * 2}"]
    q = {k: [] for k in ("dma_in", "tensor", "scalar", "vector", "gpsimd", "dma_out")}
    sb = lambda off, dt="bf16": f"sbuf[0:128, {off}, {dt}, [1,{free}]]"
    for g in range(groups):
        b = g % 2
        # semaphores count completions: sK >= g+1 means step K of group g is done.
        ld, mm, act, vec, gp, st = 0, 1, 2, 3, 4, 5
        wait_free = f" wait=s{st}>={g - 1}" if g >= 2 else ""
        q["dma_in"].append(f"dma_copy dst={sb(b * 4096)} src=hbm[128x{free}, @x, bf16, [1,{free}]]{wait_free} signal=s{ld}+1")
        q["tensor"].append(f"matmul dst=psum[0:128, {b * 2048}, fp32, [1,{free}]] stationary=sbuf[0:128, 8192, bf16, [1,128]] moving={sb(b * 4096)} wait=s{ld}>={g + 1}"
                           + (f" wait=s{act}>={g - 1}" if g >= 2 else "") + f" signal=s{mm}+1")
        q["scalar"].append(f"activation dst={sb(16384 + b * 4096, 'fp32')} src=psum[0:128, {b * 2048}, fp32, [1,{free}]] func=gelu wait=s{mm}>={g + 1}"
                           + (f" wait=s{vec}>={g - 1}" if g >= 2 else "") + f" signal=s{act}+1")
        q["vector"].append(f"tensor_scalar dst={sb(32768 + b * 4096, 'fp32')} src={sb(16384 + b * 4096, 'fp32')} op0=mul arg0=0.5 wait=s{act}>={g + 1}"
                           + (f" wait=s{gp}>={g - 1}" if g >= 2 else "") + f" signal=s{vec}+1")
        q["gpsimd"].append(f"tensor_tensor dst={sb(49152 + b * 4096, 'fp32')} in0={sb(32768 + b * 4096, 'fp32')} in1={sb(32768 + b * 4096, 'fp32')} op=add wait=s{vec}>={g + 1}"
                           + (f" wait=s{st}>={g - 1}" if g >= 2 else "") + f" signal=s{gp}+1")
        q["dma_out"].append(f"dma_copy dst=hbm[128x{free}, @y, fp32, [1,{free}]] src={sb(49152 + b * 4096, 'fp32')} wait=s{gp}>={g + 1} signal=s{st}+1")
    L += [".queue dma 0 0"] + q["dma_in"]
    L += [".queue tensor"] + q["tensor"]
    L += [".queue scalar"] + q["scalar"]
    L += [".queue vector"] + q["vector"]
    L += [".queue gpsimd"] + q["gpsimd"]
    L += [".queue dma 1 0"] + q["dma_out"]
    return "\n".join(L) + "\n", groups * 6


def run(trnsim, prog, config, functional, tmp):
    stats = os.path.join(tmp, "stats.json")
    args = [trnsim, "run", prog, "-c", config, "--random-inputs", "--stats", stats]
    if not functional:
        args.append("--no-functional")
    t0 = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(f"trnsim failed:\n{out.stdout}{out.stderr}")
    with open(stats) as f:
        return json.load(f), wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=1_200_000)
    ap.add_argument("--free", type=int, default=128, help="free elements per partition per op")
    ap.add_argument("--config", default="trn2")
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build", "runtime", "trnsim"))
    ap.add_argument("--skip-functional", action="store_true")
    ap.add_argument("--repeat", type=int, default=5,
                    help="timing-only runs; the median is reported (host noise)")
    ap.add_argument("--program", help="measure this program (.tasm, .tbin or .onnx, as "
                    "`trnsim run` takes it) instead of the generated one")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if a.program:
            if not os.path.isfile(a.program):
                sys.exit(f"bench_sim: --program {a.program}: no such file")
            tbin = os.path.abspath(a.program)
            print(f"program: {a.program}")
        else:
            text, n = generate(a.instructions, a.free)
            prog = os.path.join(d, "bench.tasm")
            with open(prog, "w") as f:
                f.write(text)
            tbin = os.path.join(d, "bench.tbin")
            t0 = time.perf_counter()
            subprocess.run([a.trnsim, "asm", prog, "-o", tbin], check=True)
            asm_s = time.perf_counter() - t0
            print(f"program: {n} instructions, {len(text) / 1e6:.1f} MB of assembly "
                  f"(assembled in {asm_s:.2f} s)")
        modes = [("timing-only", False)] + ([] if a.skip_functional else [("functional", True)])
        for name, functional in modes:
            runs = sorted((run(a.trnsim, tbin, a.config, functional, d)
                           for _ in range(1 if functional else max(1, a.repeat))),
                          key=lambda r: r[0]["host_seconds"])
            st, wall = runs[len(runs) // 2]  # the median host time
            host, sim_ms = st["host_seconds"], st["simulated_ns"] * 1e-6
            line = (f"{name:12s} simulated {sim_ms:9.3f} ms  host {host:7.3f} s "
                    f"(process {wall:6.2f} s)  {st['instructions'] / host / 1e6:6.2f} M instructions/s  "
                    f"{host / sim_ms:8.5f} host s per simulated ms")
            if functional:
                line += f"  {st['flops'] / host / 1e9:6.1f} matmul GFLOP/s"
            if len(runs) > 1:
                rates = ", ".join(f"{r[0]['instructions'] / r[0]['host_seconds'] / 1e6:.2f}"
                                  for r in runs)
                line += f"\n{'':12s} median of {len(runs)} runs (M instructions/s: {rates})"
            print(line)


if __name__ == "__main__":
    main()
