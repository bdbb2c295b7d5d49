#!/usr/bin/env python3
"""Speed of SPMD simulation: R ranks in one process, timing-only (--no-functional).
Runs (a) a transformer block exported from PyTorch on --tp T --dp D ranks and (b) a
generated collective-heavy program (per rank: DMA load, matmul, activation, DMA store,
then an all_reduce of the result over the rank's tensor-parallel group, repeated),
each with every rank simulated (--no-fold) and folded into symmetry classes
(runtime/symmetry.h). Prints, per run: simulated instructions (the ranks simulated)
and the instructions the run stands for (every rank), the simulation's CPU seconds
(--stats host_seconds_cpu: compile, load and reports excluded; on a shared host the
wall time grows with other processes' load, CPU time does not), the whole process's
CPU seconds (user + sys, GNU time's figure), and instructions per simulation CPU
second: simulated ones, and represented ones (what a folded run stands for).

Each run is repeated (--repeat) and the one with the least simulation CPU reported:
the machine's other load only ever adds time.

usage: scripts/bench_spmd.py [--config trn1] [--tp 8] [--dp 4] [--groups 2000]
                            [--d 512] [--seq 128] [--trnsim PATH] [--only block|coll]
                            [--repeat 3]
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def block_onnx(path, d, heads, ff, batch, seq):
    """Attention + residual + LayerNorm + MLP; reshapes keep the batch as -1 so
    --dp can split it."""
    import math

    import torch

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
            self.ln = torch.nn.LayerNorm(d)
            self.f1, self.f2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)

        def forward(self, x):
            s, dh = x.shape[1], d // heads
            q, k, v = (m(x).reshape(-1, s, heads, dh).transpose(1, 2)
                       for m in (self.q, self.k, self.v))
            a = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / math.sqrt(dh)), dim=-1)
            x = x + self.o((a @ v).transpose(1, 2).reshape(-1, s, d))
            return x + self.f2(torch.nn.functional.gelu(self.f1(self.ln(x))))

    torch.manual_seed(0)
    torch.onnx.export(Block().eval(), (torch.randn(batch, seq, d),), path, opset_version=17,
                      input_names=["x"], output_names=["y"])


def coll_program(groups, tp, free=512):
    """Per group: load x, matmul, gelu, store t, all_reduce t over the rank's tp
    group into y; 2 buffers in flight. `{g}` stands for the group list."""
    L = [".program coll", ".semaphores 6", f".tensor x [128,{free}] bf16 input @0",
         f".tensor w [128,128] bf16 input @{128 * free * 2}",
         f".tensor t [2,128,{free}] bf16 scratch @{1 << 20}",
         f".tensor y [2,128,{free}] bf16 output @{2 << 20}"]
    q = {k: [] for k in ("dma_in", "tensor", "scalar", "dma_out", "sync")}
    for g in range(groups):
        b = g % 2
        after = lambda s, n: f" wait=s{s}>={n}" if n > 0 else ""
        q["dma_in"].append(f"dma_copy dst=sbuf[0:128, {b * 2048}, bf16, [1,{free}]] "
                           f"src=hbm[128x{free}, @x, bf16, [1,{free}]]{after(2, g - 1)} signal=s0+1")
        q["tensor"].append(f"matmul dst=psum[0:128, {b * 2048}, fp32, [1,{free}]] "
                           f"stationary=sbuf[0:128, 8192, bf16, [1,128]] "
                           f"moving=sbuf[0:128, {b * 2048}, bf16, [1,{free}]] wait=s0>={g + 1}"
                           f"{after(2, g - 1)} signal=s1+1")
        q["scalar"].append(f"activation dst=sbuf[0:128, {16384 + b * 2048}, bf16, [1,{free}]] "
                           f"src=psum[0:128, {b * 2048}, fp32, [1,{free}]] func=gelu "
                           f"wait=s1>={g + 1}{after(3, g - 1)} signal=s2+1")
        q["dma_out"].append(f"dma_copy dst=hbm[128x{free}, @t+{b * 128 * free * 2}, bf16, [1,{free}]] "
                            f"src=sbuf[0:128, {16384 + b * 2048}, bf16, [1,{free}]] "
                            f"wait=s2>={g + 1}{after(4, g - 1)} signal=s3+1")
        q["sync"].append(f"all_reduce dst=hbm[128x{free}, @y+{b * 128 * free * 2}, bf16, [1,{free}]] "
                         f"src=hbm[128x{free}, @t+{b * 128 * free * 2}, bf16, [1,{free}]] "
                         f"group=[{{g}}] wait=s3>={g + 1} signal=s4+1")
    L += [".queue dma 0 0"] + q["dma_in"] + [".queue tensor"] + q["tensor"]
    L += [".queue scalar"] + q["scalar"] + [".queue dma 1 0"] + q["dma_out"]
    L += [".queue sync"] + q["sync"]
    return "\n".join(L) + "\n"


def best(trnsim, args, tmp, repeat):
    """The run with the least simulation CPU of `repeat` (identical simulated figures)."""
    return min((run(trnsim, args, tmp) for _ in range(max(1, repeat))),
               key=lambda r: r[0]["host_seconds_cpu"])


def run(trnsim, args, tmp):
    stats = os.path.join(tmp, "stats.json")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([trnsim, "run"] + args + ["--no-functional", "--stats", stats],
                       capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"trnsim run {' '.join(args)} failed:\n{p.stdout}{p.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(stats) as f:
        st = json.load(f)
    step = float(re.search(r"step: ([0-9.]+) ns", p.stdout).group(1))
    sym = re.search(r"symmetry: ([0-9]+) ranks in ([0-9]+) classes", p.stdout)
    return st, cpu, step, p.stdout, (int(sym.group(1)), int(sym.group(2))) if sym else None


def report(name, st, cpu, step, sym, ranks):
    simulated = st["instructions"]
    stands = simulated * ranks // sym[1] if sym else simulated
    sim = st["host_seconds_cpu"]
    print(f"{name:32s} step {step / 1e3:9.2f} us  instructions {simulated:8d} "
          f"(stands for {stands:8d})  simulation cpu {sim:6.2f} s  process cpu {cpu:6.2f} s  "
          f"{simulated / sim / 1e6:5.2f} M instr/s simulated, "
          f"{stands / sim / 1e6:6.2f} M represented")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="trn1")
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--dp", type=int, default=4)
    ap.add_argument("--groups", type=int, default=2000, help="collective program: iterations")
    ap.add_argument("--d", type=int, default=512, help="block: model width")
    ap.add_argument("--seq", type=int, default=128, help="block: tokens per sequence")
    ap.add_argument("--only", choices=("block", "coll"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build", "runtime", "trnsim"))
    a = ap.parse_args()
    ranks = a.tp * a.dp
    with tempfile.TemporaryDirectory() as d:
        if a.only != "coll":
            onnx = os.path.join(d, "block.onnx")
            block_onnx(onnx, a.d, 8, 4 * a.d, a.dp, a.seq)
            base = [onnx, "-c", a.config, "--tp", str(a.tp), "--dp", str(a.dp)]
            for fold in (False, True):
                st, cpu, step, _, sym = best(a.trnsim, base + ([] if fold else ["--no-fold"]), d,
                                            a.repeat)
                report(f"block d={a.d} tp{a.tp} dp{a.dp}{' folded' if fold else ''}",
                       st, cpu, step, sym, ranks)
        if a.only != "block":
            text = coll_program(a.groups, a.tp)
            files = []
            for r in range(ranks):  # rank r's tp group: the tp ranks of its replica
                first = r - r % a.tp
                tasm = os.path.join(d, f"coll{r}.tasm")
                with open(tasm, "w") as f:
                    f.write(text.replace("{g}", ",".join(str(first + k)
                                                         for k in range(a.tp))))
                files.append(tasm[:-5] + ".tbin")  # binary: loads fast
                subprocess.run([a.trnsim, "asm", tasm, "-o", files[-1]], check=True,
                               capture_output=True)
            base = [files[0], "-c", a.config, "--ranks", str(ranks)]
            base += sum((["--rank-program", f"{r}={files[r]}"] for r in range(1, ranks)), [])
            for fold in (False, True):
                st, cpu, step, _, sym = best(a.trnsim, base + ([] if fold else ["--no-fold"]), d,
                                            a.repeat)
                report(f"collectives x{a.groups} tp{a.tp} R{ranks}{' folded' if fold else ''}",
                       st, cpu, step, sym, ranks)


if __name__ == "__main__":
    main()
