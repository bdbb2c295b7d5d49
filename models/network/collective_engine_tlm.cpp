#include "models/network/collective_engine_tlm.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace trnsim::models::network {

collective_engine_tlm::collective_engine_tlm(
    const sc_core::sc_module_name& name, tlm_network& net, scheduler* sched,
    std::function<collective_engine_tlm&(uint32_t rank)> engine_of, uint32_t chip)
    : sc_module(name), net_(net), sched_(sched), engine_of_(std::move(engine_of)), chip_(chip) {}

void collective_engine_tlm::post(const std::shared_ptr<tlm_collective>& c, uint32_t id, phase ph,
                                 const sc_core::sc_time& at) {
  q_.push({at, seq_++, c, id, ph});
  if (sched_) {
    // One resume per distinct time: a second would run the engine twice.
    if (wakes_.insert(at).second) sched_->resume_at(&agent_, at);
  } else {
    // The thread is spawned by the first transfer: an engine that never runs a
    // collective costs no coroutine.
    if (!spawned_) {
      spawned_ = true;
      sc_core::sc_spawn_options o;
      o.dont_initialize();
      o.set_sensitivity(&wake_);
      std::string base = name();
      for (char& ch : base)
        if (ch == '.') ch = '_';
      sc_core::sc_spawn([this] { thread(); }, (base + "_run").c_str(), &o);
    }
    wake_.notify(sc_core::SC_ZERO_TIME);
  }
}

void collective_engine_tlm::clear() {
  q_ = {};
  wakes_.clear();
}

void collective_engine_tlm::thread() {
  for (;;) {
    step();
    if (q_.empty())
      sc_core::wait(wake_);
    else
      sc_core::wait(q_.top().at - sc_core::sc_time_stamp(), wake_);
  }
}

void collective_engine_tlm::step() {
  const sc_core::sc_time now = models::now();
  wakes_.erase(wakes_.begin(), wakes_.upper_bound(now));
  // Events due now, in time then posting order; those they post for now run too.
  while (!q_.empty() && q_.top().at <= now) {
    event e = q_.top();
    q_.pop();
    if (e.c->done == kFailed) continue;  // its other transfers are dropped
    switch (e.ph) {
      case phase::start:
        begin(e.c, e.id);
        break;
      case phase::hop:
        hop(e.c, e.id);
        break;
      case phase::arrive:
        arrive(e.c, e.id);
        break;
      case phase::stored:
        stored(e.c, e.id);
        break;
    }
  }
}

void collective_engine_tlm::begin(const std::shared_ptr<tlm_collective>& cp, uint32_t id) {
  tlm_collective& c = *cp;
  planned_transfer& x = c.plan.xfers[id];
  const sc_core::sc_time now = models::now();
  const uint32_t src = c.members[x.src], dst = c.members[x.dst];
  x.ready = (now - c.start).to_seconds();
  if (!c.data.empty()) apply_transfer(x, c.plan.piece_begin, c.dt, c.data);
  std::vector<uint32_t> hops = net_.route(src, dst, x.dir);
  std::optional<rank_dma::stage> st;
  if (c.dma) st = c.dma->send(src, x.bytes);
  // The core's DMA carries it: the links from the second hop on, fed by the DMA.
  const size_t from = st ? 1 : 0;
  const sc_core::sc_time head = st ? st->head : now, tail = st ? st->tail : now;
  if (st) c.dma_wait[x.src] += head - now;
  if (c.record && st) c.spans.push_back({tlm_span::kCoreDma, chip_, src, dst, x.bytes, head, tail});
  c.res.transfers += 1;
  c.res.link_bytes += x.bytes;
  c.res.sent[x.src] += x.bytes;
  c.res.sends[x.src] += 1;
  c.res.received[x.dst] += x.bytes;
  if (x.reduce) c.res.reduced[x.dst] += x.bytes;
  ++started_;
  c.flights[id] = {std::move(hops), from, head, tail};
  if (head > now)
    post(cp, id, phase::hop, head);
  else
    hop(cp, id);
}

// Each link is booked when the transfer's head reaches it, in time order across
// transfers: a multi-hop transfer does not hold a later link from the time its
// bytes will get there against one that reaches the link sooner but starts later.
void collective_engine_tlm::hop(const std::shared_ptr<tlm_collective>& cp, uint32_t id) {
  tlm_collective& c = *cp;
  const planned_transfer& x = c.plan.xfers[id];
  tlm_collective::flight& f = c.flights[id];
  const uint32_t src = c.members[x.src], dst = c.members[x.dst];
  if (f.next == f.hops.size()) {  // no link to cross (a route of the DMA stage only)
    engine_of_(dst).post(cp, id, phase::arrive, std::max(models::now(), f.tail));
    return;
  }
  const uint32_t k = f.hops[f.next];
  const link_tlm_stats b = net_.link(k).stats();
  sc_core::sc_time arrival;
  std::vector<link_span> rec;
  try {
    arrival = net_.transfer({k}, 0, x.bytes, x.reduce, f.head, f.tail, &rec);
  } catch (const std::exception& e) {
    c.done = kFailed;
    if (c.failed)
      c.failed("TLM network: a transfer from rank " + std::to_string(src) + " to rank " +
               std::to_string(dst) + ": " + e.what());
    return;
  }
  const link_tlm_stats a = net_.link(k).stats();
  link_tlm_stats& l = c.links[k];
  l.bytes += a.bytes - b.bytes;
  l.transfers += a.transfers - b.transfers;
  l.busy += a.busy - b.busy;
  l.queued += a.queued - b.queued;
  const link_span& sp = rec.at(0);
  if (c.record) c.spans.push_back({k, chip_, src, dst, x.bytes, sp.start, sp.drain});
  if (++f.next == f.hops.size()) {
    engine_of_(dst).post(cp, id, phase::arrive, arrival);
    return;
  }
  // Cut-through: the first byte reaches the next link a latency after it left
  // this one, whose last byte (the next link's tail) a latency after it drained.
  const sc_core::sc_time latency = arrival - sp.drain;
  f.head = sp.start + latency;
  f.tail = arrival;
  post(cp, id, phase::hop, f.head);
}

