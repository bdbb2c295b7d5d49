"""The sweep spec (YAML) and its expansion into points.

    base: trn2                      # preset or YAML path (relative to the spec)
    workloads:                      # bundled example models and/or ONNX files
      - example: transformer        #   examples/models.py name; `args:` go to its builder
      - onnx: models/net.onnx       #   `name:` defaults to the file stem
    precision: bf16                 # or a list (then an axis of its own)
    timing_only: true               # --no-functional
    strategy: grid                  # grid | random | lhs (Latin hypercube) | optuna
    samples: 16                     # random / lhs: number of points; optuna: the budget
    seed: 0                         # random / lhs / optuna
    optuna: {batch: 2, startup: 4}  # optuna only (optuna_search.py): configs per round,
                                    # random-start trials
    axes:                           # config key -> values
      core.tensor.rows: [64, 128]                        # a list
      hbm.bandwidth: {range: [400GB/s, 3.2TB/s], steps: 4, scale: log}   # grid over a range
    zip:                            # groups whose values vary together (one grid axis each)
      - {core.tensor.rows: [32, 64], core.tensor.cols: [32, 64]}
    points:                         # explicit points (added after the grid / samples)
      - {core.dma.engines: 4, hbm.bandwidth: 1TB/s}
    constraints:                    # Python-like expressions over resolved keys; units allowed
      - core.tensor.cols <= core.tensor.rows
    compile_pin: [hbm.bandwidth]    # compiler-read keys compiled at the base value (one
                                    # program reused across them: "same binary, other chip")
    cost: {pe: 1.0, sram_mib: 0.5, hbm_tbps: 20.0}       # cost proxy weights (cost.py)

Values use the config's units. Unknown keys anywhere are errors that name the key.
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
STRATEGIES = ("grid", "random", "lhs", "optuna")
OPTUNA_KEYS = {"batch", "startup"}
PRECISIONS = ("bf16", "fp32", "fp8")


class SpecError(ValueError):
    """A spec the sweep cannot run; the message names the file and key."""


class Spec:
    def __init__(self, data, path="<spec>"):
        self.path = path
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
        if not isinstance(self.seed, int):
            raise SpecError(f"{path}: seed: expected an integer")
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
        self.optuna = self._optuna(data.get("optuna"))

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


def load_spec(path):
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise SpecError(f"{path}: cannot read the spec: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise SpecError(f"{path}: invalid YAML: {e}") from e
    return Spec(data, path)


# ---- value lists and ranges ----------------------------------------------------------

def _range_bounds(schema, key, r, where):
    if not isinstance(r, dict):
        raise SpecError(f"{where}: {key}: expected a list of values or a {{range: ...}} map")
    for k in r:
        if k not in RANGE_KEYS:
            raise SpecError(f"{where}: {key}: unknown range key '{k}' (known: "
                            f"{', '.join(sorted(RANGE_KEYS))})")
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
    scale = r.get("scale", "linear")
    if scale not in ("linear", "log"):
        raise SpecError(f"{where}: {key}: scale: 'linear' or 'log', got {scale!r}")
    if scale == "log" and lo <= 0:
        raise SpecError(f"{where}: {key}: a log scale needs a positive low end")
    return lo, hi, scale, step


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
        return axis_values(schema, key, v["values"], where)
    if not isinstance(v, dict):
        return axis_values(schema, key, [v], where)
    lo, hi, scale, step = _range_bounds(schema, key, v, where)
    steps = v.get("steps")
    if steps is None:
        if not step:
            raise SpecError(f"{where}: {key}: a grid range needs steps: N or step: S")
        n = int(math.floor((hi - lo) / step + 1e-9)) + 1
        xs = [lo + i * step for i in range(n)]
    else:
        if not isinstance(steps, int) or steps < 1:
            raise SpecError(f"{where}: {key}: steps: expected a positive integer")
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


def constraints(spec, schema):
    return [Constraint(c, schema, f"{spec.path}: constraints") for c in spec.constraints]
