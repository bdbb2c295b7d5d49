"""Config keys, units and resolved configs, as the simulator defines them.

The schema (key -> value type) comes from `trnsim info --keys`; a resolved config from
`trnsim info -c BASE --set k=v ...`, so the simulator stays the one judge of what a
config is (unknown keys, ranges, multiples). Values are held canonically in SI base
units (Hz, B/s, bytes, seconds, fractions; counts as ints) so that `1` and `1.0`, or
`820GB/s` and `0.82TB/s`, compare and hash equal.
"""

import re
import subprocess
from decimal import Decimal, InvalidOperation

# Units per value type: suffix -> multiplier into the base unit (units.cpp).
_BANDWIDTH = {"B/s": 1, "kB/s": 1e3, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
              "KiB/s": 2**10, "MiB/s": 2**20, "GiB/s": 2**30, "TiB/s": 2**40, "B/ns": 1e9}
_SIZE = {"B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
         "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_FREQUENCY = {"Hz": 1, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9, "THz": 1e12}
_TIME = {"s": 1, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "ns": 1e-9, "ps": 1e-12}
_UNITS = {"bandwidth": _BANDWIDTH, "size": _SIZE, "frequency": _FREQUENCY, "time": _TIME}
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
    units = _UNITS.get(vtype)
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
    if vtype == "size":
        for u in ("TiB", "GiB", "MiB", "KiB"):
            if canon >= _SIZE[u] and canon % _SIZE[u] == 0:
                return f"{canon // _SIZE[u]}{u}"
        return f"{canon}B"
    scales = {"bandwidth": (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("B/s", 1)),
              "frequency": (("THz", 1e12), ("GHz", 1e9), ("MHz", 1e6), ("Hz", 1)),
              "time": (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("ps", 1e-12))}
    for u, s in scales[vtype]:
        if canon >= s or s == scales[vtype][-1][1]:
            return f"{canon / s:.4g}{u}"
    return str(canon)


class Schema:
    """Key -> value type (and the choices of a `choice` key), from `trnsim info --keys`."""

    def __init__(self, types, choices=None):
        self.types = dict(types)
        self.choices = dict(choices or {})

    @classmethod
    def from_binary(cls, binary):
        out = _check_output([binary, "info", "--keys"], "trnsim info --keys")
        lines = out.splitlines()
        # Columns by the header's word offsets (a check such as "> 0" holds a space).
        head = lines[0] if lines else ""
        check_at, desc_at = head.find("check"), head.find("description")
        types, choices = {}, {}
        for line in lines[1:]:
            parts = line.split()
            if len(parts) >= 2 and "." in parts[0]:
                types[parts[0]] = parts[1]
                if parts[1] == "choice" and 0 <= check_at < desc_at:
                    choices[parts[0]] = line[check_at:desc_at].strip().split("|")
        if not types:
            raise ConfigError(f"{binary} info --keys printed no config keys")
        return cls(types, choices)

    def __contains__(self, key):
        return key in self.types

    def vtype(self, key):
        return self.types[key]

    def check_key(self, key, where):
        if key not in self.types:
            import difflib
            near = difflib.get_close_matches(key, list(self.types), n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise ConfigError(f"{where}: unknown config key '{key}'{hint}; "
                              "`trnsim info --keys` lists them")

    def parse(self, key, value):
        v = parse_value(self.types[key], value, key)
        if key in self.choices and v not in self.choices[key]:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(self.choices[key])}")
        return v

    def cli(self, key, canon):
        return to_cli(self.types[key], canon)

    def human(self, key, canon):
        return human(self.types[key], canon)


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
