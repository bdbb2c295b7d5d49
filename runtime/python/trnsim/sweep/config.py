"""Config keys, units and resolved configs, as the simulator defines them.

The schema (key -> value type, readers) and the units table come from `trnsim info
--keys --json`; a resolved config from
`trnsim info -c BASE --set k=v ...`, so the simulator stays the one judge of what a
config is (unknown keys, ranges, multiples). Values are held canonically in SI base
units (Hz, B/s, bytes, seconds, fractions; counts as ints) so that `1` and `1.0`, or
`820GB/s` and `0.82TB/s`, compare and hash equal.
"""

import json
import math
import re
import subprocess
from decimal import Decimal, InvalidOperation

# Units per value type (suffix -> multiplier into the base unit): the simulator's own
# table (platform/units.cpp), read from `trnsim info --keys --json` once per process.
_UNITS = None


def load_units(binary=None):
    """The simulator's units table; `binary` defaults to trnsim.find_binary()
    (TRNSIM_BIN, set by `trnsim sweep`, else the build tree's)."""
    global _UNITS
    if _UNITS is None:
        _UNITS = _schema_json(binary)["units"]
    return _UNITS


def _schema_json(binary=None):
    if not binary:
        from trnsim._cli import TrnsimError, find_binary
        try:
            binary = find_binary()
        except TrnsimError as e:
            raise ConfigError(str(e)) from e
    out = _check_output([binary, "info", "--keys", "--json"], "trnsim info --keys --json")
    try:
        return json.loads(out)
    except ValueError as e:
        raise ConfigError(f"{binary} info --keys --json printed no JSON ({e})") from e


INT_TYPES = ("count", "cycles", "size")
FLOAT_TYPES = ("frequency", "bandwidth", "time", "ratio")

_NUM = re.compile(r"^\s*\+?((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(.*?)\s*$")


class ConfigError(ValueError):
    """A value or key the simulator would refuse; the message names the key."""


def canon_float(x):
    """12 significant digits: absorbs binary noise such as 0.82 * 1e12."""
    return float(f"{float(x):.12g}")


def parse_value(vtype, value, key="value"):
    """A spec or config value (str/int/float/bool) -> canonical Python value."""
    if vtype == "choice":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{key}: expected one of its choices (a word), got {value!r}")
        return value.strip()
    if vtype == "section":
        raise ConfigError(f"{key}: a config section (a map of keys), not one value to set")
    if vtype == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip() in ("true", "false"):
            return value.strip() == "true"
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if isinstance(value, bool):
        raise ConfigError(f"{key}: expected a {vtype}, got {value!r}")
    if isinstance(value, (int, float)):
        num, unit = Decimal(repr(value)), ""
    elif isinstance(value, str):
        m = _NUM.match(value)
        if not m:
            raise ConfigError(f"{key}: {value!r} is not a number with a unit")
        try:
            num = Decimal(m.group(1))
        except InvalidOperation as e:
            raise ConfigError(f"{key}: {value!r} is not a number") from e
        unit = m.group(2)
    else:
        raise ConfigError(f"{key}: expected a {vtype}, got {type(value).__name__} {value!r}")
    if vtype == "ratio":
        if unit == "%":
            num /= 100
        elif unit:
            raise ConfigError(f"{key}: unknown unit {unit!r} for a ratio (use 0.5 or 50%)")
        return canon_float(num)
    if vtype in ("count", "cycles"):
        if unit:
            raise ConfigError(f"{key}: a {vtype} takes no unit, got {value!r}")
        if num != num.to_integral_value():
            raise ConfigError(f"{key}: {value!r} is not a whole number")
        return int(num)
    units = load_units().get(vtype)
    if units is None:
        raise ConfigError(f"{key}: unknown value type {vtype!r}")
    if not unit:
        # Plain numbers are taken in the base unit (bytes, B/s, Hz, s).
        unit = {"size": "B", "bandwidth": "B/s", "frequency": "Hz", "time": "s"}[vtype]
    if unit not in units:
        raise ConfigError(f"{key}: unknown unit {unit!r} in {value!r} "
                          f"(a {vtype} takes {', '.join(units)})")
    scaled = num * Decimal(units[unit]) if vtype == "size" else float(num) * units[unit]
    if vtype == "size":
        if scaled != scaled.to_integral_value():
            raise ConfigError(f"{key}: {value!r} is not a whole number of bytes")
        return int(scaled)
    return canon_float(scaled)


def to_cli(vtype, canon):
    """A canonical value as `--set` text the simulator parses back exactly."""
    if vtype == "choice":
        return canon
    if vtype == "bool":
        return "true" if canon else "false"
    if vtype in INT_TYPES:
        return f"{int(canon)}B" if vtype == "size" else str(int(canon))
    if vtype == "ratio":
        return repr(float(canon))
    suffix = {"bandwidth": "B/s", "frequency": "Hz", "time": "s"}[vtype]
    return f"{float(canon)!r}{suffix}".replace("+", "")


def human(vtype, canon):
    """Short display text for plots and dry runs (820GB/s, 24MiB, 2.4GHz)."""
    if vtype == "choice":
        return canon
    if vtype == "bool":
        return "true" if canon else "false"
    if vtype in ("count", "cycles"):
        return str(canon)
    if vtype == "ratio":
        return f"{canon * 100:g}%"
    units = load_units()[vtype]
    if vtype == "size":
        # The largest binary unit that divides the size exactly.
        for u, m in sorted(((u, int(m)) for u, m in units.items() if "i" in u),
                           key=lambda x: -x[1]):
            if canon >= m and canon % m == 0:
                return f"{canon // m}{u}"
        return f"{canon}B"
    # Decimal units, one name per scale (the table's first), largest first; the value
    # in the largest unit it reaches (the smallest unit below all of them).
    scales = {}
    for u, m in units.items():
        if u.isascii() and m not in scales and abs(math.log10(m) - round(math.log10(m))) < 1e-9:
            scales[m] = u
    ordered = sorted(scales.items(), reverse=True)
    for m, u in ordered:
        if canon >= m or m == ordered[-1][0]:
            return f"{canon / m:.4g}{u}"
    return str(canon)


