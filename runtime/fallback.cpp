#include "runtime/fallback.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "compiler/lower/lower.h"
#include "models/common/stats.h"
#include "runtime/report.h"

#include <yaml-cpp/yaml.h>

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
  // A queue several segments used is one queue of the run.
  for (const DmaQueueStats& q : r.dma_queues) {
    auto same = std::find_if(sum.dma_queues.begin(), sum.dma_queues.end(), [&](const auto& s) {
      return s.core == q.core && s.engine == q.engine && s.queue == q.queue;
    });
    if (same == sum.dma_queues.end()) {
      sum.dma_queues.push_back(q);
    } else {
      same->instructions += q.instructions;
      same->bytes += q.bytes;
      same->copies += q.copies;
    }
  }
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

// A stats tree read back from a device run's JSON (values and the meta map), so the
// device segments of a fallback run can be summed into a tree of the same keys.
struct StatTree {
  struct Item {
    std::string name, unit, desc;
    double value = 0;
    bool integer = false;
    void set(double v) {
      value = v;
      integer = integer && v == std::floor(v);
    }
  };
  std::string name;
  std::vector<Item> stats;
  std::vector<StatTree> children;

  Item* find(const std::string& n) {
    for (Item& i : stats)
      if (i.name == n) return &i;
    return nullptr;
  }
  StatTree* child(const std::string& n) {
    for (StatTree& c : children)
      if (c.name == n) return &c;
    return nullptr;
  }
  // The stat at a dotted path, or null.
  Item* at(const std::string& dotted) {
    const auto dot = dotted.find('.');
    if (dot == std::string::npos) return find(dotted);
    StatTree* c = child(dotted.substr(0, dot));
    return c ? c->at(dotted.substr(dot + 1)) : nullptr;
  }
  void set(const std::string& dotted, double v) {
    if (Item* i = at(dotted)) i->set(v);
  }
};

void read_tree(const YAML::Node& node, const YAML::Node& meta, const std::string& prefix,
               StatTree& t) {
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (prefix.empty() && key == "meta") continue;
    if (kv.second.IsMap()) {
      t.children.push_back({key, {}, {}});
      read_tree(kv.second, meta, prefix + key + ".", t.children.back());
      continue;
    }
    StatTree::Item i;
    i.name = key;
    const std::string text = kv.second.IsNull() ? "" : kv.second.Scalar();
    i.value = kv.second.IsNull() ? std::nan("") : kv.second.as<double>();
    i.integer = !text.empty() && text.find_first_of(".eEn") == std::string::npos;
    if (const YAML::Node m = meta[prefix + key]) {
      i.unit = m["unit"].as<std::string>("");
      i.desc = m["desc"].as<std::string>("");
    }
    t.stats.push_back(std::move(i));
  }
}

StatTree parse_tree(const std::string& json) {
  const YAML::Node root = YAML::Load(json);
  StatTree t;
  read_tree(root, root["meta"], "", t);
  return t;
}

// Counters add up over the device segments; high-water marks, rates and constants
// (a unit with '/', Hz, %) take the largest; averages are recomputed (finish()).
bool takes_max(const StatTree::Item& i) {
  return i.name.find("high_water") != std::string::npos ||
         i.name.find("touched") != std::string::npos || i.unit.find('/') != std::string::npos ||
         i.unit == "Hz" || i.unit == "%" || i.unit == "cores" || i.name.rfind("avg_", 0) == 0;
}

void merge(StatTree& into, const StatTree& from) {
  for (const StatTree::Item& i : from.stats) {
    StatTree::Item* have = into.find(i.name);
    if (!have) {
      into.stats.push_back(i);
    } else if (takes_max(i)) {
      have->value = std::max(have->value, i.value);
    } else {
      have->value += i.value;
      have->integer = have->integer && i.integer;
    }
  }
  for (const StatTree& c : from.children) {
    if (StatTree* have = into.child(c.name))
      merge(*have, c);
    else
      into.children.push_back(c);
  }
}

