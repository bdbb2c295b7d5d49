#!/usr/bin/python3
"""DMA bandwidth curve: one dma_copy of each size on one DMA engine, run through
trnsim (timing only). Prints size -> simulated ns -> GB/s for two shapes:

  one chunk    HBM -> HBM, one contiguous run of SIZE bytes (one descriptor): the
               fixed start cost amortised over the size.
  partitions   HBM -> SBUF, fp32, SIZE bytes over min(128, SIZE/4) partitions, so
               the per-partition chunk is SIZE/128 from 512 B on: the per-descriptor
               cost (docs/hardware.md: < 256 B per partition overhead-bound, >= 4 KiB
               saturating).

Then the calibration figure (docs/hardware.md: 32 KiB on one trn2 engine in 1416 ns).

usage: scripts/bench_dma.py [--config trn2] [--trnsim PATH] [--max-size BYTES]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def program(size, shape):
    """One dma_copy of `size` bytes; returns (.tasm text, shape description)."""
    n = size // 4  # fp32 elements
    head = [".program bench_dma", ".semaphores 1",
            f".tensor x [{n}] fp32 input @0", f".tensor y [{n}] fp32 output @{size}"]
    if shape == "chunk":
        copy = (f"dma_copy dst=hbm[1x{n}, @y, fp32, [1,{n}]] "
                f"src=hbm[1x{n}, @x, fp32, [1,{n}]] signal=s0+1")
        desc = f"1 x {size} B"
    else:
        parts = min(128, n)
        per = n // parts
        copy = (f"dma_copy dst=sbuf[0:{parts}, 0, fp32, [1,{per}]] "
                f"src=hbm[{parts}x{per}, @x, fp32, [1,{per}]] signal=s0+1")
        desc = f"{parts} x {per * 4} B"
    return "\n".join(head + [".queue dma 0 0", copy]) + "\n", desc


def simulate(trnsim, config, text, tmp):
    prog = os.path.join(tmp, "p.tasm")
    stats = os.path.join(tmp, "s.json")
    with open(prog, "w") as f:
        f.write(text)
    r = subprocess.run([trnsim, "run", prog, "-c", config, "--no-functional", "--stats", stats],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"trnsim failed:\n{r.stdout}{r.stderr}\nprogram:\n{text}")
    with open(stats) as f:
        return json.load(f)["simulated_ns"]


def config_value(trnsim, config, key):
    r = subprocess.run([trnsim, "info", "-c", config], capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        if line.startswith(key + " = "):
            return line.split(" = ", 1)[1].split("#", 1)[0].strip()
    return "?"


def size_text(b):
    if b >= 1 << 20:
        return f"{b >> 20} MiB"
    if b >= 1 << 10:
        return f"{b >> 10} KiB"
    return f"{b} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="trn2")
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build", "runtime", "trnsim"))
    ap.add_argument("--max-size", type=int, default=1 << 20)
    a = ap.parse_args()
    if not os.path.exists(a.trnsim):
        sys.exit(f"{a.trnsim} not found: build trnsim first (or pass --trnsim)")
    cap = config_value(a.trnsim, a.config, "core.dma.bandwidth")
    print(f"DMA bandwidth curve on {a.config}: one dma_copy on one engine "
          f"(cap {cap}, fixed_cost {config_value(a.trnsim, a.config, 'core.dma.fixed_cost')}, "
          f"descriptor_cost {config_value(a.trnsim, a.config, 'core.dma.descriptor_cost')})")
    print(f"{'size':>8} | {'one chunk ns':>12} {'GB/s':>6} | {'partitions x chunk':>18} "
          f"{'ns':>9} {'GB/s':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        size = 64
        while size <= a.max_size:
            t1 = simulate(a.trnsim, a.config, program(size, "chunk")[0], tmp)
            text, shape = program(size, "partitions")
            t2 = simulate(a.trnsim, a.config, text, tmp)
            print(f"{size_text(size):>8} | {t1:12.1f} {size / t1:6.2f} | {shape:>18} "
                  f"{t2:9.1f} {size / t2:6.2f}")
            size *= 2
        # Calibration: docs/hardware.md, 32 KiB on one trn2 engine in 1416 ns.
        one = simulate(a.trnsim, a.config, program(32768, "chunk")[0], tmp)
        n = 1024
        eight = simulate(a.trnsim, a.config,
                         "\n".join([".program cal", ".semaphores 1",
                                    ".tensor x [8192] fp32 input @0", ".queue dma 0 0",
                                    f"dma_copy dst=sbuf[0:8, 0, fp32, [1,{n}]] "
                                    f"src=hbm[8x{n}, @x, fp32, [1,{n}]] signal=s0+1"]) + "\n",
                         tmp)
    trn2 = a.config == "trn2"
    print("calibration (docs/hardware.md: 32 KiB on one trn2 engine in 1416 ns):" if trn2 else
          "32 KiB on one engine (the 1416 ns measurement is trn2's):")
    for what, t in (("one 32 KiB chunk (HBM -> HBM)", one), ("8 x 4 KiB (HBM -> SBUF)", eight)):
        vs = f"  {100 * (t / 1416 - 1):+5.1f} %" if trn2 else ""
        print(f"  {what:32} {t:7.1f} ns  {32768 / t:5.2f} GB/s{vs}")


if __name__ == "__main__":
    main()
