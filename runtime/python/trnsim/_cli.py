"""Finding and running the `trnsim` binary."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from trnsim.report import Report, compare

# <repo>/runtime/python/trnsim/_cli.py -> <repo>
_REPO = Path(__file__).resolve().parents[3]


class TrnsimError(RuntimeError):
    """The simulator refused or failed a run; `message` is what the CLI said."""

    def __init__(self, message, returncode=None, cmd=None, stdout="", stderr=""):
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.cmd = cmd
        self.stdout = stdout
        self.stderr = stderr

    @property
    def unlowered_op(self):
        """The op type named when the compiler cannot lower a node to the chip (an op
        type it lacks, or a shape or attribute it refuses), else None."""
        if "lowering:" not in self.message:
            return None
        for pat in (r"op type '([^']+)' cannot be lowered", r"anchor '([^']+)' is not lowered",
                    r"\(op ([^)]+)\)"):
            m = re.search(pat, self.message)
            if m:
                return m.group(1)
        return "?"


def find_binary():
    """TRNSIM_BIN, else <repo>/build/runtime/trnsim, else `trnsim` on PATH."""
    env = os.environ.get("TRNSIM_BIN")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise TrnsimError(f"TRNSIM_BIN={env} is not an executable file")
        return env
    built = _REPO / "build" / "runtime" / "trnsim"
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    on_path = shutil.which("trnsim")
    if on_path:
        return on_path
    raise TrnsimError(
        "cannot find the trnsim binary: set TRNSIM_BIN, build it into "
        f"{built} (scripts/build.sh), or put trnsim on PATH")


def _cli_message(stderr, returncode):
    """The CLI's own error lines ('trnsim: error: X' -> 'X'), else its last stderr line."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    picked = [l for l in lines if l.startswith("trnsim:")]
    if picked:
        return "\n".join(re.sub(r"^trnsim: (error: )?", "", l) for l in picked)
    if lines:
        return lines[-1]
    return f"trnsim exited with status {returncode} and no message"


def _set_args(overrides):
    if overrides is None:
        return []
    items = overrides.items() if isinstance(overrides, dict) else overrides
    args = []
    for item in items:
        if isinstance(item, str):
            if "=" not in item:
                raise ValueError(f"config override '{item}' is not KEY=VALUE")
            args += ["--set", item]
        else:
            k, v = item
            args += ["--set", f"{k}={v}"]
    return args


def _safe_name(name):
    # The CLI writes an output as DIR/<name with other characters as '_'>.npy.
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def run_model(model, inputs=None, config="trn2", precision="bf16", set=None, trace=None,
              stats=None, timeout=None, functional=True, fallback=True, reference=None, output_names=None,
              workdir=None):
    """Compiles and simulates the ONNX file `model` with `trnsim run`.

    inputs: {name: array or .npy path}; inputs not given get the CLI's seeded random
    values. reference: {name: array} to compare the outputs against. output_names:
    the outputs to read back (default: every .npy the CLI wrote). Returns
    ({name: np.ndarray}, Report); raises TrnsimError with the CLI's message on failure.
    """
    binary = find_binary()
    own_tmp = None
    if workdir is None:
        own_tmp = tempfile.TemporaryDirectory(prefix="trnsim-")
        workdir = own_tmp.name
    try:
        work = Path(workdir)
        out_dir = work / "outputs"
        stats_path = Path(stats) if stats else work / "stats.json"
        # --random-inputs: inputs not given get the CLI's seeded values (without it the
        # CLI requires every input).
        cmd = [binary, "run", str(model), "-c", str(config), "--precision", str(precision),
               "--stats", str(stats_path), "--random-inputs"]
        cmd += _set_args(set)
        if not fallback:
            cmd += ["--no-fallback"]
        for name, value in (inputs or {}).items():
            if "=" in name:
                raise ValueError(f"input name '{name}' contains '='")
            if isinstance(value, (str, os.PathLike)):
                path = value
            else:
                path = work / f"in_{_safe_name(name)}.npy"
                np.save(path, np.ascontiguousarray(value))
            cmd += ["--input", f"{name}={path}"]
        if functional:
            cmd += ["--output-dir", str(out_dir)]
        else:
            cmd += ["--no-functional"]
        if trace:
            Path(trace).parent.mkdir(parents=True, exist_ok=True)
            cmd += ["--trace", str(trace)]
        if stats:
            stats_path.parent.mkdir(parents=True, exist_ok=True)

        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise TrnsimError(f"trnsim run {model} did not finish within {timeout} s",
                              cmd=cmd) from e
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise TrnsimError(_cli_message(proc.stderr, proc.returncode), proc.returncode, cmd,
                              proc.stdout, proc.stderr)
        try:
            with open(stats_path) as f:
                tree = json.load(f)
        except (OSError, ValueError) as e:
            raise TrnsimError(f"{stats_path}: cannot read the stats of the run: {e}", 0, cmd,
                              proc.stdout, proc.stderr) from e

        outputs = {}
        if functional:
            names = output_names
            if names is None:
                names = sorted(p.stem for p in out_dir.glob("*.npy"))
            for name in names:
                path = out_dir / f"{_safe_name(name)}.npy"
                if not path.is_file():
                    raise TrnsimError(f"trnsim wrote no output '{name}' (expected {path})", 0,
                                      cmd, proc.stdout, proc.stderr)
                outputs[name] = np.load(path)
        errors = {}
        if reference is not None and functional:
            errors = {n: compare(outputs[n], np.asarray(r)) for n, r in reference.items()
                      if n in outputs}
        report = Report(tree, config=str(config), precision=str(precision), wall_seconds=wall,
                        errors=errors, trace=str(trace) if trace else None,
                        model=Path(model).stem, text=proc.stdout)
        return outputs, report
    finally:
        if own_tmp is not None:
            own_tmp.cleanup()