void collective_engine_tlm::arrive(const std::shared_ptr<tlm_collective>& cp, uint32_t id) {
  tlm_collective& c = *cp;
  const planned_transfer& x = c.plan.xfers[id];
  const sc_core::sc_time now = models::now();
  // The receiver's memory is booked now, when the bytes are there: what it took on
  // before (compute DMA, other transfers) goes first. c.ready[id] is when the
  // transfer started.
  sc_core::sc_time done = now;
  if (c.dma) done = std::max(now, c.dma->receive(c.members[x.dst], x.bytes, x.reduce, c.ready[id]));
  if (done > now)
    post(cp, id, phase::stored, done);
  else
    stored(cp, id);
}

void collective_engine_tlm::stored(const std::shared_ptr<tlm_collective>& cp, uint32_t id) {
  tlm_collective& c = *cp;
  planned_transfer& x = c.plan.xfers[id];
  const sc_core::sc_time now = models::now();
  x.end = (now - c.start).to_seconds();
  if (c.record) {
    const uint32_t src = c.members[x.src], dst = c.members[x.dst];
    c.spans.push_back(
        {tlm_span::kEngine, engine_of_(src).chip_, src, dst, x.bytes, c.ready[id], now});
  }
  for (uint32_t n : x.next) {
    planned_transfer& y = c.plan.xfers[n];
    if (now > c.ready[n]) c.ready[n] = now;
    if (--y.waiting == 0) engine_of_(c.members[y.src]).post(cp, n, phase::start, c.ready[n]);
  }
  ++c.done;
  // The ranks' parts, then the whole: callbacks may drop the caller's reference.
  for (uint32_t p : {x.src, x.dst})
    if (--c.left[p] == 0 && c.rank_done) c.rank_done(p);
  if (c.done == c.plan.xfers.size()) {
    c.res.time_s = (now - c.start).to_seconds();
    if (c.all_done) c.all_done();
  }
}

chip_collectives::chip_collectives(tlm_network& net, scheduler* sched) : net_(net) {
  const Topology& t = net.topology();
  const uint32_t chips = t.params().net.chips * t.params().net.nodes;
  for (uint32_t k = 0; k < chips; ++k)
    engines_.push_back(std::make_unique<collective_engine_tlm>(
        ("chip" + std::to_string(k) + "_collectives").c_str(), net, sched,
        [this](uint32_t r) -> collective_engine_tlm& { return engine_of(r); }, k));
}

void chip_collectives::clear() {
  for (auto& e : engines_) e->clear();
}

collective_engine_tlm& chip_collectives::engine_of(uint32_t rank) {
  const rank_place& pl = net_.topology().place(rank);
  return *engines_.at(size_t{pl.node} * net_.topology().params().net.chips + pl.chip);
}

void chip_collectives::start(const std::shared_ptr<tlm_collective>& c) {
  const auto R = static_cast<uint32_t>(c->members.size());
  for (uint32_t m : c->members)
    if (m >= net_.topology().ranks())
      throw std::invalid_argument("rank " + std::to_string(m) + " is beyond the TLM network's " +
                                  std::to_string(net_.topology().ranks()) + " ranks");
  std::vector<planned_transfer>& xs = c->plan.xfers;
  for (const planned_transfer& x : xs)
    if (x.src >= R || x.dst >= R)
      throw std::invalid_argument("a transfer names a position beyond the group's");
  const sc_core::sc_time now = models::now();
  c->start = now;
  c->ready.assign(xs.size(), now);
  c->flights.assign(xs.size(), {});
  c->left.assign(R, 0);
  c->dma_wait.assign(R, sc_core::SC_ZERO_TIME);
  c->res.sent.assign(R, 0);
  c->res.received.assign(R, 0);
  c->res.reduced.assign(R, 0);
  c->res.sends.assign(R, 0);
  for (const planned_transfer& x : xs) {
    ++c->left[x.src];
    ++c->left[x.dst];
  }
  // Reservations that ended before now are of no use to later transfers.
  for (size_t k = 0; k < net_.size(); ++k) net_.link(k).forget_before(now);
  bool waits = false;
  for (uint32_t i = 0; i < xs.size(); ++i)
    if (xs[i].waiting == 0) {
      engine_of(c->members[xs[i].src]).post(c, i, collective_engine_tlm::phase::start, now);
      waits = true;
    }
  if (!xs.empty() && !waits) throw std::logic_error("collective schedule has a cycle");
  // Ranks with nothing to send or receive are done at once.
  for (uint32_t p = 0; p < R; ++p)
    if (c->left[p] == 0 && c->rank_done) c->rank_done(p);
  if (xs.empty() && c->all_done) c->all_done();
}

}  // namespace trnsim::models::network
