#include "compiler/frontend/onnx_import.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "compiler/frontend/tensor_proto.h"
#include "compiler/interp/fold.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "models/isa/file_io.h"

namespace trnsim::frontend {
namespace {

using ir::Attribute;
using ir::ElemType;
using ir::Shape;
using ir::Tensor;
using ir::Value;
using AttrMap = std::map<std::string, Attribute>;

constexpr int64_t kMaxOpset = 17;
// A Loop whose body needs its iteration number at compile time is unrolled; past
// this many iterations the graph would grow without bound, so it is refused.
constexpr int64_t kMaxUnrolledIterations = 4096;

// ONNX ops on sequence and optional values, resolved at import (see onnx_import.h).
const std::set<std::string>& sequence_onnx_ops() {
  static const std::set<std::string> s{
      "SequenceConstruct", "SequenceEmpty",  "SequenceInsert",     "SequenceErase",
      "SequenceAt",        "SequenceLength", "SequenceMap",        "ConcatFromSequence",
      "SplitToSequence",   "Optional",       "OptionalHasElement", "OptionalGetElement"};
  return s;
}

// ONNX op types converted by the front end beyond the IR's own op set.
const std::set<std::string>& extra_onnx_ops() {
  static const std::set<std::string> s = [] {
    std::set<std::string> r{"Constant", "Dropout", "CastLike", "Scatter", "Upsample"};
    r.insert(sequence_onnx_ops().begin(), sequence_onnx_ops().end());
    return r;
  }();
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string r;
  for (const auto& s : v) r += (r.empty() ? "" : ", ") + s;
  return r;
}

class Importer {
  // A sequence or optional value, resolved at import (see "sequence and optional
  // values" below).
  struct Composite {
    bool optional = false;    // an optional (else a sequence)
    bool present = true;      // optional: holds an element
    bool of_sequence = true;  // optional: the element is a sequence (else items[0])
    std::vector<Value*> items;
    std::optional<ElemType> elem;  // the tensors' type, when known
  };
  using CompPtr = std::shared_ptr<const Composite>;
  // A body's input or output: a tensor value or a sequence/optional.
  struct Slot {
    Value* v = nullptr;
    CompPtr c;
  };

 public:
  Importer(const onnx::ModelProto& m, std::string label, const ImportOptions& opts)
      : model_(m), label_(std::move(label)), opts_(opts) {}
  // The model is the importer's to empty: each initializer's raw bytes are freed once
  // converted.
  Importer(onnx::ModelProto& m, std::string label, const ImportOptions& opts)
      : model_(m), label_(std::move(label)), opts_(opts), consume_(&m) {}
  // A body of `parent`'s current node (If/Loop/Scan), imported into `g`: its own
  // graph (captured outer values become inputs), or `parent`'s graph itself when
  // `inline_body` (a branch or loop iteration fixed at import; names get `suffix`).
  Importer(const Importer& parent, ir::Graph& g, const std::string& what, bool inline_body,
           std::string suffix = "")
      : model_(parent.model_),
        label_(parent.label_ + ": " + parent.node_label() + ": " + what),
        opts_(parent.opts_),
        opset_(parent.opset_),
        g_(g),
        parent_(&parent),
        inline_(inline_body),
        suffix_(std::move(suffix)) {}

  ir::Graph run() {
    read_opset();
    const onnx::GraphProto& gp = model_.graph();
    g_.name = gp.name().empty() ? "main" : gp.name();
    note_uses(gp);
    if (gp.sparse_initializer_size() > 0)
      throw ir::UnsupportedError(label_ + ": sparse initializers are not supported");
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const auto& init = gp.initializer(i);
      if (init.name().empty()) throw ir::CompileError(label_ + ": an initializer has no name");
      Tensor t = tensor_from_proto(init, label_ + ": initializer '" + init.name() + "'");
      bind(init.name(), g_.add_constant(fresh(init.name()), std::move(t)));
      // Its bytes are in the graph now: the model's copy goes (weights held once, not
      // twice, at the import's peak).
      if (consume_)
        std::string().swap(*consume_->mutable_graph()->mutable_initializer(i)->mutable_raw_data());
    }
    // A shape given for a name the graph does not take is a typo: say so first.
    std::string inputs;
    std::set<std::string> input_names;
    for (const auto& in : gp.input()) {
      input_names.insert(in.name());
      if (!env_.count(in.name())) inputs += (inputs.empty() ? "'" : ", '") + in.name() + "'";
    }
    for (const auto& [name, shape] : opts_.input_shapes)
      if (!input_names.count(name))
        throw ir::CompileError(label_ + ": a shape is given for input '" + name +
                               "', but the graph's inputs are " +
                               (inputs.empty() ? std::string("none") : inputs));
    for (const auto& in : gp.input()) {
      if (env_.count(in.name())) continue;  // an initializer (IR v3 lists them as inputs)
      if (is_sequence_like(in.type())) {
        add_sequence_input(in);
        continue;
      }
      add_graph_input(in);
    }
    for (int k = 0; k < gp.node_size(); ++k) {
      node_ = &gp.node(k);
      node_index_ = k;
      convert_node();
    }
    node_ = nullptr;
    for (const auto& o : gp.output()) add_graph_output(o);
    g_.erase_dead_nodes();
    try {
      g_.verify();
    } catch (const ir::UnsupportedError& e) {
      throw ir::UnsupportedError(label_ + ": " + e.what());
    } catch (const ir::CompileError& e) {
      throw ir::CompileError(label_ + ": " + e.what());
    }
    return std::move(g_);
  }

