"""A kernel as a PyTorch custom operator (torch.ops.trnsim_kernels.NAME), so a model's
forward can call it; every call traces the kernel for the inputs' shapes and dtypes
and computes it on the host (simulate) or on the simulator (benchmark).

torch.onnx.export writes each call as a node of the ONNX domain "trnsim.kernels"
(op type: the kernel's name) carrying the kernel traced for that call's shapes and
dtypes: attribute `tir` (the tile-IR text), `inputs` and `outputs` (the kernel's HBM
tensor names bound to the node's inputs and outputs, comma-separated). The compiler
imports it as trn.TileKernel and splices the kernel into the model's program, so
trnsim.torch.run runs such a model with the kernel on the simulated chip."""

import contextlib
import threading

import numpy as np

DOMAIN = "trnsim.kernels"
_EXPORT_OPSET = 9  # the symbolic serves this opset and every later one
_target = threading.local()


@contextlib.contextmanager
def traced_for(config, set=None):
    """Within this block, ONNX exports trace kernels for `config` (and `set`
    overrides) instead of each operator's own: trnsim.torch.run uses the config it
    runs on, so the kernel meets that chip's limits."""
    prev = getattr(_target, "value", None)
    _target.value = (config, set)
    for op in _registered.values():
        op.export_calls.clear()  # left over from an export that failed
    try:
        yield
    finally:
        _target.value = prev

_lib = None
_registered = {}

_TO_TORCH = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8e4m3": "float32",
             "fp8e5m2": "float32", "int32": "int32", "uint8": "uint8"}
_FROM_TORCH = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16",
               "torch.int32": "int32", "torch.uint8": "uint8"}


class TorchOp:
    """Calls `torch.ops.trnsim_kernels.<name>`; `reports` collects the Report of every
    benchmark-mode call, `last_report` the latest."""

    def __init__(self, kernel, name, n_inputs, n_outputs, mode, config, set, kwargs):
        self.kernel, self.name, self.mode, self.config, self.set = kernel, name, mode, config, set
        self.kwargs, self.n_inputs, self.n_outputs = kwargs, n_inputs, n_outputs
        self.reports = []
        self.export_calls = []  # input (shape, dtype)s of the calls an export traced

    @property
    def last_report(self):
        return self.reports[-1] if self.reports else None

    @property
    def op(self):
        import torch
        return getattr(torch.ops.trnsim_kernels, self.name)

    def __call__(self, *tensors):
        import torch
        exporting = torch.onnx.is_in_onnx_export()
        if exporting:  # for the symbolic, which may not see the shapes
            self.export_calls.append([(list(t.shape), _FROM_TORCH.get(str(t.dtype)))
                                      for t in tensors])
        # An ONNX export traces with grad enabled but computes no gradient.
        if (torch.is_grad_enabled() and not exporting
                and any(getattr(t, "requires_grad", False) for t in tensors)):
            raise RuntimeError(f"trnsim_kernels.{self.name} is forward only (no gradient): "
                               "call it under torch.no_grad() or on tensors without grad")
        return self.op(*tensors)

    def symbolic(self, g, *values):
        return _symbolic(self, g, *values)

    def compute(self, *tensors):
        import torch
        from trnsim.kernels._kernel import spec
        args = []
        for t in tensors:
            dt = _FROM_TORCH.get(str(t.dtype))
            if dt is None:
                raise TypeError(f"trnsim_kernels.{self.name}: input dtype {t.dtype} is not one "
                                f"of {', '.join(_FROM_TORCH)}")
            x = t.detach().cpu()
            args.append(spec((x.float() if dt == "bf16" else x).numpy(), dt))
        traced = self.kernel.trace(*args, config=self.config, set=self.set, **self.kwargs)
        if self.mode == "simulate":
            outs = self.kernel.simulate_traced(traced)
        else:
            outs, rep = self.kernel.benchmark_traced(traced, config=self.config, set=self.set)
            self.reports.append(rep)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        if len(outs) != self.n_outputs:
            raise RuntimeError(f"trnsim_kernels.{self.name} was registered with "
                               f"{self.n_outputs} output(s); the kernel returned {len(outs)}")
        res = [torch.from_numpy(np.ascontiguousarray(o)).to(
            getattr(torch, _TO_TORCH[t.dtype])) for o, t in zip(outs, traced.outputs)]
        return res[0] if len(res) == 1 else tuple(res)


