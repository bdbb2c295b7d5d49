"""Result tables: OUTDIR/results.csv and OUTDIR/results.jsonl, one row per point
(config x workload x precision), rebuilt from the point folders and written
atomically, so they are never torn and hold each point exactly once.

Schema 1. CSV: plain CSV (a header row, then the rows), as csv.DictReader or
pandas.read_csv read it. JSONL: a first line {"schema": "trnsim-sweep-results",
"version": 1, "columns": [...]}, then one object per row; that line is where the schema
version lives. Columns: index, id, workload, precision, timing_only, then
`p.<config key>` for each swept key (SI base units: Hz, B/s, bytes, s, fraction),
status (ok | failed | pending), class (failure class), message, attempts, compile
(hit | miss | none), host_seconds (runner wall time of the point), version, cost (the
proxy in cost.py), then `m.<metric>` from the stats tree (units: the tree's meta).
An adaptive search (`strategy: optuna`, optuna_search.py) adds `search` (optuna |
random) and `trial` (the config's place in that method's budget) after index; a config
both methods picked has a row for each, sharing one id and folder.
"""

import csv
import io
import json
import os

from trnsim.sweep.point import atomic_write

SCHEMA_VERSION = 1
FIXED = ["index", "id", "workload", "precision", "timing_only"]
STATUS_COLS = ["status", "class", "message", "attempts", "compile", "host_seconds", "version",
               "cost"]
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")
METRICS = (["m.simulated_ns", "m.instructions", "m.cores", "m.flops", "m.tflops", "m.mfu_pct",
            "m.peak_tflops"]
           + [f"m.engines.{e}.active_pct" for e in ENGINES]
           + ["m.dma.active_pct", "m.dma.bytes", "m.dma.copies", "m.dma.shares", "m.hbm.read_bytes",
              "m.hbm.write_bytes", "m.hbm.bytes", "m.hbm.gbps", "m.hbm.mbu_pct",
              "m.arith_intensity", "m.sbuf.touched_bytes", "m.sbuf.high_water_bytes",
              "m.psum.touched_bytes", "m.psum.high_water_bytes",
              "m.roofline.roofline_ns", "m.roofline.efficiency_pct", "m.roofline.compute_bound",
              "m.sim_host_seconds"])
# Columns that legitimately differ between two runs of the same point.
VOLATILE = ("host_seconds", "m.sim_host_seconds")


def metrics(tree):
    """The m.* columns of one stats tree (key names from runtime/device.cpp)."""
    g = lambda *path: _get(tree, path)  # noqa: E731
    m = {"m.simulated_ns": g("simulated_ns"), "m.instructions": g("instructions"),
         "m.cores": g("cores"), "m.flops": g("flops"), "m.tflops": g("tflops"),
         "m.mfu_pct": g("mfu_pct"), "m.sim_host_seconds": g("host_seconds")}
    tf, mfu = m["m.tflops"], m["m.mfu_pct"]
    m["m.peak_tflops"] = tf * 100.0 / mfu if tf and mfu else None
    for e in ENGINES:
        m[f"m.engines.{e}.active_pct"] = g("engines", e, "active_pct")
    m["m.dma.active_pct"] = g("dma", "active_pct")
    m["m.dma.bytes"] = g("dma", "bytes")
    m["m.dma.copies"] = g("dma", "copies")
    m["m.dma.shares"] = g("dma", "shares")
    rd, wr = g("hbm", "read_bytes"), g("hbm", "write_bytes")
    m["m.hbm.read_bytes"], m["m.hbm.write_bytes"] = rd, wr
    hb = (rd or 0) + (wr or 0) if rd is not None or wr is not None else None
    m["m.hbm.bytes"] = hb
    ns = m["m.simulated_ns"]
    m["m.hbm.gbps"] = hb / ns if hb is not None and ns else None
    m["m.hbm.mbu_pct"] = g("hbm", "mbu_pct")
    m["m.arith_intensity"] = (m["m.flops"] / hb) if hb and m["m.flops"] is not None else None
    for mem in ("sbuf", "psum"):
        for k in ("touched_bytes", "high_water_bytes"):
            m[f"m.{mem}.{k}"] = g(mem, k)
    # The whole program's roofline (runtime/roofline.h); compute_bound 1, memory 0.
    for k in ("roofline_ns", "efficiency_pct", "compute_bound"):
        m[f"m.roofline.{k}"] = g("roofline", "total", k)
    return m


def _get(tree, path):
    for p in path:
        if not isinstance(tree, dict) or p not in tree:
            return None
        tree = tree[p]
    return tree if isinstance(tree, (int, float)) and not isinstance(tree, bool) else None


def columns(param_keys, tagged=False):
    tags = ["search", "trial"] if tagged else []
    return FIXED[:1] + tags + FIXED[1:] + [f"p.{k}" for k in param_keys] + STATUS_COLS + METRICS


def build_rows(plan, version):
    """One row per planned point, in plan order, from its folder's status and stats."""
    from trnsim.sweep.point import read_status
    rows = []
    for pt in plan.points:
        row = {"index": pt.index, "id": pt.id, "workload": pt.workload["name"],
               "precision": pt.precision, "timing_only": plan.spec.timing_only,
               "version": version, "cost": pt.cost, "search": pt.search, "trial": pt.trial}
        for k in plan.param_keys:
            row[f"p.{k}"] = pt.resolved.get(k, pt.settings.get(k)) if pt.resolved else \
                pt.settings.get(k)
        st, _ = read_status(pt.dir)
        if st is None:
            row.update(status="pending", attempts=0)
        else:
            row.update(status=st.get("status"), **{"class": st.get("cls", "")},
                       message=st.get("message", ""), attempts=st.get("attempts"),
                       compile=st.get("compile"), host_seconds=st.get("host_seconds"))
            if st.get("status") == "ok":
                with open(os.path.join(pt.dir, "stats.json")) as f:
                    row.update(metrics(json.load(f)))
        rows.append(row)
    return rows


def write_tables(outdir, cols, rows):
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: ("" if r.get(c) is None else r.get(c)) for c in cols})
    atomic_write(os.path.join(outdir, "results.csv"), buf.getvalue())
    lines = [json.dumps({"schema": "trnsim-sweep-results", "version": SCHEMA_VERSION,
                         "columns": cols})]
    lines += [json.dumps({c: r.get(c) for c in cols}) for r in rows]
    atomic_write(os.path.join(outdir, "results.jsonl"), "\n".join(lines) + "\n")


def read_jsonl(outdir):
    """(columns, rows) from OUTDIR/results.jsonl; checks the schema version."""
    path = os.path.join(outdir, "results.jsonl")
    with open(path) as f:
        head = json.loads(f.readline())
        if head.get("schema") != "trnsim-sweep-results":
            raise ValueError(f"{path}: not a trnsim sweep results file")
        if head.get("version") != SCHEMA_VERSION:
            raise ValueError(f"{path}: results schema {head.get('version')}, this trnsim "
                             f"reads {SCHEMA_VERSION}")
        rows = [json.loads(l) for l in f if l.strip()]
    return head["columns"], rows


def read_csv(outdir):
    """The rows of OUTDIR/results.csv as dicts of strings."""
    with open(os.path.join(outdir, "results.csv"), newline="") as f:
        return list(csv.DictReader(f))
