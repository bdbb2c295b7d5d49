// Happens-before race detection and poisoned-read detection over every SBUF, PSUM and
// HBM access of a run (trnsim run --check-races / --poison).
//
// Agents are the sequential instruction streams: each compute engine's queue and each
// DMA queue. Every agent carries a vector clock whose own entry is (instruction index
// + 1) of the instruction it issued last. A semaphore increment publishes the
// signaller's clock; a satisfied wait for value v joins the clock published by the
// increments that brought the semaphore to v (the prefix up to the releasing
// increment, not later ones, so an increment that merely happened earlier in this
// timing orders nothing). Done-signals publish the clock the instruction issued with
// (a pipelining engine may have issued later instructions since); start-signals
// publish the instructions completed so far. The host (inputs, constants) is agent 0,
// ordered before everything.
//
// Memories keep, per byte range, the last write and the latest read of each agent
// since. An access that conflicts (read/write, write/read, write/write) with one by
// another agent whose epoch is not covered by the accessor's clock is a race, even
// when simulated time happened to order the two. A read of bytes nobody wrote in this
// run (not the host either) is a poisoned read. Findings are deduplicated per pair of
// instructions (per instruction for poison) with the union of their address ranges.
//
// Not modelled: a spread DMA's shares are one agent (their done-signals all publish
// the whole instruction); same-agent accesses are ordered by program order (engines
// interlock their own hazards).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/isa/instruction.h"

namespace trnsim::models {

struct access_checker_options {
  bool races = false;   // detect happens-before races
  bool poison = false;  // detect reads of never-written bytes
};

class access_checker {
 public:
  enum class access_kind { read, write, accumulate };  // accumulate: read and write

  explicit access_checker(access_checker_options o) : opts_(o) {}
  const access_checker_options& options() const { return opts_; }

  // Forgets agents, clocks, semaphores and memory state: a new run starts.
  void begin_run();
  // A sequential instruction stream; `instrs` stays valid for the run. `core` names
  // the agent's core (its SBUF/PSUM); `pipelined`: done-signals come after later
  // instructions may have issued (compute engines), else the stream issues the next
  // instruction only after this one completed (DMA queues).
  int add_agent(std::string name, const void* core, const std::vector<isa::Instruction>* instrs,
                bool pipelined);
  // Bytes [lo, hi) of HBM written by the host before the run; `hbm` names which
  // HBM when a platform has several (one per chip: set_hbm), else nullptr.
  void host_written(uint64_t lo, uint64_t hi, const void* hbm = nullptr);
  // The agents of `core` access HBM `hbm` (kept across runs). Cores never named
  // share the HBM nullptr: one chip needs no call.
  void set_hbm(const void* core, const void* hbm) { hbm_of_[core] = hbm; }

  // Instruction `pc` of `agent` found semaphore `sem` of `sems` >= `value`.
  void acquire(int agent, const void* sems, uint16_t sem, uint32_t value);
  // Instruction `pc` of `agent` issues (after its waits).
  void issue(int agent, uint32_t pc);
  // The agent increments a semaphore by `inc` (before the increment is applied).
  void release(int agent, const void* sems, uint16_t sem, uint32_t inc, isa::SignalWhen when);
  // The agent's oldest outstanding instruction completed (before its done-signals).
  void complete(int agent);
  // An access by the agent's current instruction; `hbm_base` is added to HBM offsets.
  void access(int agent, const isa::AccessPattern& ap, uint64_t hbm_base, access_kind k);

  uint64_t race_count() const { return race_count_; }
  uint64_t poison_count() const { return poison_count_; }
  bool clean() const { return race_count_ == 0 && poison_count_ == 0; }
  // One paragraph per distinct finding (at most `max` of each kind, then a count).
  std::string report(size_t max = 10) const;

 private:
  using clock = std::vector<uint32_t>;
  struct epoch {
    int32_t agent = -1;  // -1: none
    uint32_t clk = 0;
  };
  struct cell {  // one byte range's history
    epoch write;
    std::vector<epoch> reads;  // latest read per agent since the write
    bool operator==(const cell&) const;
  };
  struct segment {
    uint64_t end;
    cell c;
  };
  using shadow = std::map<uint64_t, segment>;  // start -> [start, end)
  struct agent_state {
    std::string name;
    const void* core;
    const std::vector<isa::Instruction>* instrs;
    bool pipelined;
    clock vc;
    uint32_t completed = 0;
    std::vector<clock> issued;  // pipelined: clocks of instructions not yet completed
    size_t issued_head = 0;
    clock done_vc;  // pipelined: the clock of the instruction that completed last
  };
  struct sem_entry {
    uint64_t total;  // semaphore value after this increment
    clock vc;        // join of every increment up to this one
  };
  struct range {
    uint64_t lo = UINT64_MAX, hi = 0;
    void add(uint64_t a, uint64_t b) {
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  };
  struct race {
    char kind0, kind1;  // 'R'/'W' of the earlier and the later access
    uint32_t seen;      // the later agent's clock entry of the earlier one, then
    range parts, bytes;
    std::string mem;
  };
  struct poisoned {
    range parts, bytes;
    std::string mem;
  };

  static uint32_t at(const clock& c, int a) { return size_t(a) < c.size() ? c[a] : 0; }
  static void join(clock& into, const clock& from);
  bool ordered(const epoch& e, int agent) const;
  shadow& memory_of(int agent, const isa::AccessPattern& ap, std::string& name);
  void check_range(shadow& m, uint64_t lo, uint64_t hi, int agent, access_kind k,
                   const std::string& mem, uint64_t part, bool partitioned);
  void split(shadow& m, uint64_t at);
  void found_poison(int agent, const std::string& mem, uint64_t part, uint64_t lo, uint64_t hi,
                    bool partitioned);
  static void merge_runs(std::vector<std::pair<int64_t, int64_t>>& runs);
  void found_race(const epoch& first, char k0, int agent, char k1, const std::string& mem,
                  uint64_t part, uint64_t lo, uint64_t hi, bool partitioned);
  std::string describe(int agent, uint32_t clk) const;
  std::string missing_edge(const epoch& first, int agent, uint32_t clk, uint32_t seen) const;

  access_checker_options opts_;
  std::vector<agent_state> agents_;
  std::map<std::pair<const void*, uint16_t>, std::vector<sem_entry>> sems_;
  std::map<std::pair<const void*, int>, shadow> mems_;  // (core, space); HBM: (its HBM, hbm)
  std::map<const void*, const void*> hbm_of_;           // core -> its HBM (set_hbm)
  std::vector<std::pair<int64_t, int64_t>> runs_;       // scratch: one row's byte runs
  // (earlier agent, its clock, later agent, its clock) -> finding
  std::map<std::tuple<int, uint32_t, int, uint32_t>, race> races_;
  std::map<std::pair<int, uint32_t>, poisoned> poisons_;
  uint64_t race_count_ = 0, poison_count_ = 0;
};

}  // namespace trnsim::models
