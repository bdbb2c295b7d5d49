// The compiler's graph IR.
//
// A Graph owns Values and Nodes. A Value is one tensor: a static TensorType and
// exactly one origin -- a graph input, a constant (data optional, see below), or
// one output of one Node. A Node applies an op (see compiler/ir/ops.h for the op
// set, their inputs, attributes and shape rules) to input Values and defines its
// output Values. Nodes are kept in a list that passes keep topologically ordered
// (topo_sort() restores it); verify() checks every invariant.
//
// Invariants (checked by verify()):
//   - value names are unique; every value has one origin;
//   - every node input is a graph input, a constant, or an output of an earlier
//     node; a null input marks an absent optional input;
//   - graph outputs are values of the graph (inputs and constants are allowed);
//   - every node's op is known, its attributes match the op's schema, and the
//     types its outputs carry are what shape inference gives.
//
// Constants: `Value::data` holds the tensor. It may be empty (a constant known only
// by type), which the text form allows so pass tests can write small graphs by
// hand; the interpreter refuses to read such a constant.
//
// Subgraphs: a graph-valued attribute (If's branches, Loop's and Scan's body) is
// an immutable graph shared by copies of the node (Graph::clone() copies it).
// A body never points at values of the enclosing graph: every outer value it reads
// (an ONNX implicit capture by name) is an explicit input of the node and a
// matching input of the body (compiler/ir/ops.h gives each op's input layout), so
// uses, dead-code elimination, topological order and segment extraction see it
// like any other input. verify() verifies bodies too.
//
// Use lists are not stored: users() scans the node list. Graphs here have at most
// thousands of nodes, and there is no bookkeeping for passes to get wrong.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/ir/tensor.h"
#include "compiler/ir/types.h"

namespace trnsim::ir {

class Node;
class Graph;

// A named node attribute: int, float, string, list of ints, list of floats, tensor,
// or a graph (the body of If/Loop/Scan; see "Subgraphs" below).
class Attribute {
 public:
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kTensor, kGraph };
  using Storage = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, Tensor, std::shared_ptr<const Graph>>;

  Attribute() = default;
  Attribute(int64_t v) : v_(v) {}
  Attribute(int v) : v_(static_cast<int64_t>(v)) {}
  Attribute(float v) : v_(v) {}
  Attribute(double v) : v_(static_cast<float>(v)) {}
  Attribute(std::string v) : v_(std::move(v)) {}
  Attribute(const char* v) : v_(std::string(v)) {}
  Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}
  Attribute(std::vector<float> v) : v_(std::move(v)) {}
  Attribute(Tensor v) : v_(std::move(v)) {}
  Attribute(std::shared_ptr<const Graph> v) : v_(std::move(v)) {}

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  const Storage& storage() const { return v_; }
  bool operator==(const Attribute&) const = default;

 private:
  Storage v_;
};
std::string_view attribute_kind_name(Attribute::Kind k);

struct Value {
  std::string name;
  TensorType type;
  Node* producer = nullptr;  // set for node outputs only
  int producer_output = 0;   // index in producer->outputs
  bool is_graph_input = false;
  bool is_constant = false;
  std::optional<Tensor> data;  // constants only; may be absent (type-only constant)
  // Integer values: the bounds the lowering's range analysis proved on the whole
  // graph (compiler/lower/int_range.h), kept on the inputs of segments cut from it.
  struct IntRange {
    double lo, hi;
    bool exact;  // the device's fp32 holds every value exactly
  };
  std::optional<IntRange> int_range;

  const Shape& shape() const { return type.shape; }
  ElemType elem() const { return type.elem; }
  int64_t rank() const { return type.rank(); }
  // A constant whose data is present.
  bool has_data() const { return is_constant && data.has_value(); }
};

class Node {
 public:
  std::string op;    // op type, e.g. "Conv"
  std::string name;  // for messages; usually the ONNX node name, may be empty
  // The imported nodes this one computes, (op type, node name), for reports that must
  // name the model's own nodes (host fallback): set before the graph passes, taken
  // over by a node added before it (Graph::add_node's `before`) and merged by fusions.
  std::vector<std::pair<std::string, std::string>> origin;
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  std::map<std::string, Attribute> attrs;

