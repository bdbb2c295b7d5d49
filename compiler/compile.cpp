#include "compiler/compile.h"

#include "compiler/codegen/codegen.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/lower/lower.h"
#include "compiler/passes/pass.h"
#include "compiler/timings.h"

namespace trnsim::compiler {

namespace {

bool is_graph_pass(const std::string& name) {
  for (const graph_passes::PassInfo* p : graph_passes::all_passes())
    if (p->name == name) return true;
  return false;
}
bool is_tile_pass(const std::string& name) {
  for (const passes::PassInfo* p : passes::all_passes())
    if (p->name == name) return true;
  return false;
}

}  // namespace

namespace {

struct DumpPlan {
  std::vector<std::string> graph, tile;
};

// Splits --print-after names into graph and tile passes ("*": both).
DumpPlan plan_dumps(const CompileOnnxOptions& o) {
  DumpPlan d;
  for (const std::string& p : o.print_after) {
    if (p == "*") {
      d.graph.push_back(p);
      d.tile.push_back(p);
    } else if (is_graph_pass(p)) {
      d.graph.push_back(p);
    } else if (is_tile_pass(p)) {
      d.tile.push_back(p);
    } else {
      std::string known;
      for (const graph_passes::PassInfo* q : graph_passes::all_passes())
        known += (known.empty() ? "" : ", ") + std::string(q->name);
      for (const passes::PassInfo* q : passes::all_passes()) known += ", " + std::string(q->name);
      throw ir::CompileError("--print-after: unknown pass '" + p + "'; passes: " + known);
    }
  }
  return d;
}

std::function<void(const std::string&, const std::string&)> dump_fn(const CompileOnnxOptions& o,
                                                                    std::string* text) {
  if (o.dump) return o.dump;
  return [text](const std::string& pass, const std::string& t) {
    if (text) *text += graph_passes::dump_header(pass) + "\n" + t;
  };
}

}  // namespace

void run_graph_pipeline(ir::Graph& g, const CompileOnnxOptions& o, std::string* dump_text) {
  graph_passes::PassContext ctx;
  ctx.precision = o.precision;
  ctx.dump_after = plan_dumps(o).graph;
  ctx.dump = dump_fn(o, dump_text);
  graph_passes::run_default_pipeline(g, ctx);
}

isa::Program generate(const ir::Graph& g, const CompileOnnxOptions& o, std::string* dump_text,
                      std::map<std::string, double>* stats, ProgramRoofline* roofline) {
  tile::Kernel k = [&] {
    timings::Scope t("lower");
    return lower::lower_graph(g, o.target);
  }();
  codegen::CompileOptions co;
  co.dump_after = plan_dumps(o).tile;
  co.dump = dump_fn(o, dump_text);
  if (!o.keep_on_chip) std::erase(co.passes, std::string(passes::keep_on_chip_pass().name));
  co.keep_constant_data = false;  // only the program is kept
  codegen::CompileResult r = codegen::compile(std::move(k), o.target, co);
  if (stats)
    for (const auto& [name, v] : r.stats) (*stats)[name] += v;
  if (roofline) *roofline = analyse_roofline(g, r.kernel, r.program);
  return std::move(r.program);
}

CompileOnnxResult compile_graph(ir::Graph g, const CompileOnnxOptions& o) {
  CompileOnnxResult r;
  plan_dumps(o);  // unknown pass names fail before any work
  run_graph_pipeline(g, o, &r.dump_text);
  r.program = generate(g, o, &r.dump_text);
  r.graph = std::move(g);
  return r;
}

CompileOnnxResult compile_onnx(const std::string& path, const CompileOnnxOptions& o) {
  return compile_graph(frontend::import_onnx_file(path), o);
}

interp::TensorMap reference_outputs(const ir::Graph& imported, const interp::TensorMap& inputs,
                                    graph_passes::Precision p) {
  if (p == graph_passes::Precision::fp32) return interp::run(imported, inputs);
  ir::Graph g = imported.clone();
  graph_passes::PassContext ctx;
  ctx.precision = p;
  graph_passes::run_passes(g, ctx, {"autocast"});
  interp::RunOptions ro;
  ro.emulate_precision = true;
  return interp::run(g, inputs, ro);
}

}  // namespace trnsim::compiler
