#include "runtime/roofline.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "runtime/report.h"

namespace trnsim::runtime {

namespace {

// Length of the union of intervals [ps], sorting them.
uint64_t union_ps(std::vector<std::pair<uint64_t, uint64_t>>& v) {
  std::sort(v.begin(), v.end());
  uint64_t total = 0, lo = 0, hi = 0;
  bool open = false;
  for (const auto& [s, e] : v) {
    if (open && s <= hi) {
      hi = std::max(hi, e);
      continue;
    }
    if (open) total += hi - lo;
    lo = s, hi = e, open = true;
  }
  if (open) total += hi - lo;
  return total;
}

std::string fmt(const char* f, double a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}
std::string time_ns(double ns) {
  if (ns >= 1e6) return fmt("%.3f ms", ns / 1e6);
  if (ns >= 1e3) return fmt("%.3f us", ns / 1e3);
  return fmt("%.1f ns", ns);
}

// A stats group name: dots would read as nesting in the dotted names of `meta`.
std::string key_of(std::string s) {
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

}  // namespace

std::vector<double> attribute_time(const compiler::ProgramRoofline& meta, const isa::Program& p,
                                   const std::vector<trace::recorder::interval>& iv,
                                   double* busy_ns) {
  // Queues by the address of their first instruction, to find an instruction's.
  struct Range {
    const isa::Instruction* begin;
    size_t size, queue;
  };
  std::vector<Range> ranges;
  for (size_t q = 0; q < p.queues.size() && q < meta.instr_kind.size(); ++q)
    if (!p.queues[q].instrs.empty())
      ranges.push_back({p.queues[q].instrs.data(), p.queues[q].instrs.size(), q});
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return std::less<>()(a.begin, b.begin); });
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> per(meta.kinds.size());
  std::vector<std::pair<uint64_t, uint64_t>> all;
  all.reserve(iv.size());
  for (const auto& x : iv) {
    auto it = std::upper_bound(
        ranges.begin(), ranges.end(), x.in,
        [](const isa::Instruction* in, const Range& r) { return std::less<>()(in, r.begin); });
    if (it == ranges.begin()) continue;  // another program's instruction
    --it;
    // By address: the instruction may be another program's (another array).
    const auto at = reinterpret_cast<uintptr_t>(x.in),
               base = reinterpret_cast<uintptr_t>(it->begin);
    const size_t idx = (at - base) / sizeof(isa::Instruction);
    if (at < base || idx >= it->size) continue;
    all.emplace_back(x.start_ps, x.end_ps);
    const int32_t k = meta.instr_kind[it->queue][idx];
    if (k >= 0 && size_t(k) < per.size()) per[size_t(k)].emplace_back(x.start_ps, x.end_ps);
  }
  std::vector<double> ns(per.size());
  for (size_t k = 0; k < per.size(); ++k) ns[k] = double(union_ps(per[k])) / 1e3;
  if (busy_ns) *busy_ns = double(union_ps(all)) / 1e3;
  return ns;
}

