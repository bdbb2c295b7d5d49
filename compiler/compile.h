// The compiler driver: ONNX model -> isa::Program. Import (compiler/frontend), the
// default graph pipeline (compiler/graph_passes), lowering (compiler/lower), the
// tile pipeline and codegen (compiler/codegen).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/graph_passes/pass.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/graph.h"
#include "compiler/roofline.h"
#include "compiler/target.h"
#include "models/isa/program.h"

namespace trnsim::compiler {

struct CompileOnnxOptions {
  graph_passes::Precision precision = graph_passes::Precision::bf16;
  Target target;
  // Graph or tile passes after which to dump the IR ("*" = every pass). Names that
  // are neither a graph pass nor a tile pass are an error.
  std::vector<std::string> print_after;
  // Run the keep_on_chip tile pass (intermediates forwarded through SBUF, spilled
  // to HBM where SBUF runs out); off: every intermediate makes the HBM round trip.
  bool keep_on_chip = true;
  // Where dumps go (default: appended to CompileOnnxResult::dump_text).
  std::function<void(const std::string& pass, const std::string& text)> dump;
};

struct CompileOnnxResult {
  isa::Program program;
  ir::Graph graph;  // after the graph pipeline: what was lowered
  std::string dump_text;
};

// Throws ir::CompileError (ir::UnsupportedError for what is not implemented),
// tile::KernelError or isa::ValidationError, each naming what is at fault.
CompileOnnxResult compile_graph(ir::Graph g, const CompileOnnxOptions& o);

// The two halves of compile_graph. Dumps go to o.dump, else are appended to
// *dump_text (when given).
void run_graph_pipeline(ir::Graph& g, const CompileOnnxOptions& o, std::string* dump_text);
// What the tile passes report ("keep_on_chip.loads_forwarded", ...) is added to *stats;
// *roofline gets the program's FLOPs, minimum bytes and instruction origins.
isa::Program generate(const ir::Graph& g, const CompileOnnxOptions& o, std::string* dump_text,
                      std::map<std::string, double>* stats = nullptr,
                      ProgramRoofline* roofline = nullptr);
CompileOnnxResult compile_onnx(const std::string& path, const CompileOnnxOptions& o);

// The reference for a compiled model: the interpreter on the graph as imported (a
// compiler rewrite must not be computed the same way on both sides). Below fp32 only
// the precision policy (autocast) is applied first, so the reference rounds what the
// chip rounds and nothing else.
interp::TensorMap reference_outputs(const ir::Graph& imported, const interp::TensorMap& inputs,
                                    graph_passes::Precision p);

}  // namespace trnsim::compiler
