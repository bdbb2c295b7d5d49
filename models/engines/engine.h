// Common part of the compute engines (tensor, vector, scalar, GpSimd, sync): an
// in-order sequencer over one instruction queue. For each instruction it waits on
// its semaphores, signals its read-start increments, reads the operands through its
// TLM sockets, computes (alu.h) unless timing-only, writes the result, waits the
// instruction's duration and signals its completion increments. Duration =
// static overhead + max(compute cycles from the engine's cost model, port time of
// every access). Modelled: issue order, semaphores, per-instruction cost. An engine
// may pipeline (instruction_timing: the tensor engine's next instruction issues
// before the previous one completes); completions keep issue order.
// The sequencer is a state machine (advance()) driven either by a SystemC thread
// or, when sim_context::sched is set, by the chip's scheduler: same steps, same waits.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "models/common/ap_extension.h"
#include "models/common/collectives.h"
#include "models/common/rounding_params.h"
#include "models/common/scheduler.h"
#include "models/common/semaphores.h"
#include "models/common/sim_context.h"
#include "models/common/stats.h"
#include "models/engines/alu.h"
#include "models/engines/engine_params.h"
#include "models/isa/instruction.h"

namespace trnsim::models {

class engine : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<engine> sbuf_socket;
  tlm_utils::simple_initiator_socket<engine> psum_socket;

  engine(const sc_core::sc_module_name& name, isa::Engine kind, const engine_params& p,
         semaphores& sems, sim_context& ctx);

  isa::Engine engine_kind() const { return kind_; }
  // The queue to run at the next start(); nullptr or empty: nothing to do.
  void load(const std::vector<isa::Instruction>* instrs);
  void start();  // begin executing the loaded queue (delta-notified)
  // An SPMD launch's rank of this engine's core and the program's HBM base: the
  // collective instructions arrive at sim_context::collectives as this rank.
  void set_rank(uint32_t rank, uint64_t hbm_base) {
    rank_ = rank;
    hbm_base_ = hbm_base;
  }
  bool idle() const { return state_ == state::idle || state_ == state::done; }
  bool failed() const { return state_ == state::failed; }
  // "waiting for s3 >= 2 at instruction 7 (line 40): matmul ..." when stuck.
  std::string pending() const;
  const sc_core::sc_time& last_done() const { return last_done_; }

  void register_stats(stats::group& g);
  uint64_t instructions() const { return instructions_; }
  double busy_ns() const { return busy_.to_seconds() * 1e9; }
  double sem_wait_ns() const { return sem_wait_.to_seconds() * 1e9; }
  double port_stall_ns() const { return port_stall_.to_seconds() * 1e9; }
  uint64_t opcode_count(isa::Opcode op) const { return by_opcode_[static_cast<size_t>(op)]; }
  // Matmul FLOPs (2 x K x M x N each) by input dtype (the wider of the two inputs).
  uint64_t flops(isa::DType t) const { return flops_[static_cast<size_t>(t)]; }
  void reset_stats();  // zero the counters (the runtime's stats are per run)
  // Rounding of results written as bf16/fp16/fp8 (core.rounding): stochastic ones
  // draw their bits from the seed, this engine's hierarchical name and the count of
  // its writes since load(), so a run repeats bit for bit.
  void set_rounding(const rounding_params& r);

  sc_core::sc_time cycles_to_time(double cycles) const;

 protected:
  bool stochastic_ = false;
  uint64_t rounding_stream_ = 0;  // from the seed and the engine's name
  uint64_t writes_ = 0;           // narrowing writes since load()

  // Compute cycles of one instruction (not counting the static overhead).
  virtual uint64_t cost_cycles(const isa::Instruction& in) = 0;
  // Reads operands, computes, writes; returns the longest port time of its accesses.
  virtual sc_core::sc_time execute(const isa::Instruction& in);
  // The arithmetic of a functional run, between the operand reads and the writes
  // (default: alu.h).
  virtual void compute(const isa::Instruction& in, ExecArgs& args, ExecResult& res);
  // Instead of compute(): true when the engine has taken the operands to compute
  // and write the result itself later (the tensor engine's matmuls on worker
  // threads); the result's write then moves no data, only its timing.
  virtual bool defer(const isa::Instruction& in, ExecArgs& args) { return false; }
  // Timing of the instruction issued now, relative to now: the sequencer takes the
  // next instruction after `issue`; the instruction completes (done-signals fire,
  // last_done() moves) after `done`. An engine that pipelines (the tensor engine)
  // returns done > issue; completions always keep issue order. Default: both =
  // static overhead + max(cost_cycles, port time); a nop costs the overhead only.
  struct timing {
    sc_core::sc_time issue;
    sc_core::sc_time done;
  };
  virtual timing instruction_timing(const isa::Instruction& in, const sc_core::sc_time& port);

