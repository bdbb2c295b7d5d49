#!/usr/bin/python3
"""Calibration suite: every public measurement of the real chips we could find,
replayed on trnsim, with the published figure and its source beside it.

Each case is a kernel written from the vendor's published loop nest
(scripts/calibration/kernels.py, compiled by the same back-end passes as a model)
or a single DMA transfer, simulated timing-only on the generation's preset. The
table gives published and simulated latency and their error, and the published
engine-active and DMA-active percentages (the vendor profiler's definitions:
docs/hardware.md) against ours; then the mean absolute percentage error (MAPE) of
the latencies per generation. Sources are in docs/hardware.md ([T5], [T6], [D1],
[P]); the assumptions column says what the published material leaves open.

usage: scripts/calibrate.py [--only SUBSTR] [--skip SUBSTR] [--set KEY=VALUE]... [--sample N]
                            [--jobs N] [--json FILE] [--trnsim PATH]

  --set KEY=VALUE  override a config key in every case (sensitivity studies)
  --sample N       simulate 1/N of each sampled kernel's outer loop instead of the
                   suite's own fraction (faster, less exact; 0: the suite's)
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "calibration"))
import kernels  # noqa: E402

M, K, N = 4096, 8192, 8192  # the published matmul shape: [M,K] @ [K,N], lhsT given as [K,M]


class Case:
    """One published measurement. `build(sample)` returns (text, suffix, factor):
    the program, its file type, and the factor that scales its simulated time to
    the whole kernel (the fraction of an outer loop simulated)."""

    def __init__(self, cid, gen, what, build, published, source, assumptions, sample=1,
                 metric="latency"):
        self.id, self.gen, self.what, self.build = cid, gen, what, build
        self.published, self.source, self.assumptions = published, source, assumptions
        self.sample, self.metric = sample, metric


def matmul(variant, dtype, block_m=128, **kw):
    """A matmul kernel simulating M/sample rows (sampled kernels repeat the M loop), at
    least one M block of `block_m` rows; the factor scales the time to all M rows."""
    def build(sample):
        fn = getattr(kernels, "matmul_" + variant)
        rows = max(block_m, M // sample // block_m * block_m)
        return fn(rows, K, N, dtype, dtype, **kw), ".tir", M / rows
    return build


def dma_transfer(rows, row_bytes, spread):
    """One HBM -> SBUF dma_copy of `rows` rows of `row_bytes`, over `spread` engines."""
    def build(_sample):
        n = row_bytes // 2
        text = "\n".join([
            ".program dma", ".semaphores 1", f".tensor x [{rows},{n}] bf16 input @0",
            ".queue dma 0 0",
            f"dma_copy dst=sbuf[0:{rows}, 0, bf16, [1,{n}]] src=hbm[{rows}x{n}, @x, bf16, [1,{n}]]"
            f" spread={spread} signal=s0+1"]) + "\n"
        return text, ".tasm", 1
    return build


T5 = "[T5] NKI tutorial 'Matrix multiplication', latency table (SDK 2.20-2.26)"
T6 = "[T6] NKI guide 'Introduction to NKI Kernel Optimization' (trn2, fp32), profiles"
DB = "lhsT and rhs tiles double-buffered"
Q = "each load spread 8 partitions per DMA engine; lhsT on queue 0, rhs on 1, stores on 2"

SUITE = [
    # trn1, bf16 [4096,8192] @ [8192,8192]: the four published versions.
    Case("matmul-tiled", "trn1", "V0 tiled", matmul("tiled", "bf16"),
         {"latency_us": 51800}, T5, f"{DB}; {Q}; 1/8 of the M loop simulated, x8", sample=8),
    Case("matmul-hoisted", "trn1", "V1 hoisted loads", matmul("hoisted", "bf16"),
         {"latency_us": 42960}, T5,
         f"{DB}; {Q}; 1/8 of the M loop simulated, x8", sample=8),
    Case("matmul-block-free", "trn1", "V2 blocked M,N (2x2)", matmul("block_free", "bf16", block_m=256),
         {"latency_us": 22070}, T5,
         f"single-buffered (two copies do not fit the SBUF); {Q}; 1/8 of the M loop, x8",
         sample=8),
    Case("matmul-fully-optimized", "trn1", "V3 blocked M,N,K (16,2,8)",
         matmul("fully_optimized", "bf16"),
         {"latency_us": 6970, "dma_active_pct": 54.37}, T5 + "; DMA active: [P] profile summary "
         "figure (workload unnamed; its HBM bytes and time are this kernel's)",
         f"{DB}; {Q}; whole kernel"),
    # trn2, fp32 [4096,8192] @ [8192,8192] (v4 is left out: its rhs tiles need more
    # SBUF than trn2 has, and the vendor's compiler spilled; we would not replay that).
    Case("matmul-tiled", "trn2", "v2 tiled (fp32)", matmul("tiled", "fp32", bufs=3),
         {"latency_us": 39890, "te_active_pct": 87.28, "dma_active_pct": 99.93}, T6,
         "lhsT and rhs tiles triple-buffered (the fewest that keep the DMA busy between "
         f"matmuls, as the profile's 99.9 % DMA active shows); {Q}; 1/8 of the M loop "
         "simulated, x8", sample=8),
    Case("matmul-hoisted", "trn2", "v3 hoisted loads (fp32)",
         matmul("hoisted", "fp32", a_bufs=2, b_bufs=1),
         {"latency_us": 28200, "te_active_pct": 99.85, "dma_active_pct": 99.73}, T6,
         f"lhsT double-, rhs single-buffered (SBUF); {Q}; 1/8 of the M loop, x8", sample=8),
    Case("matmul-fully-optimized", "trn2", "v5 blocked M,N,K (16,2,8) (fp32)",
         matmul("fully_optimized", "fp32", bufs=1, pack=False),
         {"latency_us": 28300, "te_active_pct": 99.50, "dma_active_pct": 21.54,
          "ve_active_pct": 10.55}, T6,
         f"single-buffered and result tiles stored unpacked (fp32 fills the SBUF); {Q}; whole "
         "kernel"),
    # Single transfers: the duration of one engine's transfer, as the profiler shows it.
    Case("dma-32KiB-1-engine", "trn2", "[4,4096] bf16 HBM->SBUF, one engine",
         dma_transfer(4, 8192, 1), {"latency_us": 1.416}, "[D1] DMA overview, example 1",
         "transfer time of the engine (the profiler's packet duration)", metric="engine0"),
    Case("dma-2KiB-16-engines", "trn2", "[128,128] bf16 over 16 engines, 2 KiB each",
         dma_transfer(128, 256, 16), {"latency_us": 0.097},
         "[D1] DMA overview, example 2 (profile)", "one engine's share (8 partitions x 256 B)",
         metric="engine1"),
    Case("dma-32KiB-8x4KiB", "trn1", "8 partitions x 4 KiB, one engine",
         dma_transfer(8, 4096, 1), {"latency_us": 1.810},
         "[P] performance guide, profile of a 32 KiB transfer",
         "generation inferred (trn1: the guide's NC-v2 profiles)", metric="engine0"),
]


def simulate(trnsim, case, config, sets, sample, tmp):
    # --sample applies to the sampled kernels; the others run whole.
    text, suffix, factor = case.build((sample or case.sample) if case.sample > 1 else 1)
    base = os.path.join(tmp, f"{case.gen}-{case.id}")
    prog, stats = base + suffix, base + ".json"
    with open(prog, "w") as f:
        f.write(text)
    cmd = [trnsim, "run", prog, "-c", config, "--no-functional", "--stats", stats]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{case.gen} {case.id}: trnsim failed:\n{r.stdout[-2000:]}{r.stderr}")
    with open(stats) as f:
        d = json.load(f)
    if case.metric.startswith("engine"):
        e = d["chip"]["core0"]["dma"][case.metric]
        ns = e["busy_ns"] / max(1, e["shares"])
    else:
        ns = d["simulated_ns"] * factor
    eng = d["engines"]
    return {"latency_us": ns / 1e3, "te_active_pct": eng["tensor"]["active_pct"],
            "ve_active_pct": eng["vector"]["active_pct"],
            "dma_active_pct": d["dma"]["active_pct"], "factor": factor}


def fmt_us(us):
    return f"{us / 1e3:.2f} ms" if us >= 1000 else f"{us * 1e3:.0f} ns" if us < 10 else f"{us:.1f} us"


def pct_pair(case, sim, key):
    if key not in case.published:
        return "-"
    return f"{case.published[key]:.1f}/{sim[key]:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="run the cases whose 'gen id' contains this")
    ap.add_argument("--skip", default="", help="leave out the cases whose 'gen id' contains this")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default="", help="write the results here too")
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build", "runtime", "trnsim"))
    a = ap.parse_args()
    if not os.access(a.trnsim, os.X_OK):
        sys.exit(f"calibrate: {a.trnsim} not found; build first (bash scripts/build.sh)")
    cases = [c for c in SUITE if a.only in f"{c.gen} {c.id}"
             and not (a.skip and a.skip in f"{c.gen} {c.id}")]
    if not cases:
        sys.exit(f"calibrate: no case matches --only '{a.only}'")
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = [pool.submit(simulate, a.trnsim, c, c.gen, a.set, a.sample, tmp) for c in cases]
        try:
            sims = [f.result() for f in futs]
        except RuntimeError as e:
            sys.exit(f"calibrate: {e}")
    rows, per_gen, points = [], {}, []
    print(f"{'gen':5} {'case':24} {'published':>10} {'simulated':>10} {'error':>7}  "
          f"{'TE act % pub/sim':>16} {'DMA act % pub/sim':>17}  assumptions")
    for c, s in zip(cases, sims):
        pub = c.published["latency_us"]
        err = 100.0 * (s["latency_us"] - pub) / pub
        per_gen.setdefault(c.gen, []).append(abs(err))
        for key in ("te_active_pct", "dma_active_pct", "ve_active_pct"):
            if key in c.published:
                points.append((c, key, s[key] - c.published[key]))
        print(f"{c.gen:5} {c.id:24} {fmt_us(pub):>10} {fmt_us(s['latency_us']):>10} "
              f"{err:+6.1f}%  {pct_pair(c, s, 'te_active_pct'):>16} "
              f"{pct_pair(c, s, 'dma_active_pct'):>17}  {c.assumptions}")
        rows.append({"gen": c.gen, "id": c.id, "what": c.what, "published": c.published,
                     "simulated": s, "error_pct": err, "source": c.source,
                     "assumptions": c.assumptions})
    print()
    for gen, errs in sorted(per_gen.items()):
        print(f"MAPE {gen}: {sum(errs) / len(errs):.1f} % over {len(errs)} published latencies")
    for c, key, d in points:
        print(f"{c.gen} {c.id}: {key.replace('_pct', ' %').replace('_', ' ')} off by {d:+.1f} "
              "points")
    if a.set:
        print("with " + " ".join(a.set))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"sets": a.set, "cases": rows,
                       "mape_pct": {g: sum(e) / len(e) for g, e in per_gen.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
