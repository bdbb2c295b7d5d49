#include "models/network/collective_engine.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace trnsim::models::network {

namespace {

constexpr const char* kCollectives[] = {"all_reduce", "all_gather", "reduce_scatter"};
constexpr const char* kAlgorithms[] = {"ring", "torus", "direct"};

using Xfer = planned_transfer;

// One dimension of an algorithm: its rings (rank lists in ring order) and each
// rank's digit (its position along the dimension; a block has its rank's digit).
struct Dim {
  std::vector<std::vector<uint32_t>> lines;
  std::vector<uint32_t> digit;
};

struct Builder {
  uint32_t ranks;
  uint32_t halves;       // 1: one direction; 2: both, each on half of a chunk
  uint64_t piece_bytes;  // bytes per element
  const std::vector<uint64_t>& piece_begin;
  std::vector<Xfer> xfers;
  std::vector<std::vector<uint32_t>> pending;  // per rank: its last phase's transfers

  uint32_t add(Xfer x, const std::vector<uint32_t>& deps) {
    const auto id = static_cast<uint32_t>(xfers.size());
    x.waiting = static_cast<uint32_t>(deps.size());
    for (uint32_t d : deps) xfers[d].next.push_back(id);
    for (uint32_t p : x.pieces) x.bytes += (piece_begin[p + 1] - piece_begin[p]) * piece_bytes;
    xfers.push_back(std::move(x));
    return id;
  }

  // One ring of reduce_scatter (reduce) or all_gather over `line`, on the blocks of
  // `parent`, each member ending (reduce_scatter) or starting (all_gather) with
  // the blocks whose digit is its own.
  void ring(const std::vector<uint32_t>& line, const Dim& dim, const std::vector<uint32_t>& parent,
            bool reduce, std::vector<std::vector<uint32_t>>& next_pending) {
    const auto n = static_cast<int64_t>(line.size());
    if (n < 2) return;
    std::map<uint32_t, std::vector<uint32_t>> blocks;  // digit -> blocks of parent
    for (uint32_t b : parent) blocks[dim.digit[b]].push_back(b);
    for (uint32_t h = 0; h < halves; ++h) {
      const int dir = h == 0 ? 1 : -1;
      std::vector<int64_t> prev(n, -1), cur(n, -1);
      for (int64_t s = 0; s + 1 < n; ++s) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t step = reduce ? s + 1 : s;
          const uint32_t owner = line[((i - dir * step) % n + n) % n];
          Xfer x;
          x.src = line[i];
          x.dst = line[((i + dir) % n + n) % n];
          x.dir = dir;
          x.reduce = reduce;
          for (uint32_t b : blocks[dim.digit[owner]]) x.pieces.push_back(b * halves + h);
          std::vector<uint32_t> deps;
          if (s == 0) {
            deps = pending[x.src];
            deps.insert(deps.end(), pending[x.dst].begin(), pending[x.dst].end());
          } else {
            deps.push_back(static_cast<uint32_t>(prev[i]));
          }
          const uint32_t src = x.src, dst = x.dst;
          const uint32_t id = add(std::move(x), deps);
          cur[((i + dir) % n + n) % n] = id;
          next_pending[src].push_back(id);
          next_pending[dst].push_back(id);
        }
        std::swap(prev, cur);
      }
    }
  }

  // One phase: every line of `dim` at once; then each rank waits on its own.
  void phase(const Dim& dim, const std::vector<std::vector<uint32_t>>& parent, bool reduce) {
    std::vector<std::vector<uint32_t>> next_pending(ranks);
    for (const auto& line : dim.lines) ring(line, dim, parent[line[0]], reduce, next_pending);
    for (uint32_t r = 0; r < ranks; ++r)
      if (!next_pending[r].empty()) pending[r] = std::move(next_pending[r]);
  }
};

// The dimensions of the torus algorithm: cores of a chip, torus x, torus y, nodes.
std::vector<Dim> torus_dims(const Topology& t) {
  const network_params& n = t.params().net;
  const uint32_t per_chip = t.params().per_chip;
  if (t.chips_used() > 1 && t.chips_used() != n.chips * t.nodes_used())
    throw std::invalid_argument(
        "the torus algorithm needs whole nodes: " + std::to_string(t.chips_used()) +
        " chips used, nodes have " + std::to_string(n.chips) + " (use --algo ring)");
  const uint32_t sizes[4] = {per_chip, t.chips_used() > 1 ? n.torus_x : 1,
                             t.chips_used() > 1 ? n.torus_y : 1, t.nodes_used()};
  std::vector<Dim> dims;
  for (uint32_t d = 0; d < 4; ++d) {
    if (sizes[d] < 2) continue;
    Dim dim;
    std::map<std::vector<uint32_t>, std::vector<uint32_t>> lines;  // other digits -> ranks
    for (uint32_t r = 0; r < t.ranks(); ++r) {
      const rank_place& p = t.place(r);
      std::vector<uint32_t> digits{p.core, p.x, p.y, p.node};
      dim.digit.push_back(digits[d]);
      digits[d] = 0;
      lines[digits].push_back(r);
    }
    for (auto& [k, line] : lines) {
      std::sort(line.begin(), line.end(),
                [&](uint32_t a, uint32_t b) { return dim.digit[a] < dim.digit[b]; });
      dim.lines.push_back(std::move(line));
    }
    dims.push_back(std::move(dim));
  }
  return dims;
}