 private:
  // --- model-level ----------------------------------------------------------
  void read_opset() {
    for (const auto& o : model_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    if (opset_ == 0 && model_.opset_import_size() == 0) opset_ = 1;  // very old models carry none
    if (opset_ > kMaxOpset)
      throw ir::UnsupportedError(label_ + ": opset " + std::to_string(opset_) +
                                 " is newer than supported (1.." + std::to_string(kMaxOpset) + ")");
  }

  void add_graph_input(const onnx::ValueInfoProto& in) {
    const std::string what = label_ + ": input '" + in.name() + "'";
    if (!in.type().has_tensor_type())
      throw ir::UnsupportedError(
          what + " is not a tensor: sequence types are not supported (nor map/optional)");
    const auto& tt = in.type().tensor_type();
    auto et = elem_type_from_onnx(tt.elem_type());
    if (!et)
      throw ir::UnsupportedError(what + " has element type " + onnx_type_name(tt.elem_type()) +
                                 " (supported: " + supported_onnx_types() + ")");
    if (auto c = opts_.constant_inputs.find(in.name()); c != opts_.constant_inputs.end()) {
      if (c->second.elem() != *et)
        throw ir::CompileError(what + ": the constant given for it is " + c->second.type().str() +
                               ", declared " + onnx_type_name(tt.elem_type()));
      bind(in.name(), g_.add_constant(fresh(in.name()), c->second));
      return;
    }
    auto given = opts_.input_shapes.find(in.name());
    Shape shape;
    if (given != opts_.input_shapes.end()) {
      shape = given->second;
      if (tt.has_shape()) {
        const auto& dims = tt.shape().dim();
        bool match = dims.size() == static_cast<int>(shape.size());
        for (int d = 0; match && d < dims.size(); ++d)
          if (dims[d].has_dim_value() && dims[d].dim_value() != shape[d]) match = false;
        if (!match)
          throw ir::CompileError(what + ": the given shape " + ir::shape_str(shape) +
                                 " does not match the declared shape " +
                                 declared_shape(tt.shape()));
      }
    } else {
      if (!tt.has_shape())
        throw ir::UnsupportedError(
            what +
            " has no declared shape (unknown rank); give its concrete shape (trnsim "
            "--input-shape NAME=D0xD1..., ImportOptions::input_shapes in C++)");
      const auto& dims = tt.shape().dim();
      for (int d = 0; d < dims.size(); ++d) {
        if (!dims[d].has_dim_value() || dims[d].dim_value() < 0) {
          std::string sym =
              dims[d].has_dim_param() ? " ('" + dims[d].dim_param() + "')" : " (unknown)";
          throw ir::UnsupportedError(what + " has dynamic dim " + std::to_string(d) + sym + " in " +
                                     declared_shape(tt.shape()) +
                                     "; only static shapes are supported: give a concrete shape "
                                     "(trnsim --input-shape NAME=D0xD1..., "
                                     "ImportOptions::input_shapes in C++)");
        }
        shape.push_back(dims[d].dim_value());
      }
    }
    if (opts_.batch_split > 1) {
      const std::string d = "--dp " + std::to_string(opts_.batch_split);
      if (shape.empty())
        throw ir::CompileError(what + " is a scalar; " + d + " splits dim 0 (the batch) of " +
                               "every input");
      if (shape[0] % opts_.batch_split != 0)
        throw ir::CompileError(what + " has batch (dim 0) " + std::to_string(shape[0]) + " in " +
                               ir::shape_str(shape) + ", which " + d + " does not divide");
      shape[0] /= opts_.batch_split;
    }
    bind(in.name(), g_.add_input(fresh(in.name()), {*et, shape}));
  }

  static std::string declared_shape(const onnx::TensorShapeProto& s) {
    std::string r = "[";
    for (int d = 0; d < s.dim_size(); ++d) {
      if (d) r += ",";
      const auto& dim = s.dim(d);
      r += dim.has_dim_value()   ? std::to_string(dim.dim_value())
           : dim.has_dim_param() ? dim.dim_param()
                                 : "?";
    }
    return r + "]";
  }

  // A sequence/optional graph input: its tensors become graph inputs
  // (sequence_item_name()), with the structure the caller gives.
  void add_sequence_input(const onnx::ValueInfoProto& in) {
    const std::string what = label_ + ": input '" + in.name() + "'";
    if (in.type().has_map_type())
      throw ir::UnsupportedError(what + ": map types are not supported");
    auto it = opts_.sequence_inputs.find(in.name());
    if (it == opts_.sequence_inputs.end())
      throw ir::UnsupportedError(
          what + " is a " + (in.type().has_optional_type() ? "optional" : "sequence") +
          " value: sequences and optionals are resolved at import, so its structure (length, "
          "tensor types) must be given (ImportOptions::sequence_inputs in C++)");
    const SequenceInput& si = it->second;
    if (si.optional != in.type().has_optional_type())
      throw ir::CompileError(
          what + " is declared " + (in.type().has_optional_type() ? "optional" : "a sequence") +
          ", the structure given is " + (si.optional ? "optional" : "a sequence"));
    if (si.optional && !si.of_sequence && si.present && si.items.size() != 1)
      throw ir::CompileError(what + ": an optional tensor holds one tensor, " +
                             std::to_string(si.items.size()) + " given");
    auto c = std::make_shared<Composite>();
    c->optional = si.optional;
    c->present = si.present;
    c->of_sequence = si.of_sequence;
    for (size_t k = 0; k < si.items.size() && (si.present || !si.optional); ++k) {
      const std::string name = sequence_item_name(
          in.name(), si.optional && !si.of_sequence ? -1 : static_cast<int64_t>(k));
      c->items.push_back(g_.add_input(fresh(name), si.items[k]));
      c->elem = si.items[k].elem;
    }
    bind_comp(in.name(), c);
  }

  void add_graph_output(const onnx::ValueInfoProto& o) {
    const std::string what = label_ + ": output '" + o.name() + "'";
    if (CompPtr c = comp_resolve(o.name())) {
      // One output per tensor, through Identity so each has its own name.
      for (size_t k = 0; k < c->items.size(); ++k) {
        Value* v = c->items[k];
        const std::string name = sequence_item_name(
            o.name(), c->optional && !c->of_sequence ? -1 : static_cast<int64_t>(k));
        g_.add_output(g_.add_node("Identity", {v}, {{fresh(name), v->type}})->outputs[0]);
      }
      return;
    }
    auto it = env_.find(o.name());
    if (it == env_.end()) throw ir::CompileError(what + " is not produced by any node");
    Value* v = it->second;
    if (o.type().has_tensor_type()) {
      const auto& tt = o.type().tensor_type();
      if (tt.elem_type() != 0) {
        auto et = elem_type_from_onnx(tt.elem_type());
        if (!et)
          throw ir::UnsupportedError(what + " has element type " + onnx_type_name(tt.elem_type()) +
                                     " (supported: " + supported_onnx_types() + ")");
        if (*et != v->elem())
          throw ir::CompileError(what + " is declared " + onnx_type_name(tt.elem_type()) +
                                 " but computes " + v->type.str());
      }
      if (tt.has_shape()) {
        const auto& dims = tt.shape().dim();
        bool static_dims = true;
        for (const auto& d : dims) static_dims = static_dims && d.has_dim_value();
        if (static_dims) {
          Shape decl;
          for (const auto& d : dims) decl.push_back(d.dim_value());
          // A split batch (batch_split) makes each replica's output a slice too.
          if (opts_.batch_split > 1 && !decl.empty() && decl[0] % opts_.batch_split == 0 &&
              decl != v->shape())
            decl[0] /= opts_.batch_split;
          if (decl != v->shape())
            throw ir::CompileError(what + " is declared " + ir::shape_str(decl) +
                                   " but shape inference gives " + v->type.str());
        }
      }
    }
    g_.add_output(v);
  }

  // --- naming ---------------------------------------------------------------
  // IR names equal ONNX names. A helper value the importer made earlier may hold a
  // name an ONNX value now needs: rename the helper.
  std::string fresh(const std::string& onnx_name) {
    if (inline_) return g_.unique_name(onnx_name + suffix_);
    if (Value* clash = g_.find_value(onnx_name)) {
      if (onnx_names_.count(onnx_name)) fail_model("value '" + onnx_name + "' is defined twice");
      g_.rename_value(clash, g_.unique_name(onnx_name + ".trnsim"));
    }
    return onnx_name;
  }
  void bind(const std::string& onnx_name, Value* v) {
    if (env_.count(onnx_name)) fail_model("value '" + onnx_name + "' is defined twice");
    env_[onnx_name] = v;
    onnx_names_.insert(onnx_name);
  }
  std::string helper_name(const std::string& base) { return g_.unique_name(base + ".trnsim"); }

  // --- errors ---------------------------------------------------------------
  // The node's name; for unnamed nodes its first named output, else its index.
  std::string node_who() const {
    if (!node_->name().empty()) return node_->name();
    for (const auto& o : node_->output())
      if (!o.empty()) return o;
    return "#" + std::to_string(node_index_);
  }
  std::string node_label() const {
    return "node '" + node_who() + "' (op " + node_->op_type() + ")";
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw ir::CompileError(label_ + ": " + node_label() + ": " + msg);
  }
  [[noreturn]] void unsupported(const std::string& msg) const {
    throw ir::UnsupportedError(label_ + ": " + node_label() + ": " + msg);
  }
  [[noreturn]] void fail_model(const std::string& msg) const {
    if (node_) fail(msg);
    throw ir::CompileError(label_ + ": " + msg);
  }

  // --- node inputs, outputs and attributes -----------------------------------
  bool has_in(int k) const { return k < node_->input_size() && !node_->input(k).empty(); }
  Value* in(int k) const {
    if (!has_in(k)) return nullptr;
    auto it = env_.find(node_->input(k));
    if (it == env_.end()) {
      if (Value* v = capture(node_->input(k))) return v;
      if (comp_resolve(node_->input(k)))
        unsupported("input '" + node_->input(k) +
                    "' is a sequence or optional value; this op takes tensors");
      fail("input '" + node_->input(k) +
           "' is not defined before this node (graph not topologically sorted?)");
    }
    return it->second;
  }
  Value* req(int k) const {
    Value* v = in(k);
    if (!v) fail("input " + std::to_string(k) + " is required");
    return v;
  }
  const Tensor& cin(int k, const std::string& what) const {
    Value* v = req(k);
    if (!v->has_data()) {
      const std::string root = source_input(v);
      throw NeedsConstantError(
          label_ + ": " + node_label() + ": input " + std::to_string(k) + " ('" + v->name + "', " +
              what + ") must be a constant: only static shapes and parameters are supported" +
              (root != v->name ? " (it is computed from graph input '" + root + "')" : ""),
          root);
    }
    return *v->data;
  }
  // The graph input a runtime value is computed from (the first by name when there
  // are several), so a caller can specialise it: with it constant, the nodes between
  // fold. The value itself when no graph input feeds it.
  static std::string source_input(const Value* v) {
    std::set<const Value*> seen;
    std::vector<const Value*> todo{v};
    std::set<std::string> roots;
    while (!todo.empty()) {
      const Value* x = todo.back();
      todo.pop_back();
      if (!seen.insert(x).second) continue;
      if (x->is_graph_input) roots.insert(x->name);
      if (x->producer)
        for (const Value* i : x->producer->inputs)
          if (i && !i->has_data()) todo.push_back(i);
    }
    return roots.empty() ? v->name : *roots.begin();
  }
  std::vector<int64_t> cints(int k, const std::string& what) const {
    const Tensor& t = cin(k, what);
    if (t.holds_floats()) fail(what + " must be an integer tensor, got " + t.type().str());
    return t.ints();
  }
  bool out_used(int k) const {
    return k < node_->output_size() && !node_->output(k).empty() && used_.count(node_->output(k));
  }

  const onnx::AttributeProto* attr(const std::string& name) const {
    for (const auto& a : node_->attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  bool has_attr(const std::string& name) const { return attr(name) != nullptr; }
  int64_t ai(const std::string& name, int64_t dflt) const {
    const auto* a = attr(name);
    if (!a) return dflt;
    if (!a->has_i()) fail("attribute '" + name + "' must be an int");
    return a->i();
  }
  float af(const std::string& name, float dflt) const {
    const auto* a = attr(name);
    if (!a) return dflt;
    if (!a->has_f()) fail("attribute '" + name + "' must be a float");
    return a->f();
  }
  std::string as(const std::string& name, const std::string& dflt) const {
    const auto* a = attr(name);
    return a ? a->s() : dflt;
  }
  std::vector<int64_t> aints(const std::string& name) const {
    const auto* a = attr(name);
    if (!a) return {};
    return {a->ints().begin(), a->ints().end()};
  }

  Attribute convert_attr(const onnx::AttributeProto& a) const {
    using AP = onnx::AttributeProto;
    int type = a.type();
    if (type == AP::UNDEFINED) {  // old models leave the type out
      type = a.has_f()         ? AP::FLOAT
             : a.has_i()       ? AP::INT
             : a.has_s()       ? AP::STRING
             : a.has_t()       ? AP::TENSOR
             : a.floats_size() ? AP::FLOATS
             : a.ints_size()   ? AP::INTS
                               : AP::UNDEFINED;
    }
    switch (type) {
      case AP::INT:
        return Attribute(static_cast<int64_t>(a.i()));
      case AP::FLOAT:
        return Attribute(a.f());
      case AP::STRING:
        return Attribute(a.s());
      case AP::INTS:
        return Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
      case AP::FLOATS:
        return Attribute(std::vector<float>(a.floats().begin(), a.floats().end()));
      case AP::TENSOR:
        return Attribute(tensor_from_proto(
            a.t(), label_ + ": " + node_label() + ": attribute '" + a.name() + "'"));
      default:
        unsupported("attribute '" + a.name() +
                    "' has a kind the compiler does not support (graph, sparse, list)");
    }
  }
  AttrMap copy_attrs(const std::set<std::string>& drop = {}) const {
    AttrMap m;
    for (const auto& a : node_->attribute())
      if (!drop.count(a.name()) && a.name() != "consumed_inputs") m[a.name()] = convert_attr(a);
    return m;
  }

  // --- emitting IR ------------------------------------------------------------
  // Create (or fold, when every input is constant) one IR node. `out_names` are the
  // IR names of its outputs: ONNX names, or helper names.
  std::vector<Value*> emit(const std::string& op, std::vector<Value*> ins, AttrMap attrs,
                           const std::vector<std::string>& out_names) {
    ir::Node probe;
    probe.op = op;
    probe.name = node_->name();
    probe.inputs = ins;
    probe.attrs = std::move(attrs);
    std::vector<Value> dummies(out_names.size());
    for (size_t k = 0; k < dummies.size(); ++k) {
      dummies[k].name = out_names[k];
      probe.outputs.push_back(&dummies[k]);
    }
    std::vector<ir::TensorType> types;
    try {
      ir::normalize_node(probe);
      types = ir::infer_types(probe);
      if (types.size() < out_names.size()) throw ir::CompileError("too many outputs");
    } catch (const ir::UnsupportedError& e) {
      unsupported(e.what());
    } catch (const ir::CompileError& e) {
      fail(e.what());
    }
    std::vector<Value*> outs;
    if (interp::foldable(probe)) {
      for (size_t k = 0; k < dummies.size(); ++k) dummies[k].type = types[k];
      std::vector<const Tensor*> tin;
      for (const Value* v : ins) tin.push_back(v && v->has_data() ? &*v->data : nullptr);
      std::vector<Tensor> res;
      try {
        res = interp::eval_node(probe, tin);
      } catch (const ir::UnsupportedError& e) {
        unsupported(std::string("while folding: ") + e.what());
      } catch (const ir::CompileError& e) {
        fail(std::string("while folding: ") + e.what());
      }
      for (size_t k = 0; k < res.size(); ++k)
        outs.push_back(g_.add_constant(out_names[k], std::move(res[k])));
      return outs;
    }
    std::vector<std::pair<std::string, ir::TensorType>> decl;
    for (size_t k = 0; k < out_names.size(); ++k) decl.emplace_back(out_names[k], types[k]);
    ir::Node* n = g_.add_node(op, std::move(ins), decl, std::move(probe.attrs), node_->name());
    return n->outputs;
  }

  // Emit with the node's own outputs (the first `count`, or all up to the last
  // non-empty name) and bind them.
  void emit_bound(const std::string& op, std::vector<Value*> ins, AttrMap attrs, int count = -1) {
    if (count < 0) {
      count = node_->output_size();
      while (count > 0 && node_->output(count - 1).empty()) --count;
    }
    std::vector<std::string> names;
    for (int k = 0; k < count; ++k)
      names.push_back(node_->output(k).empty() ? helper_name(node_->op_type() + "_unused")
                                               : fresh(node_->output(k)));
    std::vector<Value*> outs = emit(op, std::move(ins), std::move(attrs), names);
    for (int k = 0; k < count; ++k)
      if (!node_->output(k).empty()) bind(node_->output(k), outs[k]);
  }

  std::vector<Value*> all_inputs() const {
    std::vector<Value*> v;
    for (int k = 0; k < node_->input_size(); ++k) v.push_back(in(k));
    while (!v.empty() && !v.back()) v.pop_back();
    return v;
  }

  Value* reshape(Value* x, const Shape& s, const std::string& tag) {
    return emit("Reshape", {x}, {{"shape", Attribute(s)}}, {helper_name(x->name + "/" + tag)})[0];
  }

  // --- per-op conversion ----------------------------------------------------
  void convert_node() {
    const std::string& op = node_->op_type();
    const std::string& dom = node_->domain();
    const auto& ops = supported_onnx_ops();
    if (dom == kTileKernelDomain) return conv_tile_kernel();
    if (dom == kCollectiveDomain) return conv_collective();
    if ((!dom.empty() && dom != "ai.onnx") || !std::binary_search(ops.begin(), ops.end(), op))
      throw ir::UnsupportedError(label_ + ": node '" + node_who() + "' has unsupported op type '" +
                                 (dom.empty() || dom == "ai.onnx" ? op : dom + "." + op) +
                                 "'; supported: " + join(ops));
    if (opset_ == 0) fail("the model imports no version of the default ONNX op set");
    // Every supported op has a first output; the converters rely on it.
    if (node_->output_size() == 0) fail("has no outputs");
    for (const auto& a : node_->attribute())
      if ((a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) &&
          op != "If" && op != "Loop" && op != "Scan" && op != "SequenceMap")
        unsupported("subgraph attributes are only supported on If, Loop, Scan and SequenceMap");
    if (sequence_onnx_ops().count(op)) return conv_sequence_op();
    if (op == "Identity" && comp_in(0)) return bind_comp(node_->output(0), comp_in(0));

    static const std::unordered_map<std::string, void (Importer::*)()> special{
        {"Constant", &Importer::conv_constant},
        {"Dropout", &Importer::conv_dropout},
        {"Cast", &Importer::conv_cast},
        {"CastLike", &Importer::conv_cast},
        {"Clip", &Importer::conv_clip},
        {"Conv", &Importer::conv_window},
        {"ConvTranspose", &Importer::conv_window},
        {"MaxPool", &Importer::conv_window},
        {"AveragePool", &Importer::conv_window},
        {"BatchNormalization", &Importer::conv_batchnorm},
        {"LayerNormalization", &Importer::conv_layernorm},
        {"Softmax", &Importer::conv_softmax},
        {"LogSoftmax", &Importer::conv_softmax},
        {"Hardmax", &Importer::conv_softmax},
        {"Reshape", &Importer::conv_reshape},
        {"Squeeze", &Importer::conv_squeeze},
        {"Unsqueeze", &Importer::conv_squeeze},
        {"Split", &Importer::conv_split},
        {"Slice", &Importer::conv_slice},
        {"Expand", &Importer::conv_expand},
        {"Tile", &Importer::conv_tile},
        {"Pad", &Importer::conv_pad},
        {"CumSum", &Importer::conv_cumsum},
        {"Trilu", &Importer::conv_trilu},
        {"Gemm", &Importer::conv_gemm},
        {"Range", &Importer::conv_range},
        {"ConstantOfShape", &Importer::conv_constant_of_shape},
        {"PRelu", &Importer::conv_prelu},
        {"Resize", &Importer::conv_resize},
        {"Upsample", &Importer::conv_resize},
        {"TopK", &Importer::conv_topk},
        {"RoiAlign", &Importer::conv_roialign},
        {"EyeLike", &Importer::conv_eyelike},
        {"MaxUnpool", &Importer::conv_maxunpool},
        {"LSTM", &Importer::conv_rnn},
        {"GRU", &Importer::conv_rnn},
        {"RNN", &Importer::conv_rnn},
        {"If", &Importer::conv_if},
        {"Loop", &Importer::conv_loop},
        {"Scan", &Importer::conv_scan},
    };
    if (convert_scatter_group(op)) return;
    auto it = special.find(op);
    if (it != special.end()) return (this->*(it->second))();
    if (op.rfind("Reduce", 0) == 0) return conv_reduce();
    conv_passthrough();
  }

  // Ops whose ONNX inputs and attributes are the IR's. Before opset 7, binary ops
  // could carry a legacy `broadcast`/`axis` pair: B aligns with A at `axis`.
  void conv_passthrough() {
    std::vector<Value*> ins = all_inputs();
    if (has_attr("broadcast") && ins.size() == 2 && ins[0] && ins[1]) {
      if (ai("broadcast", 0) && has_attr("axis")) {
        int64_t ra = ins[0]->rank(), rb = ins[1]->rank();
        int64_t axis = ai("axis", 0);
        if (axis < 0) axis += ra;
        if (axis < 0 || axis + rb > ra)
          fail("legacy broadcast axis " + std::to_string(ai("axis", 0)) + " is out of range");
        Shape s = ins[1]->shape();
        s.resize(ra - axis, 1);
        if (s != ins[1]->shape()) ins[1] = reshape(ins[1], s, "bcast");
      }
      emit_bound(node_->op_type(), ins, copy_attrs({"broadcast", "axis"}));
      return;
    }
    emit_bound(node_->op_type(), ins, copy_attrs());
  }

  void conv_constant() {
    if (node_->output_size() != 1) fail("must have one output");
    const std::string& name = node_->output(0);
    Tensor t;
    if (const auto* a = attr("value")) {
      t = tensor_from_proto(a->t(), label_ + ": " + node_label() + ": value");
    } else if (const auto* a = attr("value_float")) {
      t = Tensor::scalar(a->f());
    } else if (const auto* a = attr("value_floats")) {
      t = Tensor::from_floats({a->floats_size()}, {a->floats().begin(), a->floats().end()});
    } else if (const auto* a = attr("value_int")) {
      t = Tensor::scalar_int(a->i());
    } else if (const auto* a = attr("value_ints")) {
      t = Tensor::from_ints({a->ints_size()}, {a->ints().begin(), a->ints().end()});
    } else {
      unsupported(
          "only tensor, float(s) and int(s) values are supported (not strings or sparse tensors)");
    }
    bind(name, g_.add_constant(fresh(name), std::move(t)));
  }

  void conv_dropout() {
    if (opset_ >= 12 && has_in(2)) {
      const Tensor& tm = cin(2, "training_mode");
      if (tm.numel() != 1) fail("training_mode must be a scalar");
      if (tm.at(0) != 0) unsupported("training mode is not supported (inference only)");
    }
    if (ai("is_test", 1) == 0 && opset_ < 7 && out_used(1))
      unsupported("training mode (is_test=0 with a mask output) is not supported");
    Value* x = req(0);
    emit_bound("Identity", {x}, {}, 1);
    if (node_->output_size() > 1 && !node_->output(1).empty()) {
      // The inference-mode mask keeps every element.
      Tensor mask = opset_ >= 10
                        ? Tensor::from_ints(x->shape(), std::vector<int64_t>(x->type.numel(), 1),
                                            ElemType::boolean)
                        : Tensor(x->type).cast(x->elem());
      if (opset_ < 10) {
        if (mask.holds_floats())
          std::fill(mask.floats().begin(), mask.floats().end(), 1.0f);
        else
          std::fill(mask.ints().begin(), mask.ints().end(), 1);
      }
      bind(node_->output(1), g_.add_constant(fresh(node_->output(1)), std::move(mask)));
    }
  }

  void conv_cast() {
    ElemType to;
    if (node_->op_type() == "CastLike") {
      to = req(1)->elem();
    } else {
      int64_t code = ai("to", -1);
      if (const auto* a = attr("to"); a && a->has_s())
        fail("'to' given as a string is not supported (opset 1 form)");
      auto et = elem_type_from_onnx(static_cast<int>(code));
      if (!et)
        unsupported("cast to " + onnx_type_name(static_cast<int>(code)) +
                    " is not supported (supported: " + supported_onnx_types() + ")");
      to = *et;
    }
    emit_bound("Cast", {req(0)}, {{"to", Attribute(std::string(ir::elem_type_name(to)))}});
  }

  // A scalar bound given as an input, checked to be exactly representable as a
  // float attribute when the data is integer.
  float scalar_input(int k, const std::string& what) {
    const Tensor& t = cin(k, what);
    if (t.numel() != 1) fail(what + " must hold one element, got " + t.type().str());
    if (t.holds_floats()) return static_cast<float>(t.at(0));
    int64_t v = t.ints()[0];
    float f = static_cast<float>(v);
    if (static_cast<double>(f) != static_cast<double>(v) || std::fabs(f) >= 9.2e18f)
      unsupported(what + " " + std::to_string(v) +
                  " is not exactly representable as a float attribute");
    return f;
  }

  void conv_clip() {
    const float inf = std::numeric_limits<float>::infinity();
    float lo = -inf, hi = inf;
    if (opset_ < 11) {
      lo = af("min", -inf);
      hi = af("max", inf);
      // Pre-11 defaults are the float limits: the same as no bound.
      if (lo == std::numeric_limits<float>::lowest()) lo = -inf;
      if (hi == std::numeric_limits<float>::max()) hi = inf;
    } else {
      if (has_in(1)) lo = scalar_input(1, "min");
      if (has_in(2)) hi = scalar_input(2, "max");
    }
    emit_bound("Clip", {req(0)}, {{"min", Attribute(lo)}, {"max", Attribute(hi)}});
  }

  void conv_gemm() { emit_bound("Gemm", all_inputs(), copy_attrs({"broadcast"})); }

  // Conv, ConvTranspose, MaxPool, AveragePool: auto_pad and output_shape become
  // explicit pads (and output_padding).
  void conv_window() {
    const std::string& op = node_->op_type();
    Value* x = req(0);
    if (x->rank() < 3) fail("input '" + x->name + "' must have rank >= 3, got " + x->type.str());
    const size_t k = x->rank() - 2;
    AttrMap attrs = copy_attrs({"auto_pad", "output_shape", "storage_order"});
    std::vector<int64_t> kernel = aints("kernel_shape");
    if (kernel.empty()) {
      if (op == "Conv" || op == "ConvTranspose") {
        Value* w = req(1);
        if (w->rank() != x->rank())
          fail("weights '" + w->name + "' " + w->type.str() + " must have the input's rank");
        kernel.assign(w->shape().begin() + 2, w->shape().end());
        attrs["kernel_shape"] = kernel;
      } else {
        fail("missing attribute 'kernel_shape'");
      }
    }
    if (kernel.size() != k)
      fail("kernel_shape " + ir::shape_str(kernel) + " does not match input " + x->type.str());
    std::vector<int64_t> strides = aints("strides"), dil = aints("dilations");
    if (strides.empty()) strides.assign(k, 1);
    if (dil.empty()) dil.assign(k, 1);
    if (strides.size() != k || dil.size() != k)
      fail("strides/dilations need " + std::to_string(k) + " entries");
    std::string auto_pad = as("auto_pad", "NOTSET");
    std::vector<int64_t> pads = aints("pads");
    if (pads.empty()) pads.assign(2 * k, 0);
    const Shape& xs = x->shape();
    if (op == "ConvTranspose") {
      std::vector<int64_t> out_pad = aints("output_padding");
      if (out_pad.empty()) out_pad.assign(k, 0);
      std::vector<int64_t> out_shape = aints("output_shape");
      bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
      if (!out_shape.empty() || same) {
        if (out_shape.empty())
          for (size_t i = 0; i < k; ++i) out_shape.push_back(xs[2 + i] * strides[i]);
        if (out_shape.size() == k + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
        if (out_shape.size() != k) fail("output_shape needs " + std::to_string(k) + " entries");
        for (size_t i = 0; i < k; ++i) {
          int64_t total = strides[i] * (xs[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dil[i] + 1 -
                          out_shape[i];
          if (total < 0) {
            // A larger output than the natural one: extra rows at the end.
            pads[i] = 0;
            pads[i + k] = 0;
            out_pad[i] += -total;
          } else if (auto_pad == "SAME_UPPER") {
            pads[i] = total / 2;
            pads[i + k] = total - total / 2;
          } else {
            pads[i] = total - total / 2;
            pads[i + k] = total / 2;
          }
        }
      } else if (auto_pad == "VALID") {
        pads.assign(2 * k, 0);
      } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
        fail("unknown auto_pad '" + auto_pad + "'");
      }
      attrs["output_padding"] = out_pad;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      for (size_t i = 0; i < k; ++i) {
        int64_t out = (xs[2 + i] + strides[i] - 1) / strides[i];
        int64_t total =
            std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - xs[2 + i]);
        int64_t small = total / 2, big = total - small;
        pads[i] = auto_pad == "SAME_UPPER" ? small : big;
        pads[i + k] = auto_pad == "SAME_UPPER" ? big : small;
      }
    } else if (auto_pad == "VALID") {
      pads.assign(2 * k, 0);
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      fail("unknown auto_pad '" + auto_pad + "'");
    }
    attrs["pads"] = pads;
    if (op == "MaxPool" && out_used(1)) {
      attrs["storage_order"] = ai("storage_order", 0);
      emit_bound(op, all_inputs(), std::move(attrs), 2);
      return;
    }
    if (op == "AveragePool" && has_attr("dilations")) {
      for (int64_t d : dil)
        if (d != 1) unsupported("AveragePool dilations other than 1 are not supported");
      attrs.erase("dilations");
    }
    emit_bound(op, all_inputs(), std::move(attrs), 1);
  }

  void conv_batchnorm() {
    if (ai("training_mode", 0) != 0) unsupported("training mode is not supported (inference only)");
    if (ai("spatial", 1) == 0)
      unsupported("spatial=0 (per-activation statistics) is not supported");
    for (int k = 1; k < node_->output_size(); ++k)
      if (out_used(k))
        unsupported("output " + std::to_string(k) + " (training statistics) is not supported");
    emit_bound("BatchNormalization", all_inputs(), {{"epsilon", Attribute(af("epsilon", 1e-5f))}},
               1);
  }

  void conv_layernorm() {
    emit_bound("LayerNormalization", all_inputs(), copy_attrs({"stash_type"}));
  }

  void conv_softmax() {
    const std::string& op = node_->op_type();
    Value* x = req(0);
    if (opset_ >= 13) {
      emit_bound(op, {x}, copy_attrs());
      return;
    }
    // Before opset 13 the op works on the input coerced to 2-D at `axis`.
    const int64_t r = x->rank();
    int64_t axis;
    try {
      axis = ir::normalize_axis(ai("axis", 1), r);
    } catch (const ir::CompileError& e) {
      fail(e.what());
    }
    if (axis == r - 1) {
      emit_bound(op, {x}, {{"axis", Attribute(axis)}});
      return;
    }
    const Shape& s = x->shape();
    Shape flat{ir::num_elements(Shape(s.begin(), s.begin() + axis)),
               ir::num_elements(Shape(s.begin() + axis, s.end()))};
    Value* x2 = reshape(x, flat, "2d");
    Value* y2 = emit(op, {x2}, {{"axis", Attribute(int64_t{1})}},
                     {helper_name(node_->output(0) + "/2d")})[0];
    emit_bound("Reshape", {y2}, {{"shape", Attribute(s)}}, 1);
  }

  void conv_reduce() {
    Value* x = req(0);
    std::vector<int64_t> axes;
    bool axes_from_input = node_->op_type() == "ReduceSum" && opset_ >= 13;
    if (axes_from_input) {
      if (has_in(1)) axes = cints(1, "axes");
    } else {
      axes = aints("axes");
    }
    if (axes.empty() && ai("noop_with_empty_axes", 0) != 0) {
      emit_bound("Identity", {x}, {});
      return;
    }
    emit_bound(node_->op_type(), {x},
               {{"axes", Attribute(axes)}, {"keepdims", Attribute(ai("keepdims", 1))}});
  }

  void conv_reshape() {
    Value* x = req(0);
    std::vector<int64_t> shape = opset_ < 5 ? aints("shape") : cints(1, "shape");
    const bool allow_zero = ai("allowzero", 0) != 0;
    int64_t known = 1, infer_at = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allow_zero) {
        if (static_cast<int64_t>(i) >= x->rank())
          fail("shape " + ir::shape_str(shape) + " copies a dim the input lacks");
        shape[i] = x->shape()[i];
      }
      if (shape[i] == -1) {
        if (infer_at >= 0) fail("shape " + ir::shape_str(shape) + " has more than one -1");
        infer_at = static_cast<int64_t>(i);
      } else if (shape[i] < 0) {
        fail("shape " + ir::shape_str(shape) + " has a negative dim");
      } else if (__builtin_mul_overflow(known, shape[i], &known)) {
        fail("shape " + ir::shape_str(shape) + " has more elements than int64 can count");
      }
    }
    if (infer_at >= 0) {
      if (known == 0 || x->type.numel() % known != 0)
        fail("cannot infer the -1 dim reshaping " + x->type.str() + " to " + ir::shape_str(shape));
      shape[infer_at] = x->type.numel() / known;
    }
    emit_bound("Reshape", {x}, {{"shape", Attribute(shape)}});
  }

  void conv_squeeze() {
    Value* x = req(0);
    AttrMap attrs;
    if (opset_ >= 13) {
      if (has_in(1)) attrs["axes"] = cints(1, "axes");
    } else if (has_attr("axes")) {
      attrs["axes"] = aints("axes");
    }
    if (node_->op_type() == "Unsqueeze" && !attrs.count("axes")) fail("axes are required");
    emit_bound(node_->op_type(), {x}, attrs);
  }

  void conv_split() {
    Value* x = req(0);
    AttrMap attrs{{"axis", Attribute(ai("axis", 0))}};
    if (opset_ >= 13 || (opset_ < 2 && has_in(1))) {
      if (has_in(1)) attrs["split"] = cints(1, "split");
    } else if (has_attr("split")) {
      attrs["split"] = aints("split");
    }
    emit_bound("Split", {x}, attrs, node_->output_size());
  }

  void conv_slice() {
    Value* x = req(0);
    AttrMap attrs;
    if (opset_ < 10) {
      attrs["starts"] = aints("starts");
      attrs["ends"] = aints("ends");
      if (has_attr("axes")) attrs["axes"] = aints("axes");
    } else {
      attrs["starts"] = cints(1, "starts");
      attrs["ends"] = cints(2, "ends");
      if (has_in(3)) attrs["axes"] = cints(3, "axes");
      if (has_in(4)) attrs["steps"] = cints(4, "steps");
    }
    emit_bound("Slice", {x}, attrs);
  }

  void conv_expand() { emit_bound("Expand", {req(0)}, {{"shape", Attribute(cints(1, "shape"))}}); }

  void conv_tile() {
    if (opset_ < 6) unsupported("Tile before opset 6 (tiles/axis inputs) is not supported");
    emit_bound("Tile", {req(0)}, {{"repeats", Attribute(cints(1, "repeats"))}});
  }

  void conv_pad() {
    Value* x = req(0);
    AttrMap attrs{{"mode", Attribute(as("mode", "constant"))}};
    if (opset_ < 11) {
      attrs["pads"] = aints(opset_ < 2 ? "paddings" : "pads");
      attrs["value"] = af("value", 0.0f);
    } else {
      attrs["pads"] = cints(1, "pads");
      attrs["value"] = has_in(2) ? scalar_input(2, "constant_value") : 0.0f;
      if (has_in(3)) unsupported("the axes input of Pad (opset 18) is not supported");
    }
    emit_bound("Pad", {x}, attrs);
  }

  void conv_cumsum() {
    std::vector<int64_t> axis = cints(1, "axis");
    if (axis.size() != 1) fail("axis must hold one value");
    emit_bound("CumSum", {req(0)},
               {{"axis", Attribute(axis[0])},
                {"exclusive", Attribute(ai("exclusive", 0))},
                {"reverse", Attribute(ai("reverse", 0))}});
  }

  void conv_trilu() {
    int64_t kk = 0;
    if (has_in(1)) {
      std::vector<int64_t> k = cints(1, "k");
      if (k.size() != 1) fail("k must hold one value");
      kk = k[0];
    }
    emit_bound("Trilu", {req(0)}, {{"upper", Attribute(ai("upper", 1))}, {"k", Attribute(kk)}});
  }

  // Output shapes that depend on input data: the inputs must be constants.
  void conv_range() {
    for (int k = 0; k < 3; ++k) cin(k, k == 0 ? "start" : k == 1 ? "limit" : "delta");
    emit_bound("Range", all_inputs(), {});
  }
  void conv_constant_of_shape() {
    cin(0, "shape");
    emit_bound("ConstantOfShape", all_inputs(), copy_attrs());
  }

  // Before opset 7 a 1-D slope of size C applies per channel (dim 1), not along the
  // last dim as numpy broadcasting would.
  void conv_prelu() {
    Value* x = req(0);
    Value* slope = req(1);
    if (opset_ < 7 && slope->rank() == 1 && x->rank() >= 2 && slope->shape()[0] == x->shape()[1] &&
        slope->shape()[0] != 1) {
      Shape s{x->shape()[1]};
      s.resize(x->rank() - 1, 1);
      slope = reshape(slope, s, "per_channel");
    }
    emit_bound("PRelu", {x, slope}, {});
  }

  // --- scatter/gather, data-dependent, quantisation and window ops -----------
  // Converters of these ops; returns false for other ops.
  bool convert_scatter_group(const std::string& op) {
    static const std::unordered_map<std::string, void (Importer::*)()> conv{
        {"Scatter", &Importer::conv_scatter},         {"OneHot", &Importer::conv_one_hot},
        {"NonZero", &Importer::conv_data_shaped},     {"Unique", &Importer::conv_data_shaped},
        {"Compress", &Importer::conv_compress},       {"ConvInteger", &Importer::conv_int_conv},
        {"QLinearConv", &Importer::conv_int_conv},    {"HannWindow", &Importer::conv_window_fn},
        {"HammingWindow", &Importer::conv_window_fn}, {"BlackmanWindow", &Importer::conv_window_fn},
    };
    auto it = conv.find(op);
    if (it == conv.end()) return false;
    (this->*(it->second))();
    return true;
  }

  // Scatter (opsets 9-10) is ScatterElements without a reduction.
  void conv_scatter() {
    emit_bound("ScatterElements", all_inputs(), {{"axis", Attribute(ai("axis", 0))}});
  }

  // depth becomes an attribute (it is the size of the new dim); a float depth is
  // cast to int64 as the spec says.
  void conv_one_hot() {
    const Tensor& d = cin(1, "depth");
    if (d.numel() != 1) fail("depth must hold one value, got " + d.type().str());
    const double v = std::trunc(d.at(0));
    if (!(v >= 0 && v < 9.2e18)) fail("depth " + std::to_string(d.at(0)) + " must be >= 0");
    emit_bound(
        "OneHot", {req(0), req(2)},
        {{"axis", Attribute(ai("axis", -1))}, {"depth", Attribute(static_cast<int64_t>(v))}});
  }

  // NonZero and Unique: the output shape depends on every value of input 0, so it
  // must be a constant (the node then folds).
  void conv_data_shaped() {
    cin(0, node_->op_type() == "NonZero" ? "the tensor whose non-zeros are listed"
                                         : "the tensor whose unique values are listed");
    emit_bound(node_->op_type(), all_inputs(), copy_attrs());
  }

  // The condition decides the output shape: it becomes an attribute.
  void conv_compress() {
    const Tensor& c = cin(1, "condition");
    if (c.rank() != 1) fail("condition must be 1-D, got " + c.type().str());
    std::vector<int64_t> flags;
    for (int64_t k = 0; k < c.numel(); ++k) flags.push_back(c.at(k) != 0);
    AttrMap attrs{{"condition", Attribute(flags)}};
    if (has_attr("axis")) attrs["axis"] = Attribute(ai("axis", 0));
    emit_bound("Compress", {req(0)}, attrs);
  }

  // ConvInteger, QLinearConv: auto_pad becomes explicit pads (weights: input 1 or 3).
  void conv_int_conv() {
    const bool qlinear = node_->op_type() == "QLinearConv";
    Value* x = req(0);
    Value* w = req(qlinear ? 3 : 1);
    if (x->rank() < 3 || w->rank() != x->rank())
      fail("input '" + x->name + "' " + x->type.str() + " and weights '" + w->name + "' " +
           w->type.str() + " must be [N, C, spatial...] and [M, C/group, kernel...]");
    const size_t k = x->rank() - 2;
    AttrMap attrs = copy_attrs({"auto_pad"});
    std::vector<int64_t> kernel = aints("kernel_shape");
    if (kernel.empty()) kernel.assign(w->shape().begin() + 2, w->shape().end());
    std::vector<int64_t> strides = aints("strides"), dil = aints("dilations");
    if (strides.empty()) strides.assign(k, 1);
    if (dil.empty()) dil.assign(k, 1);
    if (kernel.size() != k || strides.size() != k || dil.size() != k)
      fail("kernel_shape/strides/dilations need " + std::to_string(k) + " entries");
    const std::string auto_pad = as("auto_pad", "NOTSET");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      std::vector<int64_t> pads(2 * k);
      for (size_t i = 0; i < k; ++i) {
        const int64_t in = x->shape()[2 + i];
        if (strides[i] < 1) fail("strides must be positive");
        const int64_t out = (in + strides[i] - 1) / strides[i];
        const int64_t total =
            std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in);
        const int64_t small = total / 2, big = total - small;
        pads[i] = auto_pad == "SAME_UPPER" ? small : big;
        pads[i + k] = auto_pad == "SAME_UPPER" ? big : small;
      }
      attrs["pads"] = pads;
    } else if (auto_pad == "VALID") {
      attrs["pads"] = std::vector<int64_t>(2 * k, 0);
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      fail("unknown auto_pad '" + auto_pad + "'");
    }
    emit_bound(node_->op_type(), all_inputs(), std::move(attrs), 1);
  }

