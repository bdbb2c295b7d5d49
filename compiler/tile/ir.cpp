#include "compiler/tile/ir.h"

#include "compiler/tile/cost.h"

#include <algorithm>

namespace trnsim::tile {

uint64_t Tensor::elems() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t Tile::partition_bytes() const {
  uint64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<uint64_t>(shape[i]);
  return n * isa::dtype_size(dtype);
}

namespace {
template <class V>
int find_named(const V& v, std::string_view n) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i].name == n) return static_cast<int>(i);
  return -1;
}
}  // namespace

int Kernel::find_tensor(std::string_view n) const {
  return find_named(tensors, n);
}
int Kernel::find_pool(std::string_view n) const {
  return find_named(pools, n);
}
int Kernel::find_tile(std::string_view n) const {
  return find_named(tiles, n);
}
int Kernel::next_op_id() const {
  int id = 0;
  for (const Op& o : ops) id = std::max(id, o.id + 1);
  return id;
}

const isa::AccessPattern* slot_ap(const isa::Instruction& in, Slot s) {
  const auto& info = isa::opcode_info(in.op);
  switch (s) {
    case kDst:
      return info.has_dst ? &in.dst : nullptr;
    case kSrc0:
    case kSrc1:
    case kSrc2: {
      const int i = s - kSrc0;
      return i < info.nsrc ? &in.src[i] : nullptr;
    }
    case kArg0:
      return in.arg0.is_ap ? &in.arg0.ap : nullptr;
    case kArg1:
      return in.arg1.is_ap ? &in.arg1.ap : nullptr;
    case kAccum:
      return in.has_accum ? &in.accum : nullptr;
    default:
      return nullptr;
  }
}

isa::AccessPattern* slot_ap(isa::Instruction& in, Slot s) {
  return const_cast<isa::AccessPattern*>(slot_ap(static_cast<const isa::Instruction&>(in), s));
}

std::string_view slot_key(const isa::Instruction& in, Slot s) {
  const auto& info = isa::opcode_info(in.op);
  switch (s) {
    case kDst:
      return "dst";
    case kSrc0:
    case kSrc1:
    case kSrc2:
      return info.src_names[s - kSrc0];
    case kArg0:
      return in.op == isa::Opcode::activation ? "scale" : "arg0";
    case kArg1:
      return in.op == isa::Opcode::activation ? "bias" : "arg1";
    case kAccum:
      return "accum";
    default:
      return "?";
  }
}

Operands operands(const Op& op) {
  // slot_ap() for each slot in order, with the opcode's info looked up once.
  Operands out;
  const isa::Instruction& in = op.ins;
  const auto& info = isa::opcode_info(in.op);
  // The destination is read too when a matmul accumulates into it.
  if (info.has_dst)
    out.push_back(
        {kDst, &in.dst, op.ref[kDst], in.op == isa::Opcode::matmul && in.accumulate, true});
  for (int i = 0; i < info.nsrc && i < 3; ++i) {
    const Slot s = static_cast<Slot>(kSrc0 + i);
    out.push_back({s, &in.src[i], op.ref[s], true, false});
  }
  if (in.arg0.is_ap) out.push_back({kArg0, &in.arg0.ap, op.ref[kArg0], true, false});
  if (in.arg1.is_ap) out.push_back({kArg1, &in.arg1.ap, op.ref[kArg1], true, false});
  if (in.has_accum) out.push_back({kAccum, &in.accum, op.ref[kAccum], false, true});
  return out;
}

std::string QueueId::label() const {
  if (engine != isa::Engine::dma) return std::string(isa::engine_name(engine));
  return "dma." + std::to_string(dma_engine) + "." + std::to_string(dma_queue);
}

QueueId queue_of(const Op& op) {
  QueueId q;
  q.engine = op.engine;
  if (op.engine == isa::Engine::dma) q.dma_engine = op.dma_engine, q.dma_queue = op.dma_queue;
  return q;
}

std::string op_label(const Kernel& k, const Op& op) {
  std::string e = op.engine_auto ? "auto" : std::string(isa::engine_name(op.engine));
  auto origin = k.op_origin.find(op.id);
  return "kernel '" + k.name + "' op %" + std::to_string(op.id) + " (" + e + " " +
         std::string(isa::opcode_name(op.ins.op)) + ")" +
         (origin == k.op_origin.end() ? "" : " from " + origin->second);
}

