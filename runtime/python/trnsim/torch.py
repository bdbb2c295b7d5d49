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
import tempfile
import warnings

import numpy as np
import torch

from trnsim._cli import TrnsimError, run_model

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
    # The simulator's inputs are taken now: the eager and the export runs each get
    # their own copies, so a module that writes its input in place (x.add_(1),
    # ReLU(inplace=True)) changes neither the caller's tensors nor what the other
    # runs see.
    in_arrays = [np.array(_to_numpy(t)) for t in inputs]  # copies, not views

    def fresh():
        return tuple(t.clone() for t in inputs)

    # Every submodule's mode is restored afterwards (a mix of train/eval stays a mix).
    modes = [(m, m.training) for m in module.modules()] if isinstance(
        module, torch.nn.Module) else []
    if modes:
        module.eval()
    try:
        with torch.no_grad():
            eager = module(*fresh())
        flat_ref, rebuild = _flatten(eager)
        in_names = _input_names(module, len(inputs))
        out_names = ["output"] if len(flat_ref) == 1 else [
            f"output_{i}" for i in range(len(flat_ref))]
        out_names = [n if n not in in_names else "out_" + n for n in out_names]
        with tempfile.TemporaryDirectory(prefix="trnsim-torch-") as work:
            path = os.path.join(work, "model.onnx")
            with _kernels_traced_for(config, set):  # trnsim.kernels ops in the forward
                _export(_exportable(module, len(inputs)), fresh(), path, in_names, out_names)
            outs, report = run_model(
                path, dict(zip(in_names, in_arrays)), config=config,
                precision=precision, set=set, trace=trace, stats=stats, timeout=timeout,
                functional=functional, fallback=fallback,
                reference={n: _to_numpy(t) for n, t in zip(out_names, flat_ref)},
                output_names=out_names, workdir=work)
    finally:
        for m, training in modes:
            m.training = training
    report.model = name or _model_name(module)
    if not functional:
        return None, report
    tensors = [torch.from_numpy(np.array(outs[n])).to(ref.dtype).reshape(ref.shape)
               for n, ref in zip(out_names, flat_ref)]
    return rebuild(tensors), report


def make_backend(**options):
    """A torch.compile-style backend bound to run() options (config, precision, ...)."""

    def _backend(gm, example_inputs):
        def compiled(*args):
            outputs, report = run(gm, args, **options)
            compiled.last_report = report
            return outputs

        compiled.last_report = None
        return compiled

    return _backend


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
