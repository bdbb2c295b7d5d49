#include "compiler/compile.h"

#include "compiler/codegen/codegen.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/lower/lower.h"
#include "compiler/passes/pass.h"

namespace trnsim::compiler {

namespace {

bool is_graph_pass(const std::string& name) {
  for (const gpass::PassInfo* p : gpass::all_passes())
    if (p->name == name) return true;
  return false;
}
bool is_tile_pass(const std::string& name) {
  for (const tile::PassInfo* p : tile::all_passes())
    if (p->name == name) return true;
  return false;
}

}  // namespace

CompileOnnxResult compile_graph(ir::Graph g, const CompileOnnxOptions& o) {
  CompileOnnxResult r;
  std::vector<std::string> graph_dumps, tile_dumps;
  for (const std::string& p : o.print_after) {
    if (p == "*") {
      graph_dumps.push_back(p);
      tile_dumps.push_back(p);
    } else if (is_graph_pass(p)) {
      graph_dumps.push_back(p);
    } else if (is_tile_pass(p)) {
      tile_dumps.push_back(p);
    } else {
      std::string known;
      for (const gpass::PassInfo* q : gpass::all_passes())
        known += (known.empty() ? "" : ", ") + std::string(q->name);
      for (const tile::PassInfo* q : tile::all_passes()) known += ", " + std::string(q->name);
      throw ir::CompileError("--print-after: unknown pass '" + p + "'; passes: " + known);
    }
  }
  auto dump = o.dump ? o.dump : [&r](const std::string& pass, const std::string& text) {
    r.dump_text += gpass::dump_header(pass) + "\n" + text;
  };
  gpass::PassContext ctx;
  ctx.precision = o.precision;
  ctx.dump_after = graph_dumps;
  ctx.dump = dump;
  gpass::run_default_pipeline(g, ctx);
  tile::Kernel k = lower::lower_graph(g, o.target);
  codegen::CompileOptions co;
  co.dump_after = tile_dumps;
  co.dump = dump;
  codegen::CompileResult cr = codegen::compile(std::move(k), o.target, co);
  r.program = std::move(cr.program);
  r.graph = std::move(g);
  return r;
}

CompileOnnxResult compile_onnx(const std::string& path, const CompileOnnxOptions& o) {
  return compile_graph(frontend::import_onnx_file(path), o);
}

}  // namespace trnsim::compiler