class Schema:
    """Key -> value type, readers and the choices of a `choice` key, from `trnsim info
    --keys --json`. Keys of other core types (`core_types.NAME.X`) take the type and
    readers of `core.X`; `chip.layout` is a text value."""

    LAYOUT = "chip.layout"
    CORE_TYPES = "core_types."

    def __init__(self, types, choices=None, readers=None):
        self.types = dict(types)
        self.choices = dict(choices or {})
        self.readers = dict(readers or {})

    @classmethod
    def from_binary(cls, binary):
        data = _schema_json(binary)
        global _UNITS
        _UNITS = data.get("units", _UNITS)
        types, choices, readers = {}, {}, {}
        for k in data.get("keys", []):
            if k.get("type") in ("section", "layout"):
                continue
            types[k["key"]] = k["type"]
            readers[k["key"]] = k.get("readers", "sim")
            if k["type"] == "choice":
                choices[k["key"]] = list(k.get("choices", []))
        if not types:
            raise ConfigError(f"{binary} info --keys --json printed no config keys")
        from trnsim.sweep.run_keys import RUN_KEYS
        for k in RUN_KEYS:  # `trnsim run` options swept as keys (run_keys.py)
            types[k], readers[k] = "count", "sim"
        return cls(types, choices, readers)

    def _base(self, key):
        """`core_types.NAME.X` -> `core.X`; other keys unchanged."""
        if key.startswith(self.CORE_TYPES):
            rest = key[len(self.CORE_TYPES):].split(".", 1)
            if len(rest) == 2:
                return "core." + rest[1]
        return key

    def __contains__(self, key):
        return key == self.LAYOUT or self._base(key) in self.types

    def vtype(self, key):
        return "layout" if key == self.LAYOUT else self.types[self._base(key)]

    def compiler_reads(self, key):
        """True when the compiled program may depend on the key (its row's readers).
        Other core types' keys do not: programs are compiled for the `core` type."""
        return key == self._base(key) and "compiler" in self.readers.get(key, "")

    def compiler_keys(self):
        return sorted(k for k in self.types if self.compiler_reads(k))

    def check_key(self, key, where):
        if key not in self:
            import difflib
            near = difflib.get_close_matches(key, list(self.types), n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise ConfigError(f"{where}: unknown config key '{key}'{hint}; "
                              "`trnsim info --keys` lists them")

    def parse(self, key, value):
        if key == self.LAYOUT:
            return str(value).replace(" ", "")
        v = parse_value(self.vtype(key), value, key)
        base = self._base(key)
        if base in self.choices and v not in self.choices[base]:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(self.choices[base])}")
        return v

    def cli(self, key, canon):
        return canon if key == self.LAYOUT else to_cli(self.vtype(key), canon)

    def human(self, key, canon):
        return canon if key == self.LAYOUT else human(self.vtype(key), canon)


def _check_output(cmd, what):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise ConfigError(f"{what}: cannot run {cmd[0]}: {e}") from e
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if l.strip()] or [f"exit {p.returncode}"]
        msg = "; ".join(re.sub(r"^trnsim: (error: )?", "", l) for l in lines)
        raise ConfigError(msg)
    return p.stdout


_DUMP = re.compile(r"^([a-z0-9_.]+) = (\S+)(?:\s+#.*)?$")


class Resolver:
    """Resolves (base, overrides) through `trnsim info`, memoised per override set."""

    def __init__(self, binary, base, schema=None):
        self.binary = binary
        self.base = base
        self.schema = schema or Schema.from_binary(binary)
        self._memo = {}

    def resolve(self, overrides):
        """overrides: {key: canonical value} -> {key: canonical value}, every key.

        Raises ConfigError with the simulator's message when it refuses the config.
        """
        from trnsim.sweep.run_keys import is_run_key
        run = {k: v for k, v in overrides.items() if is_run_key(k)}
        if run:  # run options: not the simulator's config, part of the resolved point
            resolved = self.resolve({k: v for k, v in overrides.items() if not is_run_key(k)})
            for k, v in run.items():
                if v < 1:
                    raise ConfigError(f"{k}: must be at least 1")
            resolved.update(run)
            return resolved
        sets = tuple(sorted((k, self.schema.cli(k, v)) for k, v in overrides.items()))
        if sets in self._memo:
            hit = self._memo[sets]
            if isinstance(hit, ConfigError):
                raise hit
            return dict(hit)
        cmd = [self.binary, "info", "-c", self.base]
        for k, v in sets:
            cmd += ["--set", f"{k}={v}"]
        try:
            out = _check_output(cmd, "trnsim info")
            resolved = {}
            for line in out.splitlines():
                m = _DUMP.match(line.strip())
                if m and m.group(1) in self.schema:
                    resolved[m.group(1)] = self.schema.parse(m.group(1), m.group(2))
            if not resolved:
                raise ConfigError(f"trnsim info -c {self.base} printed no config keys")
        except ConfigError as e:
            self._memo[sets] = e
            raise
        self._memo[sets] = resolved
        return dict(resolved)
