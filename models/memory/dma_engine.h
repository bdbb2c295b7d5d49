// One DMA engine of a core: a TLM-2.0 initiator (to HBM and SBUF) with
// `queues_per_engine` in-order queues served round-robin; one transfer moves at a
// time. A dma_copy reads its source pattern, casts through fp32 when dtypes differ,
// and writes its destination.
//
// Issue and start: a queue keeps up to `queue_depth` instructions in flight. An
// instruction issues, in order, once its waits are met and the queue has a free slot
// (the instruction queue_depth before it completed), at the later of the two times
// (a wait met while the engine was busy counts from when it was met: semaphores
// keeps the increments' times). Its data may move `start_latency` after it issued
// (the semaphore-to-start latency of docs/hardware.md: DMA), so with two or more in
// flight the latency of one overlaps the transfer of the one before. The engine
// then picks, round-robin over its queues and the slot for spread shares, a
// transfer whose start time has come. A nop issues the same way, without latency,
// and completes as it starts.
//
// Timing of one transfer: max(own, HBM side, SBUF side) where
//   own  = fixed_cost + descriptor_cost x descriptors + bytes / bandwidth (the cap),
//   HBM  = fixed_cost + HBM latency + the channels' time (shared by every engine of
//          the chip), SBUF = fixed_cost + the engine's SBUF port time, which for a
//          DMA counts 32-bit words per partition (ap_extension::words).
// The engines of a core share `core_bandwidth`: each share's bytes at that rate,
// plus core_descriptor_cost per descriptor, queue after the work of the shares that
// started at earlier instants, and the share ends no sooner; so busy engines move
// at most that rate together.
// A descriptor is one contiguous chunk on both sides (one per SBUF partition at
// least), so small chunks are overhead-bound: with descriptor_cost = 256 B / cap a
// 256 B chunk moves at half the cap and a 4 KiB chunk at 94 % of it.
//
// Spread (dma_copy spread=N): the transfer's rows are split over N engines of the
// core, starting with the issuing one and wrapping. Each other engine gets its share
// as a helper request, served in its round-robin as one more slot after its queues,
// so it is busy for that time. Each engine that took part signals the instruction's
// done-semaphores when its share completes (+N x inc in all); start-signals fire
// once, when it starts. A spread instruction is alone in flight on its queue: it
// issues once the queue drained, and the next one after every share completed.
// An engine waiting for a start time does not see a peer's share until that time.
// Not modelled: DMA transposes, descriptor-generation instructions.
// The engine's loop is a state machine (advance()) driven by a SystemC thread or,
// when sim_context::sched is set, by the chip's scheduler: same steps, same waits.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "models/common/ap_extension.h"
#include "models/common/rounding_params.h"
#include "models/common/scheduler.h"
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
  // Throws std::out_of_range past queues_per_engine.
  void load(uint16_t q, const std::vector<isa::Instruction>* instrs);
  void set_hbm_base(uint64_t base) { hbm_base_ = base; }
  // The HBM hbm_socket is bound to (its chip's): told of finished copies when the
  // run releases scratch pages (sim_context::release_hbm).
  void set_hbm(hbm* h) { hbm_ = h; }
  // Rounding of the casts to bf16/fp16/fp8 (core.rounding): stochastic ones key their
  // bits by the seed, the issuing engine's name, the queue, the instruction's index
  // and the share's first row, so they do not depend on which engine moves a share.
  void set_rounding(const rounding_params& r);
  void clear();  // unload every queue
  void start();
  bool idle() const;
  bool failed() const { return failed_; }
  std::vector<std::string> pending() const;  // one line per stuck queue
  // Completion of this engine's last own instruction (a spread one completes when
  // its last share does, on whichever engine).
  const sc_core::sc_time& last_done() const { return last_done_; }

  void register_stats(stats::group& g);
  // Time at least one DMA engine of this core was moving data (the vendor profiler's
  // "DMA active" time), since reset_stats(); the same on every engine of the core.
  double core_active_ns();
  uint64_t instructions() const { return executed_; }
  double busy_ns() const { return busy_.to_seconds() * 1e9; }
  uint64_t bytes() const { return bytes_; }
  uint64_t shares() const { return shares_moved_; }
  uint64_t helper_shares() const { return helper_shares_; }
  // Queues 0 .. the highest loaded one (the others hold nothing).
  size_t queue_count() const { return queues_.size(); }
  // Per-queue figures since the queue was loaded; `used`: it had instructions.
  struct queue_stats {
    bool used;
    uint64_t bytes, copies;
  };
  queue_stats queue(size_t q) const;
  void reset_stats();  // zero the engine's counters (the runtime's stats are per run)

  // Work that is none of this engine's queues' (a collective's transfers through
  // it; models/network/collective_unit.h): `bytes` in `descriptors` chunks at the
  // engine's bandwidth and descriptor cost, from when its current transfer and
  // earlier holds end. Its queues and spread shares start nothing until then. The
  // bytes also queue on the core's shared rate like a share starting now. Returns
  // when both are done.
  sc_core::sc_time hold(uint64_t bytes, uint64_t descriptors);
  // When a hold() offered now would start on this engine.
  sc_core::sc_time hold_start() const;
  // Bytes and engine time of the holds since reset_stats().
  uint64_t held_bytes() const { return held_bytes_; }
  double held_ns() const { return held_busy_.to_seconds() * 1e9; }

  // The engine-side time of `bytes` moved in `descriptors` chunks.
  sc_core::sc_time own_time(uint64_t bytes, uint64_t descriptors) const;
  // Contiguous chunks of one side of a transfer.
  static uint64_t descriptors(const isa::AccessPattern& ap);

 private:
  struct spread_state {
    dma_engine* owner;
    size_t queue;
    uint32_t remaining;  // shares not yet completed
  };
  struct share {
    const isa::Instruction* in;
    uint32_t row_lo, row_hi;
    uint64_t hbm_base;
    std::shared_ptr<spread_state> st;
    size_t pc = 0;  // the instruction's index in its queue
  };
  // An issued instruction that has not started.
  struct issued_entry {
    sc_core::sc_time start_at;  // issue + start latency
    sc_core::sc_time waited;    // from when it could have issued to its issue (trace)
  };
  struct queue_state {
    const std::vector<isa::Instruction>* instrs = nullptr;
    // Instructions [0, ndone) completed, [ndone, nstarted) moving, [nstarted,
    // nissued) issued and waiting for their start time (`issued`, in order).
    size_t ndone = 0, nstarted = 0, nissued = 0;
    std::deque<issued_entry> issued;
    std::deque<sc_core::sc_time> done_at;  // completions of the last queue_depth
    sc_core::sc_time last_issue;           // of instruction nissued - 1 (or the start)
    bool drain = false;                    // a spread instruction issued, not completed
    uint64_t bytes = 0, copies = 0;
    std::shared_ptr<spread_state> spread;  // the started spread instruction's shares
    int agent = -1;                        // agent in ctx_.checker (-1: not checked)
    bool done() const { return !instrs || ndone >= instrs->size(); }
  };
  // Where the loop stands: picking the next slot, or in the middle of a nop or a
  // transfer (waiting for its time).
  enum class phase { pick, nop, transfer };
  // What the loop waits for before advance() can go on.
  struct park {
    enum class kind { start, wake, start_or_wake, time } k = kind::start;
    sc_core::sc_time dt = sc_core::SC_ZERO_TIME;
  };
  park advance();
  // Issues what queue `q` can issue now (its waits met, slots free).
  void issue(queue_state& q);
  void spawn_thread();  // run(), once
  bool spawned_ = false;
  void run();   // SystemC driver of advance()
  void step();  // scheduler driver of advance()
  void poke();  // wake this engine's loop (a share for it, a spread share done)
  bool ready(const isa::Instruction& in) const;
  // Starts queue qi's oldest issued instruction; false: it failed (failed_ set).
  bool execute(size_t q);
  void finish_nop(size_t q);
  // A pattern of the share's instruction as the share moves it (its rows, if spread).
  static isa::AccessPattern share_pattern(const share& s, const isa::AccessPattern& ap);
  // Signals `in`'s semaphores for `when`, as the checker agent `agent` (<= 0: none).
  void signal(const isa::Instruction& in, isa::SignalWhen when, int agent);
  // Starts a share's transfer (its time in cur_dur_); false: it failed.
  bool begin_share(const share& s);
  void end_share(const share& s);
  void finish_share(const std::shared_ptr<spread_state>& st);
  void complete(queue_state& q, const isa::Instruction& in);
  sc_core::sc_time transfer(isa::AccessPattern src, isa::AccessPattern dst, uint64_t base,
                            int agent);
  const std::vector<dma_engine*>& peers();  // this core's DMA engines, in order

  dma_params params_;
  semaphores& sems_;
  sim_context& ctx_;
  std::vector<queue_state> queues_;

  bool stochastic_ = false;
  uint64_t rounding_stream_ = 0;  // from the seed and the engine's name
  uint64_t share_stream_ = 0;     // the moving share's (begin_share)

  struct own_time_entry {
    uint64_t bytes = 0, descriptors = 0;
    bool valid = false;
    sc_core::sc_time time;
  };
  mutable own_time_entry own_cache_;  // the last own_time() result
  sc_core::sc_time fixed_cost_;       // params_.fixed_cost_s, once computed
  bool fixed_cost_valid_ = false;
  std::vector<uint16_t> live_;  // queues that may have work left, ascending (a superset)
  std::deque<share> shares_;    // work for other engines' queues
  std::vector<dma_engine*> peers_;
  uint64_t hbm_base_ = 0;
  hbm* hbm_ = nullptr;
  size_t next_ = 0;  // round-robin pointer over the queues and the share slot
  bool running_ = false, failed_ = false;
  phase phase_ = phase::pick;
  size_t cur_q_ = 0;         // phase::nop: its queue
  share cur_share_;          // phase::transfer: the share moving
  spread_state local_st_{};  // the state of a transfer without spread
  sc_core::sc_time cur_dur_;
  sc_core::sc_time cur_waited_;  // the started instruction's wait for its issue (trace)
  // Parked from the start, as the SystemC thread waits for start or wake: a peer's
  // spread share (poke) runs an engine that has no queue of its own.
  struct agent : scheduler::agent {
    dma_engine* e;
    explicit agent(dma_engine* d) : scheduler::agent(true), e(d) {}
    void resume() override { e->step(); }
  } agent_{this};
  sc_core::sc_event start_event_, wake_;
  sc_core::sc_time last_done_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time launch_;  // start()
  // Engines of the core moving data, and since when; kept by the core's first
  // engine (peers()[0]) for all of them.
  struct activity {
    uint32_t moving = 0;
    sc_core::sc_time since, total;
    // The core's shared rate (core_bandwidth): a share ends no sooner than its own
    // work at that rate after the work of the shares that started before its
    // instant (`shared_free`). Shares starting at one instant do not wait for each
    // other, so the tie order of simultaneous starts (which differs between the
    // scheduler and SystemC threads) changes nothing; their work (`batch_work`,
    // summed exactly in time ticks) delays the later ones.
    sc_core::sc_time shared_free, batch_at, batch_work;
  };
  activity activity_;
  activity* core_activity_ = nullptr;  // peers()[0]'s, found on first use
  activity& core_activity() {
    if (!core_activity_) core_activity_ = &peers().front()->activity_;
    return *core_activity_;
  }
  std::vector<uint8_t> src_buf_, dst_buf_;
  ap_payload xfer_;  // reused by every access
  std::vector<float> f32_;

  sc_core::sc_time cur_end_;     // the moving share's end (phase::transfer)
  sc_core::sc_time held_until_;  // holds end (hold())
  sc_core::sc_time held_busy_;
  uint64_t held_bytes_ = 0;
  // hold()'s last durations by (bytes, descriptors): a program repeats its
  // collectives, and the seconds-to-time conversions were most of hold()'s cost.
  uint64_t hold_memo_bytes_ = UINT64_MAX, hold_memo_desc_ = 0;
  sc_core::sc_time hold_memo_own_, hold_memo_work_;
  uint64_t executed_ = 0, shares_moved_ = 0, bytes_ = 0, descriptors_ = 0, helper_shares_ = 0;
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
};

}  // namespace trnsim::models
