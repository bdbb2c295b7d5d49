#!/usr/bin/python3
"""Model benchmark: how long trnsim takes to compile and simulate whole models, and
how much host memory it needs. For each model: build it (torch.nn, fixed seeds),
export it to ONNX with trnsim.torch's export path, `trnsim compile` it (with
--timings: seconds per compiler pass), then `trnsim run` the program timing-only
(--no-functional) and functionally (--random-inputs). Prints per model: compile
seconds, the two simulate seconds, each trnsim process's peak RSS, the simulated
latency, MFU and the tensor engine's and DMA's active %, and the bytes the run must read
(inputs and weights once, matmul weights at the operand precision) per simulated second
against the core's memory roof and the chip's HBM bandwidth (what bounds a decode step).
With --sgemm it also times the host's own sgemm (numpy's float32 matmul, whatever BLAS
numpy links) and prints the functional run's time over the time that sgemm needs for the
program's matmul FLOPs: wall and CPU (user + system) seconds, as the machine may be shared.

usage: scripts/bench_models.py [MODEL[:key=value,...]]... [-c CONFIG] [--precision P]
                               [--no-functional] [--functional-only] [--sgemm]
                               [--passes] [--json FILE] [--bin PATH]
MODEL: llama_layer, llama_decode, gpt2_12, vit_b16, resnet50 (default: all); key=value overrides the
builder's argument, e.g. llama_layer:seq=512 or gpt2_12:layers=2. Models that need the
host (fallback) are reported as such: a compiled program holds device code only.
`tp=N` (llama_decode:tp=8) or --tp N runs the model tensor-parallel on N ranks (`trnsim run
MODEL.onnx --tp N`, no separate compile) and reports the step against the chip's HBM
bandwidth: the bytes the step must read, summed over the ranks, per simulated second.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

TIME = "/usr/bin/time"  # GNU time (Debian package "time")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))


def _llama(**kw):
    from examples.models import llama_layer
    return llama_layer(**kw)


def _decode(**kw):
    from examples.models import llama_decode
    return llama_decode(**kw)


def _gpt2(**kw):
    from examples.models import gpt2_stack
    return gpt2_stack(**kw)


def _vit(batch=1, seed=0):
    import torch
    import torchvision
    torch.manual_seed(seed)
    model = torchvision.models.vit_b_16().eval()
    # torchvision starts the classifier at zero: every logit would be 0 whatever the
    # encoder computed, and --eager would compare nothing.
    torch.nn.init.normal_(model.heads.head.weight, std=0.02)
    return model, (torch.randn(batch, 3, 224, 224),)


def _resnet(batch=8, seed=0):
    import torch
    import torchvision
    torch.manual_seed(seed)
    return torchvision.models.resnet50().eval(), (torch.randn(batch, 3, 224, 224),)


MODELS = {
    "llama_layer": (_llama, "Llama layer: seq 2048, d 4096, 32 heads, SwiGLU ff 11008, batch 1"),
    "llama_decode": (_decode, "Llama layer, one decode step: batch 8, KV cache of 2048 tokens "
                     "(model inputs), d 4096, 32 heads, ff 11008"),
    "gpt2_12": (_gpt2, "GPT-2 small: 12 blocks, seq 512, d 768, 12 heads, ff 3072, batch 1"),
    "vit_b16": (_vit, "torchvision ViT-B/16, 224x224, batch 1"),
    "resnet50": (_resnet, "torchvision ResNet-50, 224x224, batch 8"),
}


def parse_spec(spec):
    """'name:k=v,k2=v2' -> (name, {k: int-or-float-or-str})."""
    name, _, rest = spec.partition(":")
    if name not in MODELS:
        raise SystemExit(f"bench_models: unknown model '{name}' (models: {', '.join(MODELS)})")
    kw = {}
    for item in filter(None, rest.split(",")):
        k, eq, v = item.partition("=")
        if not eq:
            raise SystemExit(f"bench_models: '{item}' in '{spec}' is not key=value")
        for conv in (int, float, str):
            try:
                kw[k] = conv(v)
                break
            except ValueError:
                pass
    return name, kw


def host_sgemm(n=2048, repeat=3):
    """The host's sgemm rate: best of `repeat` n x n x n float32 numpy matmuls.
    Returns (wall GFLOP/s, CPU GFLOP/s)."""
    import numpy as np
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    a @ b  # warm up (threads, pages)
    wall = cpu = float("inf")
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        a @ b
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    flop = 2.0 * n ** 3
    return flop / wall / 1e9, flop / max(cpu, 1e-9) / 1e9


def run_child(cmd):
    """Runs cmd; returns (stdout, stderr, returncode, wall seconds, peak RSS MiB, CPU
    seconds: user + system). The
    RSS is measured by GNU time, which forks the command from its own small process:
    a child forked or spawned from this Python process would inherit torch's
    high-water mark (the kernel carries it over exec)."""
    with tempfile.NamedTemporaryFile("r") as tf, tempfile.TemporaryFile("w+") as fo, \
            tempfile.TemporaryFile("w+") as fe:
        t0 = time.monotonic()
        rc = subprocess.call([TIME, "-f", "%U %S\n%M", "-o", tf.name] + cmd, stdout=fo,
                             stderr=fe)
        wall = time.monotonic() - t0
        fo.seek(0)
        fe.seek(0)
        rss = tf.read().strip().splitlines()
        kib = float(rss[-1]) if rss and rss[-1].isdigit() else float("nan")
        cpu = float("nan")
        if len(rss) >= 2:
            m = re.match(r"([\d.]+) ([\d.]+)$", rss[-2])
            if m:
                cpu = float(m.group(1)) + float(m.group(2))
        return fo.read(), fe.read(), rc, wall, kib / 1024.0, cpu


def parse_run(text):
    """Simulated latency (ms), MFU %, tensor engine active %, DMA active %, host s."""
    r = {}
    m = re.search(r"simulated time\s+([\d.]+) (ns|us|ms)", text)
    if m:
        r["latency_ms"] = float(m.group(1)) * {"ns": 1e-6, "us": 1e-3, "ms": 1.0}[m.group(2)]
    m = re.search(r"MFU ([\d.]+)%", text)
    if m:
        r["mfu_pct"] = float(m.group(1))
    m = re.search(r"matmul\s+([\d.e+]+) GFLOP", text)
    if m:
        r["gflop"] = float(m.group(1))
    for engine, key in (("tensor", "te_active_pct"), ("dma", "dma_active_pct")):
        m = re.search(r"^\s+" + engine + r"\s+\d+\s+[\d.]+ \w+\s+([\d.]+)%", text, re.M)
        if m:
            r[key] = float(m.group(1))
    m = re.search(r"host time\s+([\d.]+) s", text)
    if m:
        r["sim_host_s"] = float(m.group(1))
    # The roofline: the memory roof (GB/s, and the chip's HBM) and the bytes the
    # program must move at least (inputs and weights read once, outputs written once).
    m = re.search(r"memory ([\d.]+) GB/s = min\(HBM ([\d.]+) GB/s", text)
    if m:
        r["memory_roof_gbps"], r["hbm_gbps"] = float(m.group(1)), float(m.group(2))
    return r


def must_read_bytes(module, inputs, precision):
    """Bytes a run must read from HBM at least: every input (fp32) and every weight
    once, matrices at the precision's operand size (the compiler casts constant
    matmul weights at compile time), vectors (norm weights, biases) as fp32."""
    size = {"bf16": 2, "fp8": 1}.get(precision, 4)
    n = sum(t.numel() * 4 for t in inputs)
    for p in module.parameters():
        n += p.numel() * (size if p.dim() >= 2 else 4)
    return n


def memory_figures(r, must):
    """Must-read bytes per simulated second against the memory roof and the chip's HBM."""
    if r.get("latency_ms", 0) > 0:
        gbps = must / (r["latency_ms"] * 1e-3) / 1e9
        r.update(must_read_mb=must / 1e6, must_read_gbps=gbps)
        if "memory_roof_gbps" in r:
            r["memory_roof_pct"] = 100.0 * gbps / r["memory_roof_gbps"]
            r["hbm_pct"] = 100.0 * gbps / r["hbm_gbps"]


