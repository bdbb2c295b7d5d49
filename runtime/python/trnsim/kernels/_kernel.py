"""@kernel: tracing a Python function into tile IR, and the three ways to run it."""

import functools
import inspect
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from trnsim._cli import TrnsimError, _cli_message, _safe_name, _set_args, find_binary
from trnsim.kernels import _lang, _sim
from trnsim.kernels._lang import HbmTensor, KernelError, Limits, Trace, dtype_name
from trnsim.report import Report, compare


class spec:
    """An HBM input: its shape and dtype, with or without data.

    spec((128, 512), "bf16")  declares a tensor without data (benchmark with
    functional=False, trace); spec(array, "bf16") gives the data and overrides the
    dtype (numpy has no bf16: the values are rounded as the device rounds them)."""

    def __init__(self, shape_or_array, dtype=None):
        if hasattr(shape_or_array, "shape") and hasattr(shape_or_array, "dtype"):
            a = _as_numpy(shape_or_array)
            self.data, self.shape = a, tuple(a.shape)
            self.dtype = dtype_name(dtype) if dtype else dtype_name(a.dtype)
        else:
            self.data = None
            self.shape = tuple(int(s) for s in shape_or_array)
            self.dtype = dtype_name(dtype or "fp32")

    def __repr__(self):
        return f"spec({list(self.shape)}, {self.dtype!r}{', with data' if self.data is not None else ''})"


def _as_numpy(x):
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        x = x.numpy()
    return np.asarray(x)


def _is_tensor_arg(x):
    return isinstance(x, (spec, np.ndarray)) or hasattr(x, "detach") and hasattr(x, "shape")


# ---------------------------------------------------------------- limits from configs

_SIZE = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 1000, "MB": 10 ** 6,
         "GB": 10 ** 9}
_LIMIT_KEYS = {"partitions": "core.sbuf.partitions", "psum_partitions": "core.psum.partitions",
               "sbuf_bytes": "core.sbuf.partition_size", "psum_bytes": "core.psum.partition_size",
               "psum_bank_bytes": "core.psum.bank_size",
               "matmul_max_n": "core.tensor.max_moving_free",
               "bn_stats_max_free": "core.vector.bn_stats_max_free"}
_limits_cache = {}


def _number(v):
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", v)
    if not m or (m.group(2) and m.group(2) not in _SIZE):
        raise ValueError(v)
    return int(float(m.group(1)) * _SIZE.get(m.group(2) or "B", 1))


def config_limits(config="trn2", set=None):
    """The Limits of a platform config (a preset name or YAML path), read from
    `trnsim info -c CONFIG`: the values the simulator and compiler use."""
    key = (str(config), json.dumps(_set_args(set)))
    if key in _limits_cache:
        return _limits_cache[key]
    cmd = [find_binary(), "info", "-c", str(config)] + _set_args(set)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise TrnsimError(_cli_message(p.stderr, p.returncode), p.returncode, cmd, p.stdout,
                          p.stderr)
    vals = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^([a-z_.0-9]+) = (\S+)", line)
        if m and m.group(1) not in vals:
            vals[m.group(1)] = m.group(2)
    try:
        lim = Limits(config=str(config), **{f: _number(vals[k]) for f, k in _LIMIT_KEYS.items()})
    except (KeyError, ValueError) as e:
        raise TrnsimError(f"trnsim info -c {config}: cannot read the limits ({e})", 0, cmd,
                          p.stdout, p.stderr) from e
    _limits_cache[key] = lim
    return lim


# ---------------------------------------------------------------- traced kernels

class Traced:
    """One trace of a kernel: `text` is the tile IR (.tir), `inputs` {name: spec},
    `outputs` the output tensors in the order the kernel returned them."""

    def __init__(self, trace, inputs, outputs, structure):
        self.trace, self.inputs, self.outputs, self._structure = trace, inputs, outputs, structure
        self._text = None

    @property
    def text(self):
        if self._text is None:
            self._text = _lang.to_text(self.trace)
        return self._text

    @property
    def limits(self):
        return self.trace.limits

    def pack(self, values):
        """{output name: array} -> what the kernel returned (one array, tuple or list)."""
        vals = [values[t.name] for t in self.outputs]
        if self._structure is None:
            return vals[0]
        return self._structure(vals)

    def source_of(self, op_id):
        if 0 <= op_id < len(self.trace.ops):
            return self.trace.ops[op_id].where
        return None


