#include "runtime/report.h"

#include <cstdio>

namespace trnsim::runtime {

namespace {
std::string fmt(const char* f, double a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}
std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return buf;
}
std::string human_time_ns(double ns) {
  if (ns >= 1e6) return fmt("%.3f ms", ns / 1e6);
  if (ns >= 1e3) return fmt("%.3f us", ns / 1e3);
  return fmt("%.1f ns", ns);
}
}  // namespace

double peak_flops(const platform::platform_config& cfg, isa::DType t) {
  const auto& te = cfg.core.tensor;
  double f = 2.0 * te.rows * te.cols * te.clock_hz;  // one MAC = 2 FLOP per PE per cycle
  if (t == isa::DType::fp32) f /= te.fp32_slowdown;
  if (isa::is_fp8(t) && te.fp8_double_row) f *= 2;
  return f;
}

std::string format_report(const isa::Program& p, const platform::platform_config& cfg,
                          const RunReport& r) {
  std::string s;
  char line[200];
  for (size_t li = 0; li < r.launches.size(); ++li) {
    const LaunchResult& l = r.launches[li];
    s += "program " + p.name + " on " + cfg.name + "\n";
    s += "  simulated time   " + human_time_ns(l.simulated_ns) + "\n";
    s += "  instructions     " + std::to_string(l.instructions) + "\n";
    s += "  engine      instructions         busy   active  semaphore wait   port stall\n";
    for (const auto& e : l.engines) {
      const double active = l.simulated_ns > 0 ? 100.0 * e.busy_ns / l.simulated_ns : 0.0;
      if (e.name == "dma") {
        // Active: some engine moving data (the profiler's DMA active %); busy is summed
        // over the core's engines, so the average engine's share is against all.
        const double all = l.simulated_ns * cfg.core.dma.engines;
        std::snprintf(line, sizeof line,
                      "  %-10s %13llu %12s %7.1f%%   (%u engines, each busy %.1f%%)\n",
                      e.name.c_str(), static_cast<unsigned long long>(e.instructions),
                      human_time_ns(e.busy_ns).c_str(),
                      l.simulated_ns > 0 ? 100.0 * e.active_ns / l.simulated_ns : 0.0,
                      cfg.core.dma.engines, all > 0 ? 100.0 * e.busy_ns / all : 0.0);
      } else {
        std::snprintf(line, sizeof line, "  %-10s %13llu %12s %7.1f%% %15s %12s\n", e.name.c_str(),
                      static_cast<unsigned long long>(e.instructions),
                      human_time_ns(e.busy_ns).c_str(), active,
                      human_time_ns(e.sem_wait_ns).c_str(), human_time_ns(e.port_stall_ns).c_str());
      }
      s += line;
    }
  }
  // The run as a whole (all launches).
  uint64_t q_instr = 0, q_bytes = 0, q_copies = 0;
  for (const auto& q : r.dma_queues)
    q_instr += q.instructions, q_bytes += q.bytes, q_copies += q.copies;
  s += "  DMA queues       " + std::to_string(r.dma_queues.size()) + " used, " +
       std::to_string(q_copies) + " copies, " + human_bytes(double(q_bytes));
  if (q_copies) s += ", " + human_bytes(double(q_bytes) / double(q_copies)) + " per copy";
  s += "\n";
  if (!r.dma_queues.empty() && r.dma_queues.size() <= 16) {
    s += "    queue            instructions     copies        bytes     per copy\n";
    for (const auto& q : r.dma_queues) {
      const std::string name = "core" + std::to_string(q.core) + ".dma" + std::to_string(q.engine) +
                               ".q" + std::to_string(q.queue);
      std::snprintf(line, sizeof line, "    %-16s %13llu %10llu %12s %12s\n", name.c_str(),
                    static_cast<unsigned long long>(q.instructions),
                    static_cast<unsigned long long>(q.copies), human_bytes(double(q.bytes)).c_str(),
                    q.copies ? human_bytes(double(q.bytes) / double(q.copies)).c_str() : "-");
      s += line;
    }
  }
  s += "  matmul           " + fmt("%.4g GFLOP", double(r.flops) / 1e9) +
       fmt(", %.3f TFLOP/s", r.tflops) + fmt(", MFU %.1f%%", r.mfu_pct) + " of the " +
       std::string(isa::dtype_name(r.mfu_dtype)) + " peak" +
       (r.cores > 1 ? " of " + std::to_string(r.cores) + " cores" : "") + "\n";
  s += "  SBUF             " + human_bytes(double(r.sbuf_touched_bytes)) + " touched, " +
       human_bytes(double(r.sbuf_high_water_bytes)) + " high water; PSUM " +
       human_bytes(double(r.psum_touched_bytes)) + " touched, " +
       human_bytes(double(r.psum_high_water_bytes)) + " high water\n";
  const double secs = r.simulated_ns * 1e-9;
  s += "  HBM traffic      read " + human_bytes(double(r.hbm_read_bytes)) + ", write " +
       human_bytes(double(r.hbm_write_bytes));
  if (secs > 0)
    s += fmt(", %.1f GB/s", double(r.hbm_read_bytes + r.hbm_write_bytes) / secs / 1e9) +
         fmt(" (MBU %.1f%%)", r.hbm_mbu_pct);
  s += "\n";
  s += format_roofline(r.roofline);
  s += "  host time        " + fmt("%.3f s", r.host_seconds);
  if (r.host_seconds > 0)
    s += fmt(" (%.0f instructions/s", double(r.instructions) / r.host_seconds) +
         (secs > 0 ? fmt(", %.3g host s per simulated ms)", r.host_seconds / (secs * 1e3)) : ")");
  s += "\n";
  if (r.host_cpu_seconds > 0)
    s += "  host time, cpu   " + fmt("%.3f s", r.host_cpu_seconds) +
         fmt(" (%.0f instructions per cpu s)\n", double(r.instructions) / r.host_cpu_seconds);
  return s;
}

