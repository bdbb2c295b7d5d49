// The IR's op set: for each op its inputs, outputs, attributes (with defaults) and
// shape rule, plus the geometry helpers (broadcasting, conv/pool windows, slices)
// that shape inference, the interpreter and lowering passes share.
//
// Ops carry ONNX names and ONNX semantics (opset 13-17 flavour), in a canonical
// form that the front end produces whatever the model's opset:
//   - structural parameters are attributes, never inputs: Squeeze/Unsqueeze and
//     Reduce* `axes`, Split `split`, Slice `starts/ends/axes/steps`, Pad `pads`
//     and `value`, Reshape/Expand `shape`, Tile `repeats`, Clip `min`/`max`,
//     CumSum `axis`, Trilu `k`;
//   - every attribute is present (normalize_node() fills defaults), axes are
//     non-negative, Conv/pool `pads` are explicit (no auto_pad);
//   - Softmax/LogSoftmax/Hardmax work on one axis (the front end rewrites the
//     opset < 13 "flatten to 2-D" form into Reshape + Softmax + Reshape);
//   - no Constant, Dropout or CastLike nodes (folded / replaced by the front end).
// Shape, Size, ConstantOfShape and Range exist so the front end can fold them:
// shape inference needs their inputs' data (Shape and Size: only the type).
//
// Op list (inputs; attributes with defaults; `?` = optional input):
//  Unary, same type out. Float only: Sigmoid, Tanh, Erf, Exp, Log, Sqrt, Reciprocal,
//    Softplus, Softsign, HardSwish, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh,
//    Asinh, Acosh, Atanh, Floor, Ceil, Round (half to even),
//    HardSigmoid{alpha=0.2, beta=0.5}, Elu{alpha=1}, Celu{alpha=1},
//    Selu{alpha=1.6732632, gamma=1.0507010}, LeakyRelu{alpha=0.01},
//    ThresholdedRelu{alpha=1}.
//    Numeric: Relu, Neg, Abs, Sign, Clip{min=-inf, max=+inf}. Any: Identity.
//    Bool: Not. Float -> bool: IsNaN, IsInf{detect_negative=1, detect_positive=1}.
//  Binary, multidirectional (numpy) broadcasting: Add, Sub, Mul, Div (integer:
//    truncates toward zero, x/0 = 0), Pow (type of the base), Mod{fmod=0} (fmod=0:
//    sign of the divisor, integers only in ONNX; fmod=1: C fmod), PRelu(X, slope)
//    (slope broadcasts to X). Variadic (1+ inputs): Max, Min, Sum, Mean.
//    Comparisons to bool: Equal, Less, Greater, LessOrEqual, GreaterOrEqual.
//    Bool logic: And, Or, Xor. Where(cond, X, Y).
//  Cast{to: element type name, e.g. "fp32"}.
//  MatMul(A, B): numpy matmul (1-D operands promoted, batch dims broadcast).
//  Gemm(A, B, C?){alpha=1, beta=1, transA=0, transB=0}: A, B 2-D; C broadcasts.
//  Conv(X, W, B?){kernel_shape, strides, pads, dilations, group=1}: X [N,C,D1..Dk],
//    W [M, C/group, K1..Kk]; pads = [begin_1..begin_k, end_1..end_k].
//  ConvTranspose(X, W, B?){kernel_shape, strides, pads, dilations, output_padding,
//    group=1}: W [C, M/group, K1..Kk].
//  MaxPool(X){kernel_shape, strides, pads, dilations, ceil_mode=0}.
//  AveragePool(X){kernel_shape, strides, pads, ceil_mode=0, count_include_pad=0}.
//  GlobalAveragePool(X), GlobalMaxPool(X): reduce every spatial dim to 1.
//  BatchNormalization(X, scale, B, mean, var){epsilon=1e-5}: inference form.
//  InstanceNormalization(X, scale, B){epsilon=1e-5}.
//  LayerNormalization(X, scale, B?){axis=-1, epsilon=1e-5} -> Y, Mean?, InvStdDev?
//    (normalises over dims axis..rank-1; Mean/InvStdDev have those dims set to 1).
//  Softmax, LogSoftmax, Hardmax {axis=-1}: over the one axis.
//  ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
//    ReduceLogSum, ReduceLogSumExp, ReduceSumSquare {axes=[] (= all), keepdims=1}.
//  ArgMax, ArgMin {axis=0, keepdims=1, select_last_index=0} -> int64.
//  Reshape{shape}: the full output shape (no 0 or -1).
//  Flatten{axis=1} -> 2-D. Transpose{perm (default reversed)}.
//  Squeeze{axes (default: every dim of size 1)}. Unsqueeze{axes}: axes of the output.
//  Concat{axis} (1+ inputs). Split{axis=0, split (default: equal parts, one per
//    output)}.
//  Slice{starts, ends, axes (default 0..n-1), steps (default 1)}: ONNX clamping,
//    see slice_dims().
//  Gather(data, indices){axis=0}: int32/int64 indices, negative counts from the end.
//  GatherElements(data, indices){axis=0}.
//  Expand{shape}: broadcast X to `shape` (numpy rules, as ONNX Expand).
//  Tile{repeats}. Pad{pads (begin..., end...; negative crops), mode="constant"
//    (or "reflect", "edge"), value=0}.
//  DepthToSpace{blocksize, mode="DCR"}, SpaceToDepth{blocksize}.
//  CumSum{axis, exclusive=0, reverse=0}. Trilu{upper=1, k=0}.
//  ScatterElements(data, indices, updates){axis=0, reduction="none" (or add, mul,
//    max, min)}: updates apply in index order (the last of duplicates wins with
//    "none"). ScatterND(data, indices, updates){reduction="none"}. GatherND(data,
//    indices){batch_dims=0}. Indices out of range are errors. OneHot(indices,
//    values){axis=-1, depth}: indices outside [-depth, depth) give off values.
//  Data-shaped (shape inference reads input 0's data; they fold): NonZero(X) ->
//    int64[rank, nnz]; Unique(X){sorted=1, axis (absent: flattened)} -> Y, indices,
//    inverse_indices, counts. Compress(X){condition: 0/1 ints, axis (absent:
//    flattened)}.
//  Quantisation (uint8/int8, round half to even, saturating): QuantizeLinear(x,
//    scale, zero_point?){axis=1}, DequantizeLinear(x, scale, zero_point?){axis=1}
//    (per tensor, or per axis with a 1-D scale), DynamicQuantizeLinear(x) -> y,
//    scale, zero_point; MatMulInteger(A, B, a_zp?, b_zp?) and ConvInteger(x, w,
//    x_zp?, w_zp?){conv attributes} -> int32; QLinearMatMul(a, a_scale, a_zp, b,
//    b_scale, b_zp, y_scale, y_zp), QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp,
//    y_scale, y_zp, B?){conv attributes}.
//  ReverseSequence(x, sequence_lens){batch_axis=1, time_axis=0}.
//  NegativeLogLikelihoodLoss(input, target, weight?){ignore_index?,
//    reduction="mean"}, SoftmaxCrossEntropyLoss(scores, labels, weights?){same} ->
//    loss, log_prob?.
//  HannWindow, HammingWindow, BlackmanWindow (no inputs){size, periodic=1,
//    output_datatype="fp32"}: fold to constants.
//  Fold-only: Shape{start=0, end=rank}, Size, ConstantOfShape(shape){value: tensor,
//    default fp32 0}, Range(start, limit, delta).
//  LSTM(X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?) -> Y, Y_h, Y_c;
//    GRU and RNN(X, W, R, B?, sequence_lens?, initial_h?) -> Y, Y_h: ONNX semantics
//    {hidden_size, direction="forward", layout=0, activations, activation_alpha,
//    activation_beta, clip?, input_forget=0 (LSTM), linear_before_reset=0 (GRU)};
//    see "recurrent ops" below for the canonical activation lists.
//  Control flow (bodies are graph attributes, see graph.h "Subgraphs"; the outer
//    values a body reads are the node's trailing inputs and the body's last inputs):
//    If(cond, captured...){then_branch, else_branch}: both branches take the
//      captured values and must give the same output types.
//    Loop(M?, cond?, carried..., captured...){body, num_captures=0}: body inputs
//      (iteration int64[], cond bool[], carried..., captured...), outputs (cond,
//      carried..., scan...); carried values keep their type; scan outputs stack one
//      row per iteration, so they need M as a constant.
//    Scan(states..., scanned..., captured...){body, num_scan_inputs,
//      scan_input_axes, scan_input_directions, scan_output_axes,
//      scan_output_directions, num_captures=0}: opset 9+ semantics.
//  MatMul, Gemm, Conv and ConvTranspose take an optional compute_dtype (a float
//    element type name): the precision of their operands on the tensor engine, set
//    by the autocast graph pass (compiler/graph_passes/autocast.cpp).
//  trnsim ops made by the graph passes ("trn." prefix; see compiler/ir/trn_ops.h):
//    trn.Gelu, trn.Silu, trn.LayerNorm, trn.RMSNorm, trn.Elementwise,
//    trn.MatMulEpilogue.
//  trn.TileKernel(X...){tir, inputs, outputs}: a user kernel in tile IR (see
//    compiler/ir/tile_kernel.h); the front end makes it from "trnsim.kernels" nodes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace trnsim::ir {