def parse_timings(text):
    """`trnsim compile --timings` lines 'timing PHASE SECONDS' -> {phase: seconds}."""
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^timing\s+(\S+)\s+([\d.]+)", text, re.M)}


def chip_hbm_gbps(a):
    """The chip's HBM bandwidth (GB/s) from `trnsim info -c CONFIG`."""
    out = subprocess.run([a.bin, "info", "-c", a.config], capture_output=True, text=True).stdout
    m = re.search(r"hbm\.bandwidth\s*[=:]?\s*([\d.e+]+)\s*(GB/s|TB/s|B/s)?", out)
    if not m:
        m = re.search(r"HBM[^\n]*?([\d.]+)\s*(GB/s|TB/s)", out)
    if not m:
        return None
    scale = {"GB/s": 1.0, "TB/s": 1e3, "B/s": 1e-9, None: 1e-9}[m.group(2)]
    return float(m.group(1)) * scale


def bench_tp(name, kw, a, work, tp, res, onnx_path, must):
    """`trnsim run MODEL.onnx --tp N` (each rank compiles its shard in the run)."""
    modes = [] if a.functional_only else [("timing", ["--no-functional"])]
    if a.functional:
        modes.append(("functional", ["--random-inputs"]))
    for mode, flags in modes:
        out, err, rc, wall, rss, cpu = run_child(
            [a.bin, "run", onnx_path, "-c", a.config, "--precision", a.precision, "--tp", str(tp)]
            + flags)
        if rc != 0:
            res["error"] = f"run ({mode}): " + (err.strip().splitlines() or [f"exit {rc}"])[-1][:200]
            return res
        r = parse_run(out)
        m = re.search(r"^step: ([\d.]+) ns over (\d+) ranks; communication ([\d.]+) ns", out, re.M)
        if m:
            r["latency_ms"] = float(m.group(1)) * 1e-6
            r["comm_ms"] = float(m.group(3)) * 1e-6
        hbm = chip_hbm_gbps(a)
        if hbm and r.get("latency_ms", 0) > 0:
            gbps = must / (r["latency_ms"] * 1e-3) / 1e9
            r.update(must_read_mb=must / 1e6, must_read_gbps=gbps, hbm_gbps=hbm,
                     hbm_pct=100.0 * gbps / hbm)
        r.pop("memory_roof_gbps", None)
        res[mode] = dict(wall_s=round(wall, 2), cpu_s=round(cpu, 2), rss_mib=round(rss), **r)
    return res