std::string format_platform(const platform::platform_config& cfg) {
  const auto& c = cfg.core;
  std::string s = "platform " + cfg.name + " (" + cfg.source + ")\n";
  s += "  cores                 " + std::to_string(cfg.cores) + "\n";
  s += "  tensor engine         " + std::to_string(c.tensor.rows) + " x " +
       std::to_string(c.tensor.cols) + " PEs at " + fmt("%.2f GHz", c.tensor.clock_hz / 1e9) + "\n";
  s += "  peak per core         " +
       fmt("%.1f TFLOPS bf16, ", peak_flops(cfg, isa::DType::bf16) / 1e12) +
       fmt("%.1f fp8, ", peak_flops(cfg, isa::DType::fp8e4m3) / 1e12) +
       fmt("%.1f fp32", peak_flops(cfg, isa::DType::fp32) / 1e12) + "\n";
  s += "  peak per chip         " +
       fmt("%.1f TFLOPS bf16", cfg.cores * peak_flops(cfg, isa::DType::bf16) / 1e12) + "\n";
  s += "  SBUF                  " + std::to_string(c.sbuf.partitions) + " x " +
       human_bytes(double(c.sbuf.partition_bytes)) + " = " +
       human_bytes(double(c.sbuf.partitions) * double(c.sbuf.partition_bytes)) + "\n";
  s += "  PSUM                  " + std::to_string(c.psum.partitions) + " x " +
       human_bytes(double(c.psum.partition_bytes)) + ", banks of " +
       human_bytes(double(c.psum.bank_bytes)) + "\n";
  s += "  HBM                   " + human_bytes(double(cfg.hbm.size_bytes)) + ", " +
       fmt("%.0f GB/s", cfg.hbm.bandwidth_bps / 1e9) + "\n";
  s += "  DMA per core          " + std::to_string(c.dma.engines) + " engines x " +
       std::to_string(c.dma.queues_per_engine) + " queues, " +
       fmt("%.1f GB/s each", c.dma.bandwidth_bps / 1e9) + "\n";
  s += "  clocks                " + fmt("vector %.2f GHz, ", c.vector.clock_hz / 1e9) +
       fmt("scalar %.2f GHz, ", c.scalar.clock_hz / 1e9) +
       fmt("gpsimd %.2f GHz", c.gpsimd.clock_hz / 1e9) + "\n";
  return s;
}

}  // namespace trnsim::runtime