struct AttrSpec {
  std::string name;
  Attribute::Kind kind;
  bool has_default = false;
  Attribute dflt;         // used when has_default
  bool optional = false;  // may be absent after normalization (no default)
};

struct OpSchema {
  std::string name;
  int min_inputs = 1, max_inputs = 1;  // max -1: unbounded
  int min_outputs = 1, max_outputs = 1;
  std::vector<AttrSpec> attrs;  // attributes not listed here are errors
};

// The schema of an op, or null for ops outside the set.
const OpSchema* find_op_schema(std::string_view op);
// Every op in the set, sorted.
std::vector<std::string> op_names();

// Fill default attributes (including the ones that depend on input shapes, e.g.
// Conv kernel_shape), make axes non-negative, check attribute kinds and input and
// output counts. Idempotent. Throws CompileError with the problem (no node label).
void normalize_node(Node& n);

// Output types of a normalized node from its input types (and, for fold-only ops
// and a few others, its inputs' constant data). Throws CompileError with the problem.
std::vector<TensorType> infer_types(const Node& n);

// Create a node at the end of `g` (or before `before`), normalize it and give it
// fresh outputs typed by inference, named from `out_names` when given (else
// unique names derived from the node name or op). Errors name the node.
Node* make_node(Graph& g, const std::string& op, std::vector<Value*> inputs,
                std::map<std::string, Attribute> attrs = {}, const std::string& node_name = "",
                int num_outputs = 1, const std::vector<std::string>& out_names = {},
                const Node* before = nullptr);