  // Hann/Hamming/BlackmanWindow: the size input is the output shape; the node folds.
  void conv_window_fn() {
    const Tensor& s = cin(0, "size");
    if (s.numel() != 1 || s.holds_floats()) fail("size must be one integer, got " + s.type().str());
    const int64_t code = ai("output_datatype", 1);
    auto et = elem_type_from_onnx(static_cast<int>(code));
    if (!et)
      unsupported("output_datatype " + onnx_type_name(static_cast<int>(code)) +
                  " is not supported (supported: " + supported_onnx_types() + ")");
    emit_bound(node_->op_type(), {},
               {{"size", Attribute(s.ints()[0])},
                {"periodic", Attribute(ai("periodic", 1))},
                {"output_datatype", Attribute(std::string(ir::elem_type_name(*et)))}});
  }

  // --- index, resampling and misc ops -----------------------------------------
  std::vector<float> cfloats(int k, const std::string& what) const {
    const Tensor& t = cin(k, what);
    if (!t.holds_floats()) fail(what + " must be a floating point tensor, got " + t.type().str());
    return t.floats();
  }

  // Resize (opsets 10-17) and Upsample (7-9): scales or sizes become the `sizes`
  // (output shape) and `scales` attributes, roi the `roi` attribute. Before opset
  // 11 both ops use asymmetric coordinates and floor rounding.
  void conv_resize() {
    const std::string& op = node_->op_type();
    Value* x = req(0);
    const size_t r = static_cast<size_t>(x->rank());
    AttrMap attrs;
    std::vector<float> scales;
    std::vector<int64_t> sizes;
    if (op == "Upsample" || opset_ < 11) {
      if (op == "Upsample" && opset_ < 7)
        unsupported("Upsample before opset 7 (height_scale/width_scale) is not supported");
      std::string mode = as("mode", "nearest");
      if (mode == "bilinear") mode = "linear";
      if (mode != "nearest" && mode != "linear")
        unsupported("mode '" + mode + "' is not supported (nearest, linear)");
      attrs["mode"] = mode;
      attrs["coordinate_transformation_mode"] = std::string("asymmetric");
      attrs["nearest_mode"] = std::string("floor");
      if (op == "Upsample" && opset_ < 9) {
        const auto* a = attr("scales");
        if (!a) fail("missing attribute 'scales'");
        scales.assign(a->floats().begin(), a->floats().end());
      } else {
        scales = cfloats(1, "scales");
      }
    } else {
      attrs = copy_attrs();
      const std::string ctm = as("coordinate_transformation_mode", "half_pixel");
      if (has_in(3)) {
        const Tensor& t = cin(3, "sizes");
        if (t.numel() > 0) sizes = cints(3, "sizes");
      }
      if (sizes.empty()) {
        if (!has_in(2)) fail("needs scales (input 2) or sizes (input 3)");
        scales = cfloats(2, "scales");
        if (scales.empty()) fail("needs scales (input 2) or sizes (input 3)");
      } else if (has_in(2) && cin(2, "scales").numel() > 0) {
        fail("scales and sizes must not both be given");
      }
      if (ctm == "tf_crop_and_resize") {
        if (!has_in(1)) fail("coordinate_transformation_mode tf_crop_and_resize needs roi");
        attrs["roi"] = cfloats(1, "roi");
      }
    }
    if (sizes.empty()) {
      if (scales.size() != r)
        fail("scales has " + std::to_string(scales.size()) + " entries for input " + x->type.str());
      for (size_t d = 0; d < r; ++d) {
        const double o =
            std::floor(static_cast<double>(scales[d]) * static_cast<double>(x->shape()[d]));
        if (!(scales[d] > 0) || !(o < 9.0e18))
          fail("scales entry " + std::to_string(scales[d]) + " must be positive and finite");
        sizes.push_back(static_cast<int64_t>(o));
      }
      attrs["scales"] = scales;
    } else if (sizes.size() != r) {
      fail("sizes " + ir::shape_str(sizes) + " does not match input " + x->type.str());
    }
    attrs["sizes"] = sizes;
    emit_bound("Resize", {x}, std::move(attrs), 1);
  }

