"""Plots of a sweep's results.jsonl (matplotlib, Agg): PNGs in OUTDIR/plots/.

- METRIC_vs_KEY.png: a metric against a swept key, one line per workload (and per
  combination of the other swept keys, up to 8 lines per panel);
- heatmap_METRIC.png: for a two-key grid, one panel per workload;
- roofline.png: achieved TFLOP/s against arithmetic intensity (FLOPs per HBM byte),
  under each config's compute roof (peak TFLOP/s) and bandwidth roof (HBM B/s);
- pareto.png + pareto.csv: simulated time against the cost proxy, with each workload's
  Pareto front (no other point is both faster and cheaper).
"""

import csv
import math
import os
from collections import OrderedDict

from trnsim.sweep.results import read_jsonl


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _label(key):
    return key[2:] if key.startswith(("p.", "m.")) else key


def _fmt(key, v):
    """Short tick text for a p. value in SI base units."""
    if v is None:
        return "-"
    k = key.lower()
    if isinstance(v, bool):
        return str(v).lower()
    if "bandwidth" in k:
        return f"{v / 1e9:g}GB/s"
    if "clock" in k:
        return f"{v / 1e9:g}GHz"
    if "size" in k and isinstance(v, int) and v >= 1024:
        return f"{v / 1024:g}KiB" if v < 1 << 20 else f"{v / (1 << 20):g}MiB"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _ok(rows):
    return [r for r in rows if r.get("status") == "ok"]


def _swept(cols, rows):
    """p. columns with more than one distinct value among ok rows."""
    out = []
    for c in cols:
        if c.startswith("p.") and len({r.get(c) for r in rows}) > 1:
            out.append(c)
    return out


def _independent(rows, swept):
    """Swept keys minus those set by an earlier one (zip partners)."""
    out = []
    for c in swept:
        lock = False
        for o in out:
            pairs = {(r.get(o), r.get(c)) for r in rows}
            if len(pairs) == len({a for a, _ in pairs}):  # c is a function of o
                lock = True
                break
        if not lock:
            out.append(c)
    return out


def metric_vs_param(rows, x, y, path, swept):
    plt = _plt()
    wls = list(OrderedDict.fromkeys(r["workload"] for r in rows))
    others = [c for c in _independent(rows, swept) if c != x
              and not _independent(rows, [x, c]) == [x]]
    fig, axes = plt.subplots(1, len(wls), figsize=(5.5 * len(wls), 4), squeeze=False)
    for ax, wl in zip(axes[0], wls):
        groups = OrderedDict()
        for r in rows:
            if r["workload"] != wl or r.get(x) is None or r.get(y) is None:
                continue
            key = tuple((o, r.get(o)) for o in others) + (("precision", r["precision"]),)
            groups.setdefault(key, []).append(r)
        for key, rs in list(groups.items())[:8]:
            rs.sort(key=lambda r: r[x])
            lab = ", ".join(f"{_label(o)}={_fmt(o, v)}" for o, v in key) or wl
            ax.plot([r[x] for r in rs], [r[y] for r in rs], marker="o", label=lab)
        xs = sorted({r[x] for r in rows if r["workload"] == wl and r.get(x) is not None})
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 8:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([_fmt(x, v) for v in xs], rotation=30, fontsize=8)
        ax.set_xlabel(_label(x))
        ax.set_ylabel(_label(y))
        ax.set_title(wl)
        ax.grid(alpha=0.3)
        if groups:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def heatmap(rows, kx, ky, metric, path):
    import numpy as np
    plt = _plt()
    wls = list(OrderedDict.fromkeys(r["workload"] for r in rows))
    xs = sorted({r[kx] for r in rows})
    ys = sorted({r[ky] for r in rows})
    fig, axes = plt.subplots(1, len(wls), figsize=(5.5 * len(wls), 4.5), squeeze=False)
    for ax, wl in zip(axes[0], wls):
        grid = np.full((len(ys), len(xs)), np.nan)
        for r in rows:
            if r["workload"] == wl and r.get(metric) is not None:
                grid[ys.index(r[ky]), xs.index(r[kx])] = r[metric]
        im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis_r")
        for i in range(len(ys)):
            for j in range(len(xs)):
                if not math.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.3g}", ha="center", va="center", fontsize=7,
                            color="white")
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([_fmt(kx, v) for v in xs], rotation=30, fontsize=8)
        ax.set_yticks(range(len(ys)))
        ax.set_yticklabels([_fmt(ky, v) for v in ys], fontsize=8)
        ax.set_xlabel(_label(kx))
        ax.set_ylabel(_label(ky))
        ax.set_title(f"{wl}: {_label(metric)}")
        fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def roofline(rows, path):
    import numpy as np
    plt = _plt()
    pts = [r for r in rows if r.get("m.arith_intensity") and r.get("m.tflops")]
    fig, ax = plt.subplots(figsize=(7, 5))
    if pts:
        roofs = OrderedDict()
        for r in pts:
            bw = r.get("p.hbm.bandwidth") or (r["m.hbm.gbps"] * 1e9 * 100 / r["m.hbm.mbu_pct"]
                                              if r.get("m.hbm.mbu_pct") else None)
            if r.get("m.peak_tflops") and bw:
                # peak = tflops / mfu carries float noise: 4 digits tell configs apart.
                roofs.setdefault((float(f"{r['m.peak_tflops']:.4g}"), bw), None)
        ai = [r["m.arith_intensity"] for r in pts]
        lo, hi = min(ai) / 4, max(ai) * 4
        for (peak, bw) in list(roofs)[:10]:
            knee = peak * 1e12 / bw
            x = np.geomspace(min(lo, knee / 4), max(hi, knee * 4), 200)
            ax.plot(x, np.minimum(peak, bw * x / 1e12), lw=1, alpha=0.6,
                    label=f"roof {peak:.3g} TFLOP/s, {bw / 1e9:g} GB/s")
        for wl in OrderedDict.fromkeys(r["workload"] for r in pts):
            rs = [r for r in pts if r["workload"] == wl]
            ax.scatter([r["m.arith_intensity"] for r in rs], [r["m.tflops"] for r in rs],
                       label=wl, zorder=3, s=18)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("roofline")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pareto_front(rows, x="cost", y="m.simulated_ns"):
    """Rows not dominated in (x, y), both minimised; sorted by x."""
    rs = sorted((r for r in rows if r.get(x) is not None and r.get(y) is not None),
                key=lambda r: (r[x], r[y]))
    front, best = [], math.inf
    for r in rs:
        if r[y] < best:
            front.append(r)
            best = r[y]
    return front


