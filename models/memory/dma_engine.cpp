#include "models/memory/dma_engine.h"

#include <algorithm>

#include "models/common/ap_extension.h"
#include "models/isa/assembler.h"

namespace trnsim::models {

dma_engine::dma_engine(const sc_core::sc_module_name& name, const dma_params& p, semaphores& sems,
                       sim_context& ctx)
    : sc_module(name),
      hbm_socket("hbm_socket"),
      sbuf_socket("sbuf_socket"),
      params_(p),
      sems_(sems),
      ctx_(ctx),
      queues_(p.queues_per_engine) {
  SC_HAS_PROCESS(dma_engine);
  SC_THREAD(run);
}

void dma_engine::load(uint16_t q, const std::vector<isa::Instruction>* instrs) {
  queues_.at(q) = queue_state{instrs, 0, 0, 0};
}

void dma_engine::clear() {
  for (auto& q : queues_) q = queue_state{};
  failed_ = false;
}

void dma_engine::start() {
  next_ = 0;
  running_ = !idle();
  if (running_) start_event_.notify(sc_core::SC_ZERO_TIME);
}

bool dma_engine::idle() const {
  if (failed_) return false;
  return std::all_of(queues_.begin(), queues_.end(), [](const queue_state& q) { return q.done(); });
}

std::vector<std::string> dma_engine::pending() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < queues_.size(); ++i) {
    const auto& q = queues_[i];
    if (q.done()) continue;
    const isa::Instruction& in = (*q.instrs)[q.pc];
    std::string s = "queue " + std::to_string(i) + ": ";
    for (const auto& w : in.waits)
      if (sems_.value(w.sem) < w.value) {
        s += "waiting for s" + std::to_string(w.sem) + " >= " + std::to_string(w.value) + " (now " +
             std::to_string(sems_.value(w.sem)) + ") ";
        break;
      }
    s += "at instruction " + std::to_string(q.pc);
    if (in.line) s += " (line " + std::to_string(in.line) + ")";
    out.push_back(s + ": " + isa::disassemble(in));
  }
  return out;
}

void dma_engine::register_stats(stats::group& g) {
  g.add_counter("instructions", "instructions", "instructions executed (dma_copy and nop)",
                &executed_);
  g.add_counter("transfers", "transfers", "dma_copy instructions completed", &transfers_);
  g.add_counter("bytes", "bytes", "bytes written by this engine", &bytes_);
  g.add_counter("descriptors", "descriptors", "contiguous chunks moved", &descriptors_);
  g.add("busy_ns", "ns", "time spent transferring", [this] { return busy_ns(); });
  g.add("port_stall_ns", "ns", "time SBUF accesses waited for a port held by another initiator",
        [this] { return port_stall_.to_seconds() * 1e9; });
  g.add("avg_transfer_bytes", "bytes", "mean bytes per transfer",
        [this] { return transfers_ ? double(bytes_) / double(transfers_) : 0.0; });
  for (size_t i = 0; i < queues_.size(); ++i) {
    auto& qg = g.child("q" + std::to_string(i), "one DMA queue");
    qg.add_counter("bytes", "bytes", "bytes moved by this queue", &queues_[i].bytes);
    qg.add_counter("transfers", "transfers", "transfers of this queue", &queues_[i].transfers);
  }
}

bool dma_engine::ready(const isa::Instruction& in) const {
  for (const auto& w : in.waits)
    if (sems_.value(w.sem) < w.value) return false;
  return true;
}

uint64_t dma_engine::descriptors(const isa::AccessPattern& ap) const {
  // One descriptor per contiguous run: a whole row when the free pattern is
  // contiguous, otherwise one per innermost run of stride 1 (or per element).
  if (ap.free_contiguous()) return ap.partition_count;
  const int inner = ap.innermost_dim();
  const uint64_t run = inner >= 0 && ap.dims[inner].stride == 1 ? ap.dims[inner].size : 1;
  return ap.elems() / std::max<uint64_t>(run, 1);
}