  void conv_topk() {
    int64_t k;
    if (opset_ < 10) {
      k = ai("k", -1);
    } else {
      std::vector<int64_t> kk = cints(1, "K");
      if (kk.size() != 1) fail("K must hold one value");
      k = kk[0];
    }
    AttrMap attrs = copy_attrs({"k"});
    attrs["k"] = k;
    emit_bound("TopK", {req(0)}, std::move(attrs));
  }

  void conv_roialign() {
    AttrMap attrs = copy_attrs();
    // Opset 10 has no attribute: its sampling grid is output_half_pixel's.
    if (!attrs.count("coordinate_transformation_mode"))
      attrs["coordinate_transformation_mode"] =
          std::string(opset_ < 16 ? "output_half_pixel" : "half_pixel");
    emit_bound("RoiAlign", all_inputs(), std::move(attrs));
  }

  void conv_maxunpool() {
    AttrMap attrs = copy_attrs();
    if (has_in(2)) attrs["output_shape"] = cints(2, "output_shape");
    emit_bound("MaxUnpool", {req(0), req(1)}, std::move(attrs));
  }

  void conv_eyelike() {
    AttrMap attrs = copy_attrs({"dtype"});
    if (has_attr("dtype")) {
      const int code = static_cast<int>(ai("dtype", 0));
      auto et = elem_type_from_onnx(code);
      if (!et)
        unsupported("dtype " + onnx_type_name(code) +
                    " is not supported (supported: " + supported_onnx_types() + ")");
      attrs["dtype"] = std::string(ir::elem_type_name(*et));
    }
    emit_bound("EyeLike", {req(0)}, std::move(attrs));
  }

