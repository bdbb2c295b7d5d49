#include "compiler/passes/pass.h"

#include <algorithm>

#include "compiler/timings.h"

namespace trnsim::passes {

using tile::Kernel;
using tile::KernelError;
using tile::to_text;
using tile::verify;

const std::vector<const PassInfo*>& all_passes() {
  static const std::vector<const PassInfo*> passes = {
      &keep_on_chip_pass(),      &split_dma_pass(), &assign_engines_pass(), &alloc_memory_pass(),
      &assign_dma_queues_pass(), &schedule_pass(),  &alloc_hbm_pass(),      &insert_sync_pass(),
  };
  return passes;
}

std::vector<std::string> default_pipeline() {
  std::vector<std::string> names;
  for (const PassInfo* p : all_passes()) names.emplace_back(p->name);
  return names;
}

const PassInfo& find_pass(std::string_view name) {
  std::string known;
  for (const PassInfo* p : all_passes()) {
    if (p->name == name) return *p;
    known += (known.empty() ? "" : ", ") + std::string(p->name);
  }
  throw KernelError("unknown pass '" + std::string(name) + "' (passes: " + known + ")");
}

void run_passes(Kernel& k, PassContext& ctx, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    const PassInfo& p = find_pass(n);
    try {
      {
        compiler::timings::Scope t("tile." + n);
        p.run(k, ctx);
      }
      compiler::timings::Scope t("tile.verify");
      verify(k);
    } catch (const KernelError& e) {
      throw KernelError(std::string(p.name) + ": " + e.what());
    }
    const bool dump =
        std::find(ctx.dump_after.begin(), ctx.dump_after.end(), n) != ctx.dump_after.end() ||
        std::find(ctx.dump_after.begin(), ctx.dump_after.end(), "*") != ctx.dump_after.end();
    if (dump && ctx.dump) ctx.dump(n, to_text(k, {true}));
  }
}

}  // namespace trnsim::passes