Roofline make_roofline(const platform::platform_config& cfg, uint32_t cores,
                       const compiler::ProgramRoofline* meta, const isa::Program& p,
                       const std::array<uint64_t, isa::kNumDTypes>& executed, double simulated_ns,
                       const std::vector<double>* kind_ns, double busy_ns) {
  Roofline r;
  r.available = true;
  r.from_compiler = meta != nullptr;
  r.cores = std::max<uint32_t>(1, cores);
  r.peak_bf16 = peak_flops(cfg, isa::DType::bf16) * r.cores;
  r.peak_fp32 = peak_flops(cfg, isa::DType::fp32) * r.cores;
  r.hbm_bps = cfg.hbm.bandwidth_bps;
  r.dma_bps = double(r.cores) * cfg.core.dma.core_rate_bps();
  r.memory_bps = std::min(r.hbm_bps, r.dma_bps);
  r.dma_engines = cfg.core.dma.engines;
  r.dma_engine_bps = cfg.core.dma.bandwidth_bps;
  r.dma_core_bps = cfg.core.dma.core_bandwidth_bps;
  auto compute_ns = [&](const compiler::FlopsByDtype& f) {
    double ns = 0;
    for (int t = 0; t < isa::kNumDTypes; ++t)
      if (f[size_t(t)] > 0)
        ns += f[size_t(t)] / (peak_flops(cfg, static_cast<isa::DType>(t)) * r.cores) * 1e9;
    return ns;
  };
  auto sum = [](const compiler::FlopsByDtype& f) {
    double s = 0;
    for (double x : f) s += x;
    return s;
  };
  r.total.kind = "whole program";
  r.total.simulated_ns = simulated_ns;
  if (meta) {
    r.total.flops = sum(meta->flops);
    r.total.compute_ns = compute_ns(meta->flops);
    r.total.min_bytes = meta->min_bytes;
    r.attributed = kind_ns && kind_ns->size() == meta->kinds.size();
    r.busy_ns = r.attributed ? busy_ns : 0;
    for (size_t k = 0; k < meta->kinds.size(); ++k) {
      const compiler::RooflineKind& mk = meta->kinds[k];
      RooflineRow row;
      row.kind = mk.name;
      row.count = mk.count;
      row.flops = sum(mk.flops);
      row.compute_ns = compute_ns(mk.flops);
      row.min_bytes = mk.min_bytes;
      row.memory_ns = double(mk.min_bytes) / r.memory_bps * 1e9;
      row.simulated_ns = r.attributed ? (*kind_ns)[k] : 0;
      for (const auto& [op, n] : mk.fused)
        row.fused += (row.fused.empty() ? "" : ", ") + op + " x" + std::to_string(n);
      r.kinds.push_back(std::move(row));
    }
    std::stable_sort(r.kinds.begin(), r.kinds.end(),
                     [](const RooflineRow& a, const RooflineRow& b) {
                       if (a.simulated_ns != b.simulated_ns) return a.simulated_ns > b.simulated_ns;
                       return a.roofline_ns() > b.roofline_ns();
                     });
  } else {
    compiler::FlopsByDtype f{};
    for (int t = 0; t < isa::kNumDTypes; ++t) f[size_t(t)] = double(executed[size_t(t)]);
    r.total.flops = sum(f);
    r.total.compute_ns = compute_ns(f);
    for (const auto& d : p.tensors)
      if (d.role != isa::TensorRole::scratch) r.total.min_bytes += d.bytes();
  }
  r.total.memory_ns = double(r.total.min_bytes) / r.memory_bps * 1e9;
  return r;
}

void add_roofline_stats(stats::group& root, const Roofline& r) {
  auto& g = root.child("roofline",
                       "least time for the config, max(FLOPs / peak, minimum HBM bytes / memory "
                       "bandwidth), against the simulated time (runtime/roofline.h)");
  g.add_fixed("from_compiler", "flag",
              "1: FLOPs and bytes of the compiled graph's ops; 0: the program's matmul FLOPs and "
              "the bytes of its input, constant and output tensors",
              r.from_compiler ? 1 : 0, true);
  g.add_fixed("cores", "cores", "cores the roofs are for", r.cores, true);
  g.add_fixed("peak_bf16_flops", "FLOP/s", "compute roof for bf16 (peak_flops x cores)",
              r.peak_bf16);
  g.add_fixed("peak_fp32_flops", "FLOP/s", "compute roof for fp32 (peak_flops x cores)",
              r.peak_fp32);
  g.add_fixed("memory_bandwidth_bps", "B/s",
              "memory roof: min(the chip's HBM bandwidth, cores x DMA engines x DMA bandwidth)",
              r.memory_bps);
  auto row = [](stats::group& x, const RooflineRow& w, bool with_count) {
    if (with_count) x.add_fixed("count", "nodes", "ONNX nodes of this kind", double(w.count), true);
    x.add_fixed("flops", "FLOP", "floating-point operations (compiler/roofline.h)", w.flops, true);
    x.add_fixed("min_bytes", "bytes", "HBM bytes it must move at minimum", double(w.min_bytes),
                true);
    x.add_fixed("compute_ns", "ns", "FLOPs / peak FLOP/s of their dtype", w.compute_ns);
    x.add_fixed("memory_ns", "ns", "min_bytes / memory roof", w.memory_ns);
    x.add_fixed("roofline_ns", "ns", "max(compute_ns, memory_ns)", w.roofline_ns());
    x.add_fixed("compute_bound", "flag", "1: compute_ns >= memory_ns, 0: memory bound",
                w.compute_bound() ? 1 : 0, true);
    x.add_fixed("simulated_ns", "ns",
                with_count ? "time at least one of its instructions was executing"
                           : "simulated time of the run",
                w.simulated_ns);
    x.add_fixed("efficiency_pct", "%", "roofline_ns / simulated_ns", w.efficiency_pct());
  };
  row(g.child("total", "the whole program"), r.total, false);
  if (r.attributed)
    g.add_fixed("busy_ns", "ns", "time at least one instruction was executing", r.busy_ns);
  if (!r.from_compiler) return;
  auto& kg = g.child("kinds", "per op kind (ONNX op type; fused ops count with their anchor)");
  for (const RooflineRow& w : r.kinds) row(kg.child(key_of(w.kind)), w, true);
}

