// Collectives over a Topology: all_reduce, all_gather and reduce_scatter as chunk
// transfers over its links, timed with contention, and (optionally) carried out on
// real per-rank buffers so the numerics are the algorithm's.
//
// Algorithms:
// - ring: one ring over all ranks (cores of a chip in order, chips in a snake
//   through the torus so that neighbours on the ring are neighbours on the torus,
//   nodes in order), one direction. reduce_scatter is N-1 steps; in step s rank i
//   of the ring sends chunk (i - s - 1) mod N to rank i + 1, which adds it to its
//   own; all_gather is N-1 steps of forwarding; all_reduce is the two.
// - torus: dimension-wise over the grid (cores of a chip, torus x, torus y, nodes):
//   reduce_scatter along each dimension in that order, each time on the part the
//   previous ones left, then all_gather back in reverse order. Each dimension's
//   rings run both ways at once, each way on half of every chunk, so a chip drives
//   both links of a dimension. Needs whole nodes (or one chip).
// Buffer layout follows the ranks: the buffer is R blocks; reduce_scatter leaves
// the sum of block r on rank r, all_gather starts from block r on rank r.
//
// Numerics: each addition is fp32 addition of the two operands, rounded to the
// dtype (bf16: nearest even), in the order the ring carries the chunk: a chunk's
// sum starts at the rank after its owner and adds each rank in ring order, the
// owner last.
//
// Timing: a transfer may start when the data it sends has arrived (the previous
// step on its ring), and, on a new dimension or phase, when both ends finished
// the previous one. Transfers in flight share every resource on their routes
// max-min fairly (a link, a chip's intra-chip path, a node port, the sending
// core's DMA); a transfer's data arrives the sum of its route's latencies after
// its last byte drains. Not modelled: the reduction's compute time,
// synchronisation messages, DMA descriptor costs, and pipelining a chunk over
// several hops (a multi-hop route moves at its slowest resource's share).
//
// One object drives the ranks of every chip (a per-chip engine with its own
// instruction stream is a later step).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/isa/dtype.h"
#include "models/network/topology.h"

namespace trnsim::models::network {

enum class Collective { all_reduce, all_gather, reduce_scatter };
// direct: point-to-point transfers all at once (all_to_all, permute; run_direct()).
enum class Algorithm { ring, torus, direct };

// "all_reduce" -> Collective; throws std::invalid_argument listing the names.
Collective parse_collective(const std::string& s);
std::string collective_name(Collective c);
Algorithm parse_algorithm(const std::string& s);
std::string algorithm_name(Algorithm a);

struct collective_result {
  double time_s = 0;        // last arrival, from all ranks starting at 0
  uint64_t transfers = 0;   // chunk transfers
  uint64_t link_bytes = 0;  // bytes summed over transfers (not per hop)
  // Per rank of the topology: bytes it sent and received, of those received the
  // ones added to its own (reduce steps), and the transfers it sent.
  std::vector<uint64_t> sent, received, reduced, sends;
};

// One transfer as it ran (for traces): its bytes flowed from `start` to `drain`
// and arrived at `end`, over `route`.
struct transfer_record {
  uint32_t src = 0, dst = 0;
  uint64_t bytes = 0;
  double start = 0, drain = 0, end = 0;
  std::vector<const Link*> route;
};

// One point-to-point transfer of run_direct().
struct direct_send {
  uint32_t src = 0, dst = 0;
  uint64_t bytes = 0;
};

// One chunk transfer of a collective's schedule: `pieces` of the buffer (each a
// range of piece_begin) from src to dst, added to dst's (reduce) or copied; `next`
// lists the transfers that wait for it, `waiting` how many it waits for. ready/end
// are filled in as it runs.
struct planned_transfer {
  uint32_t src = 0, dst = 0;
  int dir = 1;
  bool reduce = false;
  std::vector<uint32_t> pieces;
  uint64_t bytes = 0;
  std::vector<uint32_t> next;
  uint32_t waiting = 0;
  double ready = 0, end = 0;
};
struct collective_plan {
  std::vector<planned_transfer> xfers;
  std::vector<uint64_t> piece_begin;
};
// The schedule CollectiveEngine::run() times (same checks and throws), and
// run_direct()'s; for other timing models (network_tlm.h).
collective_plan plan_collective(const Topology& t, Collective c, Algorithm a, uint64_t count,
                                isa::DType dt);
collective_plan plan_direct(const Topology& t, const std::vector<direct_send>& sends);
// all_to_all over ranks 0..n-1, `bytes` a block: rank p sends block q to rank q, in
// the pairwise order of real all-to-all implementations (p, p + 1, ... mod n; its
// own block stays). A sender's DMA serves its sends in turn (TLM), so the k-th sends
// of all ranks go to n different receivers instead of every rank to rank 0 first.
std::vector<direct_send> all_to_all_sends(uint32_t n, uint64_t bytes);
// Carries out `x`'s data movement on `data` (one buffer per rank), as run() does.
void apply_transfer(const planned_transfer& x, const std::vector<uint64_t>& piece_begin,
                    isa::DType dt, std::vector<std::vector<float>>& data);

class CollectiveEngine {
 public:
  explicit CollectiveEngine(Topology& topo) : topo_(topo) {}

  // Appends every transfer of later runs to `records` (null: none).
  void record_to(std::vector<transfer_record>* records) { records_ = records; }

  // Runs collective `c` on `count` elements of `dt` (fp32 or bf16) per rank buffer.
  // `data`, if not null, holds one buffer of `count` values per rank (values of the
  // dtype, held as float) and is transformed in place. Throws std::invalid_argument
  // for an algorithm that does not fit the placement or an unsupported dtype.
  collective_result run(Collective c, Algorithm a, uint64_t count, isa::DType dt,
                        std::vector<std::vector<float>>* data);
  // Timing only: `sends` all start at once and share the resources on their routes
  // as run()'s transfers do (a send to itself or of 0 bytes moves nothing). Throws
  // std::invalid_argument for a rank beyond the topology's.
  collective_result run_direct(const std::vector<direct_send>& sends);

 private:
  Topology& topo_;
  std::vector<transfer_record>* records_ = nullptr;
};

// The ring order of the `ring` algorithm: ranks, chips snaking through the torus.
std::vector<uint32_t> ring_order(const Topology& t);

// The algorithm a collective over `t` takes unless told otherwise (collbench, the
// collective instructions): torus where it fits (one chip, or whole nodes), since
// it drives both links of every dimension; else ring.
Algorithm choose_algorithm(const Topology& t);
// Whether the torus algorithm fits `t`'s placement.
bool torus_fits(const Topology& t);

}  // namespace trnsim::models::network
