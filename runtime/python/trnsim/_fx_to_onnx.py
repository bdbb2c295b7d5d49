"""Translates an aten-level torch.fx graph (from make_fx with a decomposition table) into
an ONNX graph of ops the trnsim compiler lowers.

Integer tensors (class targets, token ids) become fp32 on the ONNX side: the device keeps
integers as fp32 anyway, and an all-float graph keeps every comparison and one-hot on
the device (a Gather or one-hot of run-time int64 indices would go to the host because
their range cannot be proven). Class ids and token ids are thus one-hot matrices built
with Equal against a constant arange, and embeddings / NLL losses are matmuls and
multiplies with them.
"""

import operator

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

aten = torch.ops.aten

__all__ = ["UnsupportedOp", "decompositions", "fx_to_onnx"]


class UnsupportedOp(NotImplementedError):
    """An aten op in the captured graph has no ONNX translation here."""


def decompositions():
    """torch's own decompositions of the composite and backward ops into the aten ops
    translated below (aten level: no prims)."""
    from torch._decomp import get_decompositions
    ops = [
        aten.native_batch_norm, aten.native_batch_norm_backward, aten.native_layer_norm,
        aten.native_layer_norm_backward, aten._softmax_backward_data,
        aten._log_softmax_backward_data, aten.gelu, aten.gelu_backward, aten.silu,
        aten.silu_backward, aten.tanh_backward, aten.sigmoid_backward,
        aten.threshold_backward, aten.mse_loss, aten.mse_loss_backward,
        aten.native_dropout_backward, aten.addcmul, aten.addcdiv, aten.rsub,
        aten.hardtanh, aten.hardtanh_backward, aten.leaky_relu, aten.leaky_relu_backward,
        aten.elu, aten.elu_backward, aten.masked_fill, aten.logsumexp,
        aten.detach, aten.new_zeros, aten.select_backward, aten.slice_backward,
        aten.softplus, aten.softplus_backward, aten.mish, aten.mish_backward,
        aten.hardswish, aten.hardswish_backward, aten.hardsigmoid, aten.hardsigmoid_backward,
    ]
    return get_decompositions(ops)


_ONNX_DTYPE = {torch.float32: TensorProto.FLOAT, torch.bool: TensorProto.BOOL}


def _meta(node):
    v = node.meta.get("val") if hasattr(node, "meta") else None
    if v is None:
        v = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return v


def _shape(node):
    m = _meta(node)
    return [int(s) for s in m.shape]


def _dtype(node):
    m = _meta(node)
    return m.dtype


def _elem(dtype):
    """ONNX element type on the device side: bools stay bool, every other type is fp32."""
    return TensorProto.BOOL if dtype == torch.bool else TensorProto.FLOAT


