#include "models/network/collective_unit.h"

#include <algorithm>
#include <stdexcept>

#include "models/common/scheduler.h"
#include "models/common/sim_time.h"

namespace trnsim::models::network {

namespace {

std::string list(const std::vector<uint32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + (v[i] == isa::kNoPeer ? std::string("-") : std::to_string(v[i]));
  return s + "]";
}

// "all_reduce (line 12) group [0,1] src 1024 fp32 dst 1024 fp32"
std::string describe(const isa::Instruction& in) {
  std::string s(isa::opcode_name(in.op));
  if (in.line) s += " (line " + std::to_string(in.line) + ")";
  s += " group " + list(in.group);
  if (in.op == isa::Opcode::permute) s += " peers " + list(in.peers);
  if (in.op != isa::Opcode::barrier)
    s += " src " + std::to_string(in.src[0].elems()) + " " +
         std::string(isa::dtype_name(in.src[0].dtype)) + " dst " + std::to_string(in.dst.elems()) +
         " " + std::string(isa::dtype_name(in.dst.dtype));
  return s;
}

bool same_shape(const isa::Instruction& a, const isa::Instruction& b) {
  if (a.op != b.op || a.group != b.group || a.peers != b.peers) return false;
  if (a.op == isa::Opcode::barrier) return true;
  return a.src[0].elems() == b.src[0].elems() && a.dst.elems() == b.dst.elems() &&
         a.src[0].dtype == b.src[0].dtype && a.dst.dtype == b.dst.dtype;
}

Collective kind(isa::Opcode op) {
  switch (op) {
    case isa::Opcode::all_gather:
      return Collective::all_gather;
    case isa::Opcode::reduce_scatter:
      return Collective::reduce_scatter;
    default:
      return Collective::all_reduce;  // all_reduce; barrier: a small one
  }
}

// Calls f(k, at) for each element of `ap` in order: its bytes sit at k in the packed
// data and at `at` in a buffer holding the bytes [lo, ...) of the pattern's range.
template <class F>
void for_each_packed(const isa::AccessPattern& ap, int64_t lo, F&& f) {
  const int64_t es = static_cast<int64_t>(isa::dtype_size(ap.dtype));
  int64_t k = 0;
  for (uint32_t p = 0; p < ap.partition_count; ++p) {
    const int64_t row =
        static_cast<int64_t>(ap.offset) + ap.partition_stride * static_cast<int64_t>(p) * es;
    isa::for_each_free(ap, [&](uint64_t, int64_t off) {
      f(k, row + off - lo);
      k += es;
    });
  }
}

// The placement of `group`'s ranks as run_group() takes it.
topology_params group_params(const topology_params& base, const std::vector<uint32_t>& group) {
  if (group.empty()) throw std::invalid_argument("a collective group lists no rank");
  const uint32_t cpc = std::max<uint32_t>(1, base.cores_per_chip);
  std::map<uint32_t, uint32_t> per_chip;  // chip -> group ranks on it
  for (uint32_t r : group) ++per_chip[r / cpc];
  const auto first = *per_chip.begin();
  for (const auto& [chip, n] : per_chip)
    if (n != first.second)
      throw std::invalid_argument("group " + list(group) + " has " + std::to_string(first.second) +
                                  " ranks on chip " + std::to_string(first.first) + " but " +
                                  std::to_string(n) + " on chip " + std::to_string(chip) +
                                  "; a group's ranks must sit evenly on their chips");
  topology_params tp = base;
  tp.ranks = static_cast<uint32_t>(group.size());
  tp.per_chip = first.second;
  return tp;
}

}  // namespace

collective_result run_group(Collective c, const topology_params& base,
                            const std::vector<uint32_t>& group, uint64_t count, isa::DType dt,
                            std::vector<std::vector<float>>* data) {
  return run_group(c, Algorithm::ring, base, group, count, dt, data);
}

collective_result run_group(Collective c, Algorithm a, const topology_params& base,
                            const std::vector<uint32_t>& group, uint64_t count, isa::DType dt,
                            std::vector<std::vector<float>>* data) {
  Topology topo(group_params(base, group));
  CollectiveEngine eng(topo);
  return eng.run(c, a, count, dt, data);
}

Algorithm group_algorithm(const topology_params& base, const std::vector<uint32_t>& group) {
  return choose_algorithm(Topology(group_params(base, group)));
}

collective_unit::collective_unit(const topology_params& base, std::vector<rank_binding> ranks,
                                 sim_context& ctx)
    : base_(base), ranks_(std::move(ranks)), ctx_(ctx), stats_(ranks_.size()) {}

void collective_unit::fault(const std::vector<uint32_t>& ranks, const isa::Instruction& in,
                            const std::string& why) {
  std::string where;
  for (uint32_t r : ranks)
    where += (where.empty() ? "" : ", ") +
             (r < ranks_.size() ? ranks_[r].name : "rank " + std::to_string(r));
  ctx_.faults.push_back({where, describe(in) + ": " + why});
}

void collective_unit::arrive(uint32_t rank, const isa::Instruction& in, collective_waiter* w) {
  for (uint32_t r : in.group)
    if (r >= ranks_.size()) {
      fault({rank}, in,
            "group names rank " + std::to_string(r) + " but the launch has " +
                std::to_string(ranks_.size()) + " ranks");
      return;
    }
  if (!std::binary_search(in.group.begin(), in.group.end(), rank)) {
    fault({rank}, in, "rank " + std::to_string(rank) + " is not in the instruction's group");
    return;
  }
  // Ranks of this group already waiting at a different collective: a mismatch.
  // (Overlapping groups may interleave: a rank waiting on one group reaches the
  // other later; if none can, the run ends with the deadlock report.)
  // One lookup per arrival; a group's entry stays (empty) between its collectives.
  auto it = waiting_.find(in.group);
  if (it != waiting_.end() && !it->second.empty()) {
    const std::vector<arrival>& arr = it->second;
    const isa::Instruction& other = *arr.front().in;
    if (!same_shape(other, in)) {
      std::vector<uint32_t> who{rank};
      for (const auto& a : arr) who.push_back(a.rank);
      fault(who, in,
            "collective mismatch: rank " + std::to_string(rank) + " reached this while rank " +
                std::to_string(arr.front().rank) + " waits at " + describe(other));
      return;
    }
  }
  if (it == waiting_.end()) it = waiting_.emplace(in.group, std::vector<arrival>{}).first;
  std::vector<arrival>& arr = it->second;
  arr.push_back({rank, &in, w, models::now()});
  if (simulated_ > 0)  // the folded ranks this one stands for, no waiter of their own
    for (uint32_t m : in.group)
      if (m >= simulated_ && m % simulated_ == rank)
        arr.push_back({m, &in, nullptr, models::now()});
  if (arr.size() < in.group.size()) return;
  std::vector<arrival> all;
  all.swap(arr);
  finish(all);
}

static std::vector<direct_send> direct_sends(const isa::Instruction& in,
                                             const std::vector<uint32_t>& g, uint64_t count,
                                             isa::DType dt);

void collective_unit::finish(const std::vector<arrival>& all) {
  const isa::Instruction& in = *all.front().in;
  const std::vector<uint32_t>& g = in.group;
  const uint64_t G = g.size();
  const bool barrier = in.op == isa::Opcode::barrier;
  const isa::DType dt = barrier ? isa::DType::fp32 : in.src[0].dtype;
  const Collective c = kind(in.op);
  // Elements per rank buffer: all_reduce and reduce_scatter carry src; all_gather
  // dst; a barrier one element per rank.
  const uint64_t count = barrier                            ? G
                         : in.op == isa::Opcode::all_gather ? in.dst.elems()
                                                            : in.src[0].elems();
  std::vector<std::vector<float>> data;
  if (ctx_.functional && !barrier) {
    for (uint64_t p = 0; p < G; ++p) {
      const isa::Instruction& mine = *std::find_if(all.begin(), all.end(), [&](const arrival& a) {
                                        return a.rank == g[p];
                                      })->in;
      std::vector<float> src = read(g[p], mine.src[0]);
      if (in.op == isa::Opcode::all_gather) {
        std::vector<float> buf(count, 0.0f);
        std::copy(src.begin(), src.end(), buf.begin() + static_cast<int64_t>(p * src.size()));
        src.swap(buf);
      }
      data.push_back(std::move(src));
    }
  }
  // all_to_all and permute move data without arithmetic: done here, timed as
  // point-to-point transfers (run_model).
  const bool direct = in.op == isa::Opcode::all_to_all || in.op == isa::Opcode::permute;
  // A partial permute: the ranks no one sends to keep their dst (not written below).
  std::vector<bool> receives(G, in.op != isa::Opcode::permute);
  if (direct && !data.empty()) {
    std::vector<std::vector<float>> out(G, std::vector<float>(count, 0.0f));
    const uint64_t blk = count / G;
    for (uint64_t p = 0; p < G; ++p) {
      if (in.op == isa::Opcode::permute) {
        if (in.peers[p] == isa::kNoPeer) continue;
        const auto q =
            static_cast<size_t>(std::lower_bound(g.begin(), g.end(), in.peers[p]) - g.begin());
        out[q] = data[p];
        receives[q] = true;
      } else {
        for (uint64_t q = 0; q < G; ++q)
          std::copy_n(data[p].begin() + static_cast<int64_t>(q * blk), blk,
                      out[q].begin() + static_cast<int64_t>(p * blk));
      }
    }
    data.swap(out);
  }
  if (tlm_) {
    start_tlm(all, c, count, dt, std::move(data), direct, std::move(receives));
    return;
  }
  // The timing's key (permute's peers matter too), built once and looked up once:
  // a long program repeats the same few collectives thousands of times.
  auto key = std::make_tuple(static_cast<int>(in.op), g, count, static_cast<int>(dt));
  if (in.op == isa::Opcode::permute)
    std::get<1>(key).insert(std::get<1>(key).end(), in.peers.begin(), in.peers.end());
  model_run* run = nullptr;
  try {
    auto it = times_.find(key);
    // A fresh run replaces the cached timing but keeps its run count.
    auto store = [&](model_run m) {
      if (it != times_.end()) {
        m.sum.runs = it->second.sum.runs;
        it->second = std::move(m);
      } else {
        it = times_.emplace(std::move(key), std::move(m)).first;
      }
    };
    if (!data.empty() && !direct) {
      store(run_model(in, c, g, count, dt, &data));
    } else if (it == times_.end()) {
      it = times_.emplace(std::move(key), run_model(in, c, g, count, dt, nullptr)).first;
    }
    run = &it->second;
  } catch (const std::exception& e) {
    std::vector<uint32_t> who;
    for (const auto& a : all) who.push_back(a.rank);
    fault(who, in, e.what());
    return;
  }
  const collective_result& res = run->res;
  run->sum.op = in.op;
  run->sum.runs += 1;
  // Each link's run totals, found by name once per distinct collective (map nodes
  // stay put), then added to in the same order as before.
  if (run->totals.size() != run->links.size()) {
    run->totals.clear();
    for (const link_summary& l : run->links) run->totals.push_back(&link_totals_[l.name]);
  }
  for (size_t k = 0; k < run->links.size(); ++k) {
    const link_summary& l = run->links[k];
    link_summary& t = *run->totals[k];
    if (t.name.empty()) t.name = l.name;
    t.bytes += l.bytes;
    t.transfers += l.transfers;
    t.busy_ns += l.busy_ns;
    t.contended_ns += l.contended_ns;
  }
  if (record_)
    for (transfer_span sp : run->spans) {
      sp.start += models::now();
      sp.drain += models::now();
      spans_.push_back(std::move(sp));
    }
  if (!data.empty()) {
    for (uint64_t p = 0; p < G; ++p) {
      if (!receives[p]) continue;
      const isa::Instruction& mine = *std::find_if(all.begin(), all.end(), [&](const arrival& a) {
                                        return a.rank == g[p];
                                      })->in;
      const uint64_t from = in.op == isa::Opcode::reduce_scatter ? p * mine.dst.elems() : 0;
      write(g[p], mine.dst, data[p], from);
    }
  }
  const sc_core::sc_time now = models::now();
  const sc_core::sc_time net = seconds_to_time(res.time_s);
  std::vector<sc_core::sc_time> dur(all.size(), net);
  for (size_t k = 0; k < all.size(); ++k) {
    const arrival& a = all[k];
    const auto p = static_cast<size_t>(std::lower_bound(g.begin(), g.end(), a.rank) - g.begin());
    const uint64_t sent = p < res.sent.size() ? res.sent[p] : 0;
    const uint64_t recv = p < res.received.size() ? res.received[p] : 0;
    const uint64_t reduced = p < res.reduced.size() ? res.reduced[p] : 0;
    const uint64_t sends = p < res.sends.size() ? res.sends[p] : 0;
    sc_core::sc_time end = now + net;
    const rank_binding& b = ranks_[a.rank];
    if (!barrier && sent > 0 && !b.dma.empty()) {
      const auto n = static_cast<uint32_t>(
          std::min<size_t>(b.dma.size(), std::max<uint32_t>(1, base_.net.collective_dma_engines)));
      for (uint32_t e = 0; e < n; ++e) {
        // Engine e of the last n carries bytes [sent e / n, sent (e + 1) / n).
        const uint64_t lo = sent * e / n, hi = sent * (e + 1) / n;
        const uint64_t dlo = sends * e / n, dhi = sends * (e + 1) / n;
        if (hi > lo) end = std::max(end, b.dma[b.dma.size() - n + e]->hold(hi - lo, dhi - dlo));
      }
    }
    if (!barrier && b.hbm) {
      end = std::max(end, b.hbm->reserve_spread(sent + reduced, false));
      end = std::max(end, b.hbm->reserve_spread(recv, true));
    }
    dur[k] = end - now;
    windows_.push_back({a.rank, in.op, now, end});
    rank_comm_stats& s = stats_[a.rank];
    s.collectives += 1;
    s.collective_ns += dur[k].to_seconds() * 1e9;
    s.contention_ns += (dur[k] - net).to_seconds() * 1e9;
    s.rendezvous_ns += (now - a.at).to_seconds() * 1e9;
    s.bytes += sent;  // its own sends (a partial permute's rank with no peer: none)
    s.hbm_bytes += barrier ? 0 : sent + reduced + recv;
  }
  for (size_t k = 0; k < all.size(); ++k)
    if (all[k].w) all[k].w->collective_ready(dur[k]);
}

// all_to_all: block q of each rank to rank q; permute: the buffer to its peer, none
// from a rank whose peer is kNoPeer (a partial permutation sends only its real pairs).
static std::vector<direct_send> direct_sends(const isa::Instruction& in,
                                             const std::vector<uint32_t>& g, uint64_t count,
                                             isa::DType dt) {
  const uint64_t G = g.size(), es = isa::dtype_size(dt);
  if (in.op != isa::Opcode::permute)
    return all_to_all_sends(static_cast<uint32_t>(G), count / G * es);
  std::vector<direct_send> sends;
  for (uint32_t p = 0; p < G; ++p) {
    if (in.peers[p] == isa::kNoPeer) continue;
    const auto q =
        static_cast<uint32_t>(std::lower_bound(g.begin(), g.end(), in.peers[p]) - g.begin());
    sends.push_back({p, q, count * es});
  }
  return sends;
}

collective_unit::model_run collective_unit::run_model(const isa::Instruction& in, Collective c,
                                                      const std::vector<uint32_t>& g,
                                                      uint64_t count, isa::DType dt,
                                                      std::vector<std::vector<float>>* data) const {
  Topology topo(group_params(base_, g));
  CollectiveEngine eng(topo);
  std::vector<transfer_record> recs;
  if (record_) eng.record_to(&recs);
  model_run m;
  if (in.op == isa::Opcode::all_to_all || in.op == isa::Opcode::permute) {
    m.sum.algorithm = Algorithm::direct;
    m.res = eng.run_direct(direct_sends(in, g, count, dt));
  } else {
    m.sum.algorithm = choose_algorithm(topo);
    m.res = eng.run(c, m.sum.algorithm, count, dt, data);
  }
  m.sum.group = g;
  m.sum.count = count;
  m.sum.dtype = dt;
  m.sum.network_ns = m.res.time_s * 1e9;
  // A rank's DMA by its launch rank: the topology numbers the group's positions.
  const auto name_of = [&](const Link& l) {
    const std::string& n = l.name();
    if (n.rfind("rank", 0) == 0) {
      const size_t dot = n.find('.');
      const auto p = static_cast<size_t>(std::stoul(n.substr(4, dot - 4)));
      if (p < g.size()) return "rank" + std::to_string(g[p]) + n.substr(dot);
    }
    return n;
  };
  for (const Link& l : topo.links())
    if (l.stats().transfers)
      m.links.push_back({name_of(l), l.stats().bytes, l.stats().transfers, l.stats().busy_s * 1e9,
                         l.stats().contended_s * 1e9});
  for (const transfer_record& r : recs)
    for (const Link* l : r.route)
      m.spans.push_back({name_of(*l), g[r.src], g[r.dst], r.bytes, seconds_to_time(r.start),
                         seconds_to_time(r.drain)});
  return m;
}

void collective_unit::start_tlm(const std::vector<arrival>& all, Collective c, uint64_t count,
                                isa::DType dt, std::vector<std::vector<float>> data, bool direct,
                                std::vector<bool> receives) {
  const isa::Instruction& in = *all.front().in;
  const std::vector<uint32_t>& g = in.group;
  const bool barrier = in.op == isa::Opcode::barrier;
  auto run = std::make_shared<tlm_collective>();
  auto key = std::make_tuple(static_cast<int>(in.op), g, count, static_cast<int>(dt));
  if (in.op == isa::Opcode::permute)
    std::get<1>(key).insert(std::get<1>(key).end(), in.peers.begin(), in.peers.end());
  collective_summary sum;
  // What the ranks' completions need: their arrivals and, for all_to_all and
  // permute (whose data moved above), the results.
  struct state {
    std::vector<arrival> all;
    std::vector<std::vector<float>> direct_data;
    std::vector<bool> receives;  // a partial permute: false where no one sends
  };
  auto st = std::make_shared<state>();
  st->all = all;
  st->receives = std::move(receives);
  try {
    // The schedule is the analytic model's for the group's placement; its
    // transfers take the launch's routes (the group's real chips) on the links.
    Topology topo(group_params(base_, g));
    if (direct) {
      sum.algorithm = Algorithm::direct;
      run->plan = plan_direct(topo, direct_sends(in, g, count, dt));
      st->direct_data = std::move(data);
    } else {
      sum.algorithm = choose_algorithm(topo);
      run->plan = plan_collective(topo, c, sum.algorithm, count, dt);
      run->data = std::move(data);
    }
  } catch (const std::exception& e) {
    std::vector<uint32_t> who;
    for (const auto& a : all) who.push_back(a.rank);
    fault(who, in, e.what());
    return;
  }
  sum.op = in.op;
  sum.group = g;
  sum.count = count;
  sum.dtype = dt;
  run->members = g;
  run->dt = dt;
  run->dma = barrier ? nullptr : &dma_;
  run->record = record_;
  tlm_collective* r = run.get();  // the engines own it while it runs
  run->rank_done = [this, r, st, barrier](uint32_t p) {
    const isa::Instruction& in = *st->all.front().in;
    const std::vector<uint32_t>& g = in.group;
    const sc_core::sc_time now = models::now();
    const std::vector<std::vector<float>>& data =
        st->direct_data.empty() ? r->data : st->direct_data;
    for (const arrival& a : st->all) {
      if (a.rank != g[p]) continue;
      if (!data.empty() && st->receives[p]) {
        const uint64_t from = in.op == isa::Opcode::reduce_scatter ? p * a.in->dst.elems() : 0;
        write(g[p], a.in->dst, data[p], from);
      }
      windows_.push_back({a.rank, in.op, r->start, now});
      rank_comm_stats& s = stats_[a.rank];
      s.collectives += 1;
      s.collective_ns += (now - r->start).to_seconds() * 1e9;
      // Time this rank's transfers waited for its DMA engines (compute DMA or the
      // collective's own other transfers on them).
      s.contention_ns += r->dma_wait[p].to_seconds() * 1e9;
      s.rendezvous_ns += (r->start - a.at).to_seconds() * 1e9;
      s.bytes += r->res.sent[p];
      s.hbm_bytes += barrier ? 0 : r->res.sent[p] + r->res.received[p] + r->res.reduced[p];
      if (a.w) a.w->collective_ready(sc_core::SC_ZERO_TIME);
    }
  };
  run->all_done = [this, r, key, sum]() mutable {
    model_run& m = times_[key];
    const uint64_t runs = m.sum.runs;
    m.sum = sum;
    m.sum.runs = runs + 1;
    m.sum.network_ns = r->res.time_s * 1e9;
    m.res = r->res;
    for (const auto& [k, l] : r->links) {
      link_summary& t = link_totals_[tlm_->network().link_name(k)];
      if (t.name.empty()) t.name = tlm_->network().link_name(k);
      t.bytes += l.bytes;
      t.transfers += l.transfers;
      t.busy_ns += l.busy.to_seconds() * 1e9;
      t.contended_ns += l.queued.to_seconds() * 1e9;
    }
    for (const tlm_span& sp : r->spans) {
      std::string link = sp.link >= 0 ? tlm_->network().link_name(static_cast<size_t>(sp.link))
                         : sp.link == tlm_span::kCoreDma
                             ? "rank" + std::to_string(sp.src) + ".dma"
                             : "chip" + std::to_string(sp.chip) + ".collective_engine";
      spans_.push_back({std::move(link), sp.src, sp.dst, sp.bytes, sp.start, sp.drain});
    }
  };
  const isa::Instruction* inp = &in;
  run->failed = [this, st, inp](const std::string& why) {
    std::vector<uint32_t> who;
    for (const auto& a : st->all) who.push_back(a.rank);
    fault(who, *inp, why);
  };
  try {
    tlm_->start(run);
  } catch (const std::exception& e) {
    std::vector<uint32_t> who;
    for (const auto& a : all) who.push_back(a.rank);
    fault(who, in, e.what());
  }
}

std::optional<rank_dma::stage> collective_unit::core_dma::send(uint32_t src, uint64_t bytes) {
  const rank_binding& b = u->ranks_[src];
  if (b.dma.empty()) return std::nullopt;
  const sc_core::sc_time now = models::now();
  const size_t n =
      std::min<size_t>(b.dma.size(), std::max<uint32_t>(1, u->base_.net.collective_dma_engines));
  stage st{now, now};
  bool first = true;
  for (size_t e = 0; e < n; ++e) {
    // Piece e carries bytes [bytes e / n, bytes (e + 1) / n), on the engine of the
    // last n that frees first (the lowest on ties).
    const uint64_t lo = bytes * e / n, hi = bytes * (e + 1) / n;
    if (hi == lo) continue;
    models::dma_engine* best = nullptr;
    sc_core::sc_time at;
    for (size_t k = b.dma.size() - n; k < b.dma.size(); ++k) {
      const sc_core::sc_time t = b.dma[k]->hold_start();
      if (!best || t < at) {
        best = b.dma[k];
        at = t;
      }
    }
    const sc_core::sc_time end = best->hold(hi - lo, 1);
    if (first || at < st.head) st.head = at;
    if (end > st.tail) st.tail = end;
    first = false;
  }
  if (b.hbm) st.tail = std::max(st.tail, b.hbm->reserve_spread(bytes, false));
  link_summary& l = u->link_totals_["rank" + std::to_string(src) + ".dma"];
  if (l.name.empty()) l.name = "rank" + std::to_string(src) + ".dma";
  l.bytes += bytes;
  l.transfers += 1;
  l.busy_ns += (st.tail - st.head).to_seconds() * 1e9;
  l.contended_ns += (st.head - now).to_seconds() * 1e9;
  return st;
}

sc_core::sc_time collective_unit::core_dma::receive(uint32_t dst, uint64_t bytes, bool reduce,
                                                    sc_core::sc_time since) {
  const sc_core::sc_time now = models::now();
  const rank_binding& d = u->ranks_[dst];
  if (!d.hbm || bytes == 0) return now;
  // Cut-through: the memory takes the bytes as they come in, at its own rate, so its
  // work (the write, and for a reduce the read of the operand before it) is placed
  // to end now, not before the transfer started. Idle memory (it keeps pace with
  // the link) has them at arrival; memory busy then takes them after its earlier
  // work. No latency: the write is posted, the next read pays it.
  const sc_core::sc_time work = d.hbm->spread_duration(bytes) * (reduce ? 2.0 : 1.0);
  sc_core::sc_time from = now > since + work ? now - work : since;
  if (reduce) from = d.hbm->reserve_spread_from(bytes, false, from);
  return std::max(now, d.hbm->reserve_spread_from(bytes, true, from));
}

std::vector<collective_summary> collective_unit::summaries() const {
  std::vector<collective_summary> v;
  for (const auto& [k, m] : times_)
    if (m.sum.runs) v.push_back(m.sum);
  return v;
}

std::vector<link_summary> collective_unit::links() const {
  std::vector<link_summary> v;
  for (const auto& [n, l] : link_totals_) v.push_back(l);
  return v;
}

void collective_unit::fold(uint32_t simulated) {
  if (ctx_.functional)
    throw std::invalid_argument(
        "a symmetry fold is for timing-only runs (folded ranks hold no data)");
  simulated_ = simulated;
}

std::vector<float> collective_unit::read(uint32_t rank, const isa::AccessPattern& ap) const {
  const rank_binding& b = ranks_[rank];
  int64_t lo = 0, hi = 0;
  ap.byte_range(lo, hi);
  std::vector<uint8_t> raw(static_cast<size_t>(hi - lo));
  b.hbm->read(b.hbm_base + static_cast<uint64_t>(lo), raw.data(), raw.size());
  const uint64_t es = isa::dtype_size(ap.dtype);
  std::vector<uint8_t> packed(ap.bytes());
  for_each_packed(ap, lo, [&](int64_t k, int64_t at) {
    std::copy_n(raw.begin() + at, es, packed.begin() + k);
  });
  std::vector<float> v(ap.elems());
  isa::to_fp32(ap.dtype, packed.data(), v.data(), v.size());
  return v;
}

void collective_unit::write(uint32_t rank, const isa::AccessPattern& ap,
                            const std::vector<float>& v, uint64_t from) const {
  const rank_binding& b = ranks_[rank];
  int64_t lo = 0, hi = 0;
  ap.byte_range(lo, hi);
  std::vector<uint8_t> raw(static_cast<size_t>(hi - lo));
  b.hbm->read(b.hbm_base + static_cast<uint64_t>(lo), raw.data(), raw.size());
  const uint64_t es = isa::dtype_size(ap.dtype);
  std::vector<uint8_t> packed(ap.bytes());
  isa::from_fp32(ap.dtype, v.data() + from, packed.data(), ap.elems());
  for_each_packed(ap, lo, [&](int64_t k, int64_t at) {
    std::copy_n(packed.begin() + k, es, raw.begin() + at);
  });
  b.hbm->write(b.hbm_base + static_cast<uint64_t>(lo), raw.data(), raw.size());
}

std::string collective_unit::pending() const {
  std::string s;
  for (const auto& [g, arr] : waiting_) {
    if (arr.empty()) continue;
    std::vector<uint32_t> here, missing;
    for (const auto& a : arr) here.push_back(a.rank);
    std::sort(here.begin(), here.end());
    for (uint32_t r : g)
      if (!std::binary_search(here.begin(), here.end(), r)) missing.push_back(r);
    s += "\n  " + describe(*arr.front().in) + ": ranks " + list(here) + " arrived, ranks " +
         list(missing) + " never did";
  }
  return s;
}

}  // namespace trnsim::models::network
