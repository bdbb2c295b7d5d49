// The ring algorithm over TLM links (link_tlm.h): a SystemC counterpart of the
// analytic CollectiveEngine's `ring` for one ring of ranks, each hop one link.
// Every rank is a module with a thread that runs the ring's steps as TLM writes
// carrying its data: rank i sends through its DMA stage (rank<i>_dma, a link_tlm
// at the core's collective DMA rate) and then the hop's link (link<i>, rank i ->
// rank i+1 mod N) into rank i+1's target socket, which adds (reduce steps) or
// copies the data into its buffer.
//
// Schedule and numerics are the analytic engine's (collective_engine.h): in
// reduce_scatter step s rank i sends block (i - s - 1) mod N and the receiver adds
// it to its own, fp32 addition rounded to the dtype, so a block's sum starts at the
// rank after its owner and ends with the owner; all_gather forwards block (i - s).
// A rank's step waits for the previous step's data to arrive; a new phase (the
// all_gather of an all_reduce) waits until the rank and the one it sends to have
// finished every transfer of the previous phase. Buffers are values of the dtype
// held as float; the payload's length is the dtype's bytes (the timing), its data
// pointer the float values.
//
// Replacing a hop: pass its index in `external`; the ring then creates no link for
// it, and the caller binds hop_source(k) (rank k's DMA stage) to its own block's
// target socket and that block's initiator to hop_sink(k) (rank k + 1) before the
// first run(). The block must complete b_transport as link_tlm.h describes.
//
// Not modelled (besides link_tlm.h's list): the reduction's compute time, rank
// placement (each hop is one link: equal to the analytic ring when consecutive ring
// ranks sit on neighbouring chips, one rank per chip), intra-chip and inter-node
// paths, and the torus algorithm. SystemC elaborates once per process: build one
// ring, then call run() once per collective.
#pragma once

#include <cstdint>
#include <memory>
#include <systemc>
#include <vector>

#include "models/isa/dtype.h"
#include "models/network/collective_engine.h"
#include "models/network/link_tlm.h"
#include "models/network/topology.h"

namespace trnsim::models::network {

struct tlm_ring_params {
  uint32_t ranks = 2;
  link_params link;  // every hop
  link_params dma;   // every rank's sending DMA stage
};

// The ring of `p`'s ranks over its chip-to-chip links and collective DMA rate.
// Throws std::invalid_argument unless there is one rank per chip on one node.
tlm_ring_params tlm_ring_of(const topology_params& p);

struct tlm_ring_job {
  Collective c = Collective::all_reduce;
  uint64_t count = 0;  // elements per rank buffer
  isa::DType dt = isa::DType::fp32;
  // One buffer of `count` values per rank, transformed in place; null: timing only.
  std::vector<std::vector<float>>* data = nullptr;
};

class tlm_ring;

class ring_rank : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<ring_rank> out;  // to its DMA stage
  tlm_utils::simple_target_socket<ring_rank> in;      // from the previous hop

  ring_rank(const sc_core::sc_module_name& name, tlm_ring& ring, uint32_t index);

 private:
  friend class tlm_ring;
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay);

  tlm_ring& ring_;
  uint32_t index_;
  std::vector<sc_core::sc_time> arrivals_;  // this run's receives, in order
  sc_core::sc_event received_, phase_done_;
  uint32_t phases_done_ = 0;
  sc_core::sc_time last_ = sc_core::SC_ZERO_TIME;  // latest arrival of its sends and receives
};

class tlm_ring : public sc_core::sc_module {
 public:
  // Throws std::invalid_argument for fewer than 1 rank or bad link parameters.
  tlm_ring(const sc_core::sc_module_name& name, const tlm_ring_params& p,
           const std::vector<uint32_t>& external = {});

  // Runs `job` from the current simulated time (calls sc_start); returns its time
  // in seconds, from all ranks starting to the last arrival. Throws
  // std::invalid_argument for an unsupported dtype or buffers of the wrong shape,
  // std::runtime_error when a hop answers with an error or the ring stalls (the
  // ring cannot run again after that).
  double run(const tlm_ring_job& job);

  uint32_t ranks() const { return p_.ranks; }
  tlm_utils::simple_initiator_socket<link_tlm>& hop_source(uint32_t k) { return dma_[k]->out; }
  tlm_utils::simple_target_socket<ring_rank>& hop_sink(uint32_t k) {
    return ranks_[(k + 1) % p_.ranks]->in;
  }
  // Hop k's link (null for an external hop) and rank k's DMA stage.
  const link_tlm* link(uint32_t k) const { return links_[k].get(); }
  const link_tlm& dma(uint32_t k) const { return *dma_[k]; }

 private:
  friend class ring_rank;
  void rank_main(uint32_t i);
  void send(uint32_t i, uint32_t block, bool reduce);
  void wait_receive(uint32_t i, size_t k);

  tlm_ring_params p_;
  std::vector<std::unique_ptr<ring_rank>> ranks_;
  std::vector<std::unique_ptr<link_tlm>> dma_, links_;
  // The current run.
  const tlm_ring_job* job_ = nullptr;
  uint64_t generation_ = 0;
  sc_core::sc_event start_;
  std::vector<uint64_t> block_begin_;
  uint32_t finished_ = 0;
  sc_core::sc_time started_;
  std::string error_;
};

}  // namespace trnsim::models::network