class _Builder:
    def __init__(self):
        self.nodes = []
        self.inits = []
        self.count = 0
        self.consts = {}

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def op(self, op_type, inputs, hint=None, n_out=1, **attrs):
        outs = [self.name(hint or op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=self.name("n_" + op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=np.float32):
        arr = np.asarray(value, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key in self.consts:
            return self.consts[key]
        name = self.name("const")
        self.inits.append(numpy_helper.from_array(arr, name))
        self.consts[key] = name
        return name

    def ints(self, values):
        return self.const(list(values), np.int64)


def _norm_dims(dims, rank):
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(d % rank if rank else 0 for d in dims)


class _Flat:
    """A 2-D value held as the N-D tensor `name` it flattens (leading axes merged): a
    linear layer's view -> mm -> view then runs as one N-D MatMul with no copies."""

    def __init__(self, name, shape):
        self.name = name
        self.shape = list(shape)
        self.reshaped = None  # the 2-D Reshape, made once when something needs it


class _NoValue:
    """An fx value with no ONNX translation (read only by ops that do without it)."""

    def __init__(self, what):
        self.what = what


class _Translator:
    def __init__(self, gm):
        self.gm = gm
        self.b = _Builder()
        self.env = {}

    # -- values --------------------------------------------------------------------------
    def v(self, arg, like=None):
        """ONNX value name of an fx argument; Python numbers become constants."""
        if isinstance(arg, torch.fx.Node):
            val = self.env[arg]
            if isinstance(val, _NoValue):
                raise UnsupportedOp(f"{val.what} are read by an op other than the backward")
            if isinstance(val, _Flat):
                if val.reshaped is None:
                    val.reshaped = self.reshape_name(val.name, _shape(arg))
                return val.reshaped
            return val
        if isinstance(arg, bool):
            return self.b.const(arg, np.bool_)
        if isinstance(arg, (int, float)):
            return self.b.const(float(arg))
        raise UnsupportedOp(f"argument {arg!r} of type {type(arg).__name__}")

    def rank(self, arg):
        return len(_shape(arg)) if isinstance(arg, torch.fx.Node) else 0

    def float_of(self, arg):
        """arg as fp32 (bools cast)."""
        name = self.v(arg)
        if isinstance(arg, torch.fx.Node) and _dtype(arg) == torch.bool:
            return self.b.op("Cast", [name], to=TensorProto.FLOAT)
        return name

    # -- op families ---------------------------------------------------------------------
    def binary(self, onnx_op, a, b):
        return self.b.op(onnx_op, [self.float_of(a), self.float_of(b)])

    def reshape(self, x, shape):
        return self.b.op("Reshape", [self.v(x), self.b.ints(shape)])

    def reduce(self, op_type, x, dims, keepdim):
        r = self.rank(x)
        axes = _norm_dims(dims, r)
        if r == 0:
            return self.b.op("Identity", [self.v(x)])
        if op_type == "ReduceSum":  # axes is an input from opset 13
            return self.b.op("ReduceSum", [self.float_of(x), self.b.ints(axes)],
                             keepdims=int(bool(keepdim)))
        return self.b.op(op_type, [self.float_of(x)], axes=axes, keepdims=int(bool(keepdim)))

    def onehot(self, target, classes, skip=None):
        """fp32 one-hot of the (fp32, whole) class ids `target` along a new last axis;
        class `skip` (an ignore_index or padding_idx) gets no 1: its column compares with
        -1e6, which no id comes within 1 of."""
        t = self.b.op("Unsqueeze", [self.v(target), self.b.ints([len(_shape(target))])])
        ids = np.arange(classes, dtype=np.float32)
        if skip is not None and 0 <= skip < classes:
            ids[skip] = -1e6
        # relu(1 - |t - id|): 1 where the (whole) ids are equal, else 0, computed on the
        # compute engines; Equal + Cast would be a bool tensor copied to fp32 by DMA.
        dist = self.b.op("Abs", [self.b.op("Sub", [t, self.b.const(ids)])])
        return self.b.op("Relu", [self.b.op("Sub", [self.b.const(1.0), dist])])

    # -- main ----------------------------------------------------------------------------
    def node(self, n):
        t = n.target
        a = n.args
        kw = n.kwargs
        b = self.b
        if t is operator.getitem:
            return self.env[a[0]][a[1]]
        if t in (aten.alias.default, aten.clone.default, aten.detach.default,
                 aten.lift_fresh_copy.default, aten._to_copy.default, aten.contiguous.default,
                 aten.lift_fresh.default):
            if _elem(_dtype(n)) == _elem(_dtype(a[0])):
                return self.v(a[0])
            return b.op("Cast", [self.v(a[0])], to=_elem(_dtype(n)))
        if t in (aten.t.default,):
            return b.op("Transpose", [self.v(a[0])], perm=[1, 0]) if self.rank(a[0]) == 2 \
                else self.v(a[0])
        if t is aten.transpose.int:
            r = self.rank(a[0])
            perm = list(range(r))
            d0, d1 = a[1] % r, a[2] % r
            perm[d0], perm[d1] = perm[d1], perm[d0]
            return b.op("Transpose", [self.v(a[0])], perm=perm)
        if t is aten.permute.default:
            r = self.rank(a[0])
            return b.op("Transpose", [self.v(a[0])], perm=[d % r for d in a[1]])
        if t in (aten.view.default, aten._unsafe_view.default, aten.reshape.default,
                 aten._reshape_alias.default, aten.squeeze.dim, aten.squeeze.default,
                 aten.unsqueeze.default, aten.flatten.using_ints):
            if _shape(n) == _shape(a[0]):  # a view that changes nothing
                return self.v(a[0])
            src = self.env.get(a[0]) if isinstance(a[0], torch.fx.Node) else None
            if isinstance(src, _Flat):
                if _shape(n) == src.shape:  # back to the N-D shape it is held in
                    return src.name
                return self.reshape_name(src.name, _shape(n))
            xs, ys = _shape(a[0]), _shape(n)
            if len(xs) > 2 and len(ys) == 2 and ys[1] == xs[-1]:
                return _Flat(self.v(a[0]), xs)  # merged leading axes: no copy yet
            return self.reshape(a[0], _shape(n))
        if t is aten.expand.default:
            if _shape(n) == _shape(a[0]):  # bmm's expand to the shape it has
                return self.v(a[0])
            return b.op("Expand", [self.v(a[0]), b.ints(_shape(n))])
        if t in (aten.mm.default, aten.addmm.default):
            lhs, rhs = (a[0], a[1]) if t is aten.mm.default else (a[1], a[2])
            src = self.env.get(lhs) if isinstance(lhs, torch.fx.Node) else None
            if isinstance(src, _Flat):  # [..., K] @ [K, N] as it is: no reshapes
                out = b.op("MatMul", [src.name, self.v(rhs)])
            else:
                out = b.op("MatMul", [self.v(lhs), self.v(rhs)])
            if t is aten.addmm.default:
                beta, alpha = kw.get("beta", 1), kw.get("alpha", 1)
                if alpha != 1:
                    out = b.op("Mul", [out, b.const(float(alpha))])
                bias = self.v(a[0]) if beta == 1 else b.op("Mul", [self.v(a[0]),
                                                                   b.const(float(beta))])
                if isinstance(src, _Flat) and self.rank(a[0]) <= 1 or (
                        self.rank(a[0]) == 2 and _shape(a[0])[0] == 1):
                    out = b.op("Add", [out, bias])  # broadcasts over the leading axes too
                elif isinstance(src, _Flat):
                    out = b.op("Add", [self.reshape_name(out, _shape(n)), bias])
                    return out
                else:
                    return b.op("Add", [out, bias])
            if isinstance(src, _Flat):
                return _Flat(out, src.shape[:-1] + [_shape(n)[-1]])
            return out
        if t in (aten.bmm.default, aten.matmul.default):
            return b.op("MatMul", [self.v(a[0]), self.v(a[1])])
        simple = {
            aten.add.Tensor: "Add", aten.sub.Tensor: "Sub", aten.mul.Tensor: "Mul",
            aten.div.Tensor: "Div", aten.add_.Tensor: "Add", aten.mul_.Tensor: "Mul",
            aten.sub_.Tensor: "Sub", aten.div_.Tensor: "Div",
            aten.maximum.default: "Max", aten.minimum.default: "Min",
            aten.add.Scalar: "Add", aten.mul.Scalar: "Mul", aten.sub.Scalar: "Sub",
            aten.div.Scalar: "Div", aten.add_.Scalar: "Add", aten.mul_.Scalar: "Mul",
            aten.sub_.Scalar: "Sub", aten.div_.Scalar: "Div",
        }
        if t in simple:
            alpha = kw.get("alpha", 1)
            rhs = a[1]
            if (simple[t] in ("Mul", "Div") and not isinstance(rhs, bool)
                    and isinstance(rhs, (int, float)) and rhs == 1
                    and isinstance(a[0], torch.fx.Node) and _dtype(a[0]) == _dtype(n)):
                return self.v(a[0])  # x * 1
            if alpha != 1:
                rhs_name = b.op("Mul", [self.float_of(rhs), b.const(float(alpha))])
                return b.op(simple[t], [self.float_of(a[0]), rhs_name])
            return self.binary(simple[t], a[0], rhs)
        cmp = {aten.le.Scalar: "LessOrEqual", aten.le.Tensor: "LessOrEqual",
               aten.lt.Scalar: "Less", aten.lt.Tensor: "Less",
               aten.ge.Scalar: "GreaterOrEqual", aten.ge.Tensor: "GreaterOrEqual",
               aten.gt.Scalar: "Greater", aten.gt.Tensor: "Greater",
               aten.eq.Scalar: "Equal", aten.eq.Tensor: "Equal"}
        if t in cmp:
            return b.op(cmp[t], [self.float_of(a[0]), self.float_of(a[1])])
        if t in (aten.ne.Scalar, aten.ne.Tensor):
            return b.op("Not", [b.op("Equal", [self.float_of(a[0]), self.float_of(a[1])])])
        logic = {aten.bitwise_or.Tensor: "Or", aten.logical_or.default: "Or",
                 aten.bitwise_and.Tensor: "And", aten.logical_and.default: "And"}
        if t in logic:
            if _dtype(n) != torch.bool:
                raise UnsupportedOp("bitwise ops on integers")
            return b.op(logic[t], [self.v(a[0]), self.v(a[1])])
        if t is aten.log1p.default:
            return b.op("Log", [b.op("Add", [self.float_of(a[0]), b.const(1.0)])])
        if t is aten.expm1.default:
            return b.op("Sub", [b.op("Exp", [self.float_of(a[0])]), b.const(1.0)])
        if t in (aten.logical_not.default, aten.bitwise_not.default):
            return b.op("Not", [self.v(a[0])])
        unary = {aten.neg.default: "Neg", aten.exp.default: "Exp", aten.log.default: "Log",
                 aten.sqrt.default: "Sqrt", aten.relu.default: "Relu",
                 aten.tanh.default: "Tanh", aten.sigmoid.default: "Sigmoid",
                 aten.abs.default: "Abs", aten.erf.default: "Erf",
                 aten.reciprocal.default: "Reciprocal", aten.sgn.default: "Sign",
                 aten.sign.default: "Sign", aten.sin.default: "Sin", aten.cos.default: "Cos"}
        if t in unary:
            return b.op(unary[t], [self.float_of(a[0])])
        if t is aten.rsqrt.default:
            return b.op("Reciprocal", [b.op("Sqrt", [self.v(a[0])])])
        if t is aten.pow.Tensor_Scalar:
            e = float(a[1])
            x = self.v(a[0])
            if e == 2.0:
                return b.op("Mul", [x, x])
            if e == 1.0:
                return x
            if e == 0.5:
                return b.op("Sqrt", [x])
            if e == -0.5:
                return b.op("Reciprocal", [b.op("Sqrt", [x])])
            if e == -1.0:
                return b.op("Reciprocal", [x])
            if e == 3.0:
                return b.op("Mul", [b.op("Mul", [x, x]), x])
            return b.op("Pow", [x, b.const(e)])
        if t is aten.where.self:
            c = self.v(a[0])
            if isinstance(a[0], torch.fx.Node) and _dtype(a[0]) != torch.bool:
                c = b.op("Cast", [c], to=TensorProto.BOOL)
            return b.op("Where", [c, self.float_of(a[1]), self.float_of(a[2])])
        if t in (aten.scalar_tensor.default,):
            return b.const(float(a[0]))
        if t in (aten.full.default, aten.new_full.default):
            shape = a[0] if t is aten.full.default else a[1]
            val = a[1] if t is aten.full.default else a[2]
            return b.const(np.full(shape, val, dtype=np.bool_ if _dtype(n) == torch.bool
                                   else np.float32))
        if t in (aten.zeros_like.default, aten.ones_like.default, aten.full_like.default,
                 aten.zeros.default, aten.ones.default, aten.new_zeros.default,
                 aten.new_ones.default, aten.new_empty.default, aten.empty_like.default):
            val = {aten.ones_like.default: 1.0, aten.ones.default: 1.0,
                   aten.new_ones.default: 1.0}.get(t, 0.0)
            if t is aten.full_like.default:
                val = a[1]
            return b.const(np.full(_shape(n), val, dtype=np.float32))
        if t is aten.sum.dim_IntList:
            return self.reduce("ReduceSum", a[0], a[1], a[2] if len(a) > 2 else
                               kw.get("keepdim", False))
        if t is aten.sum.default:
            return self.reduce("ReduceSum", a[0], None, False)
        if t is aten.mean.dim:
            return self.reduce("ReduceMean", a[0], a[1], a[2] if len(a) > 2 else
                               kw.get("keepdim", False))
        if t is aten.mean.default:
            return self.reduce("ReduceMean", a[0], None, False)
        if t is aten.amax.default:
            return self.reduce("ReduceMax", a[0], a[1], a[2] if len(a) > 2 else False)
        if t is aten._softmax.default:
            return b.op("Softmax", [self.v(a[0])], axis=a[1] % self.rank(a[0]))
        if t is aten._log_softmax.default:
            return b.op("LogSoftmax", [self.v(a[0])], axis=a[1] % self.rank(a[0]))
        if t is aten.nll_loss_forward.default:
            return self.nll_forward(n)
        if t is aten.nll_loss_backward.default:
            return self.nll_backward(n)
        if t is aten.embedding.default:
            w, idx = a[0], a[1]
            oh = self.onehot(idx, _shape(w)[0])
            return b.op("MatMul", [oh, self.v(w)])
        if t is aten.embedding_dense_backward.default:
            grad, idx, num, padding_idx, by_freq = a[0], a[1], a[2], a[3], a[4]
            if by_freq:
                raise UnsupportedOp("embedding backward with scale_grad_by_freq")
            oh = self.onehot(idx, num, skip=padding_idx)  # the padding row gets no gradient
            d = _shape(grad)[-1]
            oh2 = self.reshape_name(oh, [-1, num])
            g2 = self.reshape_name(self.v(grad), [-1, d])
            oht = b.op("Transpose", [oh2], perm=[1, 0])
            return b.op("MatMul", [oht, g2])
        if t is aten.convolution.default:
            return self.conv(n)
        if t is aten.convolution_backward.default:
            return self.conv_backward(n)
        if t is aten.cat.default:
            dim = a[1] if len(a) > 1 else 0
            return b.op("Concat", [self.v(x) for x in a[0]], axis=dim % self.rank(n))
        if t is aten.slice.Tensor:
            dim = a[1] if len(a) > 1 else 0
            start = a[2] if len(a) > 2 else 0
            end = a[3] if len(a) > 3 else None
            step = a[4] if len(a) > 4 else 1
            size = _shape(a[0])[dim]
            start = 0 if start is None else start
            end = size if end is None or end > size else end
            return b.op("Slice", [self.v(a[0]), b.ints([start]), b.ints([end]),
                                  b.ints([dim % self.rank(a[0])]), b.ints([step])])
        if t in (aten.split.Tensor, aten.split_with_sizes.default):
            dim = a[2] if len(a) > 2 else 0
            total = _shape(a[0])[dim]
            sizes = a[1] if t is aten.split_with_sizes.default else [
                min(a[1], total - i) for i in range(0, total, a[1])]
            outs = b.op("Split", [self.v(a[0]), b.ints(sizes)], n_out=len(sizes),
                        axis=dim % self.rank(a[0]))
            return outs if isinstance(outs, list) else [outs]
        if t is aten.select.int:
            dim, idx = a[1] % self.rank(a[0]), a[2]
            size = _shape(a[0])[dim]
            idx = idx % size
            s = b.op("Slice", [self.v(a[0]), b.ints([idx]), b.ints([idx + 1]),
                               b.ints([dim])])
            return self.reshape_name(s, _shape(n))
        if "bernoulli" in str(t) or "rand" in str(t):
            raise UnsupportedOp("random numbers other than dropout's masks (which the "
                                "host draws) are not supported")
        if t is aten.native_dropout.default:
            if a[1] != 0.0 and (len(a) < 3 or a[2]):
                raise UnsupportedOp("dropout with p > 0 in training mode (the mask is "
                                    "random: set p=0 or the module to eval)")
            return [self.v(a[0]), b.const(np.ones(_shape(n.args[0]), dtype=np.bool_))]
        if t in (aten.tril.default, aten.triu.default):
            shp = _shape(a[0])
            k = a[1] if len(a) > 1 else 0
            rows, cols = shp[-2], shp[-1]
            i = np.arange(rows)[:, None]
            j = np.arange(cols)[None, :]
            keep = (j - i <= k) if t is aten.tril.default else (j - i >= k)
            return b.op("Mul", [self.v(a[0]), b.const(keep.astype(np.float32))])
        if t is aten.clamp_min.default:
            return b.op("Max", [self.v(a[0]), b.const(float(a[1]))])
        if t is aten.clamp_max.default:
            return b.op("Min", [self.v(a[0]), b.const(float(a[1]))])
        if t is aten.clamp.default:
            x = self.v(a[0])
            if len(a) > 1 and a[1] is not None:
                x = b.op("Max", [x, b.const(float(a[1]))])
            if len(a) > 2 and a[2] is not None:
                x = b.op("Min", [x, b.const(float(a[2]))])
            return x
        if t in (aten.avg_pool2d.default, aten.avg_pool2d_backward.default):
            return self.avg_pool(n)
        if t is aten.max_pool2d_with_indices.default:
            return self.max_pool(n)
        if t is aten.max_pool2d_with_indices_backward.default:
            return self.max_pool_backward(n)
        if t is aten.cumsum.default:
            dim = a[1] % self.rank(a[0])
            return b.op("CumSum", [self.float_of(a[0]), b.ints([dim])])
        if t is aten.flip.default:
            x = self.v(a[0])
            r = self.rank(a[0])
            for d in a[1]:
                x = b.op("Slice", [x, b.ints([-1]), b.ints([-(2 ** 62)]), b.ints([d % r]),
                                   b.ints([-1])])
            return x
        if t is aten.slice_scatter.default:
            # input with [start:end] along dim replaced by src: src zero-padded to the
            # input's shape, plus the input masked outside the slice.
            inp, src = a[0], a[1]
            r = self.rank(inp)
            dim = (a[2] if len(a) > 2 else kw.get("dim", 0)) % r
            size = _shape(inp)[dim]
            start = a[3] if len(a) > 3 else kw.get("start")
            end = a[4] if len(a) > 4 else kw.get("end")
            step = a[5] if len(a) > 5 else kw.get("step", 1)
            start = 0 if start is None else start % size if start < 0 else start
            end = size if end is None or end > size else end % size if end < 0 else end
            if step != 1:
                raise UnsupportedOp("slice_scatter with a step")
            pads = [0] * (2 * r)
            pads[dim], pads[r + dim] = start, size - end
            padded = b.op("Pad", [self.v(src), b.ints(pads)])
            if isinstance(inp, torch.fx.Node) and inp.target in (
                    aten.zeros.default, aten.new_zeros.default, aten.zeros_like.default):
                return padded
            keep = np.ones([size if d == dim else 1 for d in range(r)], dtype=np.float32)
            keep.reshape(-1)[start:end] = 0.0
            return b.op("Add", [b.op("Mul", [self.v(inp), b.const(keep)]), padded])
        if t is aten.copy_.default:
            return self.v(a[1])
        if t in (aten.var.correction, aten.var.dim, aten.var_mean.correction):
            dims = a[1] if len(a) > 1 else None
            r = self.rank(a[0])
            axes = _norm_dims(dims, r)
            if t is not aten.var.dim:
                corr = kw.get("correction", 1)
                corr = 1 if corr is None else corr
            else:
                corr = 1 if (a[2] if len(a) > 2 else kw.get("unbiased", True)) else 0
            keep = kw.get("keepdim", a[3] if t is aten.var.dim and len(a) > 3 else False)
            count = int(np.prod([_shape(a[0])[d] for d in axes])) if axes else 1
            x = self.v(a[0])
            mean = b.op("ReduceMean", [x], axes=axes, keepdims=1)
            d = b.op("Sub", [x, mean])
            ss = b.op("ReduceSum", [b.op("Mul", [d, d]), b.ints(axes)], keepdims=int(keep))
            var = b.op("Div", [ss, b.const(float(max(count - corr, 0)))])
            if t is aten.var_mean.correction:
                return [var, mean if keep else b.op("ReduceMean", [x], axes=axes, keepdims=0)]
            return var
        if t is torch.ops.prims.convert_element_type.default:
            if _elem(a[1]) == _elem(_dtype(a[0])):
                return self.v(a[0])
            return b.op("Cast", [self.v(a[0])], to=_elem(a[1]))
        raise UnsupportedOp(f"no ONNX translation for {t}")

    def reshape_name(self, name, shape):
        return self.b.op("Reshape", [name, self.b.ints(shape)])

    def nll_forward(self, n):
        logp, target, weight, reduction, ignore = n.args[:5]
        if weight is not None:
            raise UnsupportedOp("nll_loss with class weights")
        b = self.b
        classes = _shape(logp)[-1]
        if self.rank(logp) != 2:
            raise UnsupportedOp("nll_loss on inputs of rank other than 2")
        oh = self.onehot(target, classes, skip=ignore)  # an ignored target: a zero row
        picked = b.op("ReduceSum", [b.op("Mul", [oh, self.v(logp)]), b.ints([1])],
                      keepdims=0)
        total = b.op("ReduceSum", [oh, b.ints([0, 1])], keepdims=0)
        if reduction == 0:
            loss = b.op("Neg", [picked])
        elif reduction == 1:
            loss = b.op("Div", [b.op("Neg", [b.op("ReduceSum", [picked, b.ints([0])],
                                                  keepdims=0)]), total])
        else:
            loss = b.op("Neg", [b.op("ReduceSum", [picked, b.ints([0])], keepdims=0)])
        self.nll_onehot = getattr(self, "nll_onehot", {})
        self.nll_onehot[(n.args[1], classes, ignore)] = oh
        return [loss, total]

    def nll_backward(self, n):
        grad, logp, target, weight, reduction, ignore, total = n.args[:7]
        b = self.b
        classes = _shape(logp)[-1]
        oh = getattr(self, "nll_onehot", {}).get((target, classes, ignore)) or self.onehot(
            target, classes, skip=ignore)
        g = self.v(grad)
        if reduction == 1:
            g = b.op("Div", [g, self.v(total)])
        if reduction == 0:
            g = b.op("Unsqueeze", [g, b.ints([1])])
        return b.op("Neg", [b.op("Mul", [oh, g])])

    @staticmethod
    def _pool_args(args):
        k = list(args[0])
        k = k * 2 if len(k) == 1 else k
        stride = list(args[1]) if len(args) > 1 and args[1] else k
        stride = stride * 2 if len(stride) == 1 else stride
        pad = list(args[2]) if len(args) > 2 else [0, 0]
        pad = pad * 2 if len(pad) == 1 else pad
        dil = list(args[3]) if len(args) > 3 else [1, 1]
        dil = dil * 2 if len(dil) == 1 else dil
        ceil = args[4] if len(args) > 4 else False
        return k, stride, pad, dil, ceil

    def max_pool(self, n):
        k, stride, pad, dil, ceil = self._pool_args(n.args[1:])
        y = self.b.op("MaxPool", [self.v(n.args[0])], kernel_shape=k, strides=stride,
                      pads=pad * 2, dilations=dil, ceil_mode=int(bool(ceil)))
        # The indices have no translation; only the backward below reads them, and it
        # recomputes the argmax from the input.
        return [y, _NoValue("max_pool2d indices")]

    def max_pool_backward(self, n):
        grad, x = n.args[0], n.args[1]
        k, stride, pad, dil, ceil = self._pool_args(n.args[2:7])
        xs = _shape(x)
        if any(d != 1 for d in dil):
            raise UnsupportedOp("max_pool2d backward with dilation")
        if stride != k or any(pad) or xs[2] % k[0] or xs[3] % k[1]:
            return self.max_pool_backward_overlapping(grad, x, k, stride, pad)
        b = self.b
        nb, c, ho, wo = _shape(grad)
        kk = k[0] * k[1]
        # Windows as a last axis in row-major order (torch's scan order).
        xw = self.reshape_name(self.v(x), [nb, c, ho, k[0], wo, k[1]])
        xw = b.op("Transpose", [xw], perm=[0, 1, 2, 4, 3, 5])
        xw = self.reshape_name(xw, [nb, c, ho, wo, kk])
        mx = b.op("ReduceMax", [xw], axes=[4], keepdims=1)
        eq = b.op("Cast", [b.op("Equal", [xw, mx])], to=TensorProto.FLOAT)
        # The gradient goes to the first maximum only, as torch's argmax: a running count
        # of maxima (a matmul by an upper-triangular ones matrix) equal to 1 marks it.
        upper = np.triu(np.ones((kk, kk), dtype=np.float32))
        count = b.op("MatMul", [eq, b.const(upper)])
        first = b.op("Mul", [eq, b.op("Cast", [b.op("Equal", [count, b.const(1.0)])],
                                      to=TensorProto.FLOAT)])
        g = self.reshape_name(self.v(grad), [nb, c, ho, wo, 1])
        gw = b.op("Mul", [first, g])
        gw = self.reshape_name(gw, [nb, c, ho, wo, k[0], k[1]])
        gw = b.op("Transpose", [gw], perm=[0, 1, 2, 4, 3, 5])
        return self.reshape_name(gw, xs)

    def max_pool_backward_overlapping(self, grad, x, k, stride, pad):
        """max_pool2d backward for any windows: the input padded with -inf, one strided
        Slice per kernel tap gives every window's value at that tap; the first maximum
        over the taps (as above) gets the gradient, and each tap's share goes back to
        the input positions it read (zeros inserted between, shifted by the tap)."""
        b = self.b
        xs = _shape(x)
        nb, c, ho, wo = _shape(grad)
        out = [ho, wo]
        kk = k[0] * k[1]
        # Padding to cover every window, ceil_mode's partial last one too.
        end = [max(0, (out[i] - 1) * stride[i] + k[i] - xs[2 + i] - pad[i]) for i in range(2)]
        span = [pad[i] + xs[2 + i] + end[i] for i in range(2)]
        xp = b.op("Pad", [self.v(x), b.ints([0, 0, pad[0], pad[1], 0, 0, end[0], end[1]]),
                          b.const(-3.0e38)])
        taps = []
        for a0 in range(k[0]):
            for a1 in range(k[1]):
                t = b.op("Slice", [xp, b.ints([a0, a1]),
                                   b.ints([a0 + (ho - 1) * stride[0] + 1,
                                           a1 + (wo - 1) * stride[1] + 1]),
                                   b.ints([2, 3]), b.ints(stride)])
                taps.append(b.op("Unsqueeze", [t, b.ints([4])]))
        xw = b.op("Concat", taps, axis=4)
        mx = b.op("ReduceMax", [xw], axes=[4], keepdims=1)
        eq = b.op("Cast", [b.op("Equal", [xw, mx])], to=TensorProto.FLOAT)
        upper = np.triu(np.ones((kk, kk), dtype=np.float32))
        count = b.op("MatMul", [eq, b.const(upper)])
        first = b.op("Mul", [eq, b.op("Cast", [b.op("Equal", [count, b.const(1.0)])],
                                      to=TensorProto.FLOAT)])
        gw = b.op("Mul", [first, self.reshape_name(self.v(grad), [nb, c, ho, wo, 1])])
        shares = b.op("Split", [gw, b.ints([1] * kk)], n_out=kk, axis=4)
        shares = shares if isinstance(shares, list) else [shares]
        total = None
        for j, share in enumerate(shares):
            a0, a1 = divmod(j, k[1])
            # [ho, wo] -> [ho * s0, wo * s1] with the values at multiples of the stride.
            z = self.reshape_name(share, [nb, c, ho, 1, wo, 1])
            z = b.op("Pad", [z, b.ints([0, 0, 0, 0, 0, 0, 0, 0, 0, stride[0] - 1, 0,
                                        stride[1] - 1])])
            z = self.reshape_name(z, [nb, c, ho * stride[0], wo * stride[1]])
            # Shifted by the tap into the padded frame, cut to it.
            keep = [min(out[i] * stride[i], span[i] - (a0, a1)[i]) for i in range(2)]
            z = b.op("Slice", [z, b.ints([0, 0]), b.ints(keep), b.ints([2, 3])])
            z = b.op("Pad", [z, b.ints([0, 0, a0, a1, 0, 0, span[0] - a0 - keep[0],
                                        span[1] - a1 - keep[1]])])
            total = z if total is None else b.op("Add", [total, z])
        return b.op("Slice", [total, b.ints(pad), b.ints([pad[0] + xs[2], pad[1] + xs[3]]),
                              b.ints([2, 3])])

    def avg_pool(self, n):
        back = n.target is aten.avg_pool2d_backward.default
        a = list(n.args[1:] if back else n.args)
        x = a[0]
        k = list(a[1])
        k = k * 2 if len(k) == 1 else k
        stride = list(a[2]) if len(a) > 2 and a[2] else k
        stride = stride * 2 if len(stride) == 1 else stride
        pad = list(a[3]) if len(a) > 3 else [0, 0]
        pad = pad * 2 if len(pad) == 1 else pad
        ceil = a[4] if len(a) > 4 else False
        include_pad = a[5] if len(a) > 5 else True
        divisor = a[6] if len(a) > 6 else None
        if divisor is not None:
            raise UnsupportedOp("avg_pool2d with divisor_override")
        b = self.b
        if not back:
            return b.op("AveragePool", [self.v(x)], kernel_shape=k, strides=stride,
                        pads=pad * 2, ceil_mode=int(bool(ceil)),
                        count_include_pad=int(bool(include_pad)))
        xs = _shape(x)
        if stride != k or any(pad) or xs[2] % k[0] or xs[3] % k[1]:
            raise UnsupportedOp("avg_pool2d backward other than non-overlapping windows "
                                "tiling the input (kernel == stride, no padding)")
        # Each input element gets its window's gradient / window size: the gradient
        # repeated k times along each spatial axis.
        g = self.v(n.args[0])
        nb, c, ho, wo = _shape(n.args[0])
        g = self.reshape_name(g, [nb, c, ho, 1, wo, 1])
        g = b.op("Expand", [g, b.ints([nb, c, ho, k[0], wo, k[1]])])
        g = self.reshape_name(g, xs)
        return b.op("Mul", [g, b.const(1.0 / (k[0] * k[1]))])

    def conv(self, n):
        x, w, bias, stride, padding, dilation, transposed, out_pad, groups = n.args
        if transposed:
            raise UnsupportedOp("transposed convolution")
        ins = [self.v(x), self.v(w)] + ([self.v(bias)] if bias is not None else [])
        return self.b.op("Conv", ins, strides=list(stride), pads=list(padding) * 2,
                         dilations=list(dilation), group=groups, kernel_shape=_shape(w)[2:])

    def grouped_weight_grad(self, grad, x, ws, stride, padding, groups):
        """d weight of a grouped convolution: one dense weight gradient per group."""
        b = self.b
        xs, gs = _shape(x), _shape(grad)
        sp = len(ws) - 2
        cin, cout = xs[1] // groups, gs[1] // groups
        k = ws[2:]
        full = [xs[2 + i] + 2 * padding[i] - (gs[2 + i] - 1) * stride[i] for i in range(sp)]
        parts = []
        for j in range(groups):
            xj = b.op("Slice", [self.v(x), b.ints([j * cin]), b.ints([(j + 1) * cin]),
                                b.ints([1])])
            gj = b.op("Slice", [self.v(grad), b.ints([j * cout]), b.ints([(j + 1) * cout]),
                                b.ints([1])])
            xt = b.op("Transpose", [xj], perm=[1, 0] + list(range(2, 2 + sp)))
            gt = b.op("Transpose", [gj], perm=[1, 0] + list(range(2, 2 + sp)))
            dw = b.op("Conv", [xt, gt], strides=[1] * sp, pads=list(padding) * 2,
                      dilations=list(stride), kernel_shape=gs[2:])
            if any(f != kk for f, kk in zip(full, k)):
                dw = b.op("Slice", [dw, b.ints([0] * sp), b.ints(k),
                                    b.ints(list(range(2, 2 + sp)))])
            parts.append(b.op("Transpose", [dw], perm=[1, 0] + list(range(2, 2 + sp))))
        return b.op("Concat", parts, axis=0)

    def conv_backward(self, n):
        (grad, x, w, bias_sizes, stride, padding, dilation, transposed, out_pad, groups,
         mask) = n.args
        b = self.b
        xs, ws, gs = _shape(x), _shape(w), _shape(grad)
        depthwise = groups != 1 and groups == xs[1] == ws[0]
        if transposed or (any(d != 1 for d in dilation) and groups != 1):
            raise UnsupportedOp("convolution_backward of a transposed, or grouped and "
                                "dilated, convolution")
        dil = list(dilation)
        k = ws[2:]
        sp = len(k)
        outs = [None, None, None]
        if mask[0]:
            # d input = the transposed convolution of the output gradient by the weights,
            # padded at the end when the forward's stride dropped trailing input rows.
            extra = [xs[2 + i] - ((gs[2 + i] - 1) * stride[i] - 2 * padding[i]
                                  + dil[i] * (k[i] - 1) + 1) for i in range(sp)]
            outs[0] = b.op("ConvTranspose", [self.v(grad), self.v(w)], strides=list(stride),
                           pads=list(padding) * 2, kernel_shape=k, output_padding=extra,
                           group=groups, dilations=dil)
        if mask[1]:
            # d weight[o,c,k] = sum_{n,p} grad[n,o,p] x_pad[n,c,p*s+k]: a convolution of
            # x (batch as channels) by grad (batch as channels) dilated by the stride.
            # Depthwise: channel c's weight sees only x[:, c]; x as one sample of C x N
            # channels, convolved in C groups of N by grad's channels. Other grouped
            # convolutions: each group's slice of x and grad as a dense one, concatenated.
            if groups != 1 and not depthwise:
                outs[1] = self.grouped_weight_grad(grad, x, ws, stride, padding, groups)
                mask = [mask[0], False, mask[2]]
        if mask[1]:
            xt = b.op("Transpose", [self.v(x)], perm=[1, 0] + list(range(2, 2 + sp)))
            if depthwise:
                xt = self.reshape_name(xt, [1, xs[1] * xs[0]] + xs[2:])
            gt = b.op("Transpose", [self.v(grad)], perm=[1, 0] + list(range(2, 2 + sp)))
            # A dilated forward: tap k reads x at p*s + k*d, so the outputs step by d.
            full = [(xs[2 + i] + 2 * padding[i] - (gs[2 + i] - 1) * stride[i] - 1) // dil[i] + 1
                    for i in range(sp)]
            dw = b.op("Conv", [xt, gt], strides=dil, pads=list(padding) * 2,
                      dilations=list(stride), kernel_shape=gs[2:], group=groups)
            if any(f != kk for f, kk in zip(full, k)):
                dw = b.op("Slice", [dw, b.ints([0] * sp), b.ints(k),
                                    b.ints(list(range(2, 2 + sp)))])
            outs[1] = (self.reshape_name(dw, ws) if depthwise else
                       b.op("Transpose", [dw], perm=[1, 0] + list(range(2, 2 + sp))))
        if mask[2]:
            outs[2] = b.op("ReduceSum", [self.v(grad), b.ints([0] + list(range(2, 2 + sp)))],
                           keepdims=0)
        return outs


def fx_to_onnx(gm, input_names, output_names, name="train_step", keep=None, phase_of=None):
    """ONNX ModelProto of the fx graph `gm`: placeholders in order get `input_names`,
    the flat outputs `output_names` (only those `keep` says, when given). Every non-bool
    tensor is fp32 on the ONNX side. phase_of(fx node) -> label: each ONNX node's
    doc_string says the phase of the fx node it comes from (split_phases reads it)."""
    tr = _Translator(gm)
    inputs = []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(input_names):
        raise ValueError(f"{len(placeholders)} graph inputs, {len(input_names)} names")
    for n, nm in zip(placeholders, input_names):
        tr.env[n] = nm
        inputs.append(helper.make_tensor_value_info(nm, _elem(_dtype(n)), _shape(n)))
    out_node = None
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            out_node = n
            continue
        if n.op == "get_attr":  # a tensor the trace captured (a mask buffer, a constant)
            val = getattr(gm, n.target).detach()
            n.meta["val"] = val
            tr.env[n] = tr.b.const(val.numpy() if val.dtype == torch.bool else
                                   val.float().numpy(),
                                   np.bool_ if val.dtype == torch.bool else np.float32)
            continue
        if n.op != "call_function":
            raise UnsupportedOp(f"fx node {n.op} {n.target}")
        first = len(tr.b.nodes)
        try:
            tr.env[n] = tr.node(n)
        except UnsupportedOp as e:
            raise UnsupportedOp(f"captured step, node '{n.name}' ({n.target}): {e}") from None
        if phase_of is not None:
            for node in tr.b.nodes[first:]:
                node.doc_string = phase_of(n)
    flat = torch.fx.node.map_arg(out_node.args[0], lambda x: x)
    flat_list = []

    def walk(o):
        if isinstance(o, (list, tuple)):
            for i in o:
                walk(i)
        else:
            flat_list.append(o)

    walk(flat)
    if len(flat_list) != len(output_names):
        raise ValueError(f"{len(flat_list)} graph outputs, {len(output_names)} names")
    outputs = []
    used = set()
    for i, (o, nm) in enumerate(zip(flat_list, output_names)):
        if keep is not None and not keep[i]:
            continue
        first = len(tr.b.nodes)
        src = tr.v(o)
        if o is not None and isinstance(o, torch.fx.Node) and _dtype(o) == torch.bool:
            src = tr.b.op("Cast", [src], to=TensorProto.FLOAT)
        tr.b.nodes.append(helper.make_node("Identity", [src], [nm], name=f"out_{nm}"))
        used.add(nm)
        if phase_of is not None:
            for node in tr.b.nodes[first:]:
                node.doc_string = phase_of(o) if isinstance(o, torch.fx.Node) else "forward"
        outputs.append(helper.make_tensor_value_info(nm, TensorProto.FLOAT, _shape(o)))
    graph = helper.make_graph(tr.b.nodes, name, inputs, outputs, tr.b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="trnsim.train")
    model.ir_version = 8
    return model


def split_phases(model, phases):
    """One ONNX model per phase label (in `phases` order) from a model whose nodes carry
    their phase in doc_string: a phase's inputs are the values it reads that other
    phases (or the model's inputs) produce, its outputs the values it produces that
    other phases read or the model outputs. Initializers go with the nodes using them."""
    inferred = onnx.shape_inference.infer_shapes(model)
    info = {vi.name: vi for vi in list(inferred.graph.value_info) + list(model.graph.input)
            + list(model.graph.output)}
    inits = {t.name: t for t in model.graph.initializer}
    graph_outputs = {o.name for o in model.graph.output}
    producer = {}
    for node in model.graph.node:
        for o in node.output:
            producer[o] = node.doc_string
    readers = {}
    for node in model.graph.node:
        for i in node.input:
            readers.setdefault(i, set()).add(node.doc_string)
    models = {}
    for ph in phases:
        nodes = [n for n in model.graph.node if n.doc_string == ph]
        made = {o for n in nodes for o in n.output}
        ins, used_inits, seen = [], [], set()
        for n in nodes:
            for i in n.input:
                if i in made or i in seen or not i:
                    continue
                seen.add(i)
                if i in inits:
                    used_inits.append(inits[i])
                else:
                    ins.append(info[i])
        outs = [info[o] for o in sorted(made) if o in graph_outputs
                or readers.get(o, set()) - {ph}]
        g = helper.make_graph(nodes, f"{model.graph.name}_{ph}", ins, outs, used_inits)
        m = helper.make_model(g, opset_imports=list(model.opset_import),
                              producer_name=model.producer_name)
        m.ir_version = model.ir_version
        models[ph] = m
    return models