std::string format_roofline(const Roofline& r) {
  if (!r.available) return "";
  std::string s =
      "  roofline         " +
      std::string(r.cores == 1 ? "one core" : std::to_string(r.cores) + " cores") + ": compute " +
      fmt("%.1f TFLOP/s bf16", r.peak_bf16 / 1e12) + fmt(" (%.1f fp32)", r.peak_fp32 / 1e12) +
      ", memory " + fmt("%.0f GB/s", r.memory_bps / 1e9) + " = min(HBM " +
      fmt("%.0f GB/s per chip", r.hbm_bps / 1e9) + ", " +
      (r.cores == 1 ? "" : std::to_string(r.cores) + " x ") + std::to_string(r.dma_engines) +
      " DMA engines x " + fmt("%.1f GB/s", r.dma_engine_bps / 1e9) + " or " +
      fmt("%.1f GB/s", r.dma_core_bps / 1e9) + " shared" + ")\n";
  char line[240];
  const char* head = "    %-20s %6s %10s %9s %11s %11s %7s  %s\n";
  std::snprintf(line, sizeof line, head, "op kind", "count", "GFLOP", "min MB", "roofline",
                "simulated", "effic.", "bound");
  s += line;
  auto emit = [&](const RooflineRow& w, const std::string& count, bool sim) {
    std::snprintf(line, sizeof line, "    %-20s %6s %10.4f %9.3f %11s %11s %7s  %s\n",
                  w.kind.c_str(), count.c_str(), w.flops / 1e9, double(w.min_bytes) / 1e6,
                  time_ns(w.roofline_ns()).c_str(), sim ? time_ns(w.simulated_ns).c_str() : "-",
                  sim && w.simulated_ns > 0 ? fmt("%.1f%%", w.efficiency_pct()).c_str() : "-",
                  w.roofline_ns() <= 0 ? "-"
                  : w.compute_bound()  ? "compute"
                                       : "memory");
    s += line;
  };
  for (const RooflineRow& w : r.kinds) emit(w, std::to_string(w.count), r.attributed);
  emit(r.total, "", true);
  if (r.from_compiler) {
    std::string fused;
    for (const RooflineRow& w : r.kinds)
      if (!w.fused.empty()) fused += (fused.empty() ? "" : "; ") + w.kind + " + " + w.fused;
    if (!fused.empty()) s += "    fused: " + fused + "\n";
  }
  if (r.attributed)
    s += "    simulated per kind: time some instruction of it executed (kinds overlap); no "
         "instruction executed " +
         time_ns(std::max(0.0, r.total.simulated_ns - r.busy_ns)) + " of the run\n";
  else if (!r.from_compiler)
    s += "    whole program only: matmul FLOPs run, bytes of the input, constant and output "
         "tensors (per kind needs an ONNX model)\n";
  return s;
}

}  // namespace trnsim::runtime
