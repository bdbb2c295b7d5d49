#!/usr/bin/python3
"""Which config constants the calibration is most sensitive to: reruns the
calibration suite (scripts/calibrate.py) with one key changed at a time and prints,
per key, the change of each generation's MAPE and the largest change of a case's
simulated latency. Keys the suite barely feels are knobs an architect can leave.

usage: scripts/calibration/sensitivity.py [--sample N] [--jobs N] [--only S] [--skip S]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (key, {generation: value to try}): each changed by about a quarter, or one step.
KNOBS = [
    ("core.dma.start_latency", {"trn1": "1us", "trn2": "1us"}),
    ("core.dma.queue_depth", {"trn1": "3", "trn2": "3"}),
    ("core.dma.bandwidth", {"trn1": "21GB/s", "trn2": "29GB/s"}),
    ("core.dma.descriptor_cost", {"trn1": "10ns", "trn2": "10ns"}),
    ("core.dma.core_bandwidth", {"trn1": "150GB/s", "trn2": "330GB/s"}),
    ("core.dma.core_descriptor_cost", {"trn1": "2.3ns", "trn2": "2.3ns"}),
    ("hbm.bandwidth", {"trn1": "615GB/s", "trn2": "2.2TB/s"}),
    ("core.tensor.clock", {"trn1": "2.1GHz", "trn2": "1.8GHz"}),
    ("core.vector.clock", {"trn1": "840MHz", "trn2": "720MHz"}),
]


def run(sets, only, skip, sample, jobs, out):
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "calibrate.py"), "--json", out,
           "--sample", str(sample), "--jobs", str(jobs), "--only", only, "--skip", skip]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"sensitivity: calibrate failed ({' '.join(sets)}):\n{r.stdout}{r.stderr}")
    with open(out) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=32)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--skip", default="", help="e.g. fully-optimized: the slowest cases")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = run([], a.only, a.skip, a.sample, a.jobs, os.path.join(tmp, "base.json"))
        lat = {(c["gen"], c["id"]): c["simulated"]["latency_us"] for c in base["cases"]}
        print(f"baseline MAPE: " + ", ".join(f"{g} {m:.1f} %" for g, m in
                                             sorted(base["mape_pct"].items())))
        print(f"{'key':28} {'values':22} {'MAPE change':24} largest case change")
        for key, values in KNOBS:
            # One run per generation value: a preset's own value differs by generation.
            changes, mape = [], {}
            for gen, v in values.items():
                r = run([f"{key}={v}"], a.only or gen, a.skip, a.sample, a.jobs,
                        os.path.join(tmp, "k.json"))
                for c in r["cases"]:
                    if c["gen"] != gen:
                        continue
                    old = lat[(c["gen"], c["id"])]
                    changes.append((100 * (c["simulated"]["latency_us"] - old) / old,
                                    f"{c['gen']} {c['id']}"))
                if gen in r["mape_pct"]:
                    mape[gen] = r["mape_pct"][gen] - base["mape_pct"][gen]
            big = max(changes, key=lambda x: abs(x[0])) if changes else (0.0, "-")
            vals = ", ".join(f"{g} {v}" for g, v in values.items())
            mtxt = ", ".join(f"{g} {d:+.1f}" for g, d in sorted(mape.items()))
            print(f"{key:28} {vals:22} {mtxt:24} {big[0]:+.1f} % ({big[1]})")


if __name__ == "__main__":
    main()
