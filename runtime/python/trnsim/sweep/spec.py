"""The sweep spec (YAML) and its expansion into points.

    base: trn2                      # preset or YAML path (relative to the spec)
    workloads:                      # bundled example models and/or ONNX files
      - example: transformer        #   examples/models.py name; `args:` go to its builder
      - onnx: models/net.onnx       #   `name:` defaults to the file stem
    precision: bf16                 # or a list (then an axis of its own)
    timing_only: true               # --no-functional
    strategy: grid                  # grid | random | lhs (Latin hypercube) | optuna
    samples: 16                     # random / lhs: number of points; optuna: the budget
    seed: 0                         # random / lhs / optuna (a non-negative integer)
    optuna: {batch: 2, startup: 4}  # optuna only (optuna_search.py): configs per round,
                                    # random-start trials
    axes:                           # config key -> values
      core.tensor.rows: [64, 128]                        # a list
      hbm.bandwidth: {range: [400GB/s, 3.2TB/s], steps: 4, scale: log}   # grid over a range
      core.sbuf.partition_size: {range: [48KiB, 192KiB], step: 16KiB}    # every 16KiB
    zip:                            # groups whose values vary together (one grid axis each;
                                    # a key is on one axis only)
      - {core.dma.engines: [2, 4], core.dma.queues_per_engine: [4, 8]}
    points:                         # explicit points (added after the grid / samples)
      - {core.dma.engines: 4, hbm.bandwidth: 1TB/s}
    constraints:                    # Python-like expressions over resolved keys; units allowed
      - core.tensor.cols <= core.tensor.rows
    compile_pin: [hbm.bandwidth]    # compiler-read keys compiled at the base value (one
                                    # program reused across them: "same binary, other chip")
    cost: {pe: 1.0, sram_mib: 0.5, hbm_tbps: 20.0}       # cost proxy weights (cost.py)

Values use the config's units. Unknown keys anywhere are errors that name the key, as
are duplicate keys, a key both in `axes:` and a `zip:` group, and range keys that do not
apply (`steps:` outside a grid, `step:` beside `steps:` or `values:`). A spec that expands
to more than `max_points` points (`trnsim sweep --max-points`, default 100000) is refused
before anything runs: `step: 3` on a bandwidth range (3 B/s apart) is a typo, not a sweep.
"""

import ast
import itertools
import math
import os
import re

import numpy as np
import yaml

from trnsim.sweep.config import ConfigError, parse_value

TOP_KEYS = {"base", "workloads", "precision", "timing_only", "strategy", "samples", "seed",
            "axes", "zip", "points", "constraints", "compile_pin", "cost", "name",
            "description", "optuna"}
WORKLOAD_KEYS = {"example", "onnx", "name", "args"}
RANGE_KEYS = {"range", "steps", "scale", "step", "values"}
DEFAULT_MAX_POINTS = 100000
STRATEGIES = ("grid", "random", "lhs", "optuna")
OPTUNA_KEYS = {"batch", "startup"}
PRECISIONS = ("bf16", "fp32", "fp8")


class SpecError(ValueError):
    """A spec the sweep cannot run; the message names the file and key."""


