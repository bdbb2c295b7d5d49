// Graph-level passes over the ir::Graph (between the ONNX front end and lowering)
// and the pipeline that runs them by name. Each pass lives in its own file with a
// name and a one-line summary, rewrites the graph in place, and keeps its
// semantics (checked in tests against the reference interpreter); run_passes()
// verifies the graph after every pass and dumps it where asked, which backs
// `trnsim compile --print-after PASS`.
//
// The passes, in default order:
//   decompose         Einsum, Resize/Upsample, InstanceNormalization -> ops the
//                     device lowers (MatMul, Transpose, Reshape, trn.LayerNorm, ...)
//   unroll_rnn        LSTM/GRU/RNN with a static sequence length -> per-step cells
//   decompose_3d      3-D Conv/ConvTranspose/MaxPool/AveragePool -> 2-D ones
//   canonicalize      simplify: identities, constant folding, reshape/transpose
//                     chains, x*1 / x+0, x-c / x/c -> x+(-c) / x*(1/c), Gemm -> MatMul
//                     (+ Add), BatchNormalization into the preceding Conv, dead nodes
//   fuse_patterns     torch-exported GELU, LayerNorm, RMSNorm, SiLU, HardSwish
//                     subgraphs -> trn.Gelu, trn.LayerNorm, trn.RMSNorm, trn.Silu,
//                     HardSwish
//   fuse_epilogue     MatMul/Gemm/Conv + chain of elementwise consumers ->
//                     trn.MatMulEpilogue
//   fuse_elementwise  single-consumer elementwise trees -> trn.Elementwise
//   autocast          precision policy: compute_dtype on tensor-engine ops
// The trn.* ops and the fused-body format are described in compiler/ir/trn_ops.h.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/text.h"

namespace trnsim::graph_passes {

// The precision policy (like neuronx-cc --auto-cast matmult): the operand type of
// tensor-engine ops. Accumulation (PSUM) and everything else stay fp32.
enum class Precision { fp32, bf16, fp8 };
std::string_view precision_name(Precision p);  // "fp32", "bf16", "fp8"
std::optional<Precision> parse_precision(std::string_view s);

struct PassContext {
  Precision precision = Precision::bf16;  // read by autocast
  // Figures the passes report, "pass.figure" -> count (e.g. "fuse_patterns.gelu").
  std::map<std::string, double> stats;
  // Passes after which to dump the graph ("*" = every pass). The text goes to
  // `dump` if set, else is appended to `dump_text` under a "# IR after PASS" line.
  std::vector<std::string> dump_after;
  std::function<void(const std::string& pass, const std::string& text)> dump;
  std::string dump_text;
  ir::PrintOptions print;
};

struct PassInfo {
  std::string_view name;
  std::string_view summary;
  void (*run)(ir::Graph& g, PassContext& ctx);
};

// The passes, one per file.
const PassInfo& decompose_pass();
const PassInfo& canonicalize_pass();
const PassInfo& fuse_patterns_pass();
const PassInfo& fuse_epilogue_pass();
const PassInfo& fuse_elementwise_pass();
const PassInfo& autocast_pass();
const PassInfo& unroll_rnn_pass();
const PassInfo& decompose_3d_pass();

// Every pass, in default pipeline order.
const std::vector<const PassInfo*>& all_passes();
// Throws ir::CompileError listing the known passes.
const PassInfo& find_pass(std::string_view name);
// decompose, unroll_rnn, decompose_3d, canonicalize, fuse_patterns, fuse_epilogue,
// fuse_elementwise, then autocast unless `p` is fp32. autocast reads the precision from
// PassContext::precision: set both from the same option (run_default_pipeline does).
std::vector<std::string> default_graph_pipeline(Precision p);

// Runs the named passes in order: checks every name (and every dump_after name)
// first, verifies the graph after each pass and dumps it where asked. Errors are
// rethrown with "graph pass 'NAME': " in front (UnsupportedError stays one).
void run_passes(ir::Graph& g, PassContext& ctx, const std::vector<std::string>& names);
// default_graph_pipeline(ctx.precision).
void run_default_pipeline(ir::Graph& g, PassContext& ctx);

// "# IR after PASS" + the graph: what dump_text collects for each dump.
std::string dump_header(std::string_view pass);

}  // namespace trnsim::graph_passes
