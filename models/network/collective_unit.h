// The collective unit of an SPMD launch: where the sync engines' collective
// instructions (all_reduce, all_gather, reduce_scatter, barrier, all_to_all, permute;
// docs/isa.md) meet.
// Each rank's instruction arrives and waits (a rendezvous) until every rank of its
// group has arrived; then the unit moves the data (functional runs) and every rank
// completes after the time the network's collective model gives for the group's
// placement (collective_engine.h; the algorithm choose_algorithm() picks: torus on
// one chip or whole nodes, else ring; topology.h routes).
//
// Placement: rank r of the launch is core r % cores_per_chip of chip
// r / cores_per_chip; a group's ranks must sit evenly on their chips (the same count
// on each). The timing places a group's chips as the first chips of the torus (its
// placement relative to the rest of the launch is not modelled). Functionally, each
// rank's src is read from and its dst written to HBM at the last arrival, in one step.
// Buffers: an operand's elements in its access pattern's iteration order; group
// position p (the rank's index in `group`) owns block p (all_gather: where its src
// goes; reduce_scatter: the block of the sum it keeps). all_to_all and permute
// copy without arithmetic and are timed as point-to-point transfers, all at once
// (CollectiveEngine::run_direct): all_to_all sends block q to position q, permute
// the whole buffer to the rank its `peers` entry names.
//
// Sharing with compute (the DMA engines serve both; docs/hardware.md, Collectives),
// network.model: analytic (for tlm, per transfer: use_tlm()): when the group is complete, each
// rank's part of the collective is put on its core's DMA engines and the chip's HBM as one block of
// work at that instant, first come first served with the compute DMA around it. The bytes the rank
// sends are split evenly over the last network.collective_dma_engines engines of its core
// (dma_engine::hold: each engine finishes its current transfer, then carries its
// part at its bandwidth, one descriptor per transfer sent, and starts nothing else
// until then; the core's shared rate takes the same bytes), and HBM serves the
// bytes sent (read), received (written) and, for reductions, the rank's own
// operand of each addition (read), spread over the channels. The rank completes
// after the later of the network model's time and those ends: compute DMA already
// moving delays the collective, and the collective delays the compute DMA behind
// it, so running both takes no less than the longer and no more than their sum.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "models/common/collectives.h"
#include "models/common/sim_context.h"
#include "models/isa/instruction.h"
#include "models/memory/dma_engine.h"
#include "models/memory/hbm.h"
#include "models/network/collective_engine.h"
#include "models/network/collective_engine_tlm.h"
#include "models/network/network_tlm.h"
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
// The same with algorithm `a` (the ring order above, or torus when it fits).
collective_result run_group(Collective c, Algorithm a, const topology_params& base,
                            const std::vector<uint32_t>& group, uint64_t count, isa::DType dt,
                            std::vector<std::vector<float>>* data);
// The algorithm the collective instructions use for `group`: choose_algorithm() of
// its placement (collective_engine.h), as collbench does.
Algorithm group_algorithm(const topology_params& base, const std::vector<uint32_t>& group);

// Per-rank figures of a launch.
struct rank_comm_stats {
  uint64_t collectives = 0;
  double collective_ns = 0;  // the collective model's time, summed
  double rendezvous_ns = 0;  // waiting for the group's other ranks, summed
  uint64_t bytes = 0;        // transfer bytes this rank sent
  // Time the collectives took beyond the network model's because the rank's DMA
  // engines or HBM were busy (sharing with compute), summed; and their HBM bytes.
  double contention_ns = 0;
  uint64_t hbm_bytes = 0;
};

// A launch's profile (collective_unit::profile()): each distinct collective with
// its algorithm; per link (named as in topology.h, a rank's DMA by its launch rank)
// its bytes, busy and contended time summed over the runs; each rank's collective
// windows; and, when recording, every transfer on its route's links.
struct collective_summary {
  isa::Opcode op = isa::Opcode::all_reduce;
  std::vector<uint32_t> group;
  uint64_t count = 0;  // elements per rank buffer
  isa::DType dtype = isa::DType::fp32;
  Algorithm algorithm = Algorithm::ring;
  uint64_t runs = 0;
  double network_ns = 0;  // the network model's time of one run
};
struct link_summary {
  std::string name;
  uint64_t bytes = 0, transfers = 0;
  double busy_ns = 0, contended_ns = 0;
};
struct collective_window {
  uint32_t rank = 0;
  isa::Opcode op = isa::Opcode::all_reduce;
  sc_core::sc_time start, end;  // the group complete; the rank's collective done
};
struct transfer_span {
  std::string link;
  uint32_t src = 0, dst = 0;  // launch ranks
  uint64_t bytes = 0;
  sc_core::sc_time start, drain;  // its bytes flowed on the link
};