class Spec:
    def __init__(self, data, path="<spec>", max_points=DEFAULT_MAX_POINTS):
        self.path = path
        self.max_points = max_points
        self.dir = os.path.dirname(os.path.abspath(path)) if path != "<spec>" else os.getcwd()
        if not isinstance(data, dict):
            raise SpecError(f"{path}: the spec must be a YAML mapping")
        for k in data:
            if k not in TOP_KEYS:
                raise SpecError(f"{path}: unknown spec key '{k}' (known: "
                                f"{', '.join(sorted(TOP_KEYS))})")
        self.raw = data
        base = data.get("base", "trn2")
        if not isinstance(base, str):
            raise SpecError(f"{path}: base: expected a preset name or a YAML path")
        if base.endswith((".yaml", ".yml")) and not os.path.isabs(base):
            base = os.path.join(self.dir, base)
        self.base = base
        self.name = str(data.get("name", os.path.splitext(os.path.basename(path))[0]))
        prec = data.get("precision", "bf16")
        self.precisions = [prec] if isinstance(prec, str) else list(prec or [])
        for p in self.precisions:
            if p not in PRECISIONS:
                raise SpecError(f"{path}: precision: '{p}' is not one of {', '.join(PRECISIONS)}")
        if not self.precisions:
            raise SpecError(f"{path}: precision: empty list")
        self.timing_only = data.get("timing_only", True)
        if not isinstance(self.timing_only, bool):
            raise SpecError(f"{path}: timing_only: expected true or false")
        self.strategy = data.get("strategy", "grid")
        if self.strategy not in STRATEGIES:
            raise SpecError(f"{path}: strategy: '{self.strategy}' is not one of "
                            f"{', '.join(STRATEGIES)}")
        self.samples = data.get("samples")
        self.seed = data.get("seed", 0)
        if self.strategy != "grid":
            if not isinstance(self.samples, int) or isinstance(self.samples, bool) \
                    or self.samples < 1:
                what = "point budget (configs per method)" if self.strategy == "optuna" \
                    else "sample count"
                raise SpecError(f"{path}: samples: strategy {self.strategy} needs a positive "
                                f"integer {what}")
        elif self.samples is not None:
            raise SpecError(f"{path}: samples: only for strategy random, lhs or optuna")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise SpecError(f"{path}: seed: expected a non-negative integer, got {self.seed!r}")
        self.workloads = self._workloads(data.get("workloads"))
        self.axes = self._mapping(data.get("axes") or {}, "axes")
        self.zips = data.get("zip") or []
        if not isinstance(self.zips, list) or not all(isinstance(z, dict) for z in self.zips):
            raise SpecError(f"{path}: zip: expected a list of {{key: [values]}} groups")
        self.points = data.get("points") or []
        if not isinstance(self.points, list) or not all(isinstance(p, dict) for p in self.points):
            raise SpecError(f"{path}: points: expected a list of {{key: value}} maps")
        self.constraints = data.get("constraints") or []
        if isinstance(self.constraints, str):
            self.constraints = [self.constraints]
        self.compile_pin = list(data.get("compile_pin") or [])
        self.cost = data.get("cost") or {}
        if not isinstance(self.cost, dict):
            raise SpecError(f"{path}: cost: expected a map of weights")
        if not (self.axes or self.zips or self.points):
            raise SpecError(f"{path}: nothing to sweep: give axes, zip or points")
        self._check_zip_keys()
        self.optuna = self._optuna(data.get("optuna"))
        if self.strategy != "grid":
            # Both methods of a search get the budget; the baseline alone is `samples`.
            n = self.samples * (2 if self.strategy == "optuna" else 1)
            self.check_size((n + len(self.points)) * self.per_config(),
                            f"samples: {self.samples:,}"
                            + (" configs per method, 2 methods" if self.strategy == "optuna"
                               else " configs"))

    def per_config(self):
        """Points per config: workloads x precisions."""
        return len(self.workloads) * len(self.precisions)

    def check_size(self, total, detail):
        """Refuses a spec of more than max_points points, before any is made."""
        if self.max_points is not None and total > self.max_points:
            raise SpecError(
                f"{self.path}: the spec expands to {total:,} points ({detail}; x "
                f"{len(self.workloads)} workloads x {len(self.precisions)} precisions), more "
                f"than --max-points {self.max_points:,}: a typo (`step:` for `steps:`, a "
                "stray zero in `samples:`)? Raise --max-points to run it as it is")

    def _check_zip_keys(self):
        """A key on two axes (axes: and a zip group, or two groups) has no one value."""
        where = {k: "axes" for k in self.axes}
        for i, z in enumerate(self.zips):
            for k in z:
                if k in where:
                    raise SpecError(f"{self.path}: zip[{i}]: key '{k}' is also in {where[k]}; "
                                    "a key can vary along one axis only")
                where[k] = f"zip[{i}]"
    def _optuna(self, opts):
        """The optuna: options, checked; {} for other strategies."""
        path = self.path
        if self.strategy != "optuna":
            if opts is not None:
                raise SpecError(f"{path}: optuna: only with strategy optuna")
            return {}
        if self.zips:
            raise SpecError(f"{path}: zip: not with strategy optuna (give each key an axis and "
                            "tie them with constraints)")
        if self.points:
            raise SpecError(f"{path}: points: not with strategy optuna (each method picks its "
                            "own `samples` configs)")
        if not self.axes:
            raise SpecError(f"{path}: axes: strategy optuna needs at least one axis")
        opts = {} if opts is None else opts
        if not isinstance(opts, dict):
            raise SpecError(f"{path}: optuna: expected a map ({', '.join(sorted(OPTUNA_KEYS))})")
        for k, v in opts.items():
            if k not in OPTUNA_KEYS:
                raise SpecError(f"{path}: optuna: unknown key '{k}' (known: "
                                f"{', '.join(sorted(OPTUNA_KEYS))})")
            if not isinstance(v, int) or isinstance(v, bool) or v < (1 if k == "batch" else 0):
                raise SpecError(f"{path}: optuna.{k}: expected a "
                                f"{'positive' if k == 'batch' else 'non-negative'} integer")
        # Defaults: rounds of 2 keep the search adaptive on small budgets; a third of the
        # budget (at most 10, optuna's default) starts the model from random configs.
        return {"batch": opts.get("batch", 2),
                "startup": opts.get("startup", max(1, min(10, self.samples // 3)))}

    def _mapping(self, m, where):
        if not isinstance(m, dict):
            raise SpecError(f"{self.path}: {where}: expected a map of config key -> values")
        return m

    def _workloads(self, wl):
        if not wl or not isinstance(wl, list):
            raise SpecError(f"{self.path}: workloads: expected a non-empty list of "
                            "{example: NAME} or {onnx: PATH}")
        out, names = [], set()
        for i, w in enumerate(wl):
            if isinstance(w, str):
                w = {"onnx": w} if w.endswith(".onnx") else {"example": w}
            if not isinstance(w, dict):
                raise SpecError(f"{self.path}: workloads[{i}]: expected a map")
            for k in w:
                if k not in WORKLOAD_KEYS:
                    raise SpecError(f"{self.path}: workloads[{i}]: unknown key '{k}' (known: "
                                    f"{', '.join(sorted(WORKLOAD_KEYS))})")
            if ("example" in w) == ("onnx" in w):
                raise SpecError(f"{self.path}: workloads[{i}]: give exactly one of example, onnx")
            if "onnx" in w:
                p = w["onnx"] if os.path.isabs(w["onnx"]) else os.path.join(self.dir, w["onnx"])
                name = w.get("name") or os.path.splitext(os.path.basename(p))[0]
                entry = {"kind": "onnx", "path": p, "name": str(name)}
            else:
                args = w.get("args") or {}
                if not isinstance(args, dict):
                    raise SpecError(f"{self.path}: workloads[{i}].args: expected a map")
                entry = {"kind": "example", "example": str(w["example"]), "args": args,
                         "name": str(w.get("name") or w["example"])}
            if entry["name"] in names:
                raise SpecError(f"{self.path}: workloads[{i}]: name '{entry['name']}' used twice "
                                "(give each a distinct name:)")
            names.add(entry["name"])
            out.append(entry)
        return out

    def keys(self):
        """Every config key the spec sets, in first-mention order."""
        seen = []
        for k in itertools.chain(self.axes, *self.zips, *self.points, self.compile_pin):
            if k not in seen:
                seen.append(k)
        return seen

    def check_keys(self, schema):
        for where, keys in (("axes", self.axes), ("points", [k for p in self.points for k in p]),
                            ("zip", [k for z in self.zips for k in z]),
                            ("compile_pin", self.compile_pin)):
            for k in keys:
                try:
                    schema.check_key(k, f"{self.path}: {where}")
                except ConfigError as e:
                    raise SpecError(str(e)) from e


class _SpecLoader(yaml.SafeLoader):
    """safe_load that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *anchor` merges; its keys may be overridden
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        raise _Duplicate(f"line {line}: duplicate key '{key}' (first at line "
                                         f"{seen[key]}); PyYAML would keep only the last")
                    seen[key] = line
                except TypeError:
                    continue  # an unhashable key: the base class reports it
        return super().construct_mapping(node, deep)


class _Duplicate(Exception):
    pass


def load_spec(path, max_points=DEFAULT_MAX_POINTS):
    """Reads and checks a spec file; every error names the file (and line or key)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise SpecError(f"{path}: cannot read the spec: {e.strerror}") from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not a YAML text file (byte 0x{raw[e.start]:02x} at offset "
                        f"{e.start} is not UTF-8)") from e
    try:
        starts = [e for e in yaml.parse(text, Loader=_SpecLoader)
                  if isinstance(e, yaml.DocumentStartEvent)]
        if len(starts) > 1:
            raise SpecError(f"{path}: line {starts[1].start_mark.line + 1}: a second YAML "
                            "document ('---'); a spec is one document")
        data = yaml.load(text, Loader=_SpecLoader)
    except _Duplicate as e:
        raise SpecError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: invalid YAML: {e}") from e
    return Spec(data, path, max_points)


# ---- value lists and ranges ----------------------------------------------------------

def _check_range_keys(key, r, where, grid):
    """Every key of a {range: ...} / {values: ...} map is known and applies here."""
    for k in r:
        if k not in RANGE_KEYS:
            raise SpecError(f"{where}: {key}: unknown range key '{k}' (known: "
                            f"{', '.join(sorted(RANGE_KEYS))})")
    if "values" in r:
        extra = sorted(k for k in r if k != "values")
        if extra:
            raise SpecError(f"{where}: {key}: '{extra[0]}' does not apply to a values: list "
                            "(give values: [...] alone, or a range: with steps:/step:)")
        return
    if "steps" in r and "step" in r:
        raise SpecError(f"{where}: {key}: give steps: N (that many points) or step: S (the "
                        "spacing), not both")
    if "steps" in r and not grid:
        raise SpecError(f"{where}: {key}: 'steps' applies to strategy grid only (random, lhs "
                        "and optuna draw from the range; step: S snaps the draws)")
    if grid and "step" in r and r.get("scale") == "log":
        raise SpecError(f"{where}: {key}: 'scale: log' with 'step' (a grid by step is linear; "
                        "give steps: N for a log grid)")


def _range_bounds(schema, key, r, where, grid=False):
    if not isinstance(r, dict):
        raise SpecError(f"{where}: {key}: expected a list of values or a {{range: ...}} map")
    _check_range_keys(key, r, where, grid)
    if "values" in r:
        return None
    rng = r.get("range")
    if not isinstance(rng, list) or len(rng) != 2:
        raise SpecError(f"{where}: {key}: range: expected [low, high]")
    try:
        lo, hi = (schema.parse(key, v) for v in rng)
        step = schema.parse(key, r["step"]) if "step" in r else None
    except ConfigError as e:
        raise SpecError(f"{where}: {e}") from e
    if isinstance(lo, bool):
        raise SpecError(f"{where}: {key}: a boolean key takes a list, not a range")
    if hi < lo:
        raise SpecError(f"{where}: {key}: range [{rng[0]}, {rng[1]}] is empty")
    if step is not None and step <= 0:
        raise SpecError(f"{where}: {key}: step: expected a positive spacing, got {r['step']!r}")
    scale = r.get("scale", "linear")
    if scale not in ("linear", "log"):
        raise SpecError(f"{where}: {key}: scale: 'linear' or 'log', got {scale!r}")
    if scale == "log" and lo <= 0:
        raise SpecError(f"{where}: {key}: a log scale needs a positive low end")
    return lo, hi, scale, step


def _step_count(lo, hi, step):
    return int(math.floor((hi - lo) / step + 1e-9)) + 1


def _steps(v, key, where):
    steps = v.get("steps")
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool)
                              or steps < 1):
        raise SpecError(f"{where}: {key}: steps: expected a positive integer, got {steps!r}")
    return steps


def axis_len(schema, key, v, where):
    """How many values axis_values gives at most, without making them."""
    if isinstance(v, list):
        return len(v)
    if isinstance(v, dict) and "values" in v:
        _check_range_keys(key, v, where, True)
        return axis_len(schema, key, v["values"], where)
    if not isinstance(v, dict):
        return 1
    lo, hi, _, step = _range_bounds(schema, key, v, where, grid=True)
    steps = _steps(v, key, where)
    if steps is not None:
        return steps
    if not step:
        raise SpecError(f"{where}: {key}: a grid range needs steps: N or step: S")
    return _step_count(lo, hi, step)


def _snap(schema, key, x, lo, hi, step):
    """A sampled number onto the key's grid: step multiples, whole numbers for ints."""
    if step:
        x = lo + round((x - lo) / step) * step
    x = min(max(x, lo), hi)
    if schema.vtype(key) in ("count", "cycles", "size"):
        return int(round(x))
    return float(f"{x:.12g}")


def axis_values(schema, key, v, where):
    """A grid axis: list -> parsed values; range -> `steps` points (or every `step`)."""
    if isinstance(v, list):
        if not v:
            raise SpecError(f"{where}: {key}: empty value list")
        try:
            return [schema.parse(key, x) for x in v]
        except ConfigError as e:
            raise SpecError(f"{where}: {e}") from e
    if isinstance(v, dict) and "values" in v:
        _check_range_keys(key, v, where, True)
        return axis_values(schema, key, v["values"], where)
    if not isinstance(v, dict):
        return axis_values(schema, key, [v], where)
    lo, hi, scale, step = _range_bounds(schema, key, v, where, grid=True)
    steps = _steps(v, key, where)
    if steps is None:
        if not step:
            raise SpecError(f"{where}: {key}: a grid range needs steps: N or step: S")
        xs = [lo + i * step for i in range(_step_count(lo, hi, step))]
    else:
        if steps == 1:
            xs = [lo]
        elif scale == "log":
            xs = list(np.geomspace(lo, hi, steps))
        else:
            xs = list(np.linspace(lo, hi, steps))
    out = []
    for x in xs:
        s = _snap(schema, key, x, lo, hi, step)
        if s not in out:
            out.append(s)
    return out


def _sample_axis(schema, key, v, u, where):
    """Maps uniform u in [0,1) onto an axis: a list is a choice, a range a draw."""
    if isinstance(v, list) or (isinstance(v, dict) and "values" in v):
        vals = axis_values(schema, key, v, where)
        return vals[min(int(u * len(vals)), len(vals) - 1)]
    lo, hi, scale, step = _range_bounds(schema, key, v, where)
    x = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))) if scale == "log" \
        else lo + u * (hi - lo)
    return _snap(schema, key, x, lo, hi, step)


