#include "compiler/ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"

namespace trnsim::ir {

std::string_view attribute_kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::kInt:
      return "int";
    case Attribute::Kind::kFloat:
      return "float";
    case Attribute::Kind::kString:
      return "string";
    case Attribute::Kind::kInts:
      return "ints";
    case Attribute::Kind::kFloats:
      return "floats";
    case Attribute::Kind::kTensor:
      return "tensor";
    case Attribute::Kind::kGraph:
      return "graph";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Node

namespace {

template <typename T>
const T& get_attr(const Node& n, const std::string& key, Attribute::Kind kind) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) throw CompileError(n.label() + ": missing attribute '" + key + "'");
  if (it->second.kind() != kind)
    throw CompileError(n.label() + ": attribute '" + key + "' is " +
                       std::string(attribute_kind_name(it->second.kind())) + ", expected " +
                       std::string(attribute_kind_name(kind)));
  return std::get<T>(it->second.storage());
}

}  // namespace

int64_t Node::attr_int(const std::string& key) const {
  return get_attr<int64_t>(*this, key, Attribute::Kind::kInt);
}
float Node::attr_float(const std::string& key) const {
  return get_attr<float>(*this, key, Attribute::Kind::kFloat);
}
const std::string& Node::attr_string(const std::string& key) const {
  return get_attr<std::string>(*this, key, Attribute::Kind::kString);
}
const std::vector<int64_t>& Node::attr_ints(const std::string& key) const {
  return get_attr<std::vector<int64_t>>(*this, key, Attribute::Kind::kInts);
}
const std::vector<float>& Node::attr_floats(const std::string& key) const {
  return get_attr<std::vector<float>>(*this, key, Attribute::Kind::kFloats);
}
const Tensor& Node::attr_tensor(const std::string& key) const {
  return get_attr<Tensor>(*this, key, Attribute::Kind::kTensor);
}
const Graph& Node::attr_graph(const std::string& key) const {
  const auto& g = get_attr<std::shared_ptr<const Graph>>(*this, key, Attribute::Kind::kGraph);
  if (!g) throw CompileError(label() + ": attribute '" + key + "' holds no graph");
  return *g;
}
bool Node::has_subgraphs() const {
  for (const auto& [key, a] : attrs)
    if (a.kind() == Attribute::Kind::kGraph) return true;
  return false;
}
int64_t Node::attr_int(const std::string& key, int64_t dflt) const {
  return has_attr(key) ? attr_int(key) : dflt;
}
float Node::attr_float(const std::string& key, float dflt) const {
  return has_attr(key) ? attr_float(key) : dflt;
}
std::string Node::attr_string(const std::string& key, const std::string& dflt) const {
  return has_attr(key) ? attr_string(key) : dflt;
}

std::string Node::label() const {
  std::string who = name;
  if (who.empty()) who = outputs.empty() || !outputs[0] ? "?" : outputs[0]->name;
  return "node '" + who + "' (op " + op + ")";
}

// ---------------------------------------------------------------------------
// Graph: building

Value* Graph::new_value(const std::string& name, TensorType type) {
  if (name.empty()) throw CompileError("graph '" + this->name + "': empty value name");
  if (by_name_.count(name))
    throw CompileError("graph '" + this->name + "': value '" + name + "' is defined twice");
  for (int64_t d : type.shape)
    if (d < 0) throw CompileError("value '" + name + "': negative dim in " + shape_str(type.shape));
  auto v = std::make_unique<Value>();
  v->name = name;
  v->type = std::move(type);
  Value* p = v.get();
  values_.push_back(std::move(v));
  by_name_[name] = p;
  return p;
}

Value* Graph::add_input(const std::string& name, TensorType type) {
  Value* v = new_value(name, std::move(type));
  v->is_graph_input = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_constant(const std::string& name, Tensor data) {
  Value* v = new_value(name, data.type());
  v->is_constant = true;
  v->data = std::move(data);
  return v;
}

Value* Graph::add_constant(const std::string& name, TensorType type) {
  Value* v = new_value(name, std::move(type));
  v->is_constant = true;
  return v;
}

void Node::merge_origin(const Node& other) {
  for (const auto& o : other.origin)
    if (std::find(origin.begin(), origin.end(), o) == origin.end()) origin.push_back(o);
}

Node* Graph::add_node(const std::string& op, std::vector<Value*> inputs,
                      const std::vector<std::pair<std::string, TensorType>>& outputs,
                      std::map<std::string, Attribute> attrs, const std::string& node_name,
                      const Node* before) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->name = node_name;
  n->inputs = std::move(inputs);
  n->attrs = std::move(attrs);
  if (before) n->origin = before->origin;  // a rewrite of `before`, usually
  for (const auto& [oname, otype] : outputs) {
    Value* v = new_value(oname, otype);
    v->producer = n.get();
    v->producer_output = static_cast<int>(n->outputs.size());
    n->outputs.push_back(v);
  }
  Node* p = n.get();
  auto pos = nodes_.end();
  if (before) {
    pos = std::find_if(nodes_.begin(), nodes_.end(),
                       [&](const auto& x) { return x.get() == before; });
    if (pos == nodes_.end()) throw CompileError("add_node: insertion point is not in the graph");
  }
  nodes_.insert(pos, std::move(n));
  return p;
}

