#include "runtime/fallback.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "compiler/lower/lower.h"
#include "models/common/stats.h"
#include "runtime/report.h"

namespace trnsim::runtime {

HostTensor to_device(const ir::Tensor& t, const isa::TensorDecl& d) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t k = 0; k < t.numel(); ++k) v[static_cast<size_t>(k)] = static_cast<float>(t.at(k));
  // Integers travel as fp32 here (device inputs and the run's outputs): one beyond
  // 2^24 would be rounded silently, so it is an error instead.
  if (!t.holds_floats())
    for (int64_t k = 0; k < t.numel(); ++k)
      if (const int64_t x = t.ints()[static_cast<size_t>(k)];
          x > (int64_t{1} << 24) || x < -(int64_t{1} << 24))
        throw std::runtime_error("tensor '" + d.name + "': element " + std::to_string(k) + " (" +
                                 std::to_string(t.ints()[static_cast<size_t>(k)]) + ") of " +
                                 t.type().str() +
                                 " is beyond 2^24, which the fp32 it is carried in cannot hold "
                                 "exactly");
  if (v.size() != d.bytes() / isa::dtype_size(d.dtype))
    throw std::runtime_error("input '" + d.name + "': " + std::to_string(v.size()) +
                             " values for a tensor of shape " + shape_string(d.shape));
  return HostTensor::from_float(d.shape, d.dtype, v);
}

ir::Tensor from_device(const HostTensor& h, const ir::TensorType& type) {
  const std::vector<float> got = h.to_float();
  if (ir::is_float(type.elem)) return ir::Tensor::from_floats(type.shape, got, type.elem);
  std::vector<int64_t> ints;
  ints.reserve(got.size());
  for (float f : got)
    ints.push_back(type.elem == ir::ElemType::boolean ? (f != 0.0f)
                                                      : static_cast<int64_t>(std::llround(f)));
  return ir::Tensor::from_ints(type.shape, std::move(ints), type.elem);
}

namespace {

uint64_t tensor_bytes(const ir::Value* v) {
  // On the device every value is 4 bytes per element except bf16/fp16 ones.
  const uint64_t es = (v->elem() == ir::ElemType::bf16 || v->elem() == ir::ElemType::fp16) ? 2 : 4;
  return static_cast<uint64_t>(ir::num_elements(v->shape())) * es;
}

void add_report(RunReport& sum, const RunReport& r) {
  sum.simulated_ns += r.simulated_ns;
  sum.host_seconds += r.host_seconds;
  sum.instructions += r.instructions;
  sum.cores = std::max(sum.cores, r.cores);
  if (sum.engines.empty())
    sum.engines = r.engines;
  else
    for (size_t k = 0; k < sum.engines.size() && k < r.engines.size(); ++k) {
      sum.engines[k].instructions += r.engines[k].instructions;
      sum.engines[k].busy_ns += r.engines[k].busy_ns;
      sum.engines[k].sem_wait_ns += r.engines[k].sem_wait_ns;
      sum.engines[k].port_stall_ns += r.engines[k].port_stall_ns;
      sum.engines[k].active_ns += r.engines[k].active_ns;
    }
  sum.dma_queues.insert(sum.dma_queues.end(), r.dma_queues.begin(), r.dma_queues.end());
  sum.hbm_read_bytes += r.hbm_read_bytes;
  sum.hbm_write_bytes += r.hbm_write_bytes;
  sum.flops += r.flops;
  sum.mfu_dtype = r.flops ? r.mfu_dtype : sum.mfu_dtype;
  sum.sbuf_high_water_bytes = std::max(sum.sbuf_high_water_bytes, r.sbuf_high_water_bytes);
  sum.psum_high_water_bytes = std::max(sum.psum_high_water_bytes, r.psum_high_water_bytes);
  sum.sbuf_touched_bytes = std::max(sum.sbuf_touched_bytes, r.sbuf_touched_bytes);
  sum.psum_touched_bytes = std::max(sum.psum_touched_bytes, r.psum_touched_bytes);
  sum.races += r.races;
  sum.poisoned_reads += r.poisoned_reads;
  sum.check_report += r.check_report;
}

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", std::isfinite(v) ? v : 0.0);
  return b;
}

}  // namespace