  // --- recurrent and control-flow ops ------------------------------------------
  // LSTM/GRU/RNN: the string list of activations and the alpha/beta values they
  // consume (in order, only by the functions that take them) become the IR's
  // per-function lists (compiler/ir/ops.h).
  void conv_rnn() {
    const std::string& op = node_->op_type();
    AttrMap attrs =
        copy_attrs({"activations", "activation_alpha", "activation_beta", "output_sequence"});
    const std::string dir = as("direction", "forward");
    const size_t dirs = dir == "bidirectional" ? 2 : 1;
    const size_t per = static_cast<size_t>(ir::rnn_activations_per_direction(op));
    std::vector<std::string> names;
    if (const auto* a = attr("activations")) {
      names.assign(a->strings().begin(), a->strings().end());
      if (names.size() != per && names.size() != per * dirs)
        fail("activations lists " + std::to_string(names.size()) + " functions, expected " +
             std::to_string(per * dirs) + " (" + std::to_string(per) + " per direction)");
    } else {
      names = op == "LSTM"  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
              : op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                            : std::vector<std::string>{"Tanh"};
    }
    std::vector<float> given_a, given_b;
    if (const auto* a = attr("activation_alpha"))
      given_a.assign(a->floats().begin(), a->floats().end());
    if (const auto* a = attr("activation_beta"))
      given_b.assign(a->floats().begin(), a->floats().end());
    size_t next_a = 0, next_b = 0;
    std::string joined;
    std::vector<float> alphas, betas;
    for (const auto& nm : names) {
      const std::string c = ir::rnn_activation_canonical(nm);
      if (c.empty())
        unsupported("activation '" + nm +
                    "' is not supported (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
                    "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)");
      auto [al, be] = ir::rnn_activation_defaults(c);
      if (ir::rnn_activation_takes_alpha(c) && next_a < given_a.size()) al = given_a[next_a++];
      if (ir::rnn_activation_takes_beta(c) && next_b < given_b.size()) be = given_b[next_b++];
      joined += (joined.empty() ? "" : ",") + c;
      alphas.push_back(al);
      betas.push_back(be);
    }
    if (names.size() == per && dirs == 2) {  // one set given: both directions use it
      joined += "," + joined;
      const std::vector<float> a1 = alphas, b1 = betas;
      alphas.insert(alphas.end(), a1.begin(), a1.end());
      betas.insert(betas.end(), b1.begin(), b1.end());
    }
    attrs["activations"] = joined;
    attrs["activation_alpha"] = alphas;
    attrs["activation_beta"] = betas;
    emit_bound(op, all_inputs(), std::move(attrs));
  }

