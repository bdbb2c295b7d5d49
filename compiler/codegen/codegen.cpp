#include "compiler/codegen/codegen.h"

#include <algorithm>
#include <map>

#include "compiler/timings.h"
#include "models/isa/validate.h"

namespace trnsim::codegen {

using tile::KernelError;

namespace {

// generate(); with `owned` (the same kernel as `k`), constant data moves from it
// into the program instead of being copied.
isa::Program generate_impl(const tile::Kernel& k, const compiler::Target& t, tile::Kernel* owned) {
  isa::Program p;
  p.name = k.name;
  p.num_semaphores = k.semaphores;
  std::vector<uint64_t> offset(k.tensors.size());
  uint64_t at = 0;
  // alloc_hbm placed every tensor, or codegen lays them all out.
  const bool placed =
      !k.tensors.empty() && std::all_of(k.tensors.begin(), k.tensors.end(),
                                        [](const tile::Tensor& tt) { return tt.hbm_offset >= 0; });
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    const tile::Tensor& tt = k.tensors[i];
    if (placed) {
      offset[i] = static_cast<uint64_t>(tt.hbm_offset);
    } else {
      const uint64_t a = std::max<uint64_t>(1, t.hbm_alignment);
      at = (at + a - 1) / a * a;
      offset[i] = at;
      at += tt.bytes();
    }
    isa::TensorDecl d;
    d.name = tt.name;
    d.shape = tt.shape;
    d.dtype = tt.dtype;
    d.role = tt.role;
    d.hbm_offset = offset[i];
    p.tensors.push_back(d);
    if (tt.role == isa::TensorRole::constant) {
      if (tt.data.size() != tt.bytes())
        throw KernelError("kernel '" + k.name + "': constant '" + tt.name + "' has " +
                          std::to_string(tt.data.size()) + " bytes of data, needs " +
                          std::to_string(tt.bytes()));
      if (owned)
        p.constants[tt.name] = std::move(owned->tensors[i].data);
      else
        p.constants[tt.name] = tt.data;
    }
  }
  for (const tile::Tile& tl : k.tiles)
    if (tl.addr < 0)
      throw KernelError("kernel '" + k.name + "': tile '" + tl.name +
                        "' has no address (run alloc_memory)");

  std::map<tile::QueueId, std::vector<isa::Instruction>> queues;
  for (const tile::Op& op : k.ops) {
    if (op.engine_auto)
      throw KernelError(tile::op_label(k, op) + ": no engine (run assign_engines)");
    if (op.engine == isa::Engine::dma && (op.dma_engine < 0 || op.dma_queue < 0))
      throw KernelError(tile::op_label(k, op) + ": no DMA queue (run assign_dma_queues)");
    isa::Instruction in = op.ins;
    in.line = 0;
    for (int s = 0; s < tile::kNumSlots; ++s) {
      isa::AccessPattern* ap = tile::slot_ap(in, static_cast<tile::Slot>(s));
      if (!ap) continue;
      const int r = op.ref[s];
      ap->offset +=
          ap->space == isa::MemSpace::hbm ? offset[r] : static_cast<uint64_t>(k.tiles[r].addr);
    }
    queues[tile::queue_of(op)].push_back(std::move(in));
  }
  for (auto& [id, instrs] : queues) {
    isa::Queue q;
    q.engine = id.engine;
    if (id.engine == isa::Engine::dma) {
      q.dma_engine = static_cast<uint16_t>(id.dma_engine);
      q.dma_queue = static_cast<uint16_t>(id.dma_queue);
    }
    q.instrs = std::move(instrs);
    p.queues.push_back(std::move(q));
  }
  isa::validate(p, t.limits());
  return p;
}

}  // namespace

isa::Program generate(const tile::Kernel& k, const compiler::Target& t) {
  return generate_impl(k, t, nullptr);
}

isa::Program generate_owning(tile::Kernel& k, const compiler::Target& t) {
  return generate_impl(k, t, &k);
}

CompileResult compile(tile::Kernel k, const compiler::Target& t, const CompileOptions& o) {
  passes::PassContext ctx;
  ctx.target = t;
  ctx.dump_after = o.dump_after;
  ctx.dump = o.dump;
  {
    compiler::timings::Scope tv("tile.verify");
    tile::verify(k);
  }
  passes::run_passes(k, ctx, o.passes);
  CompileResult r;
  {
    compiler::timings::Scope tg("codegen");
    r.program = o.keep_constant_data ? generate(k, t) : generate_impl(k, t, &k);
  }
  r.kernel = std::move(k);
  r.stats = std::move(ctx.stats);
  return r;
}

}  // namespace trnsim::codegen