void Graph::add_output(Value* v) {
  if (!v || find_value(v->name) != v)
    throw CompileError("graph '" + name + "': output is not a value of this graph");
  outputs_.push_back(v);
}

std::string Graph::unique_name(const std::string& base) const {
  std::string b = base.empty() ? "v" : base;
  if (!by_name_.count(b)) return b;
  for (int k = 1;; ++k) {
    std::string c = b + "_" + std::to_string(k);
    if (!by_name_.count(c)) return c;
  }
}

Graph Graph::clone() const {
  Graph g;
  g.name = name;
  std::unordered_map<const Value*, Value*> vmap;
  std::unordered_map<const Node*, Node*> nmap;
  for (const auto& n : nodes_) {
    auto c = std::make_unique<Node>(*n);
    for (auto& [key, a] : c->attrs)
      if (a.kind() == Attribute::Kind::kGraph)
        a = Attribute(std::make_shared<const Graph>(n->attr_graph(key).clone()));
    nmap[n.get()] = c.get();
    g.nodes_.push_back(std::move(c));
  }
  for (const auto& v : values_) {
    auto c = std::make_unique<Value>(*v);
    if (c->producer) c->producer = nmap.at(v->producer);
    vmap[v.get()] = c.get();
    g.by_name_[c->name] = c.get();
    g.values_.push_back(std::move(c));
  }
  auto remap = [&](std::vector<Value*>& vs) {
    for (auto& v : vs)
      if (v) v = vmap.at(v);
  };
  for (auto& n : g.nodes_) {
    remap(n->inputs);
    remap(n->outputs);
  }
  g.inputs_ = inputs_;
  g.outputs_ = outputs_;
  remap(g.inputs_);
  remap(g.outputs_);
  return g;
}

// ---------------------------------------------------------------------------
// Graph: queries

std::vector<Node*> Graph::nodes_snapshot() const {
  std::vector<Node*> r;
  r.reserve(nodes_.size());
  for (const auto& n : nodes_) r.push_back(n.get());
  return r;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::pair<Node*, int>> Graph::users(const Value* v) const {
  std::vector<std::pair<Node*, int>> r;
  for (const auto& n : nodes_)
    for (size_t k = 0; k < n->inputs.size(); ++k)
      if (n->inputs[k] == v) r.emplace_back(n.get(), static_cast<int>(k));
  return r;
}

bool Graph::is_output(const Value* v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

// ---------------------------------------------------------------------------
// Graph: editing

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  if (from->type != to->type)
    throw CompileError("replace_all_uses: '" + from->name + "' is " + from->type.str() + " but '" +
                       to->name + "' is " + to->type.str());
  for (auto& n : nodes_)
    for (auto& in : n->inputs)
      if (in == from) in = to;
  for (auto& o : outputs_)
    if (o == from) o = to;
}

void Graph::erase_value(Value* v) {
  by_name_.erase(v->name);
  auto it =
      std::find_if(values_.begin(), values_.end(), [&](const auto& x) { return x.get() == v; });
  if (it != values_.end()) values_.erase(it);
}

void Graph::erase_node(Node* n) {
  for (Value* o : n->outputs)
    if (has_uses(o))
      throw CompileError("erase_node: " + n->label() + ": output '" + o->name + "' is still used");
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& x) { return x.get() == n; });
  if (it == nodes_.end()) throw CompileError("erase_node: node is not in the graph");
  std::unique_ptr<Node> keep = std::move(*it);
  nodes_.erase(it);
  for (Value* o : keep->outputs) erase_value(o);
}

int Graph::erase_dead_nodes() {
  // Mark live values backwards from the outputs, then drop the rest in one sweep.
  std::unordered_set<const Value*> live(outputs_.begin(), outputs_.end());
  std::vector<bool> keep(nodes_.size(), false);
  for (size_t k = nodes_.size(); k-- > 0;) {
    const Node& n = *nodes_[k];
    for (const Value* o : n.outputs)
      if (live.count(o)) keep[k] = true;
    if (keep[k])
      for (const Value* in : n.inputs)
        if (in) live.insert(in);
  }
  std::vector<std::unique_ptr<Node>> kept;
  std::vector<std::unique_ptr<Node>> dropped;
  for (size_t k = 0; k < nodes_.size(); ++k)
    (keep[k] ? kept : dropped).push_back(std::move(nodes_[k]));
  nodes_ = std::move(kept);
  std::unordered_set<const Value*> dead;
  for (const auto& n : dropped)
    for (const Value* o : n->outputs) dead.insert(o);
  for (const auto& v : values_)
    if (v->is_constant && !live.count(v.get())) dead.insert(v.get());
  for (const Value* v : dead) by_name_.erase(v->name);
  std::erase_if(values_, [&](const auto& v) { return dead.count(v.get()) != 0; });
  return static_cast<int>(dropped.size());
}

