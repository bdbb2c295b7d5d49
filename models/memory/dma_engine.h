// One DMA engine of a core: a TLM-2.0 initiator (to HBM and SBUF) with
// `queues_per_engine` in-order queues served round-robin among those whose head
// instruction's semaphores are satisfied; one transfer at a time. A dma_copy reads
// its source pattern, casts through fp32 when dtypes differ, and writes its
// destination. Timing: fixed cost + a per-descriptor cost for each contiguous chunk
// + bytes at the engine's bandwidth cap, or longer when HBM (shared by every engine
// of the chip) or the SBUF port is the bottleneck. Not modelled yet: the
// size-efficiency curve, DMA transposes, descriptor-generation instructions.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <cstdint>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "models/common/semaphores.h"
#include "models/common/sim_context.h"
#include "models/common/stats.h"
#include "models/isa/instruction.h"
#include "models/memory/memory_params.h"

namespace trnsim::models {

class dma_engine : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<dma_engine> hbm_socket;
  tlm_utils::simple_initiator_socket<dma_engine> sbuf_socket;

  dma_engine(const sc_core::sc_module_name& name, const dma_params& p, semaphores& sems,
             sim_context& ctx);

  // Queue `q`'s program for the next start(); hbm offsets are relative to `hbm_base`.
  void load(uint16_t q, const std::vector<isa::Instruction>* instrs);
  void set_hbm_base(uint64_t base) { hbm_base_ = base; }
  void clear();  // unload every queue
  void start();
  bool idle() const;
  bool failed() const { return failed_; }
  std::vector<std::string> pending() const;  // one line per stuck queue
  const sc_core::sc_time& last_done() const { return last_done_; }

  void register_stats(stats::group& g);
  uint64_t instructions() const { return executed_; }
  double busy_ns() const { return busy_.to_seconds() * 1e9; }
  uint64_t bytes() const { return bytes_; }

 private:
  struct queue_state {
    const std::vector<isa::Instruction>* instrs = nullptr;
    size_t pc = 0;
    uint64_t bytes = 0, transfers = 0;
    bool done() const { return !instrs || pc >= instrs->size(); }
  };
  void run();
  bool ready(const isa::Instruction& in) const;
  sc_core::sc_time transfer(const isa::Instruction& in);
  uint64_t descriptors(const isa::AccessPattern& ap) const;

  dma_params params_;
  semaphores& sems_;
  sim_context& ctx_;
  std::vector<queue_state> queues_;
  uint64_t hbm_base_ = 0;
  size_t next_ = 0;  // round-robin pointer
  bool running_ = false, failed_ = false;
  sc_core::sc_event start_event_;
  sc_core::sc_time last_done_ = sc_core::SC_ZERO_TIME;
  std::vector<uint8_t> src_buf_, dst_buf_;
  std::vector<float> f32_;

  uint64_t executed_ = 0, transfers_ = 0, bytes_ = 0, descriptors_ = 0;
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time port_stall_ = sc_core::SC_ZERO_TIME;
};

}  // namespace trnsim::models
