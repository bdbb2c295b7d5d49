"""Point identity and the compile-cache key.

A point's id is the SHA-256 of (canonical resolved config, workload content hash,
precision, timing-only flag, trnsim version): key order, `1` vs `1.0` and unit
spellings cannot change it because every value is canonical before hashing
(config.py). The compile-cache key covers only what the compiler reads.
"""

import hashlib
import json
import os
import re
from pathlib import Path

_REPO = Path(__file__).resolve().parents[4]

# The config keys trnsim's compiler reads: runtime/target_from_config.cpp and the
# isa::Limits it takes from platform_config::limits(). Keep in step with both.
COMPILER_KEYS = (
    "core.sbuf.partitions", "core.sbuf.partition_size", "core.psum.partitions",
    "core.psum.partition_size", "core.psum.bank_size", "core.tensor.max_moving_free",
    "core.semaphores", "core.dma.engines", "core.dma.queues_per_engine",
    "core.dma.bandwidth", "core.dma.fixed_cost", "core.dma.descriptor_cost",
    "hbm.bandwidth",
    *(f"core.{e}.{f}" for e in ("tensor", "vector", "scalar", "gpsimd", "sync")
      for f in ("clock", "min_ii", "overhead")),
    "core.tensor.fp32_slowdown", "core.vector.reciprocal_slowdown", "core.vector.perf_modes",
    "core.scalar.func_switch_cost", "core.gpsimd.start_cost",
)


def trnsim_version():
    """TRNSIM_VERSION (set by `trnsim sweep`), else the project version in CMakeLists.txt."""
    v = os.environ.get("TRNSIM_VERSION")
    if v:
        return v
    try:
        text = (_REPO / "CMakeLists.txt").read_text()
        m = re.search(r"project\(\s*trnsim\s+VERSION\s+([0-9.]+)", text)
        if m:
            return m.group(1)
    except OSError:
        pass
    return "unknown"


def canonical_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def config_hash(resolved):
    return hashlib.sha256(canonical_json(resolved).encode()).hexdigest()


def point_ingredients(resolved, workload_hash, precision, timing_only, version, pins=None):
    ing = {"config": config_hash(resolved), "workload": workload_hash,
           "precision": precision, "timing_only": bool(timing_only), "version": version}
    if pins:
        # Compiler-read keys compiled at other values than simulated: another program.
        ing["compile_pins"] = {k: pins[k] for k in sorted(pins)}
    return ing


def point_id(resolved, workload_hash, precision, timing_only, version, pins=None):
    ing = point_ingredients(resolved, workload_hash, precision, timing_only, version, pins)
    return hashlib.sha256(canonical_json(ing).encode()).hexdigest()


def compile_key(compile_config, workload_hash, precision):
    """Same key, same program: the workload, precision and the compiler-read keys."""
    keys = {k: compile_config[k] for k in COMPILER_KEYS if k in compile_config}
    blob = canonical_json({"workload": workload_hash, "precision": precision, "keys": keys})
    return hashlib.sha256(blob.encode()).hexdigest()


def diff_configs(old, new, human=None):
    """['key: old -> new', ...] between two resolved configs."""
    out = []
    for k in sorted(set(old) | set(new)):
        if old.get(k) != new.get(k):
            f = (lambda v: human(k, v)) if human else str
            a = f(old[k]) if k in old else "(absent)"
            b = f(new[k]) if k in new else "(absent)"
            out.append(f"{k}: {a} -> {b}")
    return out