void verify(const Kernel& k) {
  auto fail = [&](const Op& op, const std::string& m) {
    throw KernelError(op_label(k, op) + ": " + m);
  };
  for (const Tile& t : k.tiles) {
    if (t.pool < 0 || t.pool >= static_cast<int>(k.pools.size()))
      throw KernelError("kernel '" + k.name + "' tile '" + t.name + "' has no pool");
    if (t.shape.empty() || t.shape[0] < 1 || t.shape[0] > 128)
      throw KernelError("kernel '" + k.name + "' tile '" + t.name +
                        "' must have 1..128 partitions as its first dim");
  }
  for (const Op& op : k.ops) {
    if (!op.engine_auto && !isa::engine_allows(op.engine, op.ins.op))
      fail(op, "not allowed on the " + std::string(isa::engine_name(op.engine)) + " engine");
    if (op.engine == isa::Engine::dma && !op.engine_auto && op.ins.op != isa::Opcode::dma_copy)
      fail(op, "only dma_copy runs on DMA queues");
    if (op.engine == isa::Engine::gpsimd && !op.engine_auto && !engine_can_run(op, op.engine))
      fail(op, "the gpsimd engine cannot reach PSUM");
    for (const Operand& o : operands(op)) {
      const std::string key(slot_key(op.ins, o.slot));
      const isa::AccessPattern& ap = *o.ap;
      if (ap.space == isa::MemSpace::hbm) {
        if (o.ref < 0 || o.ref >= static_cast<int>(k.tensors.size()))
          fail(op, key + " is an hbm operand without a tensor");
        const Tensor& t = k.tensors[o.ref];
        if (ap.dtype != t.dtype)
          fail(op, key + " reads tensor '" + t.name + "' as " +
                       std::string(isa::dtype_name(ap.dtype)) + " but it is " +
                       std::string(isa::dtype_name(t.dtype)));
        if (ap.min_byte() < 0 || static_cast<uint64_t>(ap.end_byte()) > t.bytes())
          fail(op, key + " reaches bytes [" + std::to_string(ap.min_byte()) + "," +
                       std::to_string(ap.end_byte()) + ") outside tensor '" + t.name + "' (" +
                       std::to_string(t.bytes()) + " bytes)");
        continue;
      }
      if (o.ref < 0 || o.ref >= static_cast<int>(k.tiles.size()))
        fail(op, key + " is an on-chip operand without a tile");
      const Tile& t = k.tiles[o.ref];
      if (k.pools[t.pool].space != ap.space)
        fail(op, key + " addresses tile '" + t.name + "' as " +
                     std::string(isa::mem_space_name(ap.space)) + " but its pool is in " +
                     std::string(isa::mem_space_name(k.pools[t.pool].space)));
      if (ap.dtype != t.dtype)
        fail(op, key + " reads tile '" + t.name + "' as " + std::string(isa::dtype_name(ap.dtype)) +
                     " but it is " + std::string(isa::dtype_name(t.dtype)));
      if (ap.partition_start + ap.partition_count > t.shape[0])
        fail(op, key + " uses partitions " + std::to_string(ap.partition_start) + ".." +
                     std::to_string(ap.partition_start + ap.partition_count - 1) + " of tile '" +
                     t.name + "' which has " + std::to_string(t.shape[0]));
      if (ap.min_byte() < 0 || static_cast<uint64_t>(ap.end_byte()) > t.partition_bytes())
        fail(op, key + " reaches bytes [" + std::to_string(ap.min_byte()) + "," +
                     std::to_string(ap.end_byte()) + ") outside tile '" + t.name + "' (" +
                     std::to_string(t.partition_bytes()) + " bytes per partition)");
      const uint32_t st = ap.partition_start, c = ap.partition_count;
      if (op.engine != isa::Engine::dma && !isa::partition_start_ok(st, c))
        fail(op, key + " uses partitions " + std::to_string(st) + ".." +
                     std::to_string(st + c - 1) +
                     ", which breaks the partition-start rule (> 64 partitions start at 0; "
                     "33..64 at 0 or 64; <= 32 at 0, 32, 64 or 96)");
    }
  }
}

}  // namespace trnsim::tile
