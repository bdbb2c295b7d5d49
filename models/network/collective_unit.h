// The collective unit of an SPMD launch: where the sync engines' collective
// instructions (all_reduce, all_gather, reduce_scatter, barrier; docs/isa.md) meet.
// Each rank's instruction arrives and waits (a rendezvous) until every rank of its
// group has arrived; then the unit moves the data (functional runs) and every rank
// completes after the time the network's collective model gives for the group's
// placement (collective_engine.h, ring algorithm; topology.h routes).
//
// Placement: rank r of the launch is core r % cores_per_chip of chip
// r / cores_per_chip; a group's ranks must sit evenly on their chips (the same count
// on each). The timing places a group's chips as the first chips of the torus (its
// placement relative to the rest of the launch is not modelled), and the transfers
// do not contend with the ranks' other HBM or DMA traffic. Functionally, each rank's
// src is read from and its dst written to HBM at the last arrival, in one step.
// Buffers: an operand's elements in its access pattern's iteration order; group
// position p (the rank's index in `group`) owns block p (all_gather: where its src
// goes; reduce_scatter: the block of the sum it keeps).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/common/collectives.h"
#include "models/common/sim_context.h"
#include "models/isa/instruction.h"
#include "models/memory/hbm.h"
#include "models/network/collective_engine.h"
#include "models/network/topology.h"

namespace trnsim::models::network {

// The small API for callers that hold buffers (data parallel training): runs
// collective `c` (ring) over the ranks `group` of a launch placed as above by
// `base` (net, cores_per_chip, dma_bps; ranks and per_chip are derived), on
// `count` elements per rank of `dt`. `data` (may be null) holds one buffer per
// group member, transformed in place. Throws std::invalid_argument for an uneven
// placement or a placement the network cannot hold.
collective_result run_group(Collective c, const topology_params& base,
                            const std::vector<uint32_t>& group, uint64_t count, isa::DType dt,
                            std::vector<std::vector<float>>* data);

// Per-rank figures of a launch.
struct rank_comm_stats {
  uint64_t collectives = 0;
  double collective_ns = 0;  // the collective model's time, summed
  double rendezvous_ns = 0;  // waiting for the group's other ranks, summed
  uint64_t bytes = 0;        // transfer bytes this rank sent
};

class collective_unit : public collective_port {
 public:
  struct rank_binding {
    models::hbm* hbm = nullptr;  // the rank's chip memory
    uint64_t hbm_base = 0;       // its program's base
    std::string name;            // "rank 1 (core1)" for messages
  };
  // `base` as for run_group; one binding per rank of the launch.
  collective_unit(const topology_params& base, std::vector<rank_binding> ranks, sim_context& ctx);

  void arrive(uint32_t rank, const isa::Instruction& in, collective_waiter* w) override;
  std::string pending() const override;
  const std::vector<rank_comm_stats>& stats() const { return stats_; }
  // Symmetry fold (runtime/symmetry.h), timing only: ranks from `simulated` on run
  // no program; rank r arrives wherever rank r % simulated arrives, in its group.
  void fold(uint32_t simulated);

 private:
  struct arrival {
    uint32_t rank;
    const isa::Instruction* in;
    collective_waiter* w;
    sc_core::sc_time at;
  };
  void fault(const std::vector<uint32_t>& ranks, const isa::Instruction& in,
             const std::string& why);
  void finish(const std::vector<arrival>& all);
  std::vector<float> read(uint32_t rank, const isa::AccessPattern& ap) const;
  void write(uint32_t rank, const isa::AccessPattern& ap, const std::vector<float>& v,
             uint64_t from) const;

  topology_params base_;
  std::vector<rank_binding> ranks_;
  sim_context& ctx_;
  std::map<std::vector<uint32_t>, std::vector<arrival>> waiting_;  // by group
  // Model times by (opcode, group, count, dtype): programs repeat collectives.
  std::map<std::tuple<int, std::vector<uint32_t>, uint64_t, int>, collective_result> times_;
  std::vector<rank_comm_stats> stats_;
  uint32_t simulated_ = 0;  // fold(): the ranks that run (0: all)
};

}  // namespace trnsim::models::network