def bench(name, kw, a, work):
    import trnsim.torch as tt
    build, _ = MODELS[name]
    kw = dict(kw)
    tp = int(kw.pop("tp", a.tp))  # not a builder argument: the run's ranks
    res = {"model": name, "args": dict(kw, tp=tp) if tp > 1 else kw, "config": a.config,
           "precision": a.precision}
    t0 = time.monotonic()
    module, inputs = build(**kw)
    onnx_path = os.path.join(work, name + ".onnx")
    names = [f"input_{i}" for i in range(len(inputs))]
    tt._export(tt._exportable(module, len(inputs)), inputs, onnx_path, names, ["output"])
    must = must_read_bytes(module, inputs, a.precision)
    if a.eager:
        # The functional run's outputs against eager PyTorch on the same inputs
        # (trnsim.torch.run compiles the module again and compares).
        _, rep = tt.run(module, tuple(inputs), config=a.config, precision=a.precision)
        res["eager"] = dict(max_abs=rep.max_abs_err, max_rel=rep.max_rel_err,
                            fallback_ops=list(rep.fallback_ops))
    del module
    res["export_s"] = round(time.monotonic() - t0, 2)
    if tp > 1:
        return bench_tp(name, kw, a, work, tp, res, onnx_path, must)
    prog = os.path.join(work, name + ".tbin")
    cmd = [a.bin, "compile", onnx_path, "-o", prog, "-c", a.config, "--precision", a.precision]
    if a.timings:
        cmd.append("--timings")
    out, err, rc, wall, rss, _ = run_child(cmd)
    if rc != 0:
        res["error"] = "compile: " + (err.strip().splitlines() or ["exit %d" % rc])[-1][:200]
        return res
    res.update(compile_s=round(wall, 2), compile_rss_mib=round(rss))
    res["program_file_mib"] = round(os.path.getsize(prog) / 2**20, 1)
    m = re.search(r"program: (\d+) instructions", out)
    if m:
        res["instructions"] = int(m.group(1))
    if a.timings:
        res["passes"] = parse_timings(out + err)
    modes = [] if a.functional_only else [("timing", ["--no-functional"])]
    if a.functional:
        modes.append(("functional", ["--random-inputs"]))
    for mode, flags in modes:
        out, err, rc, wall, rss, cpu = run_child([a.bin, "run", prog, "-c", a.config] + flags)
        if rc != 0:
            res["error"] = f"run ({mode}): " + (err.strip().splitlines() or [f"exit {rc}"])[-1][:200]
            return res
        r = parse_run(out)
        memory_figures(r, must)
        res[mode] = dict(wall_s=round(wall, 2), cpu_s=round(cpu, 2), rss_mib=round(rss), **r)
    return res