def _lhs(n, d, rng):
    """Latin hypercube in [0,1)^d: each axis has one sample in each of n strata."""
    u = np.empty((n, d))
    for j in range(d):
        u[:, j] = (rng.permutation(n) + rng.random(n)) / n
    return u


# ---- constraints ------------------------------------------------------------------------

_UNIT_LITERAL = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*"
    r"(KiB/s|MiB/s|GiB/s|TiB/s|kB/s|KB/s|MB/s|GB/s|TB/s|B/ns|B/s|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB|"
    r"THz|GHz|MHz|kHz|Hz|ms|us|ns|ps|%)(?![\w/])")
_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub,
            ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
            ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Constant,
            ast.Name, ast.Attribute, ast.Load, ast.Call, ast.IfExp)
_FUNCS = {"min": min, "max": max, "abs": abs, "log2": math.log2}


def _unit_value(m):
    num, unit = m.group(1), m.group(2)
    if unit == "%":
        return repr(float(num) / 100)
    for vtype in ("bandwidth", "size", "frequency", "time"):
        try:
            return repr(parse_value(vtype, num + unit))
        except ConfigError:
            continue
    return m.group(0)


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class Constraint:
    """`a.b.c <= x.y * 2`: names are config keys (canonical SI values), units allowed."""

    def __init__(self, text, schema, where):
        self.text = text
        src = _UNIT_LITERAL.sub(_unit_value, str(text))
        try:
            tree = ast.parse(src, mode="eval")
        except SyntaxError as e:
            raise SpecError(f"{where}: constraint '{text}': {e.msg}") from e
        for node in ast.walk(tree):
            if not isinstance(node, _ALLOWED):
                raise SpecError(f"{where}: constraint '{text}': {type(node).__name__} is not "
                                "allowed (comparisons, arithmetic, and/or/not, min/max/abs)")
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                                   and node.func.id in _FUNCS):
                raise SpecError(f"{where}: constraint '{text}': only min, max, abs, log2 calls")
        # Replace each dotted key with a plain variable name.
        self.names = {}

        class _Rename(ast.NodeTransformer):
            def visit_Attribute(s, node):
                d = _dotted(node)
                if d is None:
                    raise SpecError(f"{where}: constraint '{text}': bad name")
                return s._var(d, node)

            def visit_Name(s, node):
                if node.id in _FUNCS or node.id in ("True", "False"):
                    return node
                return s._var(node.id, node)

            def _var(s, d, node):
                if d not in schema:
                    schema.check_key(d, f"{where}: constraint '{text}'")
                var = self.names.setdefault(d, f"_k{len(self.names)}")
                return ast.copy_location(ast.Name(id=var, ctx=ast.Load()), node)

        try:
            tree = ast.fix_missing_locations(_Rename().visit(tree))
        except ConfigError as e:
            raise SpecError(str(e)) from e
        self.code = compile(tree, "<constraint>", "eval")

    def __call__(self, resolved):
        env = {var: resolved[k] for k, var in self.names.items()}
        return bool(eval(self.code, {"__builtins__": {}, **_FUNCS}, env))


