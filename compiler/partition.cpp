#include "compiler/partition.h"

#include <map>
#include <memory>
#include <optional>
#include <set>

#include "compiler/ir/error.h"
#include "compiler/lower/int_range.h"
#include "compiler/lower/lower.h"
#include "compiler/repeat.h"
#include "compiler/reuse.h"
#include "compiler/timings.h"

namespace trnsim::compiler {

namespace {

// extract_segment; with `lent`, each constant's data moves from `g` into the segment
// (its value in `g` keeps an empty tensor) and the pair (g's value, the segment's) is
// recorded, else the data is copied.
ir::Graph extract_impl(const ir::Graph& g, size_t begin, size_t end,
                       std::vector<std::pair<ir::Value*, ir::Value*>>* lent) {
  ir::Graph s;
  s.name = g.name;
  std::map<const ir::Value*, ir::Value*> map;
  auto get = [&](const ir::Value* v) -> ir::Value* {
    if (!v) return nullptr;  // an omitted optional input
    if (auto it = map.find(v); it != map.end()) return it->second;
    ir::Value* nv = nullptr;
    if (v->has_data() && lent) {
      ir::Value* mv = const_cast<ir::Value*>(v);  // the caller handed `g` over mutable
      nv = s.add_constant(v->name, std::move(*mv->data));
      lent->emplace_back(mv, nv);
    } else {
      nv = v->has_data() ? s.add_constant(v->name, *v->data) : s.add_input(v->name, v->type);
    }
    nv->int_range = v->int_range;  // what the whole graph proved (lower/int_range.h)
    map[v] = nv;
    return nv;
  };
  const auto& nodes = g.nodes();
  for (size_t i = begin; i < end; ++i) {
    const ir::Node& n = *nodes[i];
    std::vector<ir::Value*> ins;
    for (const ir::Value* v : n.inputs) ins.push_back(get(v));
    std::vector<std::pair<std::string, ir::TensorType>> outs;
    for (const ir::Value* v : n.outputs) outs.emplace_back(v->name, v->type);
    ir::Node* nn = s.add_node(n.op, ins, outs, n.attrs, n.name);
    nn->origin = n.origin;
    for (size_t k = 0; k < n.outputs.size(); ++k) map[n.outputs[k]] = nn->outputs[k];
  }
  // Outputs: values this segment makes that later nodes or the graph read.
  std::set<const ir::Value*> later;
  for (size_t i = end; i < nodes.size(); ++i)
    for (const ir::Value* v : nodes[i]->inputs) later.insert(v);
  for (const ir::Value* v : g.outputs()) later.insert(v);
  for (size_t i = begin; i < end; ++i)
    for (const ir::Value* v : nodes[i]->outputs)
      if (later.count(v)) s.add_output(map.at(v));
  return s;
}

}  // namespace

ir::Graph extract_segment(const ir::Graph& g, size_t begin, size_t end) {
  return extract_impl(g, begin, end, nullptr);
}

LentSegment::LentSegment(ir::Graph& g, size_t begin, size_t end)
    : graph_(extract_impl(g, begin, end, &lent_)) {}

LentSegment::~LentSegment() {
  for (auto& [orig, seg] : lent_) *orig->data = std::move(*seg->data);
}

namespace {

// Why the lowering refuses node i alone ("" when it lowers).
std::string refusal(const ir::Graph& g, size_t i, const Target& t) {
  ir::Graph one = extract_segment(g, i, i + 1);
  // A node whose outputs nothing reads still has to be computed to be checked.
  if (one.outputs().empty())
    for (ir::Value* v : one.nodes().front()->outputs) one.add_output(v);
  try {
    lower::lower_graph(one, t);
  } catch (const ir::UnsupportedError& e) {
    return e.what();
  }
  return "";
}

std::string node_name(const ir::Node& nd) {
  return nd.name.empty() && !nd.outputs.empty() ? nd.outputs[0]->name : nd.name;
}

}  // namespace

PartitionedModel compile_partitioned(ir::Graph g, const CompileOnnxOptions& o, bool allow_fallback);

namespace {

// Node i, an If whose condition is a run-time value, as a segment of its own: each
// branch compiled ahead as a partitioned model (so the chosen one runs on the device
// without compiling during the run); nodes a branch leaves on the host are listed
// in m.fallback with the branch named.
void host_decision(const ir::Graph& g, size_t i, const CompileOnnxOptions& o, PartitionedModel& m) {
  const ir::Node& nd = *g.nodes()[i];
  Segment s;
  s.on_device = false;
  s.graph = extract_segment(g, i, i + 1);
  if (s.graph.outputs().empty()) return;  // nothing reads it
  const std::string name = node_name(nd);
  for (const char* key : {"then_branch", "else_branch"}) {
    const ir::Graph& body = nd.attr_graph(key);
    Branch b;
    b.name = key;
    for (const ir::Value* v : body.inputs()) b.inputs.push_back(v->name);
    for (const ir::Value* v : body.outputs()) b.outputs.push_back(v->name);
    auto bm = std::make_shared<PartitionedModel>(compile_partitioned(body.clone(), o, true));
    for (FallbackNode f : bm->fallback) {
      f.reason = "in " + b.name + " of If '" + name + "': " + f.reason;
      m.fallback.push_back(std::move(f));
    }
    for (FallbackNode f : bm->decisions) {
      f.reason = "in " + b.name + " of If '" + name + "': " + f.reason;
      m.decisions.push_back(std::move(f));
    }
    for (const auto& [k, v] : bm->stats) m.stats[k] += v;
    m.dump_text += bm->dump_text;
    b.model = std::move(bm);
    s.branches.push_back(std::move(b));
  }
  m.decisions.push_back({name, nd.op,
                         "the condition is a run-time value: the host reads it and runs the "
                         "chosen branch, each compiled ahead for the device",
                         nd.origin});
  m.segments.push_back(std::move(s));
}

// A device segment's graph only names the segment's inputs and outputs (its program
// holds the constants): cloned with type-only constants, the weights are not copied
// once more (hundreds of MiB for a large model).
ir::Graph clone_without_constant_data(ir::Graph& g) {
  std::vector<std::pair<ir::Value*, ir::Tensor>> held;
  for (const auto& v : g.values())
    if (v->is_constant && v->data) {
      held.emplace_back(v.get(), std::move(*v->data));
      v->data.reset();
    }
  ir::Graph c = g.clone();
  for (auto& [v, t] : held) v->data = std::move(t);
  return c;
}

}  // namespace

PartitionedModel compile_partitioned(ir::Graph g, const CompileOnnxOptions& o,
                                     bool allow_fallback) {
  PartitionedModel m;
  // Each imported node is its own origin; the passes carry origins over (ir::Node).
  for (ir::Node* n : g.nodes_snapshot())
    if (n->origin.empty())
      n->origin = {{n->op, n->name.empty() && !n->outputs.empty() ? n->outputs[0]->name : n->name}};
  run_graph_pipeline(g, o, &m.dump_text);
  RepeatedBlocks rb;
  {
    timings::Scope t("find_repeated_blocks");
    rb = find_repeated_blocks(g);
    if (rb.count) {
      m.stats["repeat.blocks"] = static_cast<double>(rb.count);
      m.stats["repeat.block_nodes"] = static_cast<double>(rb.nodes);
      m.stats["repeat.graph_nodes"] = static_cast<double>(g.num_nodes());
    }
  }
  {
    timings::Scope t("annotate_int_ranges");
    lower::annotate_int_ranges(g);
  }
  try {
    Segment s;
    auto roofline = std::make_shared<ProgramRoofline>();
    std::optional<isa::Program> reused;
    // Only a stack that is most of the graph (layers) is worth it: a short repeat,
    // such as q/k/v slices, saves no compile time and adds a barrier per block.
    if (rb.count >= 2 && 2 * rb.count * rb.nodes >= g.num_nodes() && reuse_blocks())
      reused = generate_reusing_blocks(g, rb, o, &m.dump_text, &m.stats, roofline.get());
    s.program =
        reused ? std::move(*reused) : generate(g, o, &m.dump_text, &m.stats, roofline.get());
    s.roofline = std::move(roofline);
    timings::Scope t("graph.clone");
    s.graph = clone_without_constant_data(g);
    m.segments.push_back(std::move(s));
    m.graph = std::move(g);
    return m;
  } catch (const ir::UnsupportedError&) {
    // Without fallback an If may still be decided on the host (it reads the
    // condition, computes nothing) when everything else lowers: checked below.
    bool has_if = false;
    for (const auto& nd : g.nodes()) has_if = has_if || nd->op == "If";
    if (!allow_fallback && !has_if) throw;
  }
  // Node by node: runs of nodes that lower become device segments.
  const size_t n = g.num_nodes();
  std::vector<std::string> why(n);
  for (size_t i = 0; i < n; ++i) why[i] = refusal(g, i, o.target);
  for (size_t i = 0; i < n;) {
    if (g.nodes()[i]->op == "If" && !why[i].empty()) {
      host_decision(g, i, o, m);
      ++i;
      continue;
    }
    const bool dev = why[i].empty();
    size_t j = i + 1;
    while (j < n && why[j].empty() == dev && (dev || g.nodes()[j]->op != "If")) ++j;
    Segment s;
    s.on_device = dev;
    s.graph = extract_segment(g, i, j);
    if (!s.graph.outputs().empty()) {
      if (dev) {
        try {
          s.program = generate(s.graph, o, &m.dump_text, &m.stats);
        } catch (const ir::UnsupportedError& e) {
          // The nodes lower one by one but not together: the run goes to the host.
          s.on_device = false;
          for (size_t k = i; k < j; ++k) why[k] = e.what();
        }
      }
      for (size_t k = i; k < j && !s.on_device; ++k) {
        const ir::Node& nd = *g.nodes()[k];
        m.fallback.push_back(
            {nd.name.empty() && !nd.outputs.empty() ? nd.outputs[0]->name : nd.name, nd.op, why[k],
             nd.origin});
      }
      m.segments.push_back(std::move(s));
    }
    i = j;
  }
  if (!allow_fallback && !m.fallback.empty()) {
    const FallbackNode& f = m.fallback.front();
    throw ir::UnsupportedError(f.reason.find(f.node) != std::string::npos
                                   ? f.reason
                                   : "node '" + f.node + "' (op " + f.op + "): " + f.reason);
  }
  m.graph = std::move(g);
  return m;
}

}  // namespace trnsim::compiler