class Kernel:
    """A Python function traced into a tile-IR kernel (see the package docstring)."""

    def __init__(self, fn, name=None):
        self.fn = fn
        self.name = name or fn.__name__
        self.signature = inspect.signature(fn)
        functools.update_wrapper(self, fn)

    def trace(self, *args, config="trn2", limits=None, set=None, **kwargs):
        """Runs the function once on proxies; returns a Traced."""
        lim = limits if limits is not None else config_limits(config, set)
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"kernel {self.name}: {e}") from None
        tr = Trace("", lim)
        tr.name = tr.unique(self.name)
        inputs = {}
        for pname, value in bound.arguments.items():
            if _is_tensor_arg(value):
                s = value if isinstance(value, spec) else spec(value)
                t = HbmTensor(tr.unique(pname), s.shape, s.dtype, "input")
                if not s.shape:
                    raise KernelError(f"kernel {self.name}: input '{pname}' is a 0-d array; "
                                      "give it at least one dimension")
                tr.tensors.append(t)
                inputs[t.name] = s
                bound.arguments[pname] = t
        prev = getattr(_lang._state, "trace", None)
        _lang._state.trace = tr
        try:
            result = self.fn(*bound.args, **bound.kwargs)
        finally:
            _lang._state.trace = prev
        outs, structure = self._outputs(tr, result)
        for t in outs:
            if not any(op.opcode == "dma_copy" and getattr(op.operands["dst"], "tensor", None)
                       is t for op in tr.ops):
                raise KernelError(f"kernel {self.name}: output '{t.name}' is never stored "
                                  "(trnsim.kernels.store)")
        return Traced(tr, inputs, outs, structure)

    def _outputs(self, tr, result):
        declared = [t for t in tr.tensors if t.role == "output"]
        if result is None:
            if not declared:
                raise KernelError(f"kernel {self.name} has no output: create one with "
                                  "trnsim.kernels.output(shape, dtype), store to it and return it")
            return declared, (tuple if len(declared) > 1 else None)
        if isinstance(result, HbmTensor):
            outs, structure = [result], None
        elif isinstance(result, (tuple, list)) and all(isinstance(r, HbmTensor) for r in result):
            outs, structure = list(result), type(result)
        else:
            raise KernelError(f"kernel {self.name} returned {type(result).__name__}; return the "
                              "output tensor(s) from trnsim.kernels.output")
        for t in outs:
            if t.role != "output":
                raise KernelError(f"kernel {self.name} returned '{t.name}', which is an input")
        return outs, structure

    def tir(self, *args, config="trn2", limits=None, set=None, **kwargs):
        """The tile-IR text of the kernel for these arguments."""
        return self.trace(*args, config=config, limits=limits, set=set, **kwargs).text

    def simulate(self, *args, config="trn2", limits=None, set=None, **kwargs):
        """The kernel's results computed on the host with numpy (no timing): arrays in
        the structure the kernel returns. Never-written memory reads as NaN."""
        return self.simulate_traced(self.trace(*args, config=config, limits=limits, set=set,
                                               **kwargs))

    def simulate_traced(self, t):
        """simulate() of a Traced of this kernel."""
        data = {}
        for name, s in t.inputs.items():
            if s.data is None:
                raise KernelError(f"kernel {self.name}: input '{name}' is a spec without "
                                  "data; simulate needs arrays")
            data[name] = s.data
        return t.pack(_sim.simulate(t.trace, data))

    __call__ = simulate

    def benchmark(self, *args, config="trn2", set=None, trace=None, functional=True,
                  checks=False, timeout=None, workdir=None, reference=None, **kwargs):
        """Compiles and simulates the kernel with `trnsim run` on `config`.

        Returns (outputs, Report): outputs in the kernel's return structure (None when
        functional=False: timing only, inputs may be data-less specs); the Report has
        simulated_ns, engine_active_pct, DMA figures and the run's text. trace: a
        Chrome-trace path; checks: run with --check-races and --poison (a finding
        fails the run); reference: arrays (as the outputs) to compare with, in
        report.errors; workdir: keep kernel.tir, the inputs and outputs there."""
        t = self.trace(*args, config=config, set=set, **kwargs)
        return self.benchmark_traced(t, config=config, set=set, trace=trace,
                                     functional=functional, checks=checks, timeout=timeout,
                                     workdir=workdir, reference=reference)

    def benchmark_traced(self, t, config="trn2", set=None, trace=None, functional=True,
                         checks=False, timeout=None, workdir=None, reference=None):
        """benchmark() of a Traced of this kernel (traced for the same config)."""
        binary = find_binary()
        own = tempfile.TemporaryDirectory(prefix="trnsim-kernel-") if workdir is None else None
        work = Path(own.name if own else workdir)
        work.mkdir(parents=True, exist_ok=True)
        try:
            tir = work / f"{t.trace.name}.tir"
            tir.write_text(t.text)
            stats = work / "stats.json"
            out_dir = work / "outputs"
            cmd = [binary, "run", str(tir), "-c", str(config), "--stats", str(stats)]
            cmd += _set_args(set)
            if functional:
                for name, s in t.inputs.items():
                    if s.data is None:
                        raise KernelError(f"kernel {self.name}: input '{name}' is a spec "
                                          "without data; pass an array or functional=False")
                    p = work / f"in_{_safe_name(name)}.npy"
                    np.save(p, np.ascontiguousarray(s.data))
                    cmd += ["--input", f"{name}={p}"]
                cmd += ["--output-dir", str(out_dir)]
            else:
                cmd += ["--no-functional"]
            if checks:
                cmd += ["--check-races", "--poison"]
            if trace:
                Path(trace).parent.mkdir(parents=True, exist_ok=True)
                cmd += ["--trace", str(trace)]
            t0 = time.perf_counter()
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired as e:
                raise TrnsimError(f"trnsim run {tir} did not finish within {timeout} s",
                                  cmd=cmd) from e
            wall = time.perf_counter() - t0
            if p.returncode != 0:
                msg = _cli_message(p.stderr + "\n" + _findings(p.stdout), p.returncode)
                raise TrnsimError(self._annotate(t, msg), p.returncode, cmd, p.stdout, p.stderr)
            with open(stats) as f:
                tree = json.load(f)
            outputs = None
            if functional:
                vals = {o.name: np.load(out_dir / f"{_safe_name(o.name)}.npy") for o in t.outputs}
                outputs = t.pack(vals)
            errors = {}
            if reference is not None and functional:
                refs = reference if isinstance(reference, (tuple, list)) else [reference]
                errors = {o.name: compare(_pick(outputs, i), r)
                          for i, (o, r) in enumerate(zip(t.outputs, refs))}
            report = Report(tree, config=str(config), precision="", wall_seconds=wall,
                            errors=errors, trace=str(trace) if trace else None,
                            model=t.trace.name, text=p.stdout)
            return outputs, report
        finally:
            if own is not None:
                own.cleanup()

    def torch_op(self, n_inputs=None, n_outputs=1, mode="simulate", config="trn2", set=None,
                 name=None, **kwargs):
        """This kernel as a PyTorch operator, torch.ops.trnsim_kernels.NAME: `n_inputs`
        tensors in (default: the parameters without defaults), `n_outputs` out, computed
        by simulate (numpy) or benchmark (trnsim run; the op's `reports` keeps each
        Report). `kwargs` fix the kernel's other arguments. Forward only (no autograd)."""
        from trnsim.kernels._torch import torch_op
        if n_inputs is None:
            n_inputs = sum(1 for p in self.signature.parameters.values()
                           if p.default is inspect.Parameter.empty and p.name not in kwargs)
        return torch_op(self, n_inputs, n_outputs, mode, config, set, name, **kwargs)

    @staticmethod
    def _annotate(t, msg):
        """Adds the kernel source line of every op the CLI's message names (%ID)."""
        seen, notes = set(), []
        for m in re.finditer(r"%(\d+)", msg):
            i = int(m.group(1))
            w = t.source_of(i)
            if w and i not in seen:
                seen.add(i)
                notes.append(f"op %{i} is {w[0]}:{w[1]}")
        return msg + ("\n" + "\n".join(notes) if notes else "")


def _pick(outputs, i):
    return outputs[i] if isinstance(outputs, (tuple, list)) else outputs


def _findings(stdout):
    # --check-races / --poison findings are on stdout.
    return "\n".join("trnsim: " + l for l in stdout.splitlines()
                     if "race" in l.lower() or "poison" in l.lower())


def kernel(fn=None, *, name=None):
    """Decorator: @kernel or @kernel(name="...") makes a Kernel of a function whose
    array arguments become HBM input tensors (other arguments pass through)."""
    if fn is None:
        return lambda f: Kernel(f, name)
    return Kernel(fn, name)
