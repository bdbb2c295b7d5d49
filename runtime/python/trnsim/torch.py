"""PyTorch front door: export a module to ONNX and run it on the simulator.

    import trnsim.torch
    outputs, report = trnsim.torch.run(model, (x,), config="trn2", precision="bf16")
    print(report)

`run` exports the module or plain function of tensors (opset 17, eval mode), runs
`trnsim run` on it, reads the outputs back as tensors shaped and typed like the
module's own, and compares them with PyTorch eager. `backend` has the torch.compile
backend signature; on torch 1.x use it on a `torch.fx.symbolic_trace`d module, on
torch >= 2 it is registered as torch.compile(model, backend="trnsim").
"""

import inspect
import os
import re
import shutil
import subprocess
import tempfile
import warnings
import weakref

import numpy as np
import torch

from trnsim._cli import TrnsimError, _cli_message, _set_args, find_binary, run_model

__all__ = ["ExportError", "backend", "make_backend", "run"]

OPSET = 17


class ExportError(TrnsimError):
    """torch.onnx.export could not export the module."""


def _as_tuple(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    inputs = tuple(example_inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"example input {i} is a {type(t).__name__}; only tensors are "
                            "passed to the simulator")
    return inputs


def _flatten(out):
    """Flattens nested tuple/list/dict outputs in the order torch.onnx.export uses; returns
    (tensors, rebuild) where rebuild(tensors) restores the structure."""
    if isinstance(out, torch.Tensor):
        return [out], lambda ts: ts[0]
    if isinstance(out, (tuple, list)):
        parts = [_flatten(o) for o in out]
        counts = [len(p[0]) for p in parts]
        flat = [t for p in parts for t in p[0]]

        def rebuild(ts):
            items, i = [], 0
            for (_, rb), n in zip(parts, counts):
                items.append(rb(ts[i:i + n]))
                i += n
            if isinstance(out, list):
                return items
            if hasattr(out, "_fields"):  # namedtuple
                return type(out)(*items)
            return tuple(items)

        return flat, rebuild
    if isinstance(out, dict):
        keys = list(out)
        flat_vals, rb_vals = _flatten([out[k] for k in keys])
        return flat_vals, lambda ts: type(out)(zip(keys, rb_vals(ts)))
    raise TypeError(f"module returned a {type(out).__name__}; the simulator returns tensors "
                    "(or tuples/lists/dicts of them)")


def _safe(name):
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return name if name and not name[0].isdigit() else "t_" + name


def _signature(fn):
    try:
        target = fn.forward if isinstance(fn, torch.nn.Module) else fn
        return inspect.signature(target)
    except (TypeError, ValueError):  # builtins and some C callables have none
        return None


def _input_names(fn, n):
    sig = _signature(fn)
    params = [] if sig is None else [
        p.name for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [_safe(p) for p in params[:n]]
    names += [f"input_{i}" for i in range(len(names), n)]
    if len(set(names)) != n:
        names = [f"input_{i}" for i in range(n)]
    return names


def _to_numpy(t):
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16,):
        t = t.float()  # the CLI reads bf16 tensors as float32 .npy
    return t.contiguous().numpy()


class _Call(torch.nn.Module):
    """Calls `fn` with exactly the example inputs. torch.onnx.export takes Modules
    only, and appends the defaults of forward's further parameters to the inputs it
    traces (`scale=2.0` would become a graph input); here they stay Python values."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _exportable(fn, n):
    """`fn` itself when torch.onnx.export traces it with just its n inputs, else wrapped
    in _Call (a function, or a forward with parameters beyond the n given). Wrapping
    only when needed keeps the usual node and weight names free of a wrapper prefix."""
    if not isinstance(fn, torch.nn.Module):
        return _Call(fn)
    sig = _signature(fn)
    if sig is not None and len(sig.parameters) > n:
        return _Call(fn)
    return fn


def _export(module, inputs, path, input_names, output_names):
    # Exported with grad enabled: in eval mode under no_grad, nn.TransformerEncoderLayer
    # takes a fused fast path (aten::_transformer_encoder_layer_fwd) with no ONNX form.
    # The export only traces, so no gradient is computed either way. The exporter's
    # chatter is hidden, but not a TracerWarning: a data-dependent branch or shape fixed
    # at export is something the user must see.
    try:
        with torch.enable_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.simplefilter("default", torch.jit.TracerWarning)
            torch.onnx.export(module, inputs, path, opset_version=OPSET,
                              input_names=input_names, output_names=output_names,
                              do_constant_folding=True, custom_opsets={"trnsim.kernels": 1})
    except Exception as e:  # the exporter raises many types; keep its message
        msg = str(e).strip().splitlines()
        raise ExportError(f"torch.onnx.export failed: {msg[0] if msg else type(e).__name__}"
                          ) from e


def _kernels_traced_for(config, set):
    """trnsim.kernels operators export their kernel traced for the run's config."""
    import contextlib
    import sys
    mod = sys.modules.get("trnsim.kernels._torch")  # only loaded when a kernel op exists
    return mod.traced_for(config, set) if mod else contextlib.nullcontext()


def _model_name(fn):
    if isinstance(fn, torch.nn.Module) or not hasattr(fn, "__name__"):
        return type(fn).__name__
    return fn.__name__.strip("<>")  # "<lambda>" -> "lambda"


class _Prepared:
    """One call's eager reference and names: the simulator's inputs (copies taken
    before anything runs), the eager outputs flattened, input and output names."""

    def __init__(self, module, inputs):
        self.inputs = inputs
        # The simulator's inputs are taken now: the eager and the export runs each get
        # their own copies, so a module that writes its input in place (x.add_(1),
        # ReLU(inplace=True)) changes neither the caller's tensors nor what the other
        # runs see.
        self.arrays = [np.array(_to_numpy(t)) for t in inputs]  # copies, not views
        with torch.no_grad():
            eager = module(*self.fresh())
        self.flat_ref, self.rebuild = _flatten(eager)
        self.in_names = _input_names(module, len(inputs))
        out = ["output"] if len(self.flat_ref) == 1 else [
            f"output_{i}" for i in range(len(self.flat_ref))]
        self.out_names = [n if n not in self.in_names else "out_" + n for n in out]

    def fresh(self):
        return tuple(t.clone() for t in self.inputs)

    def reference(self):
        return {n: _to_numpy(t) for n, t in zip(self.out_names, self.flat_ref)}

    def outputs(self, outs, exact_ints=False):
        """The simulator's outputs shaped and typed like eager's; exact_ints: integer and
        bool outputs come as the device's fp32 (a compiled program's raw outputs)."""
        tensors = []
        for n, ref in zip(self.out_names, self.flat_ref):
            a = np.array(outs[n])
            if exact_ints and not ref.is_floating_point():
                a = a != 0 if ref.dtype == torch.bool else np.rint(a)
            tensors.append(torch.from_numpy(a).to(ref.dtype).reshape(ref.shape))
        return self.rebuild(tensors)


def _eval_mode(module):
    """Puts `module` in eval mode; returns the (submodule, training) list to restore
    (a mix of train/eval stays a mix)."""
    modes = [(m, m.training) for m in module.modules()] if isinstance(
        module, torch.nn.Module) else []
    if modes:
        module.eval()
    return modes


def run(module, example_inputs, config="trn2", precision="bf16", trace=None, stats=None,
        set=None, timeout=None, functional=True, name=None, fallback=True):
    """Runs `module(*example_inputs)` on the simulator.

    module: a torch.nn.Module or a plain function / lambda of tensors; the example
    inputs are its positional arguments (further parameters keep their defaults and
    are not graph inputs). The example tensors are never modified: the eager
    reference, the export and the simulator each see their original values, even when
    the module writes its input in place.
    config: preset (trn1, trn2, trn3, tiny) or YAML path; precision: matmul operand type
    (bf16, fp32, fp8); trace / stats: paths for the Perfetto trace and the stats JSON;
    set: config overrides ({key: value} or ["key=value"]); timeout: seconds for the
    simulator call; functional=False times the run only (outputs are then None);
    fallback=False refuses ops the chip cannot run instead of running them on the host.
    Returns (outputs, Report): outputs have the structure, shapes and dtypes of the
    module's eager outputs. Raises TrnsimError (the CLI's message) or ExportError.
    """
    if not callable(module):
        raise TypeError(f"run: module is a {type(module).__name__}; give a torch.nn.Module "
                        "(or a function of tensors)")
    inputs = _as_tuple(example_inputs)
    modes = _eval_mode(module)
    try:
        prep = _Prepared(module, inputs)
        with tempfile.TemporaryDirectory(prefix="trnsim-torch-") as work:
            path = os.path.join(work, "model.onnx")
            with _kernels_traced_for(config, set):  # trnsim.kernels ops in the forward
                _export(_exportable(module, len(inputs)), prep.fresh(), path, prep.in_names,
                        prep.out_names)
            outs, report = run_model(
                path, dict(zip(prep.in_names, prep.arrays)), config=config,
                precision=precision, set=set, trace=trace, stats=stats, timeout=timeout,
                functional=functional, fallback=fallback, reference=prep.reference(),
                output_names=prep.out_names, workdir=work)
    finally:
        for m, training in modes:
            m.training = training
    report.model = name or _model_name(module)
    if not functional:
        return None, report
    return prep.outputs(outs), report


def _compile_program(onnx_path, program_path, config, precision, set, timeout):
    """`trnsim compile` of the exported model to one device program; False when the
    model needs the host (a compiled program file holds device code only)."""
    cmd = [find_binary(), "compile", str(onnx_path), "-o", str(program_path), "-c", str(config),
           "--precision", str(precision)] + _set_args(set)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise TrnsimError(f"trnsim compile {onnx_path} did not finish within {timeout} s",
                          cmd=cmd) from e
    if proc.returncode == 0:
        return True
    err = TrnsimError(_cli_message(proc.stderr, proc.returncode), proc.returncode, cmd,
                      proc.stdout, proc.stderr)
    if err.unlowered_op is not None:
        return False
    raise err


def _key_part(value):
    if isinstance(value, dict):
        return tuple(sorted((str(k), str(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_key_part(v) for v in value)
    return str(value)


class _CacheEntry:
    def __init__(self, directory):
        self.dir = directory
        self.onnx = os.path.join(directory, "model.onnx")
        self.program = None  # the compiled device program, when one holds the model


def make_backend(**options):
    """A torch.compile-style backend bound to run() options (config, precision, set,
    fallback, timeout, ...).

    The callable it returns caches per input signature (shapes and dtypes; the graph
    is the one it was made for, the options are fixed): the first call with a
    signature exports the graph and compiles it (`trnsim compile`, kept in a
    directory that lives as long as the callable); later calls with the same
    signature only simulate the kept program. A model with host fallback cannot be
    one program file: its export is reused and `trnsim run` compiles it again. The
    report's `compiled` says which: "compiled", "cached" or "recompiled"; the
    callable's `compiles` counts the compiles, `last_report` is the latest Report.
    """
    known = set(inspect.signature(run).parameters) - {"module", "example_inputs"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"make_backend: unknown option(s) {', '.join(unknown)}; run() takes "
                        f"{', '.join(sorted(known))}")

    def _backend(gm, example_inputs):
        work = tempfile.mkdtemp(prefix="trnsim-compiled-")
        cache = {}

        def compiled(*args):
            inputs = _as_tuple(args)
            key = (tuple((tuple(t.shape), str(t.dtype)) for t in inputs),
                   _key_part({k: _key_part(v) for k, v in options.items()}))
            modes = _eval_mode(gm)
            try:
                prep = _Prepared(gm, inputs)
                entry = cache.get(key)
                first = entry is None
                if first:
                    entry = _CacheEntry(os.path.join(work, str(len(cache))))
                    os.makedirs(entry.dir)
                    with _kernels_traced_for(options.get("config", "trn2"), options.get("set")):
                        _export(_exportable(gm, len(inputs)), prep.fresh(), entry.onnx,
                                prep.in_names, prep.out_names)
                    compiled.compiles += 1
                    program = os.path.join(entry.dir, "model.tbin")
                    if _compile_program(entry.onnx, program, options.get("config", "trn2"),
                                        options.get("precision", "bf16"), options.get("set"),
                                        options.get("timeout")):
                        entry.program = program
                    cache[key] = entry
                outs, report = _run_entry(entry, prep, options, first)
            finally:
                for m, training in modes:
                    m.training = training
            report.compiled = ("compiled" if first else
                               "cached" if entry.program is not None else "recompiled")
            report.model = options.get("name") or _model_name(gm)
            compiled.last_report = report
            if not options.get("functional", True):
                return None
            return prep.outputs(outs, exact_ints=entry.program is not None)

        compiled.last_report = None
        compiled.compiles = 0
        # The cached programs live as long as the callable.
        weakref.finalize(compiled, shutil.rmtree, work, ignore_errors=True)
        return compiled

    return _backend


def _run_entry(entry, prep, options, first):
    """Simulates a cache entry: its compiled program (inputs and outputs by the program
    tensor names, integers as fp32), else its exported ONNX model. A program that does
    not run the model as given (an output that is an input, a dtype the program file
    cannot take) is dropped on the first call and the ONNX model used from then on."""
    kw = dict(config=options.get("config", "trn2"), precision=options.get("precision", "bf16"),
              set=options.get("set"), trace=options.get("trace"), stats=options.get("stats"),
              timeout=options.get("timeout"), functional=options.get("functional", True),
              fallback=options.get("fallback", True), reference=prep.reference(),
              output_names=prep.out_names)
    if entry.program is not None:
        arrays = [a if a.dtype.kind == "f" else a.astype(np.float32) for a in prep.arrays]
        try:
            with tempfile.TemporaryDirectory(prefix="trnsim-run-") as work:
                return run_model(entry.program, dict(zip(prep.in_names, arrays)),
                                 workdir=work, **kw)
        except TrnsimError:
            if not first:
                raise
            entry.program = None
    with tempfile.TemporaryDirectory(prefix="trnsim-run-") as work:
        return run_model(entry.onnx, dict(zip(prep.in_names, prep.arrays)), workdir=work, **kw)


def backend(gm, example_inputs):
    """torch.compile backend: returns a callable running `gm` on the simulator (trn2,
    bf16); the callable's `last_report` holds the Report of its latest call."""
    return make_backend()(gm, example_inputs)


def _register_with_torch_compile():
    # torch.compile and its backend registry exist from torch 2.0 on.
    try:
        major = int(torch.__version__.split(".")[0])
    except ValueError:
        return
    if major < 2:
        return
    try:
        from torch._dynamo import register_backend
        register_backend(name="trnsim")(backend)
    except Exception:  # a registry that changed shape must not break the import
        pass


_register_with_torch_compile()


def train(model, loss_fn, optimizer, batches, config="trn2", precision="fp32", steps=None,
          **options):
    """Training steps (forward, backward, optimizer) on the simulator: see
    trnsim.train.train. Updates the model and the optimizer state in place; returns a
    TrainResult (losses, params, report)."""
    from trnsim.train import train as _train
    return _train(model, loss_fn, optimizer, batches, config=config, precision=precision,
                  steps=steps, **options)


__all__ += ["train"]