void Graph::topo_sort() {
  // Kahn's algorithm, taking ready nodes in their current order.
  std::unordered_map<const Node*, size_t> index;
  for (size_t k = 0; k < nodes_.size(); ++k) index[nodes_[k].get()] = k;
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<size_t>> consumers(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    std::set<size_t> preds;
    for (const Value* in : nodes_[k]->inputs)
      if (in && in->producer && index.count(in->producer)) preds.insert(index[in->producer]);
    pending[k] = static_cast<int>(preds.size());
    for (size_t p : preds) consumers[p].push_back(k);
  }
  std::set<size_t> ready;
  for (size_t k = 0; k < nodes_.size(); ++k)
    if (pending[k] == 0) ready.insert(k);
  std::vector<std::unique_ptr<Node>> order;
  while (!ready.empty()) {
    size_t k = *ready.begin();
    ready.erase(ready.begin());
    for (size_t c : consumers[k])
      if (--pending[c] == 0) ready.insert(c);
    order.push_back(std::move(nodes_[k]));
  }
  if (order.size() != nodes_.size()) {
    for (auto& n : nodes_)
      if (n) {
        std::string who = n->label();
        // Put the graph back as it was (the moved-out nodes first) before throwing.
        for (auto& m : nodes_)
          if (m) order.push_back(std::move(m));
        nodes_ = std::move(order);
        throw CompileError("graph '" + name + "' has a cycle through " + who);
      }
  }
  nodes_ = std::move(order);
}

void Graph::rename_value(Value* v, const std::string& new_name) {
  if (v->name == new_name) return;
  if (new_name.empty() || by_name_.count(new_name))
    throw CompileError("rename_value: name '" + new_name + "' is empty or taken");
  by_name_.erase(v->name);
  v->name = new_name;
  by_name_[new_name] = v;
}

// ---------------------------------------------------------------------------
// Graph: verification

void Graph::verify() const {
  const std::string where = "graph '" + name + "': ";
  std::unordered_set<const Value*> owned;
  for (const auto& v : values_) {
    owned.insert(v.get());
    int origins = (v->is_graph_input ? 1 : 0) + (v->is_constant ? 1 : 0) + (v->producer ? 1 : 0);
    if (origins != 1)
      throw CompileError(where + "value '" + v->name + "' has " + std::to_string(origins) +
                         " origins (must be exactly one of input, constant, node output)");
    auto it = by_name_.find(v->name);
    if (it == by_name_.end() || it->second != v.get())
      throw CompileError(where + "value '" + v->name + "' is missing from the name table");
    if (v->has_data() && v->data->type() != v->type)
      throw CompileError(where + "constant '" + v->name + "' is typed " + v->type.str() +
                         " but its data is " + v->data->type().str());
  }
  for (const Value* v : inputs_)
    if (!owned.count(v) || !v->is_graph_input)
      throw CompileError(where + "graph input list holds a value that is not a graph input");

  std::unordered_set<const Value*> defined;
  for (const auto& v : values_)
    if (v->is_graph_input || v->is_constant) defined.insert(v.get());
  for (const auto& np : nodes_) {
    const Node& n = *np;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Value* in = n.inputs[k];
      if (!in) continue;
      if (!owned.count(in))
        throw CompileError(where + n.label() + ": input " + std::to_string(k) +
                           " is not a value of this graph");
      if (!defined.count(in))
        throw CompileError(where + n.label() + ": input '" + in->name +
                           "' is used before it is defined (nodes not in topological order?)");
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Value* o = n.outputs[k];
      if (!o || !owned.count(o) || o->producer != &n || o->producer_output != static_cast<int>(k))
        throw CompileError(where + n.label() + ": output " + std::to_string(k) +
                           " does not point back at the node");
      defined.insert(o);
    }
    // Op-level checks run on a copy: normalize_node must be a no-op on a
    // normalized node, and inference must reproduce the stored types.
    Node copy = n;
    try {
      for (const auto& [key, a] : n.attrs)
        if (a.kind() == Attribute::Kind::kGraph) n.attr_graph(key).verify();
      normalize_node(copy);
      if (copy.attrs != n.attrs)
        throw CompileError(
            "attributes are not in normalized form (missing defaults or negative axes)");
      std::vector<TensorType> types = infer_types(copy);
      for (size_t k = 0; k < n.outputs.size() && k < types.size(); ++k)
        if (types[k] != n.outputs[k]->type)
          throw CompileError("output '" + n.outputs[k]->name + "' is typed " +
                             n.outputs[k]->type.str() + " but inference gives " + types[k].str());
    } catch (const UnsupportedError& e) {
      throw UnsupportedError(where + n.label() + ": " + e.what());
    } catch (const CompileError& e) {
      throw CompileError(where + n.label() + ": " + e.what());
    }
  }
  for (const Value* o : outputs_)
    if (!owned.count(o)) throw CompileError(where + "a graph output is not a value of this graph");
}

}  // namespace trnsim::ir
