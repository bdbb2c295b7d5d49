"""The report of one simulated run, read from the stats tree `trnsim run --stats` writes."""

import math

import numpy as np

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")


def compare(actual, reference):
    """Max abs error and max error relative to the largest |reference| (float64).

    The relative figure divides by max|reference| rather than per element, so values
    near zero (where bf16 rounding dominates) do not blow it up.
    """
    a = np.asarray(actual, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    if a.shape != r.shape:
        if a.size != r.size:
            raise ValueError(f"output of shape {a.shape} compared with reference {r.shape}")
        a = a.reshape(r.shape)
    if a.size == 0:
        return {"max_abs": 0.0, "max_rel": 0.0}
    diff = np.abs(a - r)
    max_abs = float(np.max(diff))
    scale = float(np.max(np.abs(r)))
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    return {"max_abs": max_abs, "max_rel": max_rel}


def _fallback_ops(section):
    # The host-fallback section is added later by the runtime; accept a list of op
    # names, a list of {op|op_type|name: ...} maps, or a map with an "ops" list / op keys.
    if section is None:
        return []
    if isinstance(section, dict):
        for key in ("ops", "nodes"):
            if key in section:
                return _fallback_ops(section[key])
        return [str(k) for k in section if k not in ("count", "meta")]
    if isinstance(section, (list, tuple)):
        ops = []
        for item in section:
            if isinstance(item, dict):
                ops.append(str(item.get("op") or item.get("op_type") or item.get("name") or item))
            else:
                ops.append(str(item))
        return ops
    return [str(section)]


def _fallback_nodes(section):
    """(ONNX op type, ONNX node name) of each node that ran on the host."""
    nodes = section.get("nodes", []) if isinstance(section, dict) else []
    return [(str(n.get("op", "")), str(n.get("node", ""))) for n in nodes
            if isinstance(n, dict)]


def _host_decisions(section):
    """(ONNX op type, node name) of each If whose run-time condition the host read to
    pick the branch that ran (the branch's ops are not host fallback)."""
    nodes = section.get("decisions", []) if isinstance(section, dict) else []
    return [(str(n.get("op", "")), str(n.get("node", ""))) for n in nodes
            if isinstance(n, dict)]


def _roofline(section):
    """The stats tree's `roofline` section as plain dicts: "total" and "kinds" {op kind:
    row}, each row with count (kinds), flops, min_bytes, compute_ns, memory_ns,
    roofline_ns, simulated_ns, efficiency_pct and bound ("compute" | "memory"); plus the
    roofs (peak_bf16_flops, peak_fp32_flops, memory_bandwidth_bps), busy_ns and
    from_compiler. Empty when the run has no roofline."""
    if not isinstance(section, dict) or "total" not in section:
        return {}

    def row(r):
        out = {k: v for k, v in r.items() if isinstance(v, (int, float)) and k != "compute_bound"}
        out["bound"] = "compute" if r.get("compute_bound") else "memory"
        return out

    out = {k: v for k, v in section.items() if isinstance(v, (int, float))}
    out["from_compiler"] = bool(section.get("from_compiler"))
    out["total"] = row(section["total"])
    out["kinds"] = {k: row(v) for k, v in (section.get("kinds") or {}).items()
                    if isinstance(v, dict)}
    return out


def _human_bytes(b):
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    u = 0
    while b >= 1024 and u + 1 < len(units):
        b /= 1024
        u += 1
    return f"{b:.0f} {units[u]}" if u == 0 else f"{b:.2f} {units[u]}"


def _human_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3f} us"
    return f"{ns:.1f} ns"


