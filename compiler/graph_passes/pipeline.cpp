// The graph pass registry and the pipeline runner.
#include <algorithm>

#include "compiler/graph_passes/pass.h"
#include "compiler/ir/error.h"
#include "compiler/timings.h"

namespace trnsim::graph_passes {

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp8:
      return "fp8";
  }
  return "?";
}

std::optional<Precision> parse_precision(std::string_view s) {
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp8})
    if (precision_name(p) == s) return p;
  return std::nullopt;
}

const std::vector<const PassInfo*>& all_passes() {
  static const std::vector<const PassInfo*> passes{
      &decompose_pass(),     &unroll_rnn_pass(),    &decompose_3d_pass(),     &canonicalize_pass(),
      &fuse_patterns_pass(), &fuse_epilogue_pass(), &fuse_elementwise_pass(), &autocast_pass()};
  return passes;
}

const PassInfo& find_pass(std::string_view name) {
  for (const PassInfo* p : all_passes())
    if (p->name == name) return *p;
  std::string known;
  for (const PassInfo* p : all_passes())
    known += (known.empty() ? "" : ", ") + std::string(p->name);
  throw ir::CompileError("unknown graph pass '" + std::string(name) + "'; known passes: " + known);
}

std::vector<std::string> default_graph_pipeline(Precision p) {
  std::vector<std::string> names{"decompose",       "unroll_rnn",    "decompose_3d",
                                 "canonicalize",    "fuse_patterns", "fuse_epilogue",
                                 "fuse_elementwise"};
  if (p != Precision::fp32) names.push_back("autocast");
  return names;
}

std::string dump_header(std::string_view pass) {
  return "# IR after " + std::string(pass) + "\n";
}

void run_passes(ir::Graph& g, PassContext& ctx, const std::vector<std::string>& names) {
  std::vector<const PassInfo*> passes;
  for (const auto& n : names) passes.push_back(&find_pass(n));
  for (const auto& d : ctx.dump_after)
    if (d != "*") find_pass(d);
  auto wants_dump = [&](std::string_view name) {
    return std::any_of(ctx.dump_after.begin(), ctx.dump_after.end(),
                       [&](const std::string& d) { return d == "*" || d == name; });
  };
  for (const PassInfo* p : passes) {
    const std::string prefix = "graph pass '" + std::string(p->name) + "': ";
    try {
      {
        compiler::timings::Scope t("graph." + std::string(p->name));
        p->run(g, ctx);
      }
      compiler::timings::Scope t("graph.verify");
      g.verify();
    } catch (const ir::UnsupportedError& e) {
      throw ir::UnsupportedError(prefix + e.what());
    } catch (const ir::CompileError& e) {
      throw ir::CompileError(prefix + e.what());
    }
    if (wants_dump(p->name)) {
      std::string text = ir::print_graph(g, ctx.print);
      if (ctx.dump)
        ctx.dump(std::string(p->name), text);
      else
        ctx.dump_text += dump_header(p->name) + text;
    }
  }
}

void run_default_pipeline(ir::Graph& g, PassContext& ctx) {
  run_passes(g, ctx, default_graph_pipeline(ctx.precision));
}

}  // namespace trnsim::graph_passes
