#include "runtime/target_from_config.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

namespace trnsim::runtime {

namespace {

// JSON text of one value: shortest round-trip numbers, escaped strings (bytes outside
// printable ASCII as \u00XX, so the text is ASCII whatever the config's name is).
std::string json_value(const std::string& s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string json_value(bool b) {
  return b ? "true" : "false";
}

std::string json_value(double d) {
  if (!std::isfinite(d))
    return json_value(std::string(std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf"));
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

std::string json_value(uint64_t v) {
  return std::to_string(v);
}
std::string json_value(uint32_t v) {
  return std::to_string(v);
}

std::string json_object(const std::map<std::string, std::string>& fields) {
  std::string out = "{";
  for (const auto& [k, v] : fields) out += (out.size() > 1 ? "," : "") + json_value(k) + ":" + v;
  return out + "}";
}

std::string json_value(const compiler::EngineCost& e) {
  const auto& [clock_hz, min_ii_cycles, overhead_cycles] = e;
  return json_object({{"clock_hz", json_value(clock_hz)},
                      {"min_ii_cycles", json_value(min_ii_cycles)},
                      {"overhead_cycles", json_value(overhead_cycles)}});
}

}  // namespace

compiler::Target target_from_config(const platform::platform_config& c) {
  compiler::Target t;
  t.name = c.name;
  const isa::Limits l = c.limits();
  t.partitions = l.partitions;
  t.sbuf_partition_bytes = l.sbuf_partition_bytes;
  t.psum_partition_bytes = l.psum_partition_bytes;
  t.psum_bank_bytes = l.psum_bank_bytes;
  t.hbm_bytes = l.hbm_bytes;
  t.matmul_max_k = l.matmul_max_k;
  t.matmul_max_m = l.matmul_max_m;
  t.matmul_max_n = l.matmul_max_n;
  t.matmul_double_row = l.matmul_double_row;
  t.semaphores = l.max_semaphores;
  t.dma_engines = c.core.dma.engines;
  t.dma_queues_per_engine = c.core.dma.queues_per_engine;
  t.dma_bandwidth_bytes_per_ns = c.core.dma.bandwidth_bps / 1e9;
  t.dma_fixed_ns = c.core.dma.fixed_cost_s * 1e9;
  t.dma_descriptor_ns = c.core.dma.descriptor_cost_s * 1e9;
  t.hbm_bandwidth_bytes_per_ns = c.hbm.bandwidth_bps / 1e9;
  auto eng = [](const models::engine_params& p) {
    return compiler::EngineCost{p.clock_hz, p.min_ii_cycles, p.overhead_cycles};
  };
  t.tensor = eng(c.core.tensor);
  t.vector = eng(c.core.vector);
  t.scalar = eng(c.core.scalar);
  t.gpsimd = eng(c.core.gpsimd);
  t.sync = eng(c.core.sync);
  t.matmul_fp32_slowdown = c.core.tensor.fp32_slowdown;
  t.vector_divide_slowdown = c.core.vector.reciprocal_slowdown;
  t.vector_perf_modes = c.core.vector.perf_modes;
  t.scalar_func_switch_cycles = c.core.scalar.func_switch_cycles;
  t.gpsimd_start_cycles = c.core.gpsimd.start_cycles;
  return t;
}

std::string target_json(const compiler::Target& t) {
  // Every member bound by position: a member added to compiler::Target does not compile
  // here until it is printed too (the sweep keys its compile cache on this text).
  const auto& [name, partitions, sbuf_partition_bytes, psum_partition_bytes, psum_bank_bytes,
               sbuf_alignment, hbm_alignment, hbm_bytes, matmul_max_k, matmul_max_m, matmul_max_n,
               matmul_double_row, semaphores, dma_engines, dma_queues_per_engine, dma_queue_classes,
               dma_bandwidth_bytes_per_ns, dma_fixed_ns, dma_descriptor_ns, dma_split_min_bytes,
               dma_split_max, dma_split_max_descriptor_share, hbm_bandwidth_bytes_per_ns, tensor,
               vector, scalar, gpsimd, sync, matmul_fp32_slowdown, tensor_pipelined,
               vector_divide_slowdown, vector_perf_modes, scalar_func_switch_cycles,
               gpsimd_start_cycles] = t;
  return json_object(
      {{"name", json_value(name)},
       {"partitions", json_value(partitions)},
       {"sbuf_partition_bytes", json_value(sbuf_partition_bytes)},
       {"psum_partition_bytes", json_value(psum_partition_bytes)},
       {"psum_bank_bytes", json_value(psum_bank_bytes)},
       {"sbuf_alignment", json_value(sbuf_alignment)},
       {"hbm_alignment", json_value(hbm_alignment)},
       {"hbm_bytes", json_value(hbm_bytes)},
       {"matmul_max_k", json_value(matmul_max_k)},
       {"matmul_max_m", json_value(matmul_max_m)},
       {"matmul_max_n", json_value(matmul_max_n)},
       {"matmul_double_row", json_value(matmul_double_row)},
       {"semaphores", json_value(semaphores)},
       {"dma_engines", json_value(dma_engines)},
       {"dma_queues_per_engine", json_value(dma_queues_per_engine)},
       {"dma_queue_classes", json_value(dma_queue_classes)},
       {"dma_bandwidth_bytes_per_ns", json_value(dma_bandwidth_bytes_per_ns)},
       {"dma_fixed_ns", json_value(dma_fixed_ns)},
       {"dma_descriptor_ns", json_value(dma_descriptor_ns)},
       {"dma_split_min_bytes", json_value(dma_split_min_bytes)},
       {"dma_split_max", json_value(dma_split_max)},
       {"dma_split_max_descriptor_share", json_value(dma_split_max_descriptor_share)},
       {"hbm_bandwidth_bytes_per_ns", json_value(hbm_bandwidth_bytes_per_ns)},
       {"tensor", json_value(tensor)},
       {"vector", json_value(vector)},
       {"scalar", json_value(scalar)},
       {"gpsimd", json_value(gpsimd)},
       {"sync", json_value(sync)},
       {"matmul_fp32_slowdown", json_value(matmul_fp32_slowdown)},
       {"tensor_pipelined", json_value(tensor_pipelined)},
       {"vector_divide_slowdown", json_value(vector_divide_slowdown)},
       {"vector_perf_modes", json_value(vector_perf_modes)},
       {"scalar_func_switch_cycles", json_value(scalar_func_switch_cycles)},
       {"gpsimd_start_cycles", json_value(gpsimd_start_cycles)}});
}

}  // namespace trnsim::runtime
