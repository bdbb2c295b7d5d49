#include "runtime/comm_profile.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "models/isa/instruction.h"

namespace trnsim::runtime {

namespace {

using span = std::pair<uint64_t, uint64_t>;  // [begin, end) in ps

std::vector<span> merged(std::vector<span> v) {
  std::sort(v.begin(), v.end());
  std::vector<span> out;
  for (const span& s : v) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second)
      out.back().second = std::max(out.back().second, s.second);
    else
      out.push_back(s);
  }
  return out;
}

uint64_t length(const std::vector<span>& v) {
  uint64_t n = 0;
  for (const span& s : v) n += s.second - s.first;
  return n;
}

// Length of the intersection of two merged lists.
uint64_t common(const std::vector<span>& a, const std::vector<span>& b) {
  uint64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t lo = std::max(a[i].first, b[j].first);
    const uint64_t hi = std::min(a[i].second, b[j].second);
    if (hi > lo) n += hi - lo;
    (a[i].second < b[j].second ? i : j) += 1;
  }
  return n;
}

uint64_t ps(const sc_core::sc_time& t) {
  return static_cast<uint64_t>(t.to_seconds() * 1e12 + 0.5);
}

std::string group_text(const std::vector<uint32_t>& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i) s += (i ? "," : "") + std::to_string(g[i]);
  return s + "]";
}

}  // namespace

void add_comm_profile(const models::network::collective_unit& unit, trace::recorder* trace,
                      const std::vector<Launch>& launches,
                      const std::vector<platform::neuron_core*>& cores, const sc_core::sc_time&,
                      RunReport& rep) {
  namespace net = models::network;
  for (const net::collective_summary& c : unit.summaries())
    rep.collectives.push_back(
        {std::string(isa::opcode_name(c.op)), net::algorithm_name(c.algorithm),
         std::string(isa::dtype_name(c.dtype)), c.group, c.count, c.runs, c.network_ns});
  for (const net::link_summary& l : unit.links())
    rep.links.push_back({l.name, l.bytes, l.transfers, l.busy_ns, l.contended_ns});
  for (size_t i = 0; i < launches.size() && i < rep.launches.size(); ++i) {
    LaunchResult& lr = rep.launches[i];
    const auto rank = static_cast<uint32_t>(launches[i].rank);
    const std::string process = cores[launches[i].core]->name();
    std::vector<span> comm;
    for (const net::collective_window& w : unit.windows())
      if (w.rank == rank) comm.push_back({ps(w.start), ps(w.end)});
    comm = merged(std::move(comm));
    lr.comm_ns = double(length(comm)) / 1e3;
    if (!trace) continue;
    std::vector<span> work;
    for (const auto& iv : trace->intervals_of(process))
      if (!isa::is_collective(iv.in->op)) work.push_back({iv.start_ps, iv.end_ps});
    lr.overlap_ns = double(common(comm, merged(std::move(work)))) / 1e3;
    lr.overlap_known = true;
    trace->label_process(process, "rank " + std::to_string(rank) + " (" + process + ")");
    const uint32_t track = trace->named_track(process, "collectives");
    for (const net::collective_window& w : unit.windows())
      if (w.rank == rank)
        trace->span(track, std::string(isa::opcode_name(w.op)), w.start, w.end - w.start, "");
  }
  if (trace)
    for (const net::transfer_span& t : unit.transfers())
      trace->span(trace->named_track("network", t.link),
                  "rank " + std::to_string(t.src) + " -> " + std::to_string(t.dst), t.start,
                  t.drain - t.start, "\"bytes\": " + std::to_string(t.bytes));
}

std::string format_comm_profile(const RunReport& rep) {
  std::string s;
  char buf[320];
  if (!rep.collectives.empty()) s += "collectives:\n";
  for (const CollectiveLine& c : rep.collectives) {
    std::snprintf(buf, sizeof buf,
                  "  %s group %s %llu %s: algorithm %s, %llu run(s), %.1f ns each\n", c.op.c_str(),
                  group_text(c.group).c_str(), static_cast<unsigned long long>(c.count),
                  c.dtype.c_str(), c.algorithm.c_str(), static_cast<unsigned long long>(c.runs),
                  c.network_ns);
    s += buf;
  }
  const double step = rep.simulated_ns;
  const auto pct = [&](double v) { return step > 0 ? 100.0 * v / step : 0.0; };
  if (!rep.links.empty()) s += "links (busy and contended: % of the step):\n";
  for (const LinkLine& l : rep.links) {
    std::snprintf(
        buf, sizeof buf, "  %-24s %12llu bytes %8llu transfers  busy %5.1f%%  contended %5.1f%%\n",
        l.name.c_str(), static_cast<unsigned long long>(l.bytes),
        static_cast<unsigned long long>(l.transfers), pct(l.busy_ns), pct(l.contended_ns));
    s += buf;
  }
  // The step's communication: the rank with the most; overlap summed over ranks.
  double comm = 0, total = 0, overlap = 0, contention = 0;
  bool known = !rep.launches.empty();
  for (const LaunchResult& l : rep.launches) {
    comm = std::max(comm, l.comm_ns);
    total += l.comm_ns;
    overlap += l.overlap_ns;
    contention += l.contention_ns;
    known = known && l.overlap_known;
  }
  if (rep.collectives.empty()) return s;
  std::snprintf(buf, sizeof buf,
                "communication: %.1f ns (%.1f%% of the step, the busiest rank), slowed %.1f ns by "
                "compute sharing DMA/HBM (all ranks)",
                comm, pct(comm), contention);
  s += buf;
  if (known) {
    std::snprintf(buf, sizeof buf, "; %.1f%% of it overlapped compute\n",
                  total > 0 ? 100.0 * overlap / total : 0.0);
    s += buf;
  } else {
    s += "; overlap with compute: run with --comm-profile or --trace\n";
  }
  for (const LaunchResult& l : rep.launches) {
    if (!l.overlap_known) continue;
    std::snprintf(buf, sizeof buf,
                  "  rank %d: communication %.1f ns, %.1f ns of it overlapped compute (%.1f%%)\n",
                  l.rank, l.comm_ns, l.overlap_ns,
                  l.comm_ns > 0 ? 100.0 * l.overlap_ns / l.comm_ns : 0.0);
    s += buf;
  }
  return s;
}

}  // namespace trnsim::runtime
