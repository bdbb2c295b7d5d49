#include "models/network/collective_unit.h"

#include <algorithm>
#include <stdexcept>

#include "models/common/scheduler.h"
#include "models/common/sim_time.h"

namespace trnsim::models::network {

namespace {

std::string list(const std::vector<uint32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// "all_reduce (line 12) group [0,1] src 1024 fp32 dst 1024 fp32"
std::string describe(const isa::Instruction& in) {
  std::string s(isa::opcode_name(in.op));
  if (in.line) s += " (line " + std::to_string(in.line) + ")";
  s += " group " + list(in.group);
  if (in.op != isa::Opcode::barrier)
    s += " src " + std::to_string(in.src[0].elems()) + " " +
         std::string(isa::dtype_name(in.src[0].dtype)) + " dst " + std::to_string(in.dst.elems()) +
         " " + std::string(isa::dtype_name(in.dst.dtype));
  return s;
}

bool same_shape(const isa::Instruction& a, const isa::Instruction& b) {
  if (a.op != b.op || a.group != b.group) return false;
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

}  // namespace

collective_result run_group(Collective c, const topology_params& base,
                            const std::vector<uint32_t>& group, uint64_t count, isa::DType dt,
                            std::vector<std::vector<float>>* data) {
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
  Topology topo(tp);
  CollectiveEngine eng(topo);
  return eng.run(c, Algorithm::ring, count, dt, data);
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
  if (auto it = waiting_.find(in.group); it != waiting_.end() && !it->second.empty()) {
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
  std::vector<arrival>& arr = waiting_[in.group];
  arr.push_back({rank, &in, w, models::now()});
  if (simulated_ > 0)  // the folded ranks this one stands for, no waiter of their own
    for (uint32_t m : in.group)
      if (m >= simulated_ && m % simulated_ == rank)
        arr.push_back({m, &in, nullptr, models::now()});
  if (arr.size() < in.group.size()) return;
  std::vector<arrival> all;
  all.swap(arr);
  waiting_.erase(in.group);
  finish(all);
}

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
  collective_result res;
  const auto key = std::make_tuple(static_cast<int>(in.op), g, count, static_cast<int>(dt));
  try {
    if (!data.empty()) {
      res = run_group(c, base_, g, count, dt, &data);
      times_[key] = res;
    } else if (auto it = times_.find(key); it != times_.end()) {
      res = it->second;
    } else {
      res = times_[key] = run_group(c, base_, g, count, dt, nullptr);
    }
  } catch (const std::exception& e) {
    std::vector<uint32_t> who;
    for (const auto& a : all) who.push_back(a.rank);
    fault(who, in, e.what());
    return;
  }
  if (!data.empty()) {
    for (uint64_t p = 0; p < G; ++p) {
      const isa::Instruction& mine = *std::find_if(all.begin(), all.end(), [&](const arrival& a) {
                                        return a.rank == g[p];
                                      })->in;
      const uint64_t from = in.op == isa::Opcode::reduce_scatter ? p * mine.dst.elems() : 0;
      write(g[p], mine.dst, data[p], from);
    }
  }
  const sc_core::sc_time now = models::now();
  const sc_core::sc_time dur = seconds_to_time(res.time_s);
  for (const auto& a : all) {
    rank_comm_stats& s = stats_[a.rank];
    s.collectives += 1;
    s.collective_ns += res.time_s * 1e9;
    s.rendezvous_ns += (now - a.at).to_seconds() * 1e9;
    s.bytes += res.link_bytes / G;
  }
  for (const auto& a : all)
    if (a.w) a.w->collective_ready(dur);
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
