// Code generation: a fully processed tile-IR kernel -> isa::Program, and `compile`,
// which runs the pass pipeline (compiler/passes/pass.h) and then code generation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/passes/pass.h"
#include "compiler/target.h"
#include "compiler/tile/ir.h"
#include "models/isa/program.h"

namespace trnsim::codegen {

// Lays out the tensor table (alloc_hbm's offsets; without them, declaration order,
// each tensor at the next target.hbm_alignment boundary), turns every op into an instruction on its
// queue (compute queues in engine order, then DMA queues by engine and queue) with
// tile/tensor-relative patterns made absolute, copies constants, and validates the
// program (isa::validate with target.limits()). Throws tile::KernelError when a
// pass has not run (engine, DMA queue or address missing) and isa::ValidationError
// when the program breaks a hardware rule.
isa::Program generate(const tile::Kernel& k, const compiler::Target& t);
// The same, moving constant data from `k` into the program (no second copy).
isa::Program generate_owning(tile::Kernel& k, const compiler::Target& t);

struct CompileOptions {
  std::vector<std::string> passes = passes::default_pipeline();
  std::vector<std::string> dump_after;  // pass names, or "*"
  std::function<void(const std::string& pass, const std::string& text)> dump;
  // false: constant data moves into the program, and CompileResult::kernel's
  // constants are left without data (one copy of every weight fewer).
  bool keep_constant_data = true;
};

struct CompileResult {
  isa::Program program;
  tile::Kernel kernel;                  // after the passes
  std::map<std::string, double> stats;  // what the passes reported
};

CompileResult compile(tile::Kernel k, const compiler::Target& t, const CompileOptions& o = {});

}  // namespace trnsim::codegen