// --- geometry helpers -------------------------------------------------------

// numpy broadcasting of two or more shapes; CompileError if incompatible.
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// Resolved window geometry of Conv / ConvTranspose / MaxPool / AveragePool over the
// k spatial dims.
struct WindowGeometry {
  std::vector<int64_t> in, kernel, strides, dilations, pads_begin, pads_end, out;
};
// Conv and pools: out = floor-or-ceil((in + pb + pe - ((k-1)*d + 1)) / s) + 1. With
// ceil_mode a last window that would start inside the end padding is dropped (as
// PyTorch does), so every window overlaps the input.
WindowGeometry window_geometry(const Node& n);

// Per-dim start/step/count of a Slice over an input shape (ONNX clamping: starts
// and ends clamp to [0, dim] for positive steps, [-1, dim-1] for negative ones).
struct SliceDim {
  int64_t start = 0, step = 1, count = 0;
};
std::vector<SliceDim> slice_dims(const Node& n, const Shape& in);

// Normalize an axis in [-rank, rank) (or [-rank, rank] if `inclusive`).
int64_t normalize_axis(int64_t axis, int64_t rank, bool inclusive = false);

// Unique over the slices of `x` along `axis` (its elements, flattened, when axis
// < 0): per distinct slice, in output order (ascending when `sorted`, else by first
// occurrence), the index of its first occurrence and its count, and per input slice
// the index of its distinct slice. NaNs compare equal to each other, above numbers.
struct UniqueSlices {
  std::vector<int64_t> first, counts, inverse;
};
UniqueSlices unique_slices(const Tensor& x, int64_t axis, bool sorted);

}  // namespace trnsim::ir

// --- recurrent ops (LSTM, GRU, RNN) ------------------------------------------
namespace trnsim::ir {

// Canonical form of LSTM/GRU/RNN (ONNX semantics): `activations` is a
// comma-separated list with one entry per gate function per direction (forward
// set first), spelled as in the ONNX spec (Sigmoid, Tanh, Relu, Affine, LeakyRelu,
// ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus);
// `activation_alpha`/`activation_beta` hold one value per entry (the function's
// default where it takes none); `clip` is absent for no clipping.
struct RnnActivation {
  std::string name;
  float alpha = 0, beta = 0;
};
// Gate functions per direction: LSTM 3 (f, g, h), GRU 2 (f, g), RNN 1 (f).
int rnn_activations_per_direction(std::string_view op);
// The ONNX spelling of an activation name (case-insensitive), or "" if unknown.
std::string rnn_activation_canonical(std::string_view name);
// Whether the function reads alpha / beta, and their defaults.
bool rnn_activation_takes_alpha(std::string_view canonical);
bool rnn_activation_takes_beta(std::string_view canonical);
std::pair<float, float> rnn_activation_defaults(std::string_view canonical);
// The resolved per-direction activations of a normalized node ([dir][k]).
std::vector<std::vector<RnnActivation>> rnn_activations(const Node& n);

}  // namespace trnsim::ir