def show(res, passes, sgemm=None):
    print(f"== {res['model']} {res['args'] or ''} on {res['config']} ({res['precision']})")
    if "compile_s" in res:
        print(f"  compile          {res['compile_s']:.2f} s, peak RSS {res['compile_rss_mib']} MiB"
              f", {res.get('instructions', '?')} instructions (export {res['export_s']} s)")
    if "program_file_mib" in res:
        print(f"  program file     {res['program_file_mib']} MiB (.tbin)")
    if passes and res.get("passes"):
        for k, v in sorted(res["passes"].items(), key=lambda kv: -kv[1]):
            print(f"    {k:<28} {v:8.3f} s")
    for mode in ("timing", "functional"):
        r = res.get(mode)
        if not r:
            continue
        print(f"  simulate {mode:<10} {r['wall_s']:.2f} s (simulation {r.get('sim_host_s', 0):.2f} s"
              f", CPU {r.get('cpu_s', 0):.2f} s), peak RSS {r['rss_mib']} MiB")
    r = res.get("functional")
    if sgemm and r and r.get("gflop"):
        # The host sgemm's seconds for the program's matmul FLOPs, wall and CPU.
        sw, sc = r["gflop"] / sgemm[0], r["gflop"] / sgemm[1]
        r.update(sgemm_wall_s=round(sw, 6), sgemm_cpu_s=round(sc, 6),
                 ratio_wall=round(r["wall_s"] / sw, 2), ratio_cpu=round(r["cpu_s"] / sc, 2))
        print(f"  host sgemm       {r['gflop']:.4g} GFLOP in {sw:.2f} s wall, {sc:.2f} s CPU;"
              f" functional run / sgemm: {r['ratio_wall']:.2f}x wall, {r['ratio_cpu']:.2f}x CPU")
    r = res.get("timing")
    if r:
        print(f"  simulated        {r.get('latency_ms', 0):.3f} ms, MFU {r.get('mfu_pct', 0):.1f}%"
              f", TE active {r.get('te_active_pct', 0):.1f}%"
              f", DMA active {r.get('dma_active_pct', 0):.1f}%")
        if "memory_roof_pct" not in r and "hbm_pct" in r:  # --tp: the chip's HBM
            print(f"  memory           {r['must_read_mb']:.1f} MB must be read by the"
                  f" {res['args'].get('tp')} ranks together: {r['must_read_gbps']:.1f} GB/s"
                  f" = {r['hbm_pct']:.1f}% of the chip's HBM ({r['hbm_gbps']:.0f} GB/s);"
                  f" communication {r.get('comm_ms', 0):.3f} ms")
        if "memory_roof_pct" in r:
            print(f"  memory           {r['must_read_mb']:.1f} MB must be read: {r['must_read_gbps']:.1f} GB/s"
                  f" = {r['memory_roof_pct']:.1f}% of the core's memory roof"
                  f" ({r['memory_roof_gbps']:.0f} GB/s), {r['hbm_pct']:.1f}% of the chip's HBM"
                  f" ({r['hbm_gbps']:.0f} GB/s)")
    e = res.get("eager")
    if e:
        print(f"  vs eager         max abs error {e['max_abs']:.3g}, {e['max_rel']:.3g} of the largest output"
              f" (trnsim.torch.run's errors); host fallback: {e['fallback_ops'] or 'none'}")
    if "error" in res:
        print(f"  error: {res['error']}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=list(MODELS),
                    help="MODEL[:key=value,...] (default: all)")
    ap.add_argument("-c", "--config", default="trn2")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--no-functional", dest="functional", action="store_false",
                    help="skip the functional simulation (timing-only run only)")
    ap.add_argument("--no-timings", dest="timings", action="store_false",
                    help="do not pass --timings to trnsim compile (an older binary)")
    ap.add_argument("--functional-only", action="store_true",
                    help="skip the timing-only run")
    ap.add_argument("--sgemm", action="store_true",
                    help="time the host's sgemm (numpy float32 matmul) and compare")
    ap.add_argument("--passes", action="store_true", help="print the per-pass compile seconds")
    ap.add_argument("--eager", action="store_true",
                    help="also run the model functionally through trnsim.torch.run and print "
                         "its error against eager PyTorch")
    ap.add_argument("--tp", type=int, default=1,
                    help="run every model tensor-parallel on N ranks (like MODEL:tp=N)")
    ap.add_argument("--json", help="write the results as JSON")
    ap.add_argument("--bin", default=os.environ.get(
        "TRNSIM_BIN", os.path.join(ROOT, "build", "runtime", "trnsim")))
    a = ap.parse_args()
    results = []
    sgemm = None
    if a.sgemm:
        sgemm = host_sgemm()
        print(f"host sgemm: {sgemm[0]:.1f} GFLOP/s wall, {sgemm[1]:.1f} GFLOP/s CPU"
              " (numpy float32 2048^3 matmul, best of 3)")
    with tempfile.TemporaryDirectory(prefix="bench-models-") as work:
        for spec in a.models:
            name, kw = parse_spec(spec)
            res = bench(name, kw, a, work)
            show(res, a.passes, sgemm)
            results.append(res)
            for f in os.listdir(work):
                os.remove(os.path.join(work, f))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"host_sgemm_gflops": sgemm, "models": results} if sgemm else results, f,
                      indent=1)
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
