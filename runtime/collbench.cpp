#include "runtime/collbench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "models/common/sim_time.h"
#include "models/network/collective_engine.h"
#include "models/network/collective_engine_tlm.h"
#include "models/network/network_tlm.h"
#include "platform/config.h"
#include "platform/units.h"
#include "runtime/tensor.h"

namespace trnsim::runtime {

namespace net = models::network;

const char* kCollbenchHelp =
    "usage: trnsim collbench all_reduce|all_gather|reduce_scatter|all_to_all|permute\n"
    "       [options]; all_to_all: rank i sends block j of its buffer to rank j;\n"
    "       permute: rank i sends its whole buffer to rank i + 1 (mod ranks); both\n"
    "       move data without arithmetic, all transfers at once (timing only)\n"
    "  -c, --config C     platform config (default trn2); its network: section\n"
    "  --set KEY=VALUE    override a config key (e.g. network.nodes=2)\n"
    "  --ranks N          ranks (default: one per chip of a node)\n"
    "  --per-chip K       ranks on each chip (cores; default 1); chips, then nodes,\n"
    "                     fill in order\n"
    "  --sizes A[:B]      message sizes, A to B doubling (e.g. 8B:1GiB; default 1MiB)\n"
    "  --dtype fp32|bf16  element type (default fp32)\n"
    "  --algo ring|torus  ring: one ring over all ranks; torus: dimension-wise over\n"
    "                     cores, torus x, torus y and nodes, both ways (default: torus\n"
    "                     when the ranks fill whole nodes or one chip, else ring)\n"
    "  --check            carry real data and compare with a float64 sum\n"
    "  --out FILE.npy     with one size: write the final buffers [ranks, count]\n"
    "  --links            print the busiest links of the largest size\n"
    "  --trace FILE.json  with one size: a Perfetto/Chrome trace, one track per link\n"
    "                     (and DMA, intra-chip path, node port), a slice per transfer\n"
    "  --tlm              time the same transfers on SystemC/TLM link blocks, run by\n"
    "                     each chip's collective engine (models/network/\n"
    "                     collective_engine_tlm.h: first come first served on each\n"
    "                     link, a rank's DMA a link too) instead of the analytic model;\n"
    "                     not with --trace or --links\n";

double collbench_input(uint32_t rank, uint64_t i) {
  return static_cast<double>(static_cast<int64_t>((rank * 131ull + i * 71ull) % 1021) - 510) / 64.0;
}

namespace {

bool take(const std::vector<std::string>& args, size_t& i, const std::string& flag,
          const std::string& alias, std::string& out) {
  const std::string& a = args[i];
  for (const std::string& f : {flag, alias}) {
    if (f.empty()) continue;
    if (a == f) {
      if (i + 1 >= args.size()) throw CollbenchUsage("collbench: " + f + " needs a value");
      out = args[++i];
      return true;
    }
    if (a.rfind(f + "=", 0) == 0) {
      out = a.substr(f.size() + 1);
      return true;
    }
  }
  return false;
}

uint32_t positive(const std::string& flag, const std::string& v) {
  uint64_t n = 0;
  try {
    n = platform::parse_count(v);
  } catch (const std::exception&) {
    throw CollbenchUsage("collbench: " + flag + ": '" + v + "' is not a positive integer");
  }
  if (n == 0 || n > 1u << 20)
    throw CollbenchUsage("collbench: " + flag + ": " + v + " must be 1..1048576");
  return static_cast<uint32_t>(n);
}

uint64_t size_of(const std::string& v) {
  try {
    return platform::parse_size(v);
  } catch (const std::exception& e) {
    throw CollbenchUsage("collbench: --sizes: '" + v + "': " + e.what());
  }
}

std::string fixed(double v, int prec) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

std::string pad(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

// Chrome trace-event JSON (Perfetto opens it): one track per resource that carried
// data, named after it, and a slice per transfer while its bytes flow.
void write_trace(const std::string& path, const net::Topology& topo,
                 const std::vector<net::transfer_record>& records) {
  std::map<const net::Link*, size_t> track;
  size_t i = 0;
  for (const net::Link& l : topo.links()) track[&l] = i++;
  std::set<size_t> used;
  std::string j = "{\"traceEvents\": [\n";
  bool first = true;
  const auto event = [&](const std::string& e) {
    j += (first ? "  " : ",\n  ") + e;
    first = false;
  };
  for (const net::transfer_record& r : records)
    for (const net::Link* l : r.route) {
      used.insert(track.at(l));
      event("{\"name\": \"rank" + std::to_string(r.src) + " -> rank" + std::to_string(r.dst) +
            "\", \"ph\": \"X\", \"pid\": 0, \"tid\": " + std::to_string(track.at(l)) +
            ", \"ts\": " + fixed(r.start * 1e6, 6) +
            ", \"dur\": " + fixed((r.drain - r.start) * 1e6, 6) + ", \"args\": {\"bytes\": " +
            std::to_string(r.bytes) + ", \"arrives_us\": " + fixed(r.end * 1e6, 6) + "}}");
    }
  i = 0;
  for (const net::Link& l : topo.links()) {
    if (used.count(i))
      event("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " + std::to_string(i) +
            ", \"args\": {\"name\": \"" + l.name() + "\"}}");
    ++i;
  }
  event(
      "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": "
      "\"network\"}}");
  j += "\n]}\n";
  write_file(path, j);
}

}  // namespace

int collbench(const std::vector<std::string>& args, std::ostream& out) {
  std::string config = "trn2", v, coll_name, out_path, trace_path;
  std::vector<std::string> sets;
  uint32_t ranks = 0, per_chip = 1;
  uint64_t lo = 1 << 20, hi = 1 << 20;
  isa::DType dt = isa::DType::fp32;
  std::string algo;
  bool check = false, links = false, tlm = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      out << kCollbenchHelp;
      return 0;
    } else if (take(args, i, "--config", "-c", v)) {
      config = v;
    } else if (take(args, i, "--set", "", v)) {
      sets.push_back(v);
    } else if (take(args, i, "--ranks", "", v)) {
      ranks = positive("--ranks", v);
    } else if (take(args, i, "--per-chip", "", v)) {
      per_chip = positive("--per-chip", v);
    } else if (take(args, i, "--sizes", "", v)) {
      const size_t colon = v.find(':');
      lo = size_of(v.substr(0, colon));
      hi = colon == std::string::npos ? lo : size_of(v.substr(colon + 1));
      if (lo == 0 || hi < lo)
        throw CollbenchUsage("collbench: --sizes " + v + ": expected 0 < A <= B");
    } else if (take(args, i, "--dtype", "", v)) {
      if (v == "fp32")
        dt = isa::DType::fp32;
      else if (v == "bf16")
        dt = isa::DType::bf16;
      else
        throw CollbenchUsage("collbench: --dtype: expected fp32 or bf16, got '" + v + "'");
    } else if (take(args, i, "--algo", "", v)) {
      algo = v;
    } else if (take(args, i, "--out", "", v)) {
      out_path = v;
    } else if (take(args, i, "--trace", "", v)) {
      trace_path = v;
    } else if (args[i] == "--check") {
      check = true;
    } else if (args[i] == "--links") {
      links = true;
    } else if (args[i] == "--tlm") {
      tlm = true;
    } else if (!args[i].empty() && args[i][0] != '-' && coll_name.empty()) {
      coll_name = args[i];
    } else {
      throw CollbenchUsage("collbench: unknown argument '" + args[i] + "'");
    }
  }
  if (coll_name.empty())
    throw CollbenchUsage(
        "collbench: which collective? (all_reduce, all_gather, reduce_scatter, all_to_all, "
        "permute)");
  net::Collective coll = net::Collective::all_reduce;
  // all_to_all and permute: point-to-point transfers (run_direct), timing only.
  const bool direct = coll_name == "all_to_all" || coll_name == "permute";
  try {
    if (!direct) coll = net::parse_collective(coll_name);
  } catch (const std::invalid_argument& e) {
    throw CollbenchUsage(std::string("collbench: ") + e.what() + " (or all_to_all, permute)");
  }
  if (direct && (check || !out_path.empty()))
    throw CollbenchUsage("collbench: " + coll_name +
                         " moves data without arithmetic: no --check or --out (timing only)");
  if (direct && !algo.empty())
    throw CollbenchUsage("collbench: " + coll_name +
                         " sends directly (every transfer at once): no --algo");
  if (!out_path.empty() && lo != hi)
    throw CollbenchUsage("collbench: --out needs one size (--sizes A)");
  if (!trace_path.empty() && lo != hi)
    throw CollbenchUsage("collbench: --trace needs one size (--sizes A)");

