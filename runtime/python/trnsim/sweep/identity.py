"""Point identity and the compile-cache key.

A point's id is the SHA-256 of (canonical resolved config, workload content hash,
precision, timing-only flag, trnsim version): key order, `1` vs `1.0` and unit
spellings cannot change it because every value is canonical before hashing
(config.py). The compile-cache key covers what the compiler is given: the workload, the
precision and the values of the keys whose parameter rows say the compiler reads them
(`trnsim info --keys --json`, "readers"), so no hand-kept list of keys can fall behind
the code.
"""

import hashlib
import json
import os
import re
from pathlib import Path

from trnsim.sweep.config import ConfigError

_REPO = Path(__file__).resolve().parents[4]


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


class Targets:
    """What the compiler is given of (base, overrides): the resolved values of the
    compiler-read keys, as canonical JSON text, one resolution per distinct override set."""

    def __init__(self, binary, base, resolver=None):
        from trnsim.sweep.config import Resolver
        self.resolver = resolver or Resolver(binary, base)
        self.schema = self.resolver.schema
        self._memo = {}

    def get(self, sets):
        """sets: `k=v` texts as `--set` takes them. Raises ConfigError (the simulator's
        message) when it refuses the config."""
        key = tuple(sorted(sets))
        hit = self._memo.get(key)
        if hit is None:
            try:
                overrides = {}
                for s in key:
                    k, _, v = s.partition("=")
                    self.schema.check_key(k, "--set")
                    overrides[k] = self.schema.parse(k, v)
                resolved = self.resolver.resolve(overrides)
                hit = canonical_json({k: resolved[k] for k in self.schema.compiler_keys()
                                      if k in resolved})
            except ConfigError as e:
                hit = e
            self._memo[key] = hit
        if isinstance(hit, Exception):
            raise hit
        return hit


def compile_key(target, workload_hash, precision, version):
    """Same key, same program: the workload, the precision, the compiler-read values (JSON
    from Targets.get) and the trnsim version (a newer compiler may emit another program)."""
    blob = canonical_json({"workload": workload_hash, "precision": precision,
                           "target": json.loads(target), "version": version})
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
