// trnsim-specific ops ("trn." prefix) that the graph passes create, registered in
// the op table next to the ONNX ones (ops.cpp) and run by the interpreter
// (interp/kernels_trn.cpp). What a lowering engineer needs to know:
//
//   trn.Gelu(X){approximate="none"|"tanh"}
//       none: x/2 (1 + erf(x/sqrt 2)); tanh: x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))).
//   trn.Silu(X)                              x * sigmoid(x).
//   trn.LayerNorm(X, scale?, bias?){axis, epsilon}
//       Normalises over dims axis..rank-1 (population variance, eps inside the sqrt),
//       then * scale + bias. scale/bias broadcast to exactly those dims (in practice
//       they have that shape, e.g. [D] for axis = rank-1). One output, X's type.
//   trn.RMSNorm(X, scale?){axis, epsilon}
//       x / sqrt(mean(x^2 over axis..rank-1) + eps) * scale.
//   trn.Elementwise(X0, X1, ...){expr}
//       A fused chain/tree of elementwise ops (see "Fused bodies").
//   trn.MatMulEpilogue(A, B, X2, ...){expr, compute_dtype?}
//       A tensor-engine op (step 0: MatMul, Gemm, Conv or ConvTranspose on %0 = A,
//       %1 = B and optionally %2 = Gemm C / conv bias) followed by a chain of
//       elementwise steps, each reading the previous step's result exactly once:
//       bias add, activation, residual add, ... -- what the engine applies while
//       evacuating PSUM. compute_dtype (as on MatMul) is on the fused node, not in
//       the expr; fused_body() copies it onto step 0.
//   trn.Attention(Q, K, V, [K1, V1, ...]){scale, causal, compute_dtype?}
//       softmax(scale * Q K^T + mask) V over the last two axes: Q [..., Sq, D],
//       K [..., Skv, D], V [..., Skv, Dv], the same leading dims; output [..., Sq, Dv].
//       Further (K, V) pairs are more keys and values: K and V are the pairs'
//       concatenations along the sequence axis (a KV cache and the new token's).
//       causal=1 (needs Sq == Skv): query i sees keys j <= i only (the mask is -inf
//       above the diagonal); causal=0: no mask. compute_dtype: the matmul operands'
//       type (Q, K, the probabilities and V), as on MatMul.
//   trn.AllReduce(X){group}
//       The sum of X over the ranks `group` of an SPMD launch (graph_passes/
//       tensor_parallel.h makes it); lowered to one all_reduce instruction. The
//       interpreter refuses it: one process holds one rank.
//
// Fused bodies. `expr` lists the steps, separated by ';':
//     MatMul(%0, %1); Add($0, %2); Relu($1); Add($2, %3)
// `%k` is input k of the fused node, `$j` the result of step j; the last step's
// result is the node's output. Each step is an IR op with ONNX semantics
// (broadcasting included) and its normalized attributes in braces, written as in
// the IR text form except that strings may be bare words:
//     Clip($0){max=6.0, min=0.0}; trn.Gelu($1){approximate=tanh}
// Step ops are the ones is_fusible_elementwise() accepts (step 0 of an epilogue:
// is_matmul_anchor()). The graph passes only make bodies in which every step's
// result has the output's shape (other operands may broadcast: bias, scalars).
//
// Consuming a fused node: fused_steps() gives the parsed steps; fused_body() gives
// the body as an ordinary ir::Graph (inputs named "0", "1", ... for %0, %1, ...;
// step j's output named "s<j>"), so the per-op lowering and the interpreter apply
// unchanged.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace trnsim::ir {

// An operand of a fused step: input `index` of the fused node (%index) or the
// result of step `index` ($index).
struct FusedArg {
  bool is_step = false;
  int index = 0;
  bool operator==(const FusedArg&) const = default;
};

struct FusedStep {
  std::string op;
  std::vector<FusedArg> args;
  std::map<std::string, Attribute> attrs;
};

// Parse / print the `expr` syntax above. Parse errors throw CompileError naming
// the column ("expr col 12: expected ')'").
std::vector<FusedStep> parse_fused_expr(const std::string& expr);
std::string format_fused_expr(const std::vector<FusedStep>& steps);

// Ops allowed as elementwise steps: float -> float, no state, one output, ONNX
// broadcasting (unary activations, Add/Sub/Mul/Div/Pow/Max/Min/PRelu, Clip,
// trn.Gelu, trn.Silu, ...).
bool is_fusible_elementwise(std::string_view op);
// Tensor-engine ops that can head a trn.MatMulEpilogue.
bool is_matmul_anchor(std::string_view op);

// The steps of a trn.Elementwise / trn.MatMulEpilogue node (parsed `expr`).
std::vector<FusedStep> fused_steps(const Node& n);

// The body of a fused node as a graph, checked (op kinds, operand references,
// epilogue chain form, shapes). With `inline_constants`, fused inputs that are
// constants become constants of the body (with their data), else every input is a
// graph input. Throws CompileError naming the step.
Graph fused_body(const Node& n, bool inline_constants = true);

// Output types of the trn.* ops (the op table's shape rules).
std::vector<TensorType> infer_trn_norm(const Node& n);       // trn.LayerNorm, trn.RMSNorm
std::vector<TensorType> infer_trn_fused(const Node& n);      // trn.Elementwise, trn.MatMulEpilogue
std::vector<TensorType> infer_trn_attention(const Node& n);  // trn.Attention

// compute_dtype of a node as an element type, if it has one (CompileError if the
// attribute names no floating type).
std::optional<ElemType> compute_dtype(const Node& n);

}  // namespace trnsim::ir