  // Every name read by the graph's nodes (bodies included: they read outer values
  // by name) or outputs.
  void note_uses(const onnx::GraphProto& gp) {
    for (const auto& n : gp.node()) {
      for (const auto& i : n.input()) used_.insert(i);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) note_uses(a.g());
        for (const auto& g : a.graphs()) note_uses(g);
      }
    }
    for (const auto& o : gp.output()) used_.insert(o.name());
  }

  // Bodies read outer values by name (ONNX implicit captures). An outer constant
  // with data is copied into the body, so folding still sees it; any other outer
  // value becomes a body input, recorded in captures_ for the node to pass in.
  Value* capture(const std::string& name) const {
    if (!parent_) return nullptr;
    Value* outer = parent_->resolve(name);
    if (!outer) return nullptr;
    if (inline_) return outer;  // same graph
    const std::string local = g_.find_value(name) ? g_.unique_name(name) : name;
    Value* v;
    if (outer->has_data()) {
      v = g_.add_constant(local, *outer->data);
    } else {
      v = g_.add_input(local, outer->type);
      captures_.emplace_back(name, outer);
    }
    env_[name] = v;
    onnx_names_.insert(name);
    return v;
  }
  Value* resolve(const std::string& name) const {
    auto it = env_.find(name);
    return it != env_.end() ? it->second : capture(name);
  }
  // Whether `name` is a value of this scope or an enclosing one (no capture made).
  bool knows(const std::string& name) const {
    return env_.count(name) || (parent_ && parent_->knows(name));
  }

  const onnx::GraphProto& graph_attr(const std::string& name) const {
    const auto* a = attr(name);
    if (!a || !a->has_g()) fail("attribute '" + name + "' must be a graph");
    return a->g();
  }

  static bool is_sequence_like(const onnx::TypeProto& t) {
    return t.has_sequence_type() || t.has_optional_type() || t.has_map_type();
  }

  // Import body `gp`: its formal inputs are typed `types` (subgraph mode) or bound to
  // `values` (inline mode). Returns the body's output values.
  std::vector<Slot> import_body(const onnx::GraphProto& gp,
                                const std::vector<ir::TensorType>& types,
                                const std::vector<Slot>& values = {}) {
    if (gp.input_size() != static_cast<int>(inline_ ? values.size() : types.size()))
      fail_model("body '" + gp.name() + "' declares " + std::to_string(gp.input_size()) +
                 " inputs, the op passes " +
                 std::to_string(inline_ ? values.size() : types.size()));
    if (!inline_) g_.name = gp.name().empty() ? "body" : gp.name();
    note_uses(gp);
    for (int k = 0; k < gp.input_size(); ++k) {
      const auto& in = gp.input(k);
      if (inline_) {
        if (values[k].c)
          bind_comp(in.name(), values[k].c);
        else
          bind(in.name(), values[k].v);
        continue;
      }
      if (is_sequence_like(in.type()))
        throw ir::UnsupportedError(label_ + ": body input '" + in.name() +
                                   "': sequence and optional values are only supported in "
                                   "bodies resolved at import (unrolled or inlined)");
      if (in.type().has_tensor_type() && in.type().tensor_type().elem_type() != 0) {
        auto et = elem_type_from_onnx(in.type().tensor_type().elem_type());
        if (et && *et != types[k].elem)
          throw ir::CompileError(label_ + ": body input '" + in.name() + "' is declared " +
                                 onnx_type_name(in.type().tensor_type().elem_type()) +
                                 ", the op passes " + types[k].str());
      }
      bind(in.name(), g_.add_input(fresh(in.name()), types[k]));
    }
    if (gp.sparse_initializer_size() > 0)
      throw ir::UnsupportedError(label_ + ": sparse initializers are not supported");
    for (const auto& init : gp.initializer())
      bind(init.name(),
           g_.add_constant(fresh(init.name()), tensor_from_proto(init, label_ + ": initializer '" +
                                                                           init.name() + "'")));
    for (int k = 0; k < gp.node_size(); ++k) {
      node_ = &gp.node(k);
      node_index_ = k;
      convert_node();
    }
    node_ = nullptr;
    std::vector<Slot> outs;
    for (const auto& o : gp.output()) {
      if (CompPtr c = inline_ ? comp_resolve(o.name()) : nullptr) {
        outs.push_back({nullptr, c});
        continue;
      }
      if (is_sequence_like(o.type()))
        throw ir::UnsupportedError(label_ + ": body output '" + o.name() +
                                   "': sequence and optional values are only supported in "
                                   "bodies resolved at import (unrolled or inlined)");
      Value* v = resolve(o.name());
      if (!v)
        throw ir::CompileError(label_ + ": body output '" + o.name() +
                               "' is not produced by any node");
      outs.push_back({v, nullptr});
    }
    if (!inline_) {
      for (const Slot& o : outs) g_.add_output(o.v);
      g_.erase_dead_nodes();
    }
    return outs;
  }

  std::vector<Value*> capture_values(const Importer& body) const {
    std::vector<Value*> r;
    for (const auto& [name, v] : body.captures_) r.push_back(v);
    return r;
  }

  // Bind the node's outputs to `vals` (through Identity, which folds constants).
  void bind_outputs(const std::vector<Slot>& vals) {
    for (size_t k = 0; k < vals.size() && static_cast<int>(k) < node_->output_size(); ++k) {
      if (node_->output(k).empty()) continue;
      if (vals[k].c)
        bind_comp(node_->output(k), vals[k].c);
      else
        bind(node_->output(k), emit("Identity", {vals[k].v}, {}, {fresh(node_->output(k))})[0]);
    }
  }

  // If: a constant condition inlines its branch (the other is not imported, so it
  // may even differ in type); a runtime one makes an If node whose branches read
  // the union of their captures, in the same order.
  void conv_if() {
    Value* cond = req(0);
    const onnx::GraphProto& tp = graph_attr("then_branch");
    const onnx::GraphProto& ep = graph_attr("else_branch");
    if (cond->has_data()) {
      if (cond->type.numel() != 1) fail("condition must hold one value");
      const bool c = cond->data->at(0) != 0;
      Importer sub(*this, g_, c ? "then_branch" : "else_branch", true);
      bind_outputs(sub.import_body(c ? tp : ep, {}, {}));
      return;
    }
    if (touches_composites(tp) || touches_composites(ep))
      cin(0,
          "condition; the branches make or read sequence or optional values, which are "
          "resolved at import");
    auto tg = std::make_shared<ir::Graph>();
    auto eg = std::make_shared<ir::Graph>();
    Importer ts(*this, *tg, "then_branch", false);
    ts.import_body(tp, {});
    Importer es(*this, *eg, "else_branch", false);
    for (const auto& [name, outer] : ts.captures_) es.capture(name);
    es.import_body(ep, {});
    for (size_t k = ts.captures_.size(); k < es.captures_.size(); ++k) {
      const auto& [name, outer] = es.captures_[k];
      tg->add_input(tg->unique_name(name), outer->type);  // unused in this branch
    }
    std::vector<Value*> ins{cond};
    for (Value* v : capture_values(es)) ins.push_back(v);
    emit_bound("If", ins,
               {{"then_branch", Attribute(std::shared_ptr<const ir::Graph>(tg))},
                {"else_branch", Attribute(std::shared_ptr<const ir::Graph>(eg))}});
  }

  // Loop: a body imported once and run per iteration. A body that needs its
  // iteration number (or another per-iteration value) as a compile-time constant,
  // e.g. a Slice at the iteration, is unrolled at import instead; that needs the
  // trip count and the condition as constants.
  void conv_loop() {
    const onnx::GraphProto& bp = graph_attr("body");
    Value* trip = in(0);
    Value* cond = in(1);
    std::vector<Slot> slots;
    bool composite = touches_composites(bp);
    for (int k = 2; k < node_->input_size(); ++k) {
      CompPtr c = comp_in(k);
      composite = composite || c;
      slots.push_back(c ? Slot{nullptr, c} : Slot{req(k), nullptr});
    }
    const size_t N = slots.size();
    if (static_cast<size_t>(bp.output_size()) < 1 + N)
      fail("body '" + bp.name() + "' has fewer outputs than the condition and " +
           std::to_string(N) + " carried values");
    const size_t K = bp.output_size() - 1 - N;
    if (K > 0) {
      // Scan outputs have one row per iteration: the count must be known.
      if (!trip) unsupported("a Loop with scan outputs needs a trip count (static shapes only)");
      cin(0, "trip count");
      if (cond) cin(1, "loop condition");
    }
    // Sequences and optionals are resolved at import: such a loop is unrolled.
    if (composite) return unroll_loop(bp, trip, cond, slots, K);
    std::vector<ir::TensorType> types{{ElemType::int64, {}}, {ElemType::boolean, {}}};
    for (const Slot& v : slots) types.push_back(v.v->type);
    auto bg = std::make_shared<ir::Graph>();
    Importer body(*this, *bg, "body", false);
    try {
      body.import_body(bp, types);
    } catch (const NeedsConstantError& e) {
      if (knows(e.value())) throw;  // an outer value: the caller may specialise it
      return unroll_loop(bp, trip, cond, slots, K);
    }
    std::vector<Value*> ins{trip, cond};
    for (const Slot& v : slots) ins.push_back(v.v);
    std::vector<Value*> caps = capture_values(body);
    ins.insert(ins.end(), caps.begin(), caps.end());
    emit_bound("Loop", ins,
               {{"body", Attribute(std::shared_ptr<const ir::Graph>(bg))},
                {"num_captures", Attribute(static_cast<int64_t>(caps.size()))}});
  }

  void unroll_loop(const onnx::GraphProto& bp, Value* trip, Value* cond, std::vector<Slot> cur,
                   size_t K) {
    if (!trip)
      unsupported(
          "the body needs its iteration number as a constant, but the loop has no trip "
          "count (static shapes only)");
    const Tensor& trip_t = cin(0, "trip count");
    if (trip_t.elem() != ElemType::int64 || trip_t.numel() != 1)
      fail("trip count must hold one int64, got " + trip_t.type().str());
    const int64_t count = trip_t.ints()[0];
    if (count > kMaxUnrolledIterations)
      unsupported(
          "the body needs a per-iteration value as a constant, so the loop is unrolled "
          "at import, up to " +
          std::to_string(kMaxUnrolledIterations) + " iterations; its trip count is " +
          std::to_string(count));
    bool go = !cond || cin(1, "loop condition").at(0) != 0;
    Value* c = cond ? cond : g_.add_constant(helper_name("loop_cond"), bool_scalar(true));
    std::vector<std::vector<Value*>> rows(K);
    for (int64_t i = 0; go && i < count; ++i) {
      const std::string tag = "@" + std::to_string(i);
      std::vector<Slot> vals{
          {g_.add_constant(helper_name(bp.input(0).name() + tag), Tensor::scalar_int(i)), nullptr},
          {c, nullptr}};
      vals.insert(vals.end(), cur.begin(), cur.end());
      Importer it(*this, g_, "body (iteration " + std::to_string(i) + ")", true, tag);
      std::vector<Slot> outs = it.import_body(bp, {}, vals);
      for (size_t k = 0; k < outs.size(); ++k)
        if (outs[k].c && (k == 0 || k > cur.size()))
          unsupported("body output " + std::to_string(k) +
                      " is a sequence or optional value where the op takes a tensor");
      c = outs[0].v;
      if (!c->has_data() || c->type.numel() != 1)
        unsupported(
            "the body needs a per-iteration value as a constant (it is unrolled), but "
            "its condition output '" +
            c->name + "' is computed at run time");
      go = c->data->at(0) != 0;
      for (size_t k = 0; k < cur.size(); ++k) cur[k] = outs[1 + k];
      for (size_t j = 0; j < K; ++j) rows[j].push_back(outs[1 + cur.size() + j].v);
    }
    bind_outputs(cur);
    for (size_t j = 0; j < K; ++j) {
      const int out = static_cast<int>(cur.size() + j);
      if (out >= node_->output_size() || node_->output(out).empty()) continue;
      if (rows[j].empty())
        unsupported("an unrolled Loop that runs no iteration has scan outputs of unknown type");
      std::vector<Value*> parts;
      for (Value* v : rows[j])
        parts.push_back(emit("Unsqueeze", {v}, {{"axes", Attribute(std::vector<int64_t>{0})}},
                             {helper_name(v->name + "/row")})[0]);
      bind(node_->output(out), emit("Concat", parts, {{"axis", Attribute(int64_t{0})}},
                                    {fresh(node_->output(out))})[0]);
    }
  }

  static Tensor bool_scalar(bool b) {
    return Tensor::from_ints({}, {b ? 1 : 0}, ElemType::boolean);
  }

  // Scan (opset 9+; opset 8's batched form when the batch is 1 and there are no
  // sequence_lens: squeezed into the 9 form).
  void conv_scan() {
    const onnx::GraphProto& bp = graph_attr("body");
    const int64_t K = ai("num_scan_inputs", -1);
    if (K < 1) fail("num_scan_inputs must be positive");
    const bool v8 = opset_ < 9;
    std::vector<Value*> ins;
    for (int k = v8 ? 1 : 0; k < node_->input_size(); ++k) ins.push_back(req(k));
    if (static_cast<int64_t>(ins.size()) < K) fail("has fewer inputs than num_scan_inputs");
    const size_t N = ins.size() - K;
    AttrMap attrs{{"num_scan_inputs", Attribute(K)}};
    if (v8) {
      if (has_in(0)) unsupported("Scan-8 sequence_lens are not supported");
      for (Value*& v : ins) {
        if (v->rank() < 1 || v->shape()[0] != 1)
          unsupported("Scan-8 with a batch size other than 1 is not supported (input '" + v->name +
                      "' is " + v->type.str() + ")");
        v = emit("Squeeze", {v}, {{"axes", Attribute(std::vector<int64_t>{0})}},
                 {helper_name(v->name + "/unbatched")})[0];
      }
      if (has_attr("directions")) attrs["scan_input_directions"] = aints("directions");
    } else {
      for (const char* key : {"scan_input_axes", "scan_input_directions", "scan_output_axes",
                              "scan_output_directions"})
        if (has_attr(key)) attrs[key] = aints(key);
    }
    std::vector<int64_t> axes = attrs.count("scan_input_axes")
                                    ? aints("scan_input_axes")
                                    : std::vector<int64_t>(static_cast<size_t>(K), 0);
    if (axes.size() != static_cast<size_t>(K))
      fail("scan_input_axes needs one entry per scanned input");
    std::vector<ir::TensorType> types;
    for (size_t k = 0; k < ins.size(); ++k) {
      ir::TensorType t = ins[k]->type;
      if (k >= N) {
        int64_t a = axes[k - N];
        if (a < 0) a += t.rank();
        if (a < 0 || a >= t.rank())
          fail("scan axis " + std::to_string(axes[k - N]) + " is out of range for " + t.str());
        t.shape.erase(t.shape.begin() + a);
      }
      types.push_back(t);
    }
    auto bg = std::make_shared<ir::Graph>();
    Importer body(*this, *bg, "body", false);
    body.import_body(bp, types);
    std::vector<Value*> caps = capture_values(body);
    ins.insert(ins.end(), caps.begin(), caps.end());
    attrs["body"] = Attribute(std::shared_ptr<const ir::Graph>(bg));
    attrs["num_captures"] = Attribute(static_cast<int64_t>(caps.size()));
    if (!v8) return emit_bound("Scan", ins, std::move(attrs));
    int count = node_->output_size();
    while (count > 0 && node_->output(count - 1).empty()) --count;
    std::vector<std::string> names;
    for (int k = 0; k < count; ++k) names.push_back(helper_name(node_->output(k) + "/unbatched"));
    std::vector<Value*> outs = emit("Scan", ins, std::move(attrs), names);
    for (int k = 0; k < count; ++k)
      if (!node_->output(k).empty())
        bind(node_->output(k),
             emit("Unsqueeze", {outs[k]}, {{"axes", Attribute(std::vector<int64_t>{0})}},
                  {fresh(node_->output(k))})[0]);
  }

  // --- sequence and optional values -------------------------------------------
  // Resolved at import (the IR has static types): a sequence is the list of its
  // tensor values, an optional holds a tensor, a sequence or nothing. Positions,
  // lengths and presence are compile-time facts; ops that need a run-time one
  // (a position computed from a graph input) ask for it as a constant.
  CompPtr comp_resolve(const std::string& name) const {
    if (auto it = comps_.find(name); it != comps_.end()) return it->second;
    if (env_.count(name) || !parent_) return nullptr;
    CompPtr c = parent_->comp_resolve(name);
    if (c && !inline_)
      throw ir::UnsupportedError(label_ + ": sequence or optional value '" + name +
                                 "' is read in a body that is not resolved at import");
    return c;
  }
  CompPtr comp_in(int k) const { return has_in(k) ? comp_resolve(node_->input(k)) : nullptr; }
  void bind_comp(const std::string& onnx_name, CompPtr c) {
    if (onnx_name.empty()) return;
    if (env_.count(onnx_name) || comps_.count(onnx_name))
      fail_model("value '" + onnx_name + "' is defined twice");
    comps_[onnx_name] = std::move(c);
    onnx_names_.insert(onnx_name);
  }
  // Whether a body makes or reads sequence/optional values (then it is inlined or
  // unrolled at import rather than imported as a subgraph).
  bool touches_composites(const onnx::GraphProto& gp) const {
    for (const auto& i : gp.input())
      if (is_sequence_like(i.type())) return true;
    for (const auto& o : gp.output())
      if (is_sequence_like(o.type())) return true;
    for (const auto& n : gp.node()) {
      if ((n.domain().empty() || n.domain() == "ai.onnx") && sequence_onnx_ops().count(n.op_type()))
        return true;
      for (const auto& i : n.input())
        if (!i.empty() && comps_visible(i)) return true;
      for (const auto& a : n.attribute()) {
        if (a.has_g() && touches_composites(a.g())) return true;
        for (const auto& g : a.graphs())
          if (touches_composites(g)) return true;
      }
    }
    return false;
  }
  bool comps_visible(const std::string& name) const {
    return comps_.count(name) || (!env_.count(name) && parent_ && parent_->comps_visible(name));
  }
  const Composite& seq_in(int k) const {
    CompPtr c = comp_in(k);
    if (!c || c->optional)
      fail("input " + std::to_string(k) + " ('" + (has_in(k) ? node_->input(k) : "") +
           "') must be a sequence");
    return *c;
  }
  // A position input (one integer) into a sequence of n tensors: [-n, n-1], or
  // [-n, n] to insert.
  int64_t position(int k, int64_t n, bool insert) const {
    const Tensor& t = cin(k, "position");
    if (t.holds_floats() || t.numel() != 1)
      fail("position must hold one integer, got " + t.type().str());
    const int64_t p = t.ints()[0];
    if (p < -n || p > (insert ? n : n - 1))
      fail("position " + std::to_string(p) + " is out of range for a sequence of " +
           std::to_string(n) + " tensors");
    return p < 0 ? p + n : p;
  }
  void bind_tensor_out(Value* v) {
    bind(node_->output(0), emit("Identity", {v}, {}, {fresh(node_->output(0))})[0]);
  }
  void check_elem(const Composite& c, const Value* v) const {
    if (c.elem && *c.elem != v->elem())
      fail("tensor '" + v->name + "' is " + v->type.str() + ", the sequence holds " +
           std::string(ir::elem_type_name(*c.elem)));
  }

  void conv_sequence_op() {
    const std::string& op = node_->op_type();
    const std::string& out = node_->output(0);
    auto made = std::make_shared<Composite>();
    if (op == "SequenceConstruct") {
      if (node_->input_size() == 0) fail("needs at least one tensor");
      for (int k = 0; k < node_->input_size(); ++k) {
        Value* v = req(k);
        check_elem(*made, v);
        made->elem = v->elem();
        made->items.push_back(v);
      }
    } else if (op == "SequenceEmpty") {
      const int dt = static_cast<int>(ai("dtype", onnx::TensorProto::FLOAT));
      made->elem = elem_type_from_onnx(dt);
      if (!made->elem) unsupported("dtype " + onnx_type_name(dt) + " is not supported");
    } else if (op == "SequenceInsert") {
      *made = seq_in(0);
      Value* v = req(1);
      check_elem(*made, v);
      const int64_t n = static_cast<int64_t>(made->items.size());
      const int64_t p = has_in(2) ? position(2, n, true) : n;
      made->items.insert(made->items.begin() + p, v);
      made->elem = v->elem();
    } else if (op == "SequenceErase") {
      *made = seq_in(0);
      const int64_t n = static_cast<int64_t>(made->items.size());
      if (n == 0) fail("erases from an empty sequence");
      const int64_t p = has_in(1) ? position(1, n, false) : n - 1;
      made->items.erase(made->items.begin() + p);
    } else if (op == "SequenceAt") {
      const Composite& c = seq_in(0);
      return bind_tensor_out(c.items[position(1, static_cast<int64_t>(c.items.size()), false)]);
    } else if (op == "SequenceLength") {
      const int64_t n = static_cast<int64_t>(seq_in(0).items.size());
      return bind(out, g_.add_constant(fresh(out), Tensor::scalar_int(n)));
    } else if (op == "ConcatFromSequence") {
      const Composite& c = seq_in(0);
      if (!has_attr("axis")) fail("attribute 'axis' is required");
      if (c.items.empty()) fail("concatenates an empty sequence (its shape is unknown)");
      const int64_t axis = ai("axis", 0);
      std::vector<Value*> parts = c.items;
      if (ai("new_axis", 0) != 0)
        for (Value*& v : parts)
          v = emit("Unsqueeze", {v}, {{"axes", Attribute(std::vector<int64_t>{axis})}},
                   {helper_name(v->name + "/item")})[0];
      return emit_bound("Concat", parts, {{"axis", Attribute(axis)}});
    } else if (op == "SplitToSequence") {
      conv_split_to_sequence(*made);
    } else if (op == "SequenceMap") {
      return conv_sequence_map();
    } else if (op == "Optional") {
      made->optional = true;
      if (has_in(0)) {
        if (CompPtr c = comp_in(0)) {
          if (c->optional) unsupported("an optional of an optional is not supported");
          made->items = c->items;
          made->elem = c->elem;
        } else {
          made->of_sequence = false;
          made->items = {req(0)};
          made->elem = req(0)->elem();
        }
      } else {
        const auto* a = attr("type");
        if (!a || !a->has_tp()) fail("needs an input or the attribute 'type'");
        made->present = false;
        const onnx::TypeProto* t = &a->tp();
        made->of_sequence = t->has_sequence_type();
        if (made->of_sequence) t = &t->sequence_type().elem_type();
        if (!t->has_tensor_type()) unsupported("'type' must be a tensor or a sequence of tensors");
        made->elem = elem_type_from_onnx(t->tensor_type().elem_type());
      }
    } else if (op == "OptionalHasElement") {
      CompPtr c = comp_in(0);
      const bool present = has_in(0) && (!c || !c->optional || c->present);
      return bind(out, g_.add_constant(fresh(out), bool_scalar(present)));
    } else if (op == "OptionalGetElement") {
      CompPtr c = comp_in(0);
      if (!c) return bind_tensor_out(req(0));  // a tensor is its own element
      if (c->optional && !c->present) fail("the optional '" + node_->input(0) + "' is empty");
      if (c->optional && !c->of_sequence) return bind_tensor_out(c->items[0]);
      *made = *c;
      made->optional = false;
      made->present = true;
      made->of_sequence = true;
    }
    bind_comp(out, made);
  }

  // SplitToSequence: Split (sizes from `split`, else pieces of 1, squeezed unless
  // keepdims) into the tensors of a sequence.
  void conv_split_to_sequence(Composite& made) {
    Value* x = req(0);
    int64_t axis = ai("axis", 0);
    if (axis < 0) axis += x->rank();
    if (axis < 0 || axis >= x->rank())
      fail("axis " + std::to_string(ai("axis", 0)) + " is out of range for " + x->type.str());
    const int64_t D = x->shape()[axis];
    std::vector<int64_t> sizes;
    bool squeeze = false;
    if (has_in(1)) {
      const Tensor& t = cin(1, "split");
      if (t.holds_floats()) fail("split must be integers, got " + t.type().str());
      if (t.rank() == 0) {
        const int64_t chunk = t.ints()[0];
        if (chunk <= 0) fail("split " + std::to_string(chunk) + " must be positive");
        for (int64_t done = 0; done < D; done += chunk) sizes.push_back(std::min(chunk, D - done));
      } else {
        sizes = t.ints();
        int64_t sum = 0;
        for (int64_t v : sizes) {
          if (v < 0) fail("split sizes must not be negative");
          sum += v;
        }
        if (sum != D)
          fail("split sizes sum to " + std::to_string(sum) + ", the axis has " + std::to_string(D));
      }
    } else {
      sizes.assign(static_cast<size_t>(D), 1);
      squeeze = ai("keepdims", 1) == 0;
    }
    made.elem = x->elem();
    if (sizes.empty()) return;
    std::vector<std::string> names;
    for (size_t k = 0; k < sizes.size(); ++k)
      names.push_back(helper_name(node_->output(0) + "/" + std::to_string(k)));
    std::vector<Value*> parts =
        sizes.size() == 1
            ? std::vector<Value*>{emit("Identity", {x}, {}, {names[0]})[0]}
            : emit("Split", {x}, {{"axis", Attribute(axis)}, {"split", Attribute(sizes)}}, names);
    for (Value*& v : parts)
      if (squeeze)
        v = emit("Squeeze", {v}, {{"axes", Attribute(std::vector<int64_t>{axis})}},
                 {helper_name(v->name + "/squeezed")})[0];
    made.items = parts;
  }

  // SequenceMap: the body inlined once per position; sequence inputs pass their
  // tensor at that position, tensor inputs pass themselves.
  void conv_sequence_map() {
    const onnx::GraphProto& bp = graph_attr("body");
    const Composite& first = seq_in(0);
    const size_t n = first.items.size();
    std::vector<CompPtr> ins;
    for (int k = 0; k < node_->input_size(); ++k) {
      CompPtr c = comp_in(k);
      if (c && c->optional) unsupported("optional inputs are not supported");
      if (c && c->items.size() != n)
        fail("input " + std::to_string(k) + " holds " + std::to_string(c->items.size()) +
             " tensors, input 0 holds " + std::to_string(n));
      ins.push_back(c);
    }
    std::vector<std::shared_ptr<Composite>> outs;
    for (int k = 0; k < node_->output_size(); ++k) outs.push_back(std::make_shared<Composite>());
    for (size_t i = 0; i < n; ++i) {
      std::vector<Slot> vals;
      for (int k = 0; k < node_->input_size(); ++k)
        vals.push_back({ins[k] ? ins[k]->items[i] : req(k), nullptr});
      const std::string tag = "@" + std::to_string(i);
      Importer it(*this, g_, "body (position " + std::to_string(i) + ")", true, tag);
      std::vector<Slot> res = it.import_body(bp, {}, vals);
      if (res.size() != outs.size())
        fail("body '" + bp.name() + "' has " + std::to_string(res.size()) + " outputs, the op " +
             std::to_string(outs.size()));
      for (size_t k = 0; k < res.size(); ++k) {
        if (res[k].c) unsupported("body outputs must be tensors");
        outs[k]->items.push_back(res[k].v);
        outs[k]->elem = res[k].v->elem();
      }
    }
    for (size_t k = 0; k < outs.size(); ++k) bind_comp(node_->output(static_cast<int>(k)), outs[k]);
  }

  // --- user kernels (trnsim.kernels domain) ---------------------------------
  // A kernel traced at export (trnsim.kernels' torch operators): op type = the
  // kernel's name, attributes tir / inputs / outputs as on trn.TileKernel
  // (compiler/ir/tile_kernel.h), which checks them against the node's inputs.
  void conv_tile_kernel() {
    if (node_->output_size() == 0) fail("has no outputs");
    for (int k = 0; k < node_->input_size(); ++k)
      if (node_->input(k).empty()) fail("input " + std::to_string(k) + " is omitted");
    for (int k = 0; k < node_->output_size(); ++k)
      if (node_->output(k).empty()) fail("output " + std::to_string(k) + " has no name");
    for (const char* key : {"tir", "inputs", "outputs"}) {
      const auto* a = attr(key);
      if (!a || (a->type() != onnx::AttributeProto::STRING && !a->has_s()))
        fail(std::string("attribute '") + key + "' (a string) is missing");
    }
    std::vector<Value*> ins;
    for (int k = 0; k < node_->input_size(); ++k) ins.push_back(req(k));
    emit_bound("trn.TileKernel", std::move(ins), copy_attrs());
  }

  // --- collectives (trnsim.collective domain) ---------------------------------
  // AllReduce{group}: the sum over the listed ranks (trn.AllReduce; the op table
  // checks the group is non-empty, lowering that it is ascending).
  void conv_collective() {
    if (node_->op_type() != "AllReduce")
      unsupported(std::string("op type '") + node_->op_type() + "' of domain '" +
                  kCollectiveDomain + "' is not a collective trnsim has (AllReduce)");
    if (node_->input_size() != 1 || node_->input(0).empty())
      fail("AllReduce takes one input, has " + std::to_string(node_->input_size()));
    if (node_->output_size() != 1 || node_->output(0).empty())
      fail("AllReduce has one output, has " + std::to_string(node_->output_size()));
    const auto* a = attr("group");
    if (!a || a->type() != onnx::AttributeProto::INTS)
      fail("attribute 'group' (the ranks, ints) is missing");
    emit_bound("trn.AllReduce", {req(0)}, copy_attrs());
  }

  const onnx::ModelProto& model_;
  std::string label_;
  const ImportOptions& opts_;
  int64_t opset_ = 0;
  ir::Graph own_;
  ir::Graph& g_ = own_;  // the graph being built: own_, or a body's
  // ONNX name -> IR value. Mutable: a body binds the outer values it reads on use.
  mutable std::unordered_map<std::string, Value*> env_;
  mutable std::unordered_set<std::string> onnx_names_;
  // Bodies: the enclosing scope, and the outer values this body reads (by ONNX
  // name) that became inputs of its graph, in input order.
  const Importer* parent_ = nullptr;
  bool inline_ = false;
  std::string suffix_;
  mutable std::vector<std::pair<std::string, Value*>> captures_;
  // ONNX name -> sequence/optional value of this scope.
  std::unordered_map<std::string, CompPtr> comps_;
  std::unordered_set<std::string> used_;  // every name some node or output reads
  onnx::ModelProto* consume_ = nullptr;
  const onnx::NodeProto* node_ = nullptr;
  int node_index_ = 0;
};

}  // namespace