class collective_unit : public collective_port {
 public:
  struct rank_binding {
    models::hbm* hbm = nullptr;            // the rank's chip memory
    uint64_t hbm_base = 0;                 // its program's base
    std::string name;                      // "rank 1 (core1)" for messages
    std::vector<models::dma_engine*> dma;  // its core's DMA engines (none: no sharing)
  };
  // `base` as for run_group; one binding per rank of the launch.
  collective_unit(const topology_params& base, std::vector<rank_binding> ranks, sim_context& ctx);

  void arrive(uint32_t rank, const isa::Instruction& in, collective_waiter* w) override;
  std::string pending() const override;
  const std::vector<rank_comm_stats>& stats() const { return stats_; }
  // Symmetry fold (runtime/symmetry.h), timing only: ranks from `simulated` on run
  // no program; rank r arrives wherever rank r % simulated arrives, in its group.
  void fold(uint32_t simulated);

  // network.model: tlm: run every collective on the chips' collective engines
  // (collective_engine_tlm.h) over their network, whose rank r is launch rank r,
  // from the instant its group is complete. Each transfer leaves through the
  // sending rank's core DMA (split evenly over the last
  // network.collective_dma_engines engines, each piece on the one that frees
  // first, lowest on ties; dma_engine::hold) and its chip's HBM (reserve_spread),
  // and is written (and for a reduce, its operand read) at the receiver's HBM,
  // booked when its last byte arrives (core_dma::receive); a rank without DMA
  // engines (a folded one) uses the network's link for its DMA.
  // Each rank completes when its last send and receive have arrived. Null: the
  // analytic model and the block booking above.
  void use_tlm(chip_collectives* c) { tlm_ = c; }

  // Keep every transfer for traces (off: only the summaries and windows).
  void record_transfers(bool on) { record_ = on; }
  std::vector<collective_summary> summaries() const;
  std::vector<link_summary> links() const;
  const std::vector<collective_window>& windows() const { return windows_; }
  const std::vector<transfer_span>& transfers() const { return spans_; }

 private:
  // One distinct collective's model run: its result, the links it used and (when
  // recording) its transfers, times from its start.
  struct model_run {
    collective_result res;
    collective_summary sum;
    std::vector<link_summary> links;
    std::vector<transfer_span> spans;
    std::vector<link_summary*> totals;  // links[k]'s entry in link_totals_
  };
  model_run run_model(const isa::Instruction& in, Collective c, const std::vector<uint32_t>& g,
                      uint64_t count, isa::DType dt, std::vector<std::vector<float>>* data) const;
  struct arrival {
    uint32_t rank;
    const isa::Instruction* in;
    collective_waiter* w;
    sc_core::sc_time at;
  };
  void fault(const std::vector<uint32_t>& ranks, const isa::Instruction& in,
             const std::string& why);
  void finish(const std::vector<arrival>& all);
  // The TLM path of finish(): starts the collective on the chips' engines.
  void start_tlm(const std::vector<arrival>& all, Collective c, uint64_t count, isa::DType dt,
                 std::vector<std::vector<float>> data, bool direct, std::vector<bool> receives);
  // A rank's DMA stage on its core's engines and HBM (use_tlm()).
  struct core_dma : rank_dma {
    collective_unit* u;
    explicit core_dma(collective_unit* x) : u(x) {}
    std::optional<stage> send(uint32_t src, uint64_t bytes) override;
    sc_core::sc_time receive(uint32_t dst, uint64_t bytes, bool reduce,
                             sc_core::sc_time since) override;
  };
  std::vector<float> read(uint32_t rank, const isa::AccessPattern& ap) const;
  void write(uint32_t rank, const isa::AccessPattern& ap, const std::vector<float>& v,
             uint64_t from) const;

  topology_params base_;
  std::vector<rank_binding> ranks_;
  sim_context& ctx_;
  std::map<std::vector<uint32_t>, std::vector<arrival>> waiting_;  // by group
  // Model times by (opcode, group, count, dtype): programs repeat collectives.
  std::map<std::tuple<int, std::vector<uint32_t>, uint64_t, int>, model_run> times_;
  std::vector<rank_comm_stats> stats_;
  bool record_ = false;
  std::map<std::string, link_summary> link_totals_;
  std::vector<collective_window> windows_;
  std::vector<transfer_span> spans_;
  uint32_t simulated_ = 0;  // fold(): the ranks that run (0: all)
  chip_collectives* tlm_ = nullptr;
  core_dma dma_{this};
};

}  // namespace trnsim::models::network
