// autocast: the precision policy, like neuronx-cc --auto-cast matmult. The operands
// of every tensor-engine op (MatMul, Gemm, Conv, ConvTranspose, trn.MatMulEpilogue,
// trn.Attention)
// with fp32 operands get compute_dtype:
//   bf16 (the default)  compute_dtype="bf16"
//   fp8                 compute_dtype="fp8e4m3"
//   fp32                nothing changes
// The attribute, not Cast nodes: the values in the graph stay fp32 (PSUM
// accumulation, bias, activations and every other op remain fp32), and lowering
// rounds the operands when it stages them for the tensor engine. The reference
// interpreter ignores compute_dtype unless RunOptions::emulate_precision is set;
// then it rounds the operands (inputs 0 and 1) the same way, so a compiled graph
// can be compared with the simulator like with like.
#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/util.h"
#include "compiler/ir/trn_ops.h"

namespace trnsim::graph_passes {
namespace {

constexpr std::string_view kPass = "autocast";

void run(ir::Graph& g, PassContext& ctx) {
  if (ctx.precision == Precision::fp32) return;
  const std::string dtype = ctx.precision == Precision::bf16 ? "bf16" : "fp8e4m3";
  for (const auto& n : g.nodes()) {
    if (!ir::is_matmul_anchor(n->op) && n->op != "trn.MatMulEpilogue" && n->op != "trn.Attention")
      continue;
    if (n->inputs[0]->elem() != ir::ElemType::fp32 || n->inputs[1]->elem() != ir::ElemType::fp32)
      continue;
    n->attrs["compute_dtype"] = dtype;
    bump(ctx, kPass, dtype);
  }
}

}  // namespace

const PassInfo& autocast_pass() {
  static const PassInfo p{
      kPass, "precision policy: compute_dtype (bf16 / fp8e4m3) on MatMul/Gemm/Conv operands", run};
  return p;
}

}  // namespace trnsim::graph_passes
