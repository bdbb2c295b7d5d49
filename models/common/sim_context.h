// State shared by every module of one simulated chip: the functional/timing-only
// switch, the optional tracer and access checker, and the faults models report
// instead of throwing through the kernel.
#pragma once

#include <string>
#include <vector>

namespace trnsim::trace {
class recorder;
}

namespace trnsim::models {

class access_checker;
class collective_port;
class scheduler;
class hbm;

struct sim_fault {
  std::string where;    // "core0.vector", "core0.dma3.q2"
  std::string message;  // includes the instruction
};

struct sim_context {
  bool functional = true;             // false: timing only, no data moved or computed
  trace::recorder* trace = nullptr;   // set: engines and DMA queues record every instruction
  access_checker* checker = nullptr;  // set: every access is checked for races/poison
  // Set: the sequencers run on this scheduler (scheduler.h) instead of SystemC threads.
  scheduler* sched = nullptr;
  // Set by an SPMD launch: where the sync engines' collective instructions go.
  collective_port* collectives = nullptr;
  // Set (functional runs): each DMA engine tells its chip's HBM when a copy has
  // moved its data, so that it can drop the scratch pages no copy will touch again
  // (hbm::plan_release).
  bool release_hbm = false;
  std::vector<sim_fault> faults;
};

}  // namespace trnsim::models
