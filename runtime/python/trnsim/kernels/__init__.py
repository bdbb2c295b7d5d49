"""trnsim.kernels: custom kernels in Python, traced to tile IR and simulated.

    import trnsim.kernels as tk

    @tk.kernel
    def scale_rows(x, s):                        # x: HBM [P, F]; s: HBM [P, 1]
        out = tk.output(x.shape, x.dtype)
        xt, st = tk.load(x[:, :]), tk.load(s[:, :])
        tk.store(out[:, :], tk.mul(xt, st))      # per-partition scalar: tensor_scalar
        return out

    y = scale_rows.simulate(x, s)                # numpy on the host
    y, report = scale_rows.benchmark(x, s, config="trn1")   # compiled + simulated

A kernel is a Python function; its array arguments become HBM tensors (shape and
dtype from the arrays, or `spec(shape, dtype)`), other arguments pass through.
Tracing runs it once: loops are Python loops (unrolled), and every call below
appends one instruction of the tile IR (compiler/tile/ir.h). `kernel.tir(...)`
gives the text; `trnsim run KERNEL.tir` compiles it with the back-end passes.

Tiles live in SBUF or PSUM: shape [partitions, free...], partitions at most the
platform's (128). `pool(bufs=N)` rotates N buffers (double buffering); a tile used
after a later tile of its buffer was first used is an error. Without `pool=` a tile
goes to the automatic pool of its kernel line, which gets as many buffers as its
tiles need at once plus one (so loop iterations overlap) when memory allows. Views index
tiles and HBM tensors like numpy (slices with steps, ints, None, `.T` for HBM,
`broadcast_to`, `reshape` of contiguous views).

Operations: load, store (DMA); matmul (out[M,N] (+)= lhsT[K,M]^T @ rhs[K,N] into
PSUM), transpose (tensor engine); add, sub, mul, div, maximum, minimum, power and
comparisons (tensor_tensor, or tensor_scalar with a number / per-partition [P,1]
tile; engine= vector, gpsimd, scalar or auto), tensor_scalar, activation and exp,
log, tanh, sigmoid, relu, gelu, ... (scalar engine), copy, memset, zeros, full,
reduce_sum/max/min over free axes, partition_reduce, partition_broadcast, iota,
affine_select, where (select), bn_stats, bn_aggr.

`kernel.torch_op(...)` registers the kernel as a PyTorch operator
(torch.ops.trnsim_kernels.NAME) for a model's forward; trnsim.torch.run exports such
a model with the kernel inline (ONNX domain "trnsim.kernels") and runs it on the chip.

Mistakes raise KernelError at trace time with the kernel's FILE:LINE. Limits come
from the platform config (`trnsim info -c CONFIG`) or `limits=Limits(...)`.
"""

from trnsim.kernels._kernel import Kernel, Traced, config_limits, kernel, spec
from trnsim.kernels._lang import FLOAT_DTYPES, KernelError, Limits
from trnsim.kernels._ops import (
    abs, activation, add, affine_select, bn_aggr, bn_stats, copy, div, equal, erf, exp, full,
    gelu, gelu_tanh, greater, greater_equal, identity, iota, less, less_equal, limits, load, log,
    matmul, maximum, memset, minimum, mul, not_equal, output, partition_broadcast,
    partition_reduce, pool, power, range, reciprocal, reduce_max, reduce_min, reduce_sum, relu,
    rsqrt, sigmoid, silu, softplus, sqrt, square, store, sub, tanh, tensor_scalar,
    tensor_tensor, tile, transpose, where, zeros)

fp32, bf16, fp16, fp8e4m3, fp8e5m2, int32, uint8 = (
    "fp32", "bf16", "fp16", "fp8e4m3", "fp8e5m2", "int32", "uint8")

__all__ = [
    "Kernel", "KernelError", "Limits", "Traced", "FLOAT_DTYPES", "config_limits", "kernel",
    "spec", "abs", "activation", "add", "affine_select", "bn_aggr", "bn_stats", "copy", "div",
    "equal", "erf", "exp", "full", "gelu", "gelu_tanh", "greater", "greater_equal", "identity",
    "iota", "less", "less_equal", "limits", "load", "log", "matmul", "maximum", "memset",
    "minimum", "mul", "not_equal", "output", "partition_broadcast", "partition_reduce", "pool",
    "power", "range", "reciprocal", "reduce_max", "reduce_min", "reduce_sum", "relu", "rsqrt",
    "sigmoid", "silu", "softplus", "sqrt", "square", "store", "sub", "tanh", "tensor_scalar",
    "tensor_tensor", "tile", "transpose", "where", "zeros", "fp32", "bf16", "fp16", "fp8e4m3",
    "fp8e5m2", "int32", "uint8"]