_SCALAR_TYPES = {"Float": "fp32", "BFloat16": "bf16", "Half": "fp16", "Int": "int32",
                 "Byte": "uint8"}


def _symbolic(op, g, *values):
    """The ONNX node of one call: the kernel traced for the call's input types."""
    import torch
    from trnsim.kernels._kernel import spec
    # The exporter's types may have lost dims after ops it cannot infer (another
    # kernel node); the calls traced in the forward, in graph order, have them all:
    # the first one consistent with what the types say.
    known = []
    for v in values:
        t = v.type()
        sizes = t.varyingSizes() if hasattr(t, "varyingSizes") else None
        st = t.scalarType() if hasattr(t, "scalarType") else None
        known.append((sizes, _SCALAR_TYPES.get(st, st) if st else None))

    def fits(call):
        return len(call) == len(known) and all(
            (s is None or (len(s) == len(cs) and all(a is None or a == b
                                                     for a, b in zip(s, cs))))
            and (d is None or d == cd) for (s, d), (cs, cd) in zip(known, call))

    match = next((i for i, c in enumerate(op.export_calls) if fits(c)), None)
    if match is None:
        raise RuntimeError(f"trnsim_kernels.{op.name}: no call in the traced forward has "
                           f"inputs {known}; the kernel is traced for fixed shapes")
    call = op.export_calls.pop(match)
    args = []
    for i, (shape, dt) in enumerate(call):
        if dt is None:
            raise TypeError(f"trnsim_kernels.{op.name}: input {i} has a dtype kernels do not "
                            f"take (they take {', '.join(_FROM_TORCH)})")
        args.append(spec(shape, dt))
    config, set_ = getattr(_target, "value", None) or (op.config, op.set)
    traced = op.kernel.trace(*args, config=config, set=set_, **op.kwargs)
    if len(traced.outputs) != op.n_outputs:
        raise RuntimeError(f"trnsim_kernels.{op.name} was registered with {op.n_outputs} "
                           f"output(s); the kernel returned {len(traced.outputs)}")
    outs = g.op(f"{DOMAIN}::{op.kernel.name}", *values, tir_s=traced.text,
                inputs_s=",".join(traced.inputs), outputs_s=",".join(
                    t.name for t in traced.outputs), outputs=op.n_outputs)
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    for o, t in zip(outs, traced.outputs):
        o.setType(torch._C.TensorType.create_from_tensor(
            torch.empty([0] * len(t.shape), dtype=getattr(torch, _TO_TORCH[t.dtype])))
            .with_sizes(list(t.shape)))
    return outs[0] if len(outs) == 1 else tuple(outs)


def torch_op(kernel, n_inputs, n_outputs=1, mode="simulate", config="trn2", set=None,
             name=None, **kwargs):
    """Registers `kernel` as torch.ops.trnsim_kernels.NAME taking `n_inputs` tensors and
    returning `n_outputs`; `kwargs` are the kernel's other (fixed) arguments. Returns
    a TorchOp, callable like the operator."""
    import torch
    if mode not in ("simulate", "benchmark"):
        raise ValueError(f"mode={mode!r}: 'simulate' (numpy) or 'benchmark' (trnsim run)")
    global _lib
    if _lib is None:
        _lib = torch.library.Library("trnsim_kernels", "DEF")
    base = name or kernel.name
    name, i = base, 1
    while name in _registered:
        name, i = f"{base}_{i}", i + 1
    op = TorchOp(kernel, name, n_inputs, n_outputs, mode, config, set, kwargs)
    ins = ", ".join(f"Tensor x{j}" for j in range(n_inputs))
    outs = "Tensor" if n_outputs == 1 else "(" + ", ".join(["Tensor"] * n_outputs) + ")"
    _lib.define(f"{name}({ins}) -> {outs}")
    _lib.impl(name, op.compute, "CPU")
    _registered[name] = op
    torch.onnx.register_custom_op_symbolic(f"trnsim_kernels::{name}", op.symbolic,
                                           _EXPORT_OPSET)
    return op
