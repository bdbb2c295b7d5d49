// Back-end passes over the tile IR and the pipeline that runs them by name. Each
// pass lives in its own file with a name and a one-line summary; `compile`
// (codegen/codegen.h) runs the default pipeline and then code generation.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/target.h"
#include "compiler/tile/deps.h"
#include "compiler/tile/ir.h"

namespace trnsim::passes {

struct PassContext {
  compiler::Target target;
  // Figures the passes report, "pass.figure" -> value (e.g. "insert_sync.waits").
  std::map<std::string, double> stats;
  // Passes after which to dump the tile IR ("*" = every pass), and where to.
  std::vector<std::string> dump_after;
  std::function<void(const std::string& pass, const std::string& text)> dump;
  // Dependency graphs, shared by passes while the ops' memory accesses are unchanged.
  tile::DepCache deps;
  // alloc_hbm: (op id, op id) pairs the second of which must wait for the first
  // because their tensors share HBM bytes (insert_sync orders them too).
  std::vector<std::pair<int, int>> hbm_reuse_deps;
};

struct PassInfo {
  std::string_view name;
  std::string_view summary;
  void (*run)(tile::Kernel& k, PassContext& ctx);
};

// The passes, one per file.
const PassInfo& split_dma_pass();
const PassInfo& assign_engines_pass();
const PassInfo& alloc_memory_pass();
const PassInfo& assign_dma_queues_pass();
const PassInfo& schedule_pass();
const PassInfo& insert_sync_pass();

const PassInfo& keep_on_chip_pass();
const PassInfo& alloc_hbm_pass();

// alloc_hbm's placement of scratch tensors: a block (bytes, lifetime as list positions
// and estimated times, -1 when unscheduled) may share addresses with another whose
// lifetime ends before its own starts. Returns the blocks with `addr` set (from 0,
// multiples of `align`).
struct HbmBlock {
  uint64_t size = 0;
  int first = -1, last = -1;
  double start = -1, end = -1;
  uint64_t addr = 0;
};
std::vector<HbmBlock> place_hbm_blocks(std::vector<HbmBlock> blocks, uint64_t align);

// alloc_memory's placement of the pools of `space` without changing `k`: the
// bytes per partition they would need (keep_on_chip sizes what it keeps with it).
uint64_t placed_bytes(const tile::Kernel& k, const compiler::Target& t, isa::MemSpace space);
// The same with the pools' lifetimes given (first and last op position per pool, -1
// when unused) instead of taken from k's ops: k needs only its pools and tiles.
uint64_t placed_bytes(const tile::Kernel& k, const compiler::Target& t, isa::MemSpace space,
                      const std::vector<int>& first, const std::vector<int>& last);

// Every pass in default pipeline order.
const std::vector<const PassInfo*>& all_passes();
std::vector<std::string> default_pipeline();
const PassInfo& find_pass(std::string_view name);  // throws tile::KernelError listing the passes

// Runs the named passes in order, verifying the IR after each and dumping it
// where asked. Errors name the pass.
void run_passes(tile::Kernel& k, PassContext& ctx, const std::vector<std::string>& names);

}  // namespace trnsim::passes