// Runs the transfers `xs` over `topo`: a transfer starts as soon as what it waits
// for has arrived; see run().
collective_result execute(Topology& topo, std::vector<transfer_record>* records,
                          std::vector<Xfer>& xs, const std::vector<uint64_t>& piece_begin,
                          isa::DType dt, std::vector<std::vector<float>>* data, uint32_t R) {
  // Run: a transfer starts as soon as what it waits for has arrived; the transfers
  // in flight share every resource max-min fairly; one whose bytes have drained
  // arrives after its route's latency.
  using Entry = std::pair<double, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (uint32_t i = 0; i < xs.size(); ++i)
    if (xs[i].waiting == 0) ready.push({0.0, i});
  // Resources by index; per resource the transfers on it and since when it is busy.
  std::vector<Link*> res_link;
  std::unordered_map<const Link*, uint32_t> res_of;
  for (const Link& l : topo.links()) {
    res_of[&l] = static_cast<uint32_t>(res_link.size());
    res_link.push_back(const_cast<Link*>(&l));
  }
  const size_t nres = res_link.size();
  std::vector<std::vector<uint32_t>> on(nres);  // transfers in flight per resource
  std::vector<double> busy_since(nres, 0);
  std::vector<double> last_change(nres, 0);  // of on[r]'s size, for contended time
  const auto touch = [&](uint32_t r, double t) {
    if (on[r].size() >= 2) res_link[r]->add_contended(t - last_change[r]);
    last_change[r] = t;
  };
  struct Flow {
    double remaining = 0, rate = 0, latency = 0, start = 0;
    std::vector<uint32_t> path;  // resource indices
  };
  std::vector<Flow> flows(xs.size());
  std::vector<uint32_t> active;  // transfers in flight
  // Max-min fair rates of the transfers sharing resources with `seeds` (the
  // connected part of the transfer-resource graph), by progressive filling: the
  // resource with the smallest share fixes its transfers' rates, and so on.
  std::vector<uint32_t> seen_res(nres, 0), seen_flow(xs.size(), 0);
  uint32_t epoch = 0;
  std::vector<double> cap(nres);
  std::vector<uint32_t> left(nres);
  const auto set_rates = [&](const std::vector<uint32_t>& seed_res) {
    ++epoch;
    std::vector<uint32_t> rs, fs;
    for (uint32_t r : seed_res)
      if (seen_res[r] != epoch) {
        seen_res[r] = epoch;
        rs.push_back(r);
      }
    for (size_t k = 0; k < rs.size(); ++k)
      for (uint32_t f : on[rs[k]]) {
        if (seen_flow[f] == epoch) continue;
        seen_flow[f] = epoch;
        fs.push_back(f);
        for (uint32_t r : flows[f].path)
          if (seen_res[r] != epoch) {
            seen_res[r] = epoch;
            rs.push_back(r);
          }
      }
    for (uint32_t r : rs) {
      cap[r] = res_link[r]->params().bandwidth_bps;
      left[r] = static_cast<uint32_t>(on[r].size());
    }
    for (uint32_t f : fs) flows[f].rate = -1;
    for (size_t fixed = 0; fixed < fs.size();) {
      uint32_t tight = 0;
      double best = -1;
      for (uint32_t r : rs)
        if (left[r] > 0 && (best < 0 || cap[r] / left[r] < best)) {
          tight = r;
          best = cap[r] / left[r];
        }
      for (uint32_t f : on[tight]) {
        if (flows[f].rate >= 0) continue;
        flows[f].rate = std::max(best, 0.0);
        ++fixed;
        for (uint32_t r : flows[f].path) {
          cap[r] -= flows[f].rate;
          left[r] -= 1;
        }
      }
    }
  };
  collective_result res;
  res.sent.assign(R, 0);
  res.received.assign(R, 0);
  res.reduced.assign(R, 0);
  res.sends.assign(R, 0);
  size_t done = 0;
  double now = 0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  while (!ready.empty() || !active.empty()) {
    double t = ready.empty() ? kInf : ready.top().first;
    for (uint32_t f : active)
      t = std::min(t, flows[f].remaining <= 0 ? now : now + flows[f].remaining / flows[f].rate);
    std::vector<uint32_t> changed;  // resources whose transfers changed
    // Drained transfers arrive `latency` later; what waits on them may then start.
    for (size_t k = 0; k < active.size();) {
      Flow& f = flows[active[k]];
      const bool drained = f.remaining <= 0 || now + f.remaining / f.rate <= t;
      f.remaining -= f.rate * (t - now);
      if (!drained) {
        ++k;
        continue;
      }
      const uint32_t id = active[k];
      Xfer& x = xs[id];
      x.end = t + f.latency;
      for (uint32_t r : f.path) {
        res_link[r]->count_transfer(x.bytes);
        touch(r, t);
        auto& v = on[r];
        v.erase(std::find(v.begin(), v.end(), id));
        if (v.empty()) res_link[r]->add_busy(t - busy_since[r]);
        changed.push_back(r);
      }
      res.time_s = std::max(res.time_s, x.end);
      if (records) {
        transfer_record rec{x.src, x.dst, x.bytes, f.start, t, x.end, {}};
        for (uint32_t r : f.path) rec.route.push_back(res_link[r]);
        records->push_back(std::move(rec));
      }
      res.transfers += 1;
      res.link_bytes += x.bytes;
      res.sent[x.src] += x.bytes;
      res.sends[x.src] += 1;
      res.received[x.dst] += x.bytes;
      if (x.reduce) res.reduced[x.dst] += x.bytes;
      if (data) apply_transfer(x, piece_begin, dt, *data);
      for (uint32_t n : x.next) {
        xs[n].ready = std::max(xs[n].ready, x.end);
        if (--xs[n].waiting == 0) ready.push({xs[n].ready, n});
      }
      ++done;
      active[k] = active.back();
      active.pop_back();
    }
    now = t;
    while (!ready.empty() && ready.top().first <= now) {
      const uint32_t id = ready.top().second;
      ready.pop();
      Flow& f = flows[id];
      f.remaining = static_cast<double>(xs[id].bytes);
      f.start = now;
      for (Link* l : topo.route(xs[id].src, xs[id].dst, xs[id].dir)) {
        const uint32_t r = res_of.at(l);
        f.path.push_back(r);
        f.latency += l->params().latency_s;
        if (on[r].empty()) busy_since[r] = now;
        touch(r, now);
        on[r].push_back(id);
        changed.push_back(r);
      }
      active.push_back(id);
    }
    if (!changed.empty()) set_rates(changed);
  }
  if (done != xs.size()) throw std::logic_error("collective schedule has a cycle");
  return res;
}
}  // namespace