  const platform::platform_config cfg = platform::load_config(config, sets);
  net::topology_params tp;
  tp.net = cfg.network;
  tp.cores_per_chip = cfg.cores;
  tp.dma_bps =
      net::collective_dma_rate(cfg.network, cfg.core.dma.engines, cfg.core.dma.bandwidth_bps,
                               cfg.core.dma.core_bandwidth_bps);
  tp.per_chip = per_chip;
  tp.ranks = ranks ? ranks : per_chip * cfg.network.chips;
  const uint64_t esize = isa::dtype_size(dt);
  const std::string tname = dt == isa::DType::bf16 ? "bf16" : "fp32";

  // The algorithm: as asked, else torus where it fits.
  net::Algorithm alg = net::Algorithm::ring;
  {
    std::unique_ptr<net::Topology> probe_ptr;
    try {
      probe_ptr = std::make_unique<net::Topology>(tp);
    } catch (const std::invalid_argument& e) {  // the ranks do not fit
      throw CollbenchUsage(std::string("collbench: ") + e.what());
    }
    const net::Topology& probe = *probe_ptr;
    if (!algo.empty()) {
      try {
        alg = net::parse_algorithm(algo);
      } catch (const std::invalid_argument& e) {
        throw CollbenchUsage(std::string("collbench: --algo: ") + e.what());
      }
    }
    const bool whole = net::torus_fits(probe);
    if (algo.empty()) alg = direct ? net::Algorithm::direct : net::choose_algorithm(probe);
    if (tlm && (links || !trace_path.empty()))
      throw CollbenchUsage("collbench: --tlm has no --links or --trace");
    if (alg == net::Algorithm::torus && !whole)  // before any output
      throw CollbenchUsage("collbench: the torus algorithm needs whole nodes: " +
                           std::to_string(probe.chips_used()) + " chips used, nodes have " +
                           std::to_string(cfg.network.chips) + " (use --algo ring)");
    out << "# collbench " << coll_name << " on " << cfg.name << ": " << tp.ranks << " ranks ("
        << per_chip << " per chip, " << probe.chips_used() << " chips, " << probe.nodes_used()
        << (probe.nodes_used() == 1 ? " node" : " nodes") << "), algorithm "
        << net::algorithm_name(alg) << (tlm ? " (TLM links)" : "") << ", " << tname << "\n";
  }
  // SystemC elaborates once: one TLM network runs every size in turn, each from the
  // previous one's end (so none queues behind another).
  // The chips' collective engines run it as under `trnsim run`, on SystemC threads;
  // with no cores here, each rank's DMA is its link of the network.
  std::unique_ptr<net::tlm_network> tlm_net;
  std::unique_ptr<net::chip_collectives> tlm_engines;
  sc_core::sc_time tlm_at = sc_core::SC_ZERO_TIME;
  if (tlm) {
    tlm_net = std::make_unique<net::tlm_network>("collbench_network", tp);
    tlm_engines = std::make_unique<net::chip_collectives>(*tlm_net, nullptr);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaborate: bind the sockets
  }
  const uint32_t n = tp.ranks;
  std::vector<uint32_t> members(n);
  for (uint32_t r = 0; r < n; ++r) members[r] = r;
  const double bus_factor = coll_name == "permute" ? 1.0
                            : coll == net::Collective::all_reduce && !direct
                                ? 2.0 * (n - 1) / n
                                : static_cast<double>(n - 1) / n;
  out << "#" << pad("size(B)", 13) << pad("count(elems)", 14) << pad("type", 6)
      << pad("time(us)", 12) << pad("algbw(GB/s)", 13) << pad("busbw(GB/s)", 13)
      << (check ? pad("check", 8) : "") << "\n";
  std::vector<std::string> busiest;
  int status = 0;
  for (uint64_t size = lo; size <= hi; size *= 2) {
    const uint64_t count = std::max<uint64_t>(1, size / esize);
    const uint64_t bytes = count * esize;
    net::Topology topo(tp);
    net::CollectiveEngine eng(topo);
    std::vector<net::transfer_record> records;
    if (!trace_path.empty()) eng.record_to(&records);
    std::vector<std::vector<float>> data;
    if (check || !out_path.empty()) {
      if (uint64_t{n} * count * 4 > (1ull << 30))
        throw CollbenchUsage(
            "collbench: --check/--out hold every rank's buffer: " + std::to_string(n) + " x " +
            std::to_string(count) + " values exceed 1 GiB; use smaller --sizes");
      data.assign(n, std::vector<float>(count));
      for (uint32_t r = 0; r < n; ++r)
        for (uint64_t i = 0; i < count; ++i)
          data[r][i] = isa::round_to(dt, static_cast<float>(collbench_input(r, i)));
    }
    std::vector<std::vector<float>> input = check ? data : std::vector<std::vector<float>>{};
    net::collective_result res;
    try {
      std::vector<net::direct_send> sends;
      if (coll_name == "permute")
        for (uint32_t r = 0; r < n; ++r) sends.push_back({r, (r + 1) % n, bytes});
      if (coll_name == "all_to_all") sends = net::all_to_all_sends(n, count / n * esize);
      if (tlm_net) {
        net::collective_plan plan = direct ? net::plan_direct(topo, sends)
                                           : net::plan_collective(topo, coll, alg, count, dt);
        auto c = std::make_shared<net::tlm_collective>();
        c->plan = std::move(plan);
        c->members = members;
        c->dt = dt;
        c->data = std::move(data);
        std::string failed;
        c->failed = [&failed](const std::string& why) { failed = why; };
        if (tlm_at > sc_core::sc_time_stamp()) sc_core::sc_start(tlm_at - sc_core::sc_time_stamp());
        tlm_engines->start(c);
        sc_core::sc_start();  // until every transfer arrived
        if (!failed.empty()) throw std::runtime_error(failed);
        if (c->done != c->plan.xfers.size())
          throw std::logic_error("collbench: a TLM collective did not complete");
        res = c->res;
        data = std::move(c->data);
        tlm_at = sc_core::sc_time_stamp() + sc_core::sc_time(1, sc_core::SC_US);
      } else if (direct) {
        res = eng.run_direct(sends);
      } else {
        res = eng.run(coll, alg, count, dt, data.empty() ? nullptr : &data);
      }
    } catch (const std::invalid_argument& e) {
      throw CollbenchUsage(std::string("collbench: ") + e.what());
    }
    const double algbw = res.time_s > 0 ? static_cast<double>(bytes) / res.time_s / 1e9 : 0;
    out << " " << pad(std::to_string(bytes), 13) << pad(std::to_string(count), 14) << pad(tname, 6)
        << pad(fixed(res.time_s * 1e6, 2), 12) << pad(fixed(algbw, 2), 13)
        << pad(fixed(algbw * bus_factor, 2), 13);
    if (check) {
      // Each rank's expected values: the float64 sum of every rank's input (all_reduce,
      // and reduce_scatter on the rank's own block) or the owner's input (all_gather),
      // within the rounding of n - 1 additions in the dtype.
      const double eps = dt == isa::DType::bf16 ? 1.0 / 256 : 1.0 / (1 << 23);
      const auto block_begin = [&](uint64_t r) {
        return r * (count / n) + std::min<uint64_t>(r, count % n);
      };
      bool ok = true;
      uint32_t owner = 0;  // the rank whose block holds element i
      for (uint64_t i = 0; i < count && ok; ++i) {
        while (i >= block_begin(owner + 1)) ++owner;
        double want = 0, mag = 0;
        if (coll == net::Collective::all_gather) {
          want = input[owner][i];
        } else {
          for (uint32_t q = 0; q < n; ++q) {
            want += input[q][i];
            mag += std::fabs(input[q][i]);
          }
        }
        for (uint32_t r = 0; r < n && ok; ++r) {
          if (coll == net::Collective::reduce_scatter && r != owner) continue;
          if (std::fabs(data[r][i] - want) > eps * mag * n) ok = false;
        }
      }
      out << pad(ok ? "ok" : "FAIL", 8);
      if (!ok) status = 1;
    }
    out << "\n";
    if (!out_path.empty()) {
      std::vector<float> flat;
      for (const auto& b : data) flat.insert(flat.end(), b.begin(), b.end());
      write_npy(out_path,
                HostTensor::from_float({static_cast<int64_t>(n), static_cast<int64_t>(count)},
                                       isa::DType::fp32, flat));
    }
    if (!trace_path.empty()) write_trace(trace_path, topo, records);
    if (links && size * 2 > hi) {
      std::vector<const net::Link*> ls;
      for (const net::Link& l : topo.links())
        if (l.stats().transfers) ls.push_back(&l);
      // Utilisation: bytes over what the resource could move in the whole time.
      const auto util = [&](const net::Link* l) {
        return static_cast<double>(l->stats().bytes) / l->params().bandwidth_bps / res.time_s;
      };
      std::stable_sort(ls.begin(), ls.end(),
                       [&](const net::Link* a, const net::Link* b) { return util(a) > util(b); });
      out << "# busiest resources at " << bytes
          << " B: name, bytes, transfers, busy % (carrying data), utilisation % of "
          << fixed(res.time_s * 1e6, 2) << " us at its bandwidth\n";
      for (size_t k = 0; k < ls.size() && k < 8; ++k)
        out << "#   " << ls[k]->name() << "  " << ls[k]->stats().bytes << "  "
            << ls[k]->stats().transfers << "  "
            << fixed(100 * ls[k]->stats().busy_s / res.time_s, 1) << "  "
            << fixed(100 * util(ls[k]), 1) << "\n";
    }
    if (size > hi / 2) break;  // no overflow past hi
  }
  return status;
}

}  // namespace trnsim::runtime