def pareto(rows, cols, path_png, path_csv):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 5))
    fronts = []
    for wl in OrderedDict.fromkeys(r["workload"] for r in rows):
        rs = [r for r in rows if r["workload"] == wl]
        sc = ax.scatter([r["cost"] for r in rs], [r["m.simulated_ns"] / 1e3 for r in rs],
                        s=14, alpha=0.5, label=f"{wl}")
        f = pareto_front(rs)
        ax.step([r["cost"] for r in f], [r["m.simulated_ns"] / 1e3 for r in f], where="post",
                color=sc.get_facecolor()[0], lw=1.5)
        fronts += f
    ax.set_xlabel("cost proxy (cost.py)")
    ax.set_ylabel("simulated time (us)")
    ax.set_title("latency vs cost: Pareto fronts")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path_png, dpi=110)
    plt.close(fig)
    keep = [c for c in cols if c in ("index", "id", "workload", "precision", "cost",
                                     "m.simulated_ns", "m.tflops") or c.startswith("p.")]
    tmp = path_csv + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keep, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in fronts:
            w.writerow({c: r.get(c) for c in keep})
    os.replace(tmp, path_csv)
    return fronts


def plot_all(outdir, xs=None, ys=None, out=None):
    """Writes the PNGs; returns their paths. xs/ys: restrict metric-vs-parameter plots."""
    cols, rows = read_jsonl(outdir)
    ok = _ok(rows)
    if not ok:
        raise ValueError(f"{outdir}: no finished points to plot")
    pdir = out or os.path.join(outdir, "plots")
    os.makedirs(pdir, exist_ok=True)
    swept = _swept(cols, ok)
    for k in xs or []:
        if k not in cols and f"p.{k}" not in cols:
            raise ValueError(f"--x {k}: not a column of {outdir}/results.jsonl "
                             f"(parameters: {', '.join(c[2:] for c in cols if c[:2] == 'p.')})")
    for m in ys or []:
        if m not in cols and f"m.{m}" not in cols:
            raise ValueError(f"--y {m}: not a column (metrics: "
                             f"{', '.join(c[2:] for c in cols if c[:2] == 'm.')})")
    xcols = [k if k in cols else f"p.{k}" for k in xs] if xs else _independent(ok, swept)
    ycols = [m if m in cols else f"m.{m}" for m in ys] if ys else ["m.simulated_ns"]
    written = []
    safe = lambda s: s.replace("/", "_").replace(".", "_")  # noqa: E731
    for x in xcols:
        for y in ycols:
            p = os.path.join(pdir, f"{safe(_label(y))}_vs_{safe(_label(x))}.png")
            metric_vs_param(ok, x, y, p, swept)
            written.append(p)
    axes2 = _independent(ok, swept)
    if len(axes2) == 2:
        for y in ycols:
            p = os.path.join(pdir, f"heatmap_{safe(_label(y))}.png")
            heatmap(ok, axes2[0], axes2[1], y, p)
            written.append(p)
    p = os.path.join(pdir, "roofline.png")
    roofline(ok, p)
    written.append(p)
    if any(r.get("cost") is not None for r in ok):
        p, c = os.path.join(pdir, "pareto.png"), os.path.join(pdir, "pareto.csv")
        pareto(ok, cols, p, c)
        written += [p, c]
    return written