const std::vector<std::string>& supported_onnx_ops() {
  static const std::vector<std::string> ops = [] {
    std::set<std::string> s;
    // trnsim's own fused ops (trn.*) are made by passes, never read from ONNX.
    for (const auto& op : ir::op_names())
      if (op.rfind("trn.", 0) != 0) s.insert(op);
    for (const auto& op : extra_onnx_ops()) s.insert(op);
    return std::vector<std::string>(s.begin(), s.end());
  }();
  return ops;
}

std::string sequence_item_name(const std::string& name, int64_t k) {
  return k < 0 ? name : name + "[" + std::to_string(k) + "]";
}

ir::Graph import_onnx_model(const onnx::ModelProto& model, const std::string& label,
                            const ImportOptions& opts) {
  return Importer(model, label, opts).run();
}

namespace {

void parse_model(const std::string& bytes, const std::string& label, onnx::ModelProto& m) {
  if (!m.ParseFromString(bytes))
    throw ir::CompileError(label + ": not a valid ONNX model (protobuf parse failed)");
  if (!m.has_graph()) throw ir::CompileError(label + ": not a valid ONNX model (no graph)");
}

}  // namespace

ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& label,
                            const ImportOptions& opts) {
  onnx::ModelProto m;
  parse_model(bytes, label, m);
  return import_onnx_model(m, label, opts);
}