  sc_core::sc_time read_tile(const isa::AccessPattern& ap, Tile* t);
  sc_core::sc_time write_tile(const isa::AccessPattern& ap, const Tile* t, bool accumulate = false,
                              bool data = true);

  isa::Engine kind_;
  engine_params params_;
  semaphores& sems_;
  sim_context& ctx_;

 private:
  enum class state { idle, waiting, running, done, failed };
  // Where the sequencer stands in its current instruction.
  enum class phase { fetch, waits, latency, rendezvous, issued, drain };
  // What the sequencer waits for before advance() can go on.
  struct park {
    enum class kind { finished, sem, time, drain, rendezvous } k = kind::finished;
    uint16_t sem = 0;
    uint32_t value = 0;                           // kind::sem: until s[sem] >= value
    sc_core::sc_time dt = sc_core::SC_ZERO_TIME;  // kind::time: for this long
  };
  park advance();
  void spawn_threads();  // run() and complete(), once
  bool spawned_ = false;
  void run();   // SystemC driver of advance()
  void step();  // scheduler driver of advance()
  void signal(const isa::Instruction& in, isa::SignalWhen when);
  // Records a fault of instruction pc_ and stops the queue (advance() then drains).
  void fail(const isa::Instruction& in, const std::string& why);
  // Completion of `in` at absolute time `at`: now, or deferred (complete() or fire_due()).
  void complete_at(const isa::Instruction& in, const sc_core::sc_time& at);
  void complete();  // thread: fires deferred completions in order
  // Fires the completions due now; returns false when none is left.
  bool fire_completions();

  struct agent : scheduler::agent {
    engine* e;
    void (engine::*fn)();
    agent(engine* e_, void (engine::*f)()) : e(e_), fn(f) {}
    void resume() override { (e->*fn)(); }
  };
  agent seq_agent_{this, &engine::step};
  agent done_agent_{this, &engine::fire_due};
  void fire_due();  // scheduler counterpart of complete()

  // A collective instruction waits in phase::rendezvous until its group arrived.
  struct rv_waiter : collective_waiter {
    engine* e;
    explicit rv_waiter(engine* e_) : e(e_) {}
    void collective_ready(const sc_core::sc_time& d) override;
  };
  rv_waiter rv_{this};
  bool rv_ready_ = false;
  sc_core::sc_time rv_dur_;
  sc_core::sc_event rv_event_;
  uint32_t rank_ = 0;
  uint64_t hbm_base_ = 0;

  struct completion {
    sc_core::sc_time at;
    const isa::Instruction* in;
  };
  std::deque<completion> completions_;
  sc_core::sc_event completion_event_;                     // the front completion is due
  sc_core::sc_event completed_;                            // no completion left
  sc_core::sc_time completes_at_ = sc_core::SC_ZERO_TIME;  // latest completion time
  sc_core::sc_time busy_until_ = sc_core::SC_ZERO_TIME;    // end of the busy union

  sc_core::sc_event start_event_;
  const std::vector<isa::Instruction>* queue_ = nullptr;
  size_t pc_ = 0;
  state state_ = state::idle;
  phase phase_ = phase::fetch;
  size_t widx_ = 0;       // phase::waits: the wait being checked
  bool blocked_ = false;  // the instruction waited on a semaphore
  sc_core::sc_time t0_;   // when the instruction started waiting
  sc_core::sc_time issued_;
  timing tm_;
  int agent_ = -1;  // this queue's agent in ctx_.checker (-1: not checked)
  uint16_t waiting_sem_ = 0;
  uint32_t waiting_value_ = 0;
  sc_core::sc_time last_done_ = sc_core::SC_ZERO_TIME;
  // cycles_to_time() results: a pure function of the cycle count, and programs
  // repeat a few counts (overheads, drains, common sizes).
  struct time_entry {
    double cycles = -1;
    sc_core::sc_time time;
  };
  mutable std::array<time_entry, 16> time_cache_{};
  std::vector<uint8_t> scratch_;
  ap_payload xfer_;  // reused by every operand access
  ExecArgs args_;    // operand tiles, reused (their buffers stay allocated)
  ExecResult res_;

  uint64_t instructions_ = 0;
  std::array<uint64_t, isa::kNumOpcodes> by_opcode_{};
  std::array<uint64_t, isa::kNumDTypes> flops_{};
  sc_core::sc_time busy_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time sem_wait_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time port_stall_ = sc_core::SC_ZERO_TIME;
  sc_core::sc_time stream_start_ = sc_core::SC_ZERO_TIME;  // this instruction's read stall
};

}  // namespace trnsim::models
