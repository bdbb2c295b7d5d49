// The collective engine of a chip (network.model: tlm): a sequencer that runs its
// ranks' transfers of a collective's schedule (plan_collective / plan_direct,
// collective_engine.h) over the TLM links of a tlm_network (network_tlm.h).
//
// A transfer starts when what it waits for has arrived: the engine of the sending
// rank's chip is resumed at that time (models::now()). Its bytes leave through the
// sender's DMA stage (rank_dma: the core's own DMA engines and HBM, which compute
// DMA shares per transfer, or, for a rank without a core, the network's link_tlm
// standing for its DMA), then cross the route's links, one b_transport each, made
// by the sender's engine when the transfer's head reaches that link (the first
// when the DMA stage started, the next a latency after the head left the last),
// with link_transfer_ext's tail when the stage feeding it finished (cut-through).
// Booking link by link in time order keeps a multi-hop transfer from holding a
// later link against one that reaches it sooner. On arrival the engine of the receiving rank's chip
// is resumed at the arrival time; it books the receiver's memory then (rank_dma:: receive) and,
// once the memory has the bytes, counts the transfer done for both ranks and starts the transfers
// that waited for it. A rank's part ends with its last send or receive. Numerics: each transfer's
// data is applied when it starts, which respects the schedule's dependencies, so the values are the
// analytic engine's.
//
// The engines run as agents of the chip's scheduler when one is given, else as
// SystemC threads over the same step. Not modelled: the engine's own instruction
// stream and descriptor generation time (it starts a transfer at once), and flow
// control on the links (which cut transfers into packets: link_tlm.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <systemc>
#include <vector>

#include "models/common/scheduler.h"
#include "models/network/collective_engine.h"
#include "models/network/network_tlm.h"

namespace trnsim::models::network {

// A rank's DMA stage for the collective engines.
class rank_dma {
 public:
  virtual ~rank_dma() = default;
  struct stage {
    sc_core::sc_time head, tail;  // its first byte may leave; its last has (absolute)
  };
  // Network rank `src` sends `bytes` from now(). nullopt: `src` has no DMA of its
  // own, the network's link for its DMA (the route's first hop) carries it.
  virtual std::optional<stage> send(uint32_t src, uint64_t bytes) = 0;
  // The last of `bytes` sent to network rank `dst` from `since` (absolute) has
  // arrived now(); `reduce`: the receiver adds them to its own (reads its operand).
  // Returns when its memory has taken them (absolute, not before now()).
  virtual sc_core::sc_time receive(uint32_t dst, uint64_t bytes, bool reduce,
                                   sc_core::sc_time since) = 0;
};

// Where a transfer's bytes were (tlm_collective::record): on network link `link`,
// on the sender's core DMA (kCoreDma), or, for kEngine, the collective engine of
// chip `chip` ran it from its start until the receiver's memory had it.
struct tlm_span {
  static constexpr int64_t kCoreDma = -1, kEngine = -2;
  int64_t link = 0;
  uint32_t chip = 0;
  uint32_t src = 0, dst = 0;  // network ranks
  uint64_t bytes = 0;
  sc_core::sc_time start, drain;
};

// One collective in flight: its schedule, where its positions sit, its data, and
// what to tell the caller. Filled by the caller; the engines keep the rest.
struct tlm_collective {
  collective_plan plan;
  std::vector<uint32_t> members;  // network rank of each position
  isa::DType dt = isa::DType::fp32;
  std::vector<std::vector<float>> data;  // one buffer per position (empty: timing only)
  rank_dma* dma = nullptr;               // null: every rank's DMA is its network link
  // Position p's sends and receives are all done (now()); the last transfer is
  // done (the collective's result is complete); a link answered with an error.
  std::function<void(uint32_t p)> rank_done;
  std::function<void()> all_done;
  std::function<void(const std::string&)> failed;
  bool record = false;  // keep `spans`
  std::vector<tlm_span> spans;