class Report:
    """Figures of one run. `stats` is the raw tree; the attributes are read from it:

    simulated_ns / simulated_us, instructions, engine_active_pct {engine: %} (the five
    compute engines and "dma"), flops, tflops (achieved matmul TFLOP/s), mfu_pct,
    mfu_dtype, hbm_read_bytes, hbm_write_bytes, hbm_gbps (HBM bytes moved / simulated
    time), mbu_pct, roofline (dict: "total" and "kinds" {op kind: count, flops,
    min_bytes, roofline_ns, simulated_ns, efficiency_pct, bound, ...}; see
    runtime/roofline.h), roofline_ns / roofline_efficiency_pct / roofline_bound (the
    whole program's), errors {output: {"max_abs", "max_rel"}} vs the reference,
    fallback_ops (ONNX op type of each node run on the host), fallback_nodes ((op type,
    ONNX node name) pairs), host_decisions ((op type, node name) of each If whose
    condition the host read, its chosen branch run as its own segments), link_ns / link_bytes (host<->device transfers, in
    simulated_ns), device_ns (the device segments' simulated time), host_compute_seconds
    (the host segments' interpreter wall clock: not simulated, not in simulated_ns),
    host_seconds (simulator host time), wall_seconds (the whole CLI call: compile +
    simulate + file I/O), compiled ("compiled", or "cached" when a torch.compile backend
    reused its program), config, precision, model, trace.
    """

    def __init__(self, stats, config="", precision="", wall_seconds=0.0, errors=None,
                 trace=None, model="", text=""):
        self.stats = stats
        self.config = config
        self.precision = precision
        self.model = model
        self.trace = trace
        self.text = text
        self.wall_seconds = float(wall_seconds)
        self.errors = dict(errors or {})

        self.simulated_ns = float(stats.get("simulated_ns", 0.0))
        self.instructions = int(stats.get("instructions", 0))
        self.flops = int(stats.get("flops", 0))
        self.tflops = float(stats.get("tflops", 0.0))
        self.mfu_pct = float(stats.get("mfu_pct", 0.0))
        by_dtype = stats.get("flops_by_dtype") or {}
        self.mfu_dtype = max(by_dtype, key=by_dtype.get) if by_dtype else None
        self.host_seconds = float(stats.get("host_seconds", 0.0))

        engines = stats.get("engines", {})
        self.engine_active_pct = {e: float(engines.get(e, {}).get("active_pct", 0.0))
                                  for e in ENGINES}
        self.engine_active_pct["dma"] = float(stats.get("dma", {}).get("active_pct", 0.0))
        self.engine_instructions = {e: int(engines.get(e, {}).get("instructions", 0))
                                    for e in ENGINES}

        hbm = stats.get("hbm", {})
        self.hbm_read_bytes = int(hbm.get("read_bytes", 0))
        self.hbm_write_bytes = int(hbm.get("write_bytes", 0))
        self.mbu_pct = float(hbm.get("mbu_pct", 0.0))
        moved = self.hbm_read_bytes + self.hbm_write_bytes
        # bytes per ns == GB/s
        self.hbm_gbps = moved / self.simulated_ns if self.simulated_ns > 0 else 0.0

        self.roofline = _roofline(stats.get("roofline"))
        total = self.roofline.get("total", {})
        self.roofline_ns = total.get("roofline_ns")
        self.roofline_efficiency_pct = total.get("efficiency_pct")
        self.roofline_bound = total.get("bound")

        self.fallback_ops = _fallback_ops(stats.get("fallback"))
        self.fallback_nodes = _fallback_nodes(stats.get("fallback"))
        self.host_decisions = _host_decisions(stats.get("fallback"))
        host = stats.get("host") or {}
        link = host.get("link") or {}
        self.link_ns = float(link.get("time_ns", 0.0))
        self.link_bytes = int(link.get("bytes", 0))
        self.device_ns = float(host.get("device_ns", self.simulated_ns))
        self.host_compute_seconds = float(host.get("compute_wall_seconds", 0.0))
        self.compiled = "compiled"

    @property
    def simulated_us(self):
        return self.simulated_ns / 1e3

    @property
    def max_abs_err(self):
        return max((e["max_abs"] for e in self.errors.values()), default=None)

    @property
    def max_rel_err(self):
        return max((e["max_rel"] for e in self.errors.values()), default=None)

    def as_dict(self):
        """The headline figures as plain values (no raw stats tree)."""
        keys = ("model", "config", "precision", "simulated_ns", "instructions", "flops",
                "tflops", "mfu_pct", "mfu_dtype", "engine_active_pct", "hbm_read_bytes",
                "hbm_write_bytes", "hbm_gbps", "mbu_pct", "roofline_ns",
                "roofline_efficiency_pct", "roofline_bound", "roofline", "errors", "fallback_ops",
                "fallback_nodes", "link_ns", "link_bytes", "device_ns",
                "host_compute_seconds", "host_seconds", "wall_seconds", "compiled", "trace")
        return {k: getattr(self, k) for k in keys}

    def __repr__(self):
        return (f"Report(model={self.model!r}, simulated_ns={self.simulated_ns:.1f}, "
                f"tflops={self.tflops:.4g}, mfu_pct={self.mfu_pct:.3g}, "
                f"max_abs_err={self.max_abs_err})")

    def __str__(self):
        rows = []

        def row(key, value):
            rows.append(f"  {key:<22}{value}")

        title = f"{self.model or 'model'} on {self.config}"
        if self.precision:
            title += f", {self.precision}"
        row("simulated latency", f"{_human_ns(self.simulated_ns)}  ({self.instructions} "
            "instructions)")
        peak = f" of the {self.mfu_dtype} peak" if self.mfu_dtype else ""
        row("matmul", f"{self.flops / 1e9:.4g} GFLOP, {self.tflops:.3f} TFLOP/s, "
            f"MFU {self.mfu_pct:.2f}%{peak}")
        row("engine active", "  ".join(f"{e} {p:.1f}%" for e, p in
                                       self.engine_active_pct.items()))
        row("HBM", f"read {_human_bytes(self.hbm_read_bytes)}, write "
            f"{_human_bytes(self.hbm_write_bytes)}, {self.hbm_gbps:.1f} GB/s "
            f"(MBU {self.mbu_pct:.2f}%)")
        if self.roofline:
            t = self.roofline["total"]
            row("roofline", f"{_human_ns(t['roofline_ns'])}, {t['bound']} bound, efficiency "
                f"{t['efficiency_pct']:.1f}% ({t['flops'] / 1e9:.4g} GFLOP, "
                f"{t['min_bytes'] / 1e6:.4g} MB min)")
            for kind, k in self.roofline["kinds"].items():
                if not k.get("simulated_ns"):
                    continue
                bound = k["bound"] if k["roofline_ns"] > 0 else "-"
                row("", f"{kind:<18} x{k['count']:<4} roofline {_human_ns(k['roofline_ns']):>11}"
                    f"  simulated {_human_ns(k['simulated_ns']):>11}  "
                    f"{k['efficiency_pct']:5.1f}%  {bound}")
        if self.errors:
            width = max(len(n) for n in self.errors)
            first = True
            for name, e in self.errors.items():
                row("max error vs eager" if first else "",
                    f"{name:<{width}}  abs {e['max_abs']:.3e}  rel {e['max_rel']:.3e}")
                first = False
        if self.fallback_ops:
            row("host fallback", ", ".join([f"{op} '{node}'" for op, node in self.fallback_nodes]
                                           or self.fallback_ops))
            if "host" in self.stats:
                row("", f"simulated = device {_human_ns(self.device_ns)} + link "
                    f"{_human_ns(self.link_ns)} ({_human_bytes(self.link_bytes)}); host "
                    f"compute {self.host_compute_seconds:.4f} s wall clock, not simulated")
        else:
            row("host fallback", "none")
        if self.host_decisions:
            row("host decisions", ", ".join(f"{op} '{node}'" for op, node in self.host_decisions)
                + " (branch run on the device)")
        row("host time", f"{self.host_seconds:.3f} s simulating, {self.wall_seconds:.3f} s "
            "for the whole trnsim call")
        if self.trace:
            row("trace", self.trace)
        return title + "\n" + "\n".join(rows)
