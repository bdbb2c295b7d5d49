"""PyTorch-level cases for tests/compiler/test_interp_scatter.cpp: tiny torch models
using scatter_add, index_put, cumsum, one_hot, nonzero, unique, cross_entropy,
nll_loss and fake quantisation, exported with torch.onnx.export; the expected
outputs are eager PyTorch's. Written in the ONNX test-data layout.

Usage: torch_cases.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import numpy_helper

OUT = sys.argv[1]
torch.manual_seed(3)


def export(name, model, inputs, opset, n_out):
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    in_names = ["x%d" % k for k in range(len(inputs))]
    out_names = ["y%d" % k for k in range(n_out)]
    torch.onnx.export(model, tuple(inputs), os.path.join(d, "model.onnx"), opset_version=opset,
                      input_names=in_names, output_names=out_names)
    with torch.no_grad():
        outs = model(*inputs)
    if not isinstance(outs, (tuple, list)):
        outs = [outs]
    for k, t in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy(), in_names[k]).SerializeToString())
    for k, t in enumerate(outs):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy(), out_names[k]).SerializeToString())


class ScatterCumsumOneHot(torch.nn.Module):
    def forward(self, x, idx):
        y = torch.zeros(3, 5).scatter_add(1, idx, x)
        return torch.cumsum(y, dim=1), F.one_hot(idx[0], num_classes=5).float(), y.cumsum(0)


export("torch_scatter_add_cumsum_one_hot", ScatterCumsumOneHot(),
       [torch.randn(3, 4), torch.tensor([[0, 4, 4, 1], [2, 2, 2, 2], [3, 0, 3, 1]])], 16, 3)


class IndexPut(torch.nn.Module):
    def forward(self, x, rows, v):
        x = x.clone()
        x[rows] = v
        return x * 2


export("torch_index_put", IndexPut(),
       [torch.randn(5, 3), torch.tensor([4, 0, 2]), torch.randn(3, 3)], 16, 1)


class AdvancedGather(torch.nn.Module):
    def forward(self, x, i, j):
        return x[i, j] + 1


export("torch_advanced_index", AdvancedGather(),
       [torch.randn(4, 5, 2), torch.tensor([3, 0, 1]), torch.tensor([4, 4, 0])], 13, 1)


class NonZeroUnique(torch.nn.Module):
    def forward(self, x):
        u, inv, cnt = torch.unique(x, sorted=True, return_inverse=True, return_counts=True)
        # ONNX Unique gives flat inverse indices; torch keeps the input shape.
        return torch.nonzero(x), u, inv.reshape(-1), cnt


export("torch_nonzero_unique", NonZeroUnique(),
       [torch.tensor([[0.0, 2.0, 2.0], [-1.0, 0.0, 2.0]])], 11, 4)


class Losses(torch.nn.Module):
    def forward(self, logits, target, w):
        return (F.cross_entropy(logits, target, weight=w, ignore_index=1),
                F.nll_loss(F.log_softmax(logits, 1), target, reduction="sum"),
                F.cross_entropy(logits, target, reduction="none"))


export("torch_cross_entropy_nll", Losses(),
       [torch.randn(4, 3, 2), torch.tensor([[0, 2], [1, 1], [2, 0], [1, 2]]),
        torch.tensor([0.2, 1.0, 3.0])], 13, 3)


class FakeQuant(torch.nn.Module):
    def forward(self, x):
        a = torch.fake_quantize_per_tensor_affine(x, 0.05, 10, 0, 255)
        b = torch.fake_quantize_per_channel_affine(x, torch.tensor([0.1, 0.02, 0.3]),
                                                   torch.tensor([0, -3, 5], dtype=torch.int32),
                                                   1, -128, 127)
        return a, b


# Half-way values (k + 0.5) * scale round to even in both torch and ONNX.
fq = torch.randn(2, 3, 4) * 2
fq[0, 0, :] = torch.tensor([0.025, 0.075, -0.025, 12.0])
export("torch_fake_quantize", FakeQuant(), [fq], 13, 2)


class MaskIndex(torch.nn.Module):
    def forward(self, x, m):
        return x[m] * 2, torch.nonzero(x > 0.5)


# x[mask] exports NonZero + GatherND; nonzero(x > 0.5) needs x as a constant.
export("torch_mask_index", MaskIndex(), [torch.randn(3, 4), torch.randn(3, 4) > 0], 13, 2)


class IndexPutAccumulate(torch.nn.Module):
    def forward(self, x, i, v):
        y = x.clone()
        y.index_put_((i,), v, accumulate=True)
        return y, torch.zeros(4, 3).scatter(1, i.view(-1, 1).expand(-1, 3)[:4] % 3, 1.0)


# torch 1.13 exports accumulate=True as ScatterND (no reduction) into zeros + Add,
# which equals eager PyTorch only for distinct indices: the indices here are.
export("torch_index_put_accumulate", IndexPutAccumulate(),
       [torch.randn(5, 3), torch.tensor([1, 4, 3, 0]), torch.randn(4, 3)], 16, 2)


def write_node_case(name, op, inputs, outputs, opset, **attrs):
    """A single-node ONNX model whose expected outputs come from eager PyTorch."""
    from onnx import TensorProto, helper, save
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.uint8): TensorProto.UINT8,
             np.dtype(np.int8): TensorProto.INT8}
    in_names = ["x%d" % k for k in range(len(inputs))]
    out_names = ["y%d" % k for k in range(len(outputs))]
    g = helper.make_graph(
        [helper.make_node(op, in_names, out_names, **attrs)], name,
        [helper.make_tensor_value_info(n, types[a.dtype], list(a.shape))
         for n, a in zip(in_names, inputs)],
        [helper.make_tensor_value_info(n, types[a.dtype], list(a.shape))
         for n, a in zip(out_names, outputs)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]),
         os.path.join(d, "model.onnx"))
    for k, a in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, in_names[k]).SerializeToString())
    for k, a in enumerate(outputs):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, out_names[k]).SerializeToString())


# QuantizeLinear against torch.quantize_per_tensor / quantize_per_channel (their
# int_repr): half-way values round to even, out-of-range values saturate.
qx = torch.randn(2, 3, 4) * 4
qx[0, 0, :] = torch.tensor([0.25, 0.75, -0.25, 100.0])
qt = torch.quantize_per_tensor(qx, 0.5, 7, torch.quint8).int_repr()
write_node_case("torch_quantize_per_tensor", "QuantizeLinear",
                [qx.numpy(), np.float32(0.5), np.uint8(7)], [qt.numpy()], 13)
scales = torch.tensor([0.5, 0.1, 0.05], dtype=torch.float64)
zps = torch.tensor([0, -4, 9])
qc = torch.quantize_per_channel(qx, scales, zps, 1, torch.qint8).int_repr()
write_node_case("torch_quantize_per_channel", "QuantizeLinear",
                [qx.numpy(), scales.float().numpy(), zps.numpy().astype(np.int8)], [qc.numpy()],
                13, axis=1)