Collective parse_collective(const std::string& s) {
  for (int i = 0; i < 3; ++i)
    if (s == kCollectives[i]) return static_cast<Collective>(i);
  throw std::invalid_argument("unknown collective '" + s +
                              "' (expected all_reduce, all_gather or reduce_scatter)");
}
std::string collective_name(Collective c) {
  return kCollectives[static_cast<int>(c)];
}
Algorithm parse_algorithm(const std::string& s) {
  for (int i = 0; i < 2; ++i)
    if (s == kAlgorithms[i]) return static_cast<Algorithm>(i);
  throw std::invalid_argument("unknown algorithm '" + s + "' (expected ring or torus)");
}
std::string algorithm_name(Algorithm a) {
  return kAlgorithms[static_cast<int>(a)];
}

std::vector<uint32_t> ring_order(const Topology& t) {
  const network_params& n = t.params().net;
  std::vector<uint32_t> snake(n.chips);  // chip -> position on the ring
  uint32_t pos = 0;
  for (uint32_t y = 0; y < n.torus_y; ++y)
    for (uint32_t i = 0; i < n.torus_x; ++i)
      snake[(y % 2 == 0 ? i : n.torus_x - 1 - i) + n.torus_x * y] = pos++;
  std::vector<uint32_t> order(t.ranks());
  for (uint32_t r = 0; r < t.ranks(); ++r) order[r] = r;
  const auto key = [&](uint32_t r) {
    const rank_place& p = t.place(r);
    return std::tuple(p.node, snake[p.chip], p.core);
  };
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  return order;
}

bool torus_fits(const Topology& t) {
  return t.chips_used() <= 1 || t.chips_used() == t.params().net.chips * t.nodes_used();
}

Algorithm choose_algorithm(const Topology& t) {
  return torus_fits(t) ? Algorithm::torus : Algorithm::ring;
}