# ---- expansion ------------------------------------------------------------------------

def expand_settings(spec, schema, samples=None):
    """The spec's config points: a list of {key: canonical value} (spec order, deduped).

    strategy optuna expands as random (its baseline's draws); `samples` replaces the spec's
    count (the first n draws of a longer stream are the n draws of a shorter one)."""
    where = spec.path
    spec.check_keys(schema)
    points = []
    if spec.strategy == "grid":
        _check_grid_size(spec, schema)
        axes = []  # each: list of {key: value} dicts
        for k, v in spec.axes.items():
            axes.append([{k: x} for x in axis_values(schema, k, v, f"{where}: axes")])
        for i, z in enumerate(spec.zips):
            cols = {k: axis_values(schema, k, v, f"{where}: zip[{i}]") for k, v in z.items()}
            lens = {len(c) for c in cols.values()}
            if len(lens) != 1:
                raise SpecError(f"{where}: zip[{i}]: the value lists differ in length ("
                                + ", ".join(f"{k}: {len(c)}" for k, c in cols.items()) + ")")
            n = lens.pop()
            axes.append([{k: cols[k][j] for k in cols} for j in range(n)])
        if axes:
            for combo in itertools.product(*axes):
                p = {}
                for d in combo:
                    p.update(d)
                points.append(p)
    else:
        if spec.zips:
            raise SpecError(f"{where}: zip: only with strategy grid")
        keys = list(spec.axes)
        rng = np.random.default_rng(spec.seed)
        n = samples or spec.samples
        u = _lhs(n, len(keys), rng) if spec.strategy == "lhs" else rng.random((n, len(keys)))
        for row in u:
            points.append({k: _sample_axis(schema, k, spec.axes[k], float(x), f"{where}: axes")
                           for k, x in zip(keys, row)})
    for i, p in enumerate(spec.points):
        try:
            points.append({k: schema.parse(k, v) for k, v in p.items()})
        except ConfigError as e:
            raise SpecError(f"{where}: points[{i}]: {e}") from e
    out, seen = [], set()
    for p in points:
        key = tuple(sorted(p.items()))
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _check_grid_size(spec, schema):
    """Refuses a grid of more than spec.max_points points before making any value."""
    where = spec.path
    lens = [(k, axis_len(schema, k, v, f"{where}: axes")) for k, v in spec.axes.items()]
    for i, z in enumerate(spec.zips):
        zl = [axis_len(schema, k, v, f"{where}: zip[{i}]") for k, v in z.items()]
        lens.append((f"zip[{i}] ({', '.join(z)})", max(zl) if zl else 0))
    configs = math.prod(n for _, n in lens) if lens else 0
    big = sorted(lens, key=lambda kn: -kn[1])[:4]
    detail = "grid: " + " x ".join(f"{k} {n:,} values" for k, n in big) + \
        (" x ..." if len(lens) > len(big) else "") + \
        (f", plus {len(spec.points)} points" if spec.points else "")
    spec.check_size((configs + len(spec.points)) * spec.per_config(), detail)


def constraints(spec, schema):
    return [Constraint(c, schema, f"{spec.path}: constraints") for c in spec.constraints]
