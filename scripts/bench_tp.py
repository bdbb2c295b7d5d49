#!/usr/bin/env python3
"""Tensor-parallel step time of a PyTorch MLP, the figures of the README's `--tp` table.

Exports an MLP 1024 -> GELU(4096) -> 1024 on 256 rows to ONNX and runs it with
`trnsim run --tp N --random-inputs --no-functional` for each N, on the analytic
network model and, with --tlm, on the TLM links and chip collective engines too.
Prints each run's step, communication (and its share of the step) and speedup over
one core.

usage: scripts/bench_tp.py [--config trn2] [--tp 1,2,4,16] [--tlm] [--trnsim PATH]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def mlp_onnx(path, d=1024, ff=4096, rows=256):
    import torch

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.f1, self.f2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)

        def forward(self, x):
            return self.f2(torch.nn.functional.gelu(self.f1(x)))

    torch.manual_seed(0)
    torch.onnx.export(Mlp().eval(), (torch.randn(rows, d),), path, opset_version=17,
                      input_names=["x"], output_names=["y"])


def step_and_comm(trnsim, model, config, tp, network):
    args = [trnsim, "run", model, "-c", config, "--random-inputs", "--no-functional",
            "--set", f"network.model={network}"]
    if tp > 1:
        args += ["--tp", str(tp)]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench_tp: {' '.join(args)} failed:\n{p.stderr}")
    step = re.search(r"step: ([0-9.]+) ns", p.stdout)
    if step is not None:
        ns = float(step.group(1))
    else:  # one core: no step line, the program's simulated time
        t = re.search(r"simulated time +([0-9.]+) (ns|us|ms)", p.stdout)
        if t is None:
            sys.exit(f"bench_tp: no step time in the report of {' '.join(args)}")
        ns = float(t.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6}[t.group(2)]
    comm = re.search(r"communication ([0-9.]+) ns", p.stdout)
    return ns, float(comm.group(1)) if comm else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="trn2")
    ap.add_argument("--tp", default="1,2,4,16")
    ap.add_argument("--tlm", action="store_true", help="also time on the TLM network model")
    ap.add_argument("--trnsim", default=os.path.join(ROOT, "build", "runtime", "trnsim"))
    a = ap.parse_args()
    tps = [int(t) for t in a.tp.split(",")]
    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "mlp.onnx")
        mlp_onnx(model)
        for network in ["analytic"] + (["tlm"] if a.tlm else []):
            base = None
            for tp in tps:
                ns, comm = step_and_comm(a.trnsim, model, a.config, tp, network)
                base = base or (ns if tp == 1 else None)
                share = f"{comm / 1e3:7.1f} us ({100 * comm / ns:4.1f}%)" if tp > 1 else "      -        "
                speed = f"{base / ns:5.2f}" if base else "    -"
                print(f"{network:8s} tp {tp:3d}  step {ns / 1e3:8.1f} us  communication {share}"
                      f"  speedup {speed}")


if __name__ == "__main__":
    main()