FallbackResult run_partitioned(Device& dev, const platform::platform_config& cfg,
                               const compiler::PartitionedModel& m, const interp::TensorMap& inputs,
                               uint32_t core) {
  FallbackResult r;
  interp::TensorMap values = inputs;
  // Where each value is: model inputs start in HBM (and on the host, as given).
  std::set<std::string> on_host, on_device;
  for (const auto& [name, t] : inputs) {
    on_host.insert(name);
    on_device.insert(name);
  }
  auto link_ns = [&](uint64_t bytes) {
    return 1e9 * (cfg.host.link_latency_s + double(bytes) / cfg.host.link_bandwidth_bps);
  };
  for (const compiler::Segment& s : m.segments) {
    SegmentResult sr;
    sr.on_device = s.on_device;
    sr.nodes = s.graph.num_nodes();
    // Inputs on the wrong side cross the link first.
    for (const ir::Value* v : s.graph.inputs()) {
      std::set<std::string>& here = s.on_device ? on_device : on_host;
      if (here.count(v->name)) continue;
      const uint64_t b = tensor_bytes(v);
      (s.on_device ? sr.upload_bytes : sr.download_bytes) += b;
      sr.transfer_ns += link_ns(b);
      here.insert(v->name);
    }
    interp::TensorMap feed;
    for (const ir::Value* v : s.graph.inputs()) {
      auto it = values.find(v->name);
      if (it == values.end())
        throw std::runtime_error("host fallback: value '" + v->name + "' is not computed");
      feed[v->name] = it->second;
    }
    if (s.on_device) {
      const std::map<std::string, std::string> io = lower::io_tensor_names(s.graph);
      Launch l{&s.program, {}, core};
      for (const isa::TensorDecl& d : s.program.tensors) {
        if (d.role != isa::TensorRole::input) continue;
        for (const auto& [value, tensor] : io)
          if (tensor == d.name && feed.count(value))
            l.inputs[d.name] = to_device(feed.at(value), d);
      }
      sr.report = dev.run({l});
      sr.simulated_ns = sr.report.simulated_ns;
      const auto& outs = sr.report.launches.at(0).outputs;
      for (const ir::Value* v : s.graph.outputs()) {
        // A timing-only run reads back nothing: later segments get zeros (their
        // timing does not depend on the data).
        values[v->name] =
            outs.empty() ? ir::Tensor(v->type) : from_device(outs.at(io.at(v->name)), v->type);
        on_device.insert(v->name);
      }
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      interp::TensorMap out = interp::run(s.graph, feed);
      sr.host_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (auto& [name, t] : out) {
        values[name] = std::move(t);
        on_host.insert(name);
      }
    }
    r.transfer_ns += sr.transfer_ns;
    r.transfer_bytes += sr.upload_bytes + sr.download_bytes;
    r.host_compute_seconds += sr.host_seconds;
    if (sr.on_device) add_report(r.total, sr.report);
    r.segments.push_back(std::move(sr));
  }
  // Outputs no segment computes: constants (folded values, Constant nodes) and inputs.
  for (const ir::Value* v : m.graph.outputs()) {
    auto it = values.find(v->name);
    if (it != values.end())
      r.outputs[v->name] = it->second;
    else if (v->is_constant && v->has_data())
      r.outputs[v->name] = *v->data;
    else
      throw std::runtime_error("host fallback: output '" + v->name + "' is not computed");
  }

  // Whole-run figures: device time plus link time.
  RunReport& t = r.total;
  t.simulated_ns += r.transfer_ns;
  const double secs = t.simulated_ns * 1e-9;
  if (secs > 0 && t.cores) {
    t.tflops = double(t.flops) / secs / 1e12;
    t.mfu_pct = 100.0 * double(t.flops) / secs / (peak_flops(cfg, t.mfu_dtype) * t.cores);
    t.hbm_mbu_pct =
        100.0 * double(t.hbm_read_bytes + t.hbm_write_bytes) / secs / cfg.hbm.bandwidth_bps;
  }
  std::ostringstream j;
  j << "{\n  \"simulated_ns\": " << num(t.simulated_ns)
    << ",\n  \"instructions\": " << t.instructions << ",\n  \"cores\": " << t.cores
    << ",\n  \"flops\": " << t.flops << ",\n  \"tflops\": " << num(t.tflops)
    << ",\n  \"mfu_pct\": " << num(t.mfu_pct)
    << ",\n  \"host_seconds\": " << num(t.host_seconds + r.host_compute_seconds)
    << ",\n  \"engines\": {";
  for (size_t k = 0; k < t.engines.size(); ++k) {
    const EngineStats& e = t.engines[k];
    if (e.name == "dma") continue;
    j << (k ? "," : "") << "\n    \"" << e.name << "\": {\"instructions\": " << e.instructions
      << ", \"active_pct\": " << num(secs > 0 ? 100.0 * e.busy_ns / t.simulated_ns : 0)
      << ", \"busy_ns\": " << num(e.busy_ns) << ", \"semaphore_wait_ns\": " << num(e.sem_wait_ns)
      << ", \"port_stall_ns\": " << num(e.port_stall_ns) << "}";
  }
  j << "\n  },\n  \"hbm\": {\"read_bytes\": " << t.hbm_read_bytes
    << ", \"write_bytes\": " << t.hbm_write_bytes << ", \"mbu_pct\": " << num(t.hbm_mbu_pct)
    << "},\n  \"fallback\": {\n    \"transfer_ns\": " << num(r.transfer_ns)
    << ",\n    \"transfer_bytes\": " << r.transfer_bytes
    << ",\n    \"host_compute_seconds\": " << num(r.host_compute_seconds)
    << ",\n    \"segments\": " << m.segments.size() << ",\n    \"nodes\": [";
  for (size_t k = 0; k < m.fallback.size(); ++k) {
    const compiler::FallbackNode& f = m.fallback[k];
    j << (k ? "," : "") << "\n      {\"node\": \"" << stats::json_escape(f.node) << "\", \"op\": \""
      << stats::json_escape(f.op) << "\", \"reason\": \"" << stats::json_escape(f.reason) << "\"}";
  }
  j << "\n    ]\n  },\n  \"segments\": [";
  for (size_t k = 0; k < r.segments.size(); ++k) {
    const SegmentResult& s = r.segments[k];
    j << (k ? "," : "") << "\n    {\"on_device\": " << (s.on_device ? "true" : "false")
      << ", \"nodes\": " << s.nodes << ", \"simulated_ns\": " << num(s.simulated_ns)
      << ", \"host_seconds\": " << num(s.host_seconds) << ", \"upload_bytes\": " << s.upload_bytes
      << ", \"download_bytes\": " << s.download_bytes
      << ", \"transfer_ns\": " << num(s.transfer_ns);
    if (s.on_device) j << ", \"stats\": " << s.report.stats_json;
    j << "}";
  }
  j << "\n  ]\n}\n";
  r.stats_json = j.str();
  return r;
}

