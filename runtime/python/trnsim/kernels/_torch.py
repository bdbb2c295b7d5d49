"""A kernel as a PyTorch custom operator (torch.ops.trnsim_kernels.NAME), so a model's
forward can call it; every call traces the kernel for the inputs' shapes and dtypes
and computes it on the host (simulate) or on the simulator (benchmark)."""

import numpy as np

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

    @property
    def last_report(self):
        return self.reports[-1] if self.reports else None

    @property
    def op(self):
        import torch
        return getattr(torch.ops.trnsim_kernels, self.name)

    def __call__(self, *tensors):
        import torch
        if torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in tensors):
            raise RuntimeError(f"trnsim_kernels.{self.name} is forward only (no gradient): "
                               "call it under torch.no_grad() or on tensors without grad")
        return self.op(*tensors)

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
    return op