  sc_core::sc_time start;  // set by chip_collectives::start
  collective_result res;   // per position, as CollectiveEngine::run's
  // Per link of the network it used (by index): bytes, transfers, busy and queued
  // time; per position, time its sends waited for its DMA stage.
  std::map<uint32_t, link_tlm_stats> links;
  std::vector<sc_core::sc_time> dma_wait;
  // Kept by the engines.
  std::vector<sc_core::sc_time> ready;
  std::vector<uint32_t> left;  // per position: sends and receives not yet done
  // Per transfer in flight: its route, the next link to cross, and when its first
  // byte reaches that link (head) and the stage feeding it is done (tail).
  struct flight {
    std::vector<uint32_t> hops;
    size_t next = 0;
    sc_core::sc_time head, tail;
  };
  std::vector<flight> flights;
  size_t done = 0;  // transfers arrived (kFailed: a link failed, the rest dropped)
};
inline constexpr size_t kFailed = SIZE_MAX;

class collective_engine_tlm : public sc_core::sc_module {
 public:
  // `sched` null: a SystemC thread.
  collective_engine_tlm(const sc_core::sc_module_name& name, tlm_network& net, scheduler* sched,
                        std::function<collective_engine_tlm&(uint32_t rank)> engine_of,
                        uint32_t chip);

  // What happens to a transfer at an event: it starts, its head reaches the next
  // link of its route, its last byte arrives, or the receiver's memory has taken it
  // (it is done).
  enum class phase { start, hop, arrive, stored };
  // Transfer `id` of `c` reaches phase `ph` at `at` (>= now).
  void post(const std::shared_ptr<tlm_collective>& c, uint32_t id, phase ph,
            const sc_core::sc_time& at);
  uint64_t started() const { return started_; }
  void clear();  // drops every event (a run that ended without them)

 private:
  struct event {
    sc_core::sc_time at;
    uint64_t seq;
    std::shared_ptr<tlm_collective> c;
    uint32_t id;
    phase ph;
    bool operator>(const event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void step();  // runs the events due now
  void thread();
  void begin(const std::shared_ptr<tlm_collective>& c, uint32_t id);
  void hop(const std::shared_ptr<tlm_collective>& c, uint32_t id);
  void arrive(const std::shared_ptr<tlm_collective>& c, uint32_t id);
  void stored(const std::shared_ptr<tlm_collective>& c, uint32_t id);

  tlm_network& net_;
  scheduler* sched_;
  std::function<collective_engine_tlm&(uint32_t)> engine_of_;
  std::priority_queue<event, std::vector<event>, std::greater<>> q_;
  uint32_t chip_;
  uint64_t seq_ = 0, started_ = 0;
  bool spawned_ = false;
  std::set<sc_core::sc_time> wakes_;  // resume_at times asked for (scheduler)
  sc_core::sc_event wake_;            // SystemC thread: a new event
  struct agent : scheduler::agent {
    collective_engine_tlm* e;
    explicit agent(collective_engine_tlm* x) : e(x) {}
    void resume() override { e->step(); }
  } agent_{this};
};

// The collective engines of every chip of a tlm_network.
class chip_collectives {
 public:
  chip_collectives(tlm_network& net, scheduler* sched);
  // Starts `c` now: its transfers that wait for nothing go to their senders'
  // engines. Throws std::invalid_argument for a member beyond the network's ranks
  // or a transfer naming a position beyond the group's.
  void start(const std::shared_ptr<tlm_collective>& c);
  tlm_network& network() { return net_; }
  size_t size() const { return engines_.size(); }
  const collective_engine_tlm& engine(size_t k) const { return *engines_[k]; }
  collective_engine_tlm& engine_of(uint32_t rank);
  // Drops what a run left (it ended in a fault or a deadlock): a new run's
  // collectives must not meet its transfers' callbacks.
  void clear();

 private:
  tlm_network& net_;
  std::vector<std::unique_ptr<collective_engine_tlm>> engines_;
};

}  // namespace trnsim::models::network