  // The k-th input, or null when absent or beyond the list.
  Value* input(size_t k) const { return k < inputs.size() ? inputs[k] : nullptr; }
  size_t num_inputs() const { return inputs.size(); }

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  // Typed attribute getters: a missing attribute or one of another kind throws
  // CompileError naming the node.
  int64_t attr_int(const std::string& key) const;
  float attr_float(const std::string& key) const;
  const std::string& attr_string(const std::string& key) const;
  const std::vector<int64_t>& attr_ints(const std::string& key) const;
  const std::vector<float>& attr_floats(const std::string& key) const;
  const Tensor& attr_tensor(const std::string& key) const;
  const Graph& attr_graph(const std::string& key) const;
  // Whether any attribute is a graph (If, Loop, Scan).
  bool has_subgraphs() const;
  // With a default for missing attributes (a wrong kind still throws).
  int64_t attr_int(const std::string& key, int64_t dflt) const;
  float attr_float(const std::string& key, float dflt) const;
  std::string attr_string(const std::string& key, const std::string& dflt) const;

  // "node 'Conv_12' (op Conv)" -- the prefix of every message about this node.
  std::string label() const;
  // Adds `other`'s origin to this node's (each pair once).
  void merge_origin(const Node& other);
};

class Graph {
 public:
  std::string name = "graph";

  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // A deep copy (values, nodes, constants' data), e.g. to compare a graph before
  // and after a pass.
  Graph clone() const;

  // --- building -------------------------------------------------------------
  // Names must be unique in the graph (CompileError otherwise); unique_name()
  // makes one from a base.
  Value* add_input(const std::string& name, TensorType type);
  Value* add_constant(const std::string& name, Tensor data);
  Value* add_constant(const std::string& name, TensorType type);  // data unknown
  // A node with fresh output values of the given names and types, appended at the
  // end or inserted before `before`. Attributes are not checked here: use
  // ir::make_node() (ops.h) to get the output types from shape inference.
  Node* add_node(const std::string& op, std::vector<Value*> inputs,
                 const std::vector<std::pair<std::string, TensorType>>& outputs,
                 std::map<std::string, Attribute> attrs = {}, const std::string& node_name = "",
                 const Node* before = nullptr);
  void add_output(Value* v);
  void set_outputs(std::vector<Value*> outs) { outputs_ = std::move(outs); }

  std::string unique_name(const std::string& base) const;

  // --- queries --------------------------------------------------------------
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  // Nodes in order. Take nodes_snapshot() to iterate while adding/erasing.
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<Node*> nodes_snapshot() const;
  // Every value, in creation order.
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  Value* find_value(const std::string& name) const;
  size_t num_nodes() const { return nodes_.size(); }

  // (node, input index) pairs reading `v`, in node order.
  std::vector<std::pair<Node*, int>> users(const Value* v) const;
  bool is_output(const Value* v) const;
  bool has_uses(const Value* v) const { return is_output(v) || !users(v).empty(); }

  // --- editing --------------------------------------------------------------
  // Every read of `from` (node inputs and graph outputs) reads `to` instead.
  // The types must be equal (CompileError otherwise).
  void replace_all_uses(Value* from, Value* to);
  // Remove a node whose outputs are unused (CompileError otherwise); its output
  // values go with it.
  void erase_node(Node* n);
  // Remove nodes whose outputs feed no graph output, transitively, and constants
  // nobody reads. Returns the number of nodes removed.
  int erase_dead_nodes();
  // Reorder nodes so each comes after the producers of its inputs (stable for
  // already ordered graphs). CompileError on a cycle.
  void topo_sort();
  // Rename a value (unique names still required).
  void rename_value(Value* v, const std::string& name);

  // Check every invariant listed at the top of this file, including per-op
  // schema and shape checks. Throws CompileError naming the offending node/value.
  void verify() const;

 private:
  Value* new_value(const std::string& name, TensorType type);
  void erase_value(Value* v);

  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
};

}  // namespace trnsim::ir