RunReport run_fallback(Device& dev, const platform::platform_config& cfg,
                       const compiler::PartitionedModel& m, const Launch& launch) {
  const std::map<std::string, std::string> io = lower::io_tensor_names(m.graph);
  interp::TensorMap in;
  for (const ir::Value* v : m.graph.inputs()) {
    auto it = launch.inputs.find(io.at(v->name));
    if (it == launch.inputs.end())
      throw std::runtime_error("input '" + io.at(v->name) + "' is not bound");
    if (static_cast<int64_t>(it->second.elems()) != ir::num_elements(v->shape()))
      throw std::runtime_error("input '" + io.at(v->name) + "': shape " +
                               shape_string(it->second.shape) + " does not match " + v->type.str());
    in[v->name] = from_device(it->second, v->type);
  }
  FallbackResult r = run_partitioned(dev, cfg, m, in, launch.core);
  RunReport rep = r.total;
  LaunchResult l;
  l.simulated_ns = rep.simulated_ns;
  l.instructions = rep.instructions;
  l.engines = rep.engines;
  for (const isa::TensorDecl& d : launch.program->tensors)
    if (d.role == isa::TensorRole::output)
      for (const auto& [value, tensor] : io)
        if (tensor == d.name && r.outputs.count(value))
          l.outputs[d.name] = to_device(r.outputs.at(value), d);
  rep.launches = {std::move(l)};
  rep.stats_json = r.stats_json;
  rep.stats_text = format_fallback(m, r);
  return rep;
}

std::string format_fallback(const compiler::PartitionedModel& m, const FallbackResult& r) {
  std::ostringstream o;
  char line[256];
  o << "host fallback: " << m.fallback.size() << " node(s) on the host, " << r.segments.size()
    << " segments\n";
  for (size_t k = 0; k < r.segments.size(); ++k) {
    const SegmentResult& s = r.segments[k];
    if (s.on_device)
      std::snprintf(line, sizeof line, "  segment %zu  device  %3zu nodes  %12.3f us simulated", k,
                    s.nodes, s.simulated_ns / 1e3);
    else
      std::snprintf(line, sizeof line, "  segment %zu  host    %3zu nodes  %12.6f s on the host", k,
                    s.nodes, s.host_seconds);
    o << line;
    if (s.upload_bytes || s.download_bytes) {
      std::snprintf(line, sizeof line, "  (link: %llu B up, %llu B down, %.3f us)",
                    static_cast<unsigned long long>(s.upload_bytes),
                    static_cast<unsigned long long>(s.download_bytes), s.transfer_ns / 1e3);
      o << line;
    }
    o << "\n";
  }
  for (const compiler::FallbackNode& f : m.fallback)
    o << "  fell back: " << (f.node.empty() ? "(unnamed)" : f.node) << " (" << f.op
      << "): " << f.reason << "\n";
  std::snprintf(line, sizeof line,
                "  total       %.3f us simulated (device %.3f us + link %.3f us); host compute "
                "%.6f s (not simulated)\n",
                r.total.simulated_ns / 1e3, (r.total.simulated_ns - r.transfer_ns) / 1e3,
                r.transfer_ns / 1e3, r.host_compute_seconds);
  o << line;
  return o.str();
}

}  // namespace trnsim::runtime