// Averages over the sums: bytes per share, bytes per copy.
void finish(StatTree& t) {
  for (const auto& [avg, count] :
       {std::pair{"avg_share_bytes", "shares"}, std::pair{"avg_copy_bytes", "copies"}}) {
    StatTree::Item *a = t.find(avg), *b = t.find("bytes"), *n = t.find(count);
    if (a && b && n) a->set(n->value > 0 ? b->value / n->value : 0.0);
  }
  for (StatTree& c : t.children) finish(c);
}

void to_group(const StatTree& t, stats::group& g) {
  for (const StatTree::Item& i : t.stats) g.add_fixed(i.name, i.unit, i.desc, i.value, i.integer);
  for (const StatTree& c : t.children) to_group(c, g.child(c.name));
}

double pct(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0.0;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> onnx_nodes(const compiler::FallbackNode& f) {
  if (!f.onnx.empty()) return f.onnx;
  return {{f.op, f.node}};
}

namespace {

// The fallback run's stats tree (FallbackResult::stats_json); `trees` are the device
// segments' stats JSON (a zero run's when none ran on the device).
void build_stats(const platform::platform_config& cfg, const compiler::PartitionedModel& m,
                 FallbackResult& r, const std::vector<std::string>& trees) {
  StatTree t;
  for (const std::string& j : trees) merge(t, parse_tree(j));
  finish(t);
  const RunReport& tot = r.total;
  const double ns = tot.simulated_ns;
  const double n = std::max(1.0, double(tot.cores));
  t.set("simulated_ns", ns);
  t.set("tflops", tot.tflops);
  t.set("mfu_pct", tot.mfu_pct);
  t.set("hbm.mbu_pct", tot.hbm_mbu_pct);
  if (StatTree::Item* i = t.find("simulated_ns"))
    i->desc =
        "simulated time of the run: device segments + host<->device link transfers (host "
        "compute is not simulated: host.compute_wall_seconds)";
  if (StatTree* eg = t.child("engines"))
    for (StatTree& e : eg->children)
      if (StatTree::Item* b = e.find("busy_ns")) e.set("active_pct", pct(b->value, ns * n));
  if (StatTree* d = t.child("dma")) {
    if (StatTree::Item* a = d->find("active_ns")) d->set("active_pct", pct(a->value, ns * n));
    if (StatTree::Item* b = d->find("busy_ns"))
      d->set("engines_busy_pct", pct(b->value, ns * n * cfg.core.dma.engines));
  }

  stats::group root{"trnsim"};
  to_group(t, root);
  size_t host_segments = 0, host_nodes = 0, device_segments = 0;
  uint64_t up = r.output_upload_bytes, down = 0;
  for (const SegmentResult& s : r.segments) {
    up += s.upload_bytes + s.branch_upload_bytes;
    down += s.download_bytes + s.branch_download_bytes;
    if (!s.branch.empty()) {  // a host decision: the branch's segments
      host_segments += s.branch_host_segments;
      device_segments += s.branch_device_segments;
      continue;
    }
    host_segments += !s.on_device;
    device_segments += s.on_device;
    host_nodes += s.on_device ? 0 : s.nodes;
  }
  std::map<std::string, uint64_t> by_op;
  std::set<std::pair<std::string, std::string>> seen;
  for (const compiler::FallbackNode& f : m.fallback)
    for (const auto& o : onnx_nodes(f))
      if (seen.insert(o).second) ++by_op[o.first];
  auto& h = root.child("host", "host fallback: the host segments and the host<->device link");
  h.add_fixed("segments", "segments", "segments run on the host (reference interpreter)",
              double(host_segments), true);
  h.add_fixed("device_segments", "segments", "segments run on the simulated device",
              double(device_segments), true);
  h.add_fixed("nodes", "nodes", "graph nodes (after the graph passes) run on the host",
              double(host_nodes), true);
  h.add_fixed("onnx_nodes", "nodes", "ONNX nodes of the model run on the host", double(seen.size()),
              true);
  h.add_fixed("device_ns", "ns", "simulated time of the device segments", r.device_ns);
  h.add_fixed("compute_wall_seconds", "s",
              "wall-clock time of the host segments in the interpreter; not simulated, not in "
              "simulated_ns, varies from run to run",
              r.host_compute_seconds);
  auto& l = h.child("link", "host<->device link transfers (host.link_bandwidth, link_latency)");
  l.add_fixed("time_ns", "ns",
              "simulated link time charged: latency + bytes / bandwidth per value crossing",
              r.transfer_ns);
  l.add_fixed("transfers", "transfers", "values that crossed the link", double(r.transfers), true);
  l.add_fixed("bytes", "bytes", "bytes that crossed the link, both directions",
              double(r.transfer_bytes), true);
  l.add_fixed("upload_bytes", "bytes",
              "host -> device: host results read by device segments, outputs sent to HBM",
              double(up), true);
  l.add_fixed("download_bytes", "bytes",
              "device -> host: model inputs and device results read by host segments", double(down),
              true);
  h.add_fixed("decisions", "nodes",
              "If nodes whose run-time condition the host read to pick the branch to run",
              double(m.decisions.size()), true);
  auto& ops = h.child("ops", "ONNX nodes run on the host, by op type");
  for (const auto& [op, count] : by_op)
    ops.add_fixed(op, "nodes", "ONNX nodes of this op type run on the host", double(count), true);

  // What the stats tree cannot hold (names, reasons): a "fallback" section.
  std::ostringstream j;
  j << ",\n  \"fallback\": {\n    \"nodes\": [";
  bool first = true;
  for (const compiler::FallbackNode& f : m.fallback)
    for (const auto& [op, node] : onnx_nodes(f)) {
      j << (first ? "" : ",") << "\n      {\"op\": \"" << stats::json_escape(op)
        << "\", \"node\": \"" << stats::json_escape(node) << "\", \"graph_op\": \""
        << stats::json_escape(f.op) << "\", \"graph_node\": \"" << stats::json_escape(f.node)
        << "\", \"reason\": \"" << stats::json_escape(f.reason) << "\"}";
      first = false;
    }
  j << "\n    ],\n    \"segments\": [";
  for (size_t k = 0; k < r.segments.size(); ++k) {
    const SegmentResult& s = r.segments[k];
    j << (k ? "," : "") << "\n      {\"on_device\": " << (s.on_device ? "true" : "false")
      << ", \"nodes\": " << s.nodes
      << ", \"simulated_ns\": " << stats::json_number(s.simulated_ns, false)
      << ", \"host_wall_seconds\": " << stats::json_number(s.host_seconds, false)
      << ", \"upload_bytes\": " << s.upload_bytes << ", \"download_bytes\": " << s.download_bytes
      << ", \"link_ns\": " << stats::json_number(s.transfer_ns, false);
    if (!s.branch.empty())
      j << ", \"branch\": \"" << s.branch
        << "\", \"branch_device_segments\": " << s.branch_device_segments
        << ", \"branch_host_segments\": " << s.branch_host_segments
        << ", \"branch_assumed\": " << (s.branch_assumed ? "true" : "false");
    j << "}";
  }
  // If nodes decided on the host: not host compute, so not in "nodes".
  j << "\n    ],\n    \"decisions\": [";
  first = true;
  for (const compiler::FallbackNode& f : m.decisions)
    for (const auto& [op, node] : onnx_nodes(f)) {
      j << (first ? "" : ",") << "\n      {\"op\": \"" << stats::json_escape(op)
        << "\", \"node\": \"" << stats::json_escape(node) << "\", \"reason\": \""
        << stats::json_escape(f.reason) << "\"}";
      first = false;
    }
  j << "\n    ]\n  }\n}\n";
  std::string json = root.to_json();
  const size_t close = json.rfind('}');
  json.erase(json.find_last_not_of(" \n", close - 1) + 1);
  r.stats_json = json + j.str();
  r.stats_text = root.to_text();
}

}  // namespace

namespace {

// A host decision: the condition crosses to the host (when a device segment made
// it), the captured values the branch reads go to HBM (when only the host has
// them), and the chosen branch runs as a partitioned model of its own; its outputs
// end in HBM (its run uploads host-computed ones).
template <typename LinkNs>
void run_decision(Device& dev, const platform::platform_config& cfg, const compiler::Segment& s,
                  interp::TensorMap& values, std::set<std::string>& on_host,
                  std::set<std::string>& on_device, std::set<std::string>& unknown, uint32_t core,
                  SegmentResult& sr, FallbackResult& r, const LinkNs& link_ns) {
  const ir::Node& n = *s.graph.nodes().at(0);
  auto cross = [&](const ir::Value* v, bool to_device) {
    std::set<std::string>& here = to_device ? on_device : on_host;
    if (here.count(v->name) || v->has_data()) return;  // constants are on both sides
    const uint64_t b = tensor_bytes(v);
    (to_device ? sr.upload_bytes : sr.download_bytes) += b;
    sr.transfer_ns += link_ns(b);
    ++r.transfers;
    here.insert(v->name);
  };
  auto value = [&](const ir::Value* v) -> const ir::Tensor& {
    if (v->has_data()) return *v->data;
    auto it = values.find(v->name);
    if (it == values.end())
      throw std::runtime_error("host fallback: value '" + v->name + "' is not computed");
    return it->second;
  };
  cross(n.inputs.at(0), false);
  const bool cond = value(n.inputs[0]).at(0) != 0;
  sr.branch_assumed = unknown.count(n.inputs[0]->name) != 0;
  const compiler::Branch& b = s.branches.at(cond ? 0 : 1);
  interp::TensorMap feed;
  std::set<std::string> branch_unknown;
  for (size_t k = 0; k < b.inputs.size() && k + 1 < n.inputs.size(); ++k) {
    cross(n.inputs[k + 1], true);
    feed[b.inputs[k]] = value(n.inputs[k + 1]);
    if (unknown.count(n.inputs[k + 1]->name)) branch_unknown.insert(b.inputs[k]);
  }
  FallbackResult br = run_partitioned(dev, cfg, *b.model, feed, core, branch_unknown);
  for (size_t k = 0; k < b.outputs.size() && k < n.outputs.size(); ++k) {
    values[n.outputs[k]->name] = br.outputs.at(b.outputs[k]);
    on_device.insert(n.outputs[k]->name);
    if (sr.branch_assumed || br.unknown_outputs.count(b.outputs[k]))
      unknown.insert(n.outputs[k]->name);
  }
  sr.branch = b.name;
  for (const SegmentResult& x : br.segments)
    (x.on_device ? sr.branch_device_segments : sr.branch_host_segments) += 1;
  sr.nodes = 0;
  for (const compiler::Segment& x : b.model->segments) sr.nodes += x.graph.num_nodes();
  sr.simulated_ns = br.device_ns;
  sr.host_seconds = br.host_compute_seconds;
  // The branch's link time and bytes are the run's (its device time is added below).
  for (const SegmentResult& x : br.segments) {
    sr.branch_upload_bytes += x.upload_bytes + x.branch_upload_bytes;
    sr.branch_download_bytes += x.download_bytes + x.branch_download_bytes;
  }
  sr.branch_upload_bytes += br.output_upload_bytes;
  r.transfer_ns += br.transfer_ns;
  r.transfer_bytes += br.transfer_bytes;
  r.transfers += br.transfers;
  r.device_ns += br.device_ns;
  if (!br.device_trees.empty()) {
    RunReport dev_only = br.total;
    dev_only.simulated_ns = br.device_ns;  // the link time is in r.transfer_ns
    add_report(r.total, dev_only);
  }
  r.device_trees.insert(r.device_trees.end(), br.device_trees.begin(), br.device_trees.end());
}

}  // namespace

FallbackResult run_partitioned(Device& dev, const platform::platform_config& cfg,
                               const compiler::PartitionedModel& m, const interp::TensorMap& inputs,
                               uint32_t core, const std::set<std::string>& unknown_inputs) {
  FallbackResult r;
  interp::TensorMap values = inputs;
  std::set<std::string> unknown = unknown_inputs;  // placeholder values (see SegmentResult)
  // Where each value is: model inputs start in HBM, as in a plain device run.
  std::set<std::string> on_host, on_device;
  for (const auto& [name, t] : inputs) on_device.insert(name);
  auto link_ns = [&](uint64_t bytes) {
    return 1e9 * (cfg.host.link_latency_s + double(bytes) / cfg.host.link_bandwidth_bps);
  };
  for (const compiler::Segment& s : m.segments) {
    SegmentResult sr;
    sr.on_device = s.on_device;
    sr.nodes = s.graph.num_nodes();
    // Inputs on the wrong side cross the link first.
    for (const ir::Value* v : s.graph.inputs()) {
      if (!s.branches.empty()) break;  // run_decision moves what it reads
      std::set<std::string>& here = s.on_device ? on_device : on_host;
      if (here.count(v->name)) continue;
      const uint64_t b = tensor_bytes(v);
      (s.on_device ? sr.upload_bytes : sr.download_bytes) += b;
      sr.transfer_ns += link_ns(b);
      ++r.transfers;
      here.insert(v->name);
    }
    interp::TensorMap feed;
    for (const ir::Value* v : s.graph.inputs()) {
      auto it = values.find(v->name);
      if (it == values.end())
        throw std::runtime_error("host fallback: value '" + v->name + "' is not computed");
      feed[v->name] = it->second;
    }
    if (!s.branches.empty()) {
      run_decision(dev, cfg, s, values, on_host, on_device, unknown, core, sr, r, link_ns);
    } else if (s.on_device) {
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
      r.device_trees.push_back(sr.report.stats_json);
      const auto& outs = sr.report.launches.at(0).outputs;
      for (const ir::Value* v : s.graph.outputs()) {
        // A timing-only run reads back nothing: later segments get zeros (their
        // timing does not depend on the data).
        values[v->name] =
            outs.empty() ? ir::Tensor(v->type) : from_device(outs.at(io.at(v->name)), v->type);
        on_device.insert(v->name);
        if (outs.empty()) unknown.insert(v->name);
      }
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      interp::TensorMap out = interp::run(s.graph, feed);
      sr.host_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      bool from_unknown = false;
      for (const ir::Value* v : s.graph.inputs())
        from_unknown = from_unknown || unknown.count(v->name);
      for (auto& [name, t] : out) {
        values[name] = std::move(t);
        on_host.insert(name);
        if (from_unknown) unknown.insert(name);
      }
    }
    r.transfer_ns += sr.transfer_ns;
    r.transfer_bytes += sr.upload_bytes + sr.download_bytes;
    r.host_compute_seconds += sr.host_seconds;
    if (s.branches.empty()) r.device_ns += sr.simulated_ns;  // run_decision adds its own
    if (sr.on_device) add_report(r.total, sr.report);
    r.segments.push_back(std::move(sr));
  }
  // Outputs no segment computes: constants (folded values, Constant nodes) and inputs.
  // Outputs computed only on the host end in HBM too, as a device run's do.
  for (const ir::Value* v : m.graph.outputs()) {
    auto it = values.find(v->name);
    if (it != values.end() && unknown.count(v->name)) r.unknown_outputs.insert(v->name);
    if (it != values.end())
      r.outputs[v->name] = it->second;
    else if (v->is_constant && v->has_data())
      r.outputs[v->name] = *v->data;
    else
      throw std::runtime_error("host fallback: output '" + v->name + "' is not computed");
    if (on_host.count(v->name) && !on_device.count(v->name)) {
      const uint64_t b = tensor_bytes(v);
      r.output_upload_bytes += b;
      r.output_upload_ns += link_ns(b);
      ++r.transfers;
      on_device.insert(v->name);
    }
  }
  r.transfer_ns += r.output_upload_ns;
  r.transfer_bytes += r.output_upload_bytes;
  // Nothing ran on the device: a run of an empty program gives the device tree's keys,
  // all zero.
  std::vector<std::string> trees = r.device_trees;
  if (trees.empty()) {
    isa::Program none;
    none.name = "no_device_segment";
    RunReport z = dev.run({Launch{&none, {}, core}});
    add_report(r.total, z);
    trees.push_back(z.stats_json);
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
  build_stats(cfg, m, r, trees);
  return r;
}

RunReport run_fallback(Device& dev, const platform::platform_config& cfg,
                       const compiler::PartitionedModel& m, const Launch& launch,
                       std::string* summary) {
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
  rep.stats_text = r.stats_text;
  if (summary) *summary = format_fallback(m, r);
  return rep;
}

std::string format_fallback(const compiler::PartitionedModel& m, const FallbackResult& r) {
  std::ostringstream o;
  char line[256];
  size_t onnx = 0;
  for (const compiler::FallbackNode& f : m.fallback) onnx += onnx_nodes(f).size();
  o << "host fallback: " << onnx << " node(s) on the host, " << r.segments.size() << " segments\n";
  for (size_t k = 0; k < r.segments.size(); ++k) {
    const SegmentResult& s = r.segments[k];
    if (!s.branch.empty())
      std::snprintf(
          line, sizeof line,
          "  segment %zu  decide  %3zu nodes  %12.3f us simulated: If ran %s (%zu device, "
          "%zu host segments)",
          k, s.nodes, s.simulated_ns / 1e3, s.branch.c_str(), s.branch_device_segments,
          s.branch_host_segments);
    else if (s.on_device)
      std::snprintf(line, sizeof line, "  segment %zu  device  %3zu nodes  %12.3f us simulated", k,
                    s.nodes, s.simulated_ns / 1e3);
    else
      std::snprintf(line, sizeof line,
                    "  segment %zu  host    %3zu nodes  %12.6f s wall clock (not simulated)", k,
                    s.nodes, s.host_seconds);
    o << line;
    if (s.branch_assumed)
      o << " [assumed: the condition is a device result, which a timing-only run does not "
           "compute]";
    if (s.upload_bytes || s.download_bytes) {
      std::snprintf(line, sizeof line, "  (link: %llu B up, %llu B down, %.3f us)",
                    static_cast<unsigned long long>(s.upload_bytes),
                    static_cast<unsigned long long>(s.download_bytes), s.transfer_ns / 1e3);
      o << line;
    }
    o << "\n";
  }
  if (r.output_upload_bytes) {
    std::snprintf(line, sizeof line, "  outputs to HBM         (link: %llu B up, %.3f us)\n",
                  static_cast<unsigned long long>(r.output_upload_bytes), r.output_upload_ns / 1e3);
    o << line;
  }
  // By the ONNX op type and node name; a node the graph passes fused or rewrote
  // says what it became.
  for (const compiler::FallbackNode& f : m.fallback)
    for (const auto& [op, node] : onnx_nodes(f)) {
      o << "  fell back: " << op << " '" << (node.empty() ? "(unnamed)" : node) << "'";
      if (op != f.op || node != f.node) o << " (as " << f.op << " '" << f.node << "')";
      o << ": " << f.reason << "\n";
    }
  for (const compiler::FallbackNode& f : m.decisions)
    for (const auto& [op, node] : onnx_nodes(f))
      o << "  host decision: " << op << " '" << (node.empty() ? "(unnamed)" : node)
        << "': " << f.reason << "\n";
  // The runtime's host tensors have no fp64: say so rather than round in silence.
  for (const auto* vs : {&m.graph.inputs(), &m.graph.outputs()})
    for (const ir::Value* v : *vs)
      if (v->elem() == ir::ElemType::fp64)
        o << "  fp64 " << (vs == &m.graph.inputs() ? "input" : "output") << " '" << v->name
          << "': crosses the runtime as fp32 (rounded to 24 significant bits)\n";
  std::snprintf(line, sizeof line,
                "  total       %.3f us simulated = device %.3f us + link %.3f us (%llu "
                "transfers, %llu B); host compute %.6f s wall clock, not simulated\n",
                r.total.simulated_ns / 1e3, r.device_ns / 1e3, r.transfer_ns / 1e3,
                static_cast<unsigned long long>(r.transfers),
                static_cast<unsigned long long>(r.transfer_bytes), r.host_compute_seconds);
  o << line;
  return o.str();
}

}  // namespace trnsim::runtime