void apply_transfer(const planned_transfer& x, const std::vector<uint64_t>& piece_begin,
                    isa::DType dt, std::vector<std::vector<float>>& data) {
  const std::vector<float>& s = data[x.src];
  std::vector<float>& d = data[x.dst];
  for (uint32_t p : x.pieces)
    for (uint64_t e = piece_begin[p]; e < piece_begin[p + 1]; ++e)
      d[e] = x.reduce ? isa::round_to(dt, d[e] + s[e]) : s[e];
}

collective_plan plan_collective(const Topology& topo_, Collective c, Algorithm a, uint64_t count,
                                isa::DType dt) {
  if (dt != isa::DType::fp32 && dt != isa::DType::bf16)
    throw std::invalid_argument("collectives support fp32 and bf16");
  const uint32_t R = topo_.ranks();
  std::vector<Dim> dims;
  uint32_t halves = 1;
  if (a == Algorithm::ring) {
    Dim d;
    d.lines.push_back(ring_order(topo_));
    for (uint32_t r = 0; r < R; ++r) d.digit.push_back(r);
    dims.push_back(std::move(d));
  } else {
    dims = torus_dims(topo_);
    halves = 2;
  }
  // Pieces: block b (rank b's share) split into `halves` parts.
  std::vector<uint64_t> piece_begin;
  for (uint32_t b = 0; b < R; ++b) {
    const uint64_t lo = b * (count / R) + std::min<uint64_t>(b, count % R);
    const uint64_t len = count / R + (b < count % R ? 1 : 0);
    piece_begin.push_back(lo);
    if (halves == 2) piece_begin.push_back(lo + (len + 1) / 2);
  }
  piece_begin.push_back(count);

  Builder bld{R,           halves, isa::dtype_size(dt),
              piece_begin, {},     std::vector<std::vector<uint32_t>>(R)};
  // Blocks each rank holds before each dimension's reduce_scatter (and after its
  // all_gather): all, then those whose digits match the rank's so far.
  std::vector<std::vector<std::vector<uint32_t>>> held(dims.size() + 1,
                                                       std::vector<std::vector<uint32_t>>(R));
  for (uint32_t r = 0; r < R; ++r)
    for (uint32_t b = 0; b < R; ++b) held[0][r].push_back(b);
  for (size_t d = 0; d < dims.size(); ++d)
    for (uint32_t r = 0; r < R; ++r)
      for (uint32_t b : held[d][r])
        if (dims[d].digit[b] == dims[d].digit[r]) held[d + 1][r].push_back(b);
  if (c != Collective::all_gather)
    for (size_t d = 0; d < dims.size(); ++d) bld.phase(dims[d], held[d], true);
  if (c != Collective::reduce_scatter)
    for (size_t d = dims.size(); d-- > 0;) bld.phase(dims[d], held[d], false);

  return {std::move(bld.xfers), std::move(piece_begin)};
}

collective_result CollectiveEngine::run(Collective c, Algorithm a, uint64_t count, isa::DType dt,
                                        std::vector<std::vector<float>>* data) {
  const uint32_t R = topo_.ranks();
  if (data) {
    if (data->size() != R) throw std::invalid_argument("one buffer per rank expected");
    for (const auto& b : *data)
      if (b.size() != count) throw std::invalid_argument("every buffer must hold count values");
  }
  collective_plan p = plan_collective(topo_, c, a, count, dt);
  return execute(topo_, records_, p.xfers, p.piece_begin, dt, data, R);
}

collective_plan plan_direct(const Topology& t, const std::vector<direct_send>& sends) {
  collective_plan p;
  for (const direct_send& d : sends) {
    if (d.src >= t.ranks() || d.dst >= t.ranks())
      throw std::invalid_argument("a transfer names a rank beyond the topology's");
    if (d.src == d.dst || d.bytes == 0) continue;
    Xfer x;
    x.src = d.src;
    x.dst = d.dst;
    x.bytes = d.bytes;
    p.xfers.push_back(std::move(x));
  }
  p.piece_begin = {0};
  return p;
}

std::vector<direct_send> all_to_all_sends(uint32_t n, uint64_t bytes) {
  std::vector<direct_send> sends;
  sends.reserve(static_cast<size_t>(n) * n);
  for (uint32_t p = 0; p < n; ++p)
    for (uint32_t k = 0; k < n; ++k) sends.push_back({p, (p + k) % n, bytes});
  return sends;
}

collective_result CollectiveEngine::run_direct(const std::vector<direct_send>& sends) {
  collective_plan p = plan_direct(topo_, sends);
  return execute(topo_, records_, p.xfers, p.piece_begin, isa::DType::fp32, nullptr, topo_.ranks());
}

}  // namespace trnsim::models::network