ir::Graph import_onnx_file(const std::string& path, const ImportOptions& opts) {
  onnx::ModelProto m;
  {
    // Parsed straight from the file, mapped: the weights are never held as one more
    // whole-file buffer, and each initializer's bytes are copied once at their final
    // size (read in blocks, a large one grows by doubling, copied again each time).
    // Where it cannot be mapped (a pipe, 2 GiB or more): in blocks.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ir::CompileError(path + ": cannot open file: " + std::strerror(errno));
    struct stat st {};
    const bool dir = ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    void* map = MAP_FAILED;
    if (!dir && S_ISREG(st.st_mode) && st.st_size > 0 &&
        st.st_size < std::numeric_limits<int>::max())
      map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    bool ok = false;
    if (map != MAP_FAILED) {
      ::madvise(map, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
      ok = m.ParseFromArray(map, static_cast<int>(st.st_size));
      ::munmap(map, static_cast<size_t>(st.st_size));
    } else {
      ok = !dir && m.ParseFromFileDescriptor(fd);
    }
    ::close(fd);
    if (dir) throw ir::CompileError(path + ": cannot open file: " + std::strerror(EISDIR));
    if (!ok) throw ir::CompileError(path + ": not a valid ONNX model (protobuf parse failed)");
    if (!m.has_graph()) throw ir::CompileError(path + ": not a valid ONNX model (no graph)");
  }
  return Importer(m, path, opts).run();
}

}  // namespace trnsim::frontend