sc_core::sc_time dma_engine::transfer(const isa::Instruction& in) {
  isa::AccessPattern src = in.src[0], dst = in.dst;
  if (src.space == isa::MemSpace::hbm) src.offset += hbm_base_;
  if (dst.space == isa::MemSpace::hbm) dst.offset += hbm_base_;
  const bool f = ctx_.functional;
  const sc_core::sc_time fixed(params_.fixed_cost_s, sc_core::SC_SEC);
  auto& rs = src.space == isa::MemSpace::hbm ? hbm_socket : sbuf_socket;
  auto& ws = dst.space == isa::MemSpace::hbm ? hbm_socket : sbuf_socket;

  sc_core::sc_time rd = fixed, wr = fixed;
  src_buf_.resize(f ? src.bytes() : 0);
  ap_transport(rs, tlm::TLM_READ_COMMAND, src, f ? src_buf_.data() : nullptr, rd, false, !f,
               &port_stall_);
  uint8_t* out = src_buf_.data();
  if (f && src.dtype != dst.dtype) {
    f32_.resize(src.elems());
    isa::to_fp32(src.dtype, src_buf_.data(), f32_.data(), f32_.size());
    dst_buf_.resize(dst.bytes());
    isa::from_fp32(dst.dtype, f32_.data(), dst_buf_.data(), f32_.size());
    out = dst_buf_.data();
  }
  ap_transport(ws, tlm::TLM_WRITE_COMMAND, dst, f ? out : nullptr, wr, false, !f, &port_stall_);

  const uint64_t bytes = std::max(src.bytes(), dst.bytes());
  const uint64_t desc = std::max(descriptors(src), descriptors(dst));
  descriptors_ += desc;
  const sc_core::sc_time own = fixed + sc_core::sc_time(params_.descriptor_cost_s * double(desc) +
                                                            double(bytes) / params_.bandwidth_bps,
                                                        sc_core::SC_SEC);
  return std::max({own, rd, wr});
}

void dma_engine::run() {
  for (;;) {
    sc_core::wait(start_event_);
    while (!failed_) {
      // Round-robin over queues with a ready head; in order within each queue.
      size_t pick = queues_.size();
      bool any = false;
      for (size_t k = 0; k < queues_.size(); ++k) {
        size_t i = (next_ + k) % queues_.size();
        if (queues_[i].done()) continue;
        any = true;
        if (ready((*queues_[i].instrs)[queues_[i].pc])) {
          pick = i;
          break;
        }
      }
      if (!any) break;
      if (pick == queues_.size()) {
        sc_core::wait(sems_.changed_event());
        continue;
      }
      next_ = (pick + 1) % queues_.size();
      auto& q = queues_[pick];
      const isa::Instruction& in = (*q.instrs)[q.pc];
      for (const auto& s : in.signals)
        if (s.when == isa::SignalWhen::start) sems_.increment(s.sem, s.inc);
      sc_core::sc_time dur = sc_core::SC_ZERO_TIME;
      try {
        if (in.op == isa::Opcode::dma_copy) dur = transfer(in);
      } catch (const std::exception& e) {
        ctx_.faults.push_back({std::string(name()) + ".q" + std::to_string(pick),
                               "instruction " + std::to_string(q.pc) +
                                   (in.line ? " (line " + std::to_string(in.line) + ")" : "") +
                                   ": " + isa::disassemble(in) + ": " + e.what()});
        failed_ = true;
        break;
      }
      sc_core::wait(dur);
      busy_ += dur;
      if (in.op == isa::Opcode::dma_copy) {
        const uint64_t b = in.dst.bytes();
        bytes_ += b, q.bytes += b;
        ++transfers_, ++q.transfers;
      }
      ++q.pc;
      ++executed_;
      last_done_ = sc_core::sc_time_stamp();
      for (const auto& s : in.signals)
        if (s.when == isa::SignalWhen::done) sems_.increment(s.sem, s.inc);
    }
    running_ = false;
  }
}

}  // namespace trnsim::models
