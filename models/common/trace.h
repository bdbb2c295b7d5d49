// Timeline of one run, for looking at rather than for numbers: every executed
// instruction as a slice on its engine's (or DMA queue's) track, written as Chrome
// trace-event JSON that the Perfetto UI and chrome://tracing open, and every
// semaphore change, written as VCD for a waveform viewer. Models hold a pointer
// (sim_context::trace, semaphores::set_trace) and record only when it is set, so a
// run without tracing pays one null check per instruction. Recording keeps raw
// records (instruction pointer, tick counts); text is made only when writing, so
// the programs must still be alive then.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <systemc>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/isa/program.h"

namespace trnsim::trace {

class recorder {
 public:
  // The track of `module` (an engine, or queue `queue` >= 0 of a DMA engine): its
  // process is the parent module ("chip.core0"), its thread the module's own name
  // ("tensor", "dma3.q2"). Ids are handed out in order of first use; pre-register
  // tracks to fix the order (and to show engines that execute nothing).
  // kSpreadShares: a DMA engine's shares of other engines' spread transfers.
  static constexpr int kSpreadShares = -2;
  uint32_t track(const sc_core::sc_object* module, int queue = -1);
  // Operands are printed with tensor names of `p` for tracks of process `process`.
  void set_program(const std::string& process, const isa::Program* p);

  // One executed instruction: it waited `wait` on semaphores before `start`, held
  // its sequencer for `dur` and completed `done` after `start` (done > dur when the
  // engine pipelines).
  void slice(uint32_t track, const isa::Instruction& in, uint32_t pc, const sc_core::sc_time& start,
             const sc_core::sc_time& dur, const sc_core::sc_time& wait,
             const sc_core::sc_time& done);

  // Semaphore `sem` of the bank `sems` (its module) took `value` now; reset() of a
  // bank records every semaphore going back to 0.
  void semaphore(const sc_core::sc_object* sems, uint16_t sem, uint32_t value,
                 const sc_core::sc_time& at);
  void semaphores_reset(const sc_core::sc_object* sems, const sc_core::sc_time& at);

  // Every recorded slice as its instruction and the time it occupied its engine or
  // queue, [start, start + max(held, done)), in picoseconds (reports attribute time).
  struct interval {
    const isa::Instruction* in;
    uint64_t start_ps, end_ps;
  };
  std::vector<interval> intervals() const;

  // A track that is no module's (a rank's collectives, a network link): thread
  // `thread` of process `process`, made on first use.
  uint32_t named_track(const std::string& process, const std::string& thread);
  // The name a process is shown with ("rank 0 (chip.core0)"); by default its own.
  void label_process(const std::string& process, const std::string& label);
  // A slice that is no instruction: `name` over [start, start + dur), with `args`
  // (a JSON object's members, "" for none).
  void span(uint32_t track, const std::string& name, const sc_core::sc_time& start,
            const sc_core::sc_time& dur, const std::string& args);
  // The intervals of the slices on tracks of process `process`, as intervals().
  std::vector<interval> intervals_of(const std::string& process) const;

  void clear();  // forget the recorded slices and semaphore changes, keep the tracks
  size_t slice_count() const { return slices_.size(); }
  size_t track_count() const { return tracks_.size(); }

  // {"displayTimeUnit": "ns", "traceEvents": [...]}: "M" events name each process
  // and thread, "X" events (ts, dur in microseconds) are the slices.
  void write_chrome(std::ostream& os) const;
  // Value change dump of every semaphore that changed, timescale 1 ps.
  void write_vcd(std::ostream& os) const;

 private:
  struct track_info {
    uint32_t pid, tid;
    std::string thread;
  };
  struct slice_rec {
    const isa::Instruction* in;
    uint32_t track, pc;
    uint64_t start, dur, wait, done;  // ticks of the time resolution
  };
  struct sem_rec {
    uint32_t bank;
    uint16_t sem;  // kReset: the whole bank went back to 0
    uint32_t value;
    uint64_t at;
  };
  static constexpr uint16_t kReset = 0xffff;
  uint32_t bank(const sc_core::sc_object* sems);

  struct span_rec {
    uint32_t track;
    std::string name, args;
    uint64_t start, dur;  // ticks
  };
  std::vector<span_rec> spans_;
  std::map<std::string, std::string> labels_;  // process -> shown name
  std::map<std::pair<std::string, std::string>, uint32_t> named_ids_;
  uint32_t process_id(const std::string& process);
  std::vector<std::string> processes_;  // by pid
  std::vector<track_info> tracks_;
  std::map<std::pair<const sc_core::sc_object*, int>, uint32_t> track_ids_;
  std::map<std::string, const isa::Program*> programs_;
  std::vector<slice_rec> slices_;
  std::vector<std::string> banks_;  // semaphore modules' names, by bank id
  std::unordered_map<const sc_core::sc_object*, uint32_t> bank_ids_;
  std::vector<sem_rec> sems_;
};

}  // namespace trnsim::trace
