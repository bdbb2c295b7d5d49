// lower_graph: HBM tensors for every value, then one kernel per node in graph order.
#include "compiler/lower/lower.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "compiler/graph_passes/decompose.h"
#include "compiler/graph_passes/unroll_rnn.h"
#include "compiler/ir/text.h"
#include "compiler/lower/context.h"

namespace trnsim::lower {

namespace {

const std::set<std::string>& alias_ops() {
  static const std::set<std::string> s = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  return s;
}

// Integers and bools live on the device as fp32 (bools 0/1, integers exact up to
// 2^24); the program boundary (runtime/onnx_program.h) converts.
isa::DType hbm_type(const ir::Value* v) {
  const ir::ElemType e = v->elem();
  // bf16/fp16 values keep their type in HBM (DMA casts to and from fp32 tiles).
  if (e == ir::ElemType::bf16) return isa::DType::bf16;
  if (e == ir::ElemType::fp16) return isa::DType::fp16;
  if (e != ir::ElemType::fp32 && e != ir::ElemType::boolean && !ir::is_integer(e))
    throw ir::UnsupportedError("lowering: value '" + v->name + "' is " + v->type.str() +
                               "; only fp32, bf16, fp16, integer and bool tensors are lowered yet");
  return isa::DType::fp32;
}

// HBM shapes need rank >= 1; a value with no elements has no tensor.
std::vector<int64_t> hbm_shape(const ir::Value* v) {
  for (int64_t d : v->shape())
    if (d == 0)
      throw ir::UnsupportedError("lowering: value '" + v->name + "' is " + v->type.str() +
                                 ": tensors with no elements are not lowered");
  if (v->shape().empty()) return {1};
  return v->shape();
}

}  // namespace

std::string tensor_name(const std::string& value_name, std::set<std::string>& used) {
  std::string n;
  for (char ch : value_name)
    n += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.') ? ch : '_';
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0])) || n[0] == '.') n = "t_" + n;
  std::string u = n;
  for (int i = 1; used.count(u); ++i) u = n + "_" + std::to_string(i);
  used.insert(u);
  return u;
}

std::map<std::string, std::string> io_tensor_names(const ir::Graph& g) {
  std::map<std::string, std::string> r;
  std::set<std::string> used;
  for (const ir::Value* v : g.inputs()) r[v->name] = tensor_name(v->name, used);
  for (const ir::Value* v : g.outputs())
    if (!r.count(v->name)) r[v->name] = tensor_name(v->name, used);
  return r;
}

const std::vector<std::string>& lowerable_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v = {"MatMul", "trn.MatMulEpilogue", "trn.Elementwise", "Neg",
                                  "trn.Gelu"};
    v.push_back("trn.TileKernel");
    v.push_back("trn.AllReduce");
    for (const char* op :
         {"Relu",       "Sigmoid",       "Tanh",        "Exp",       "Log",        "Sqrt",
          "Reciprocal", "Abs",           "Erf",         "Softplus",  "trn.Silu",   "Add",
          "Sub",        "Mul",           "Div",         "Max",       "Min",        "Softmax",
          "LogSoftmax", "trn.LayerNorm", "trn.RMSNorm", "ReduceSum", "ReduceMean", "ReduceMax",
          "ReduceMin",  "Transpose"})
      v.push_back(op);
    for (const char* op :
         {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
      v.push_back(op);
    for (const std::string& op : movement_ops()) v.push_back(op);
    for (const std::string& op : alias_ops()) v.push_back(op);
    for (const std::string& op : elementwise_ops()) v.push_back(op);
    for (const std::string& op : rowwise_ops()) v.push_back(op);
    v.push_back("TopK");
    v.push_back("ArgMax");
    v.push_back("ArgMin");
    v.push_back("Trilu");
    v.push_back("CumSum");
    v.push_back("trn.Attention");
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  }();
  return ops;
}

const kernels::HbmView& Ctx::view(const ir::Value* v) const {
  auto it = hbm.find(v);
  if (it == hbm.end()) throw ir::CompileError("lowering: value '" + v->name + "' has no tensor");
  return it->second;
}

void unsupported(const ir::Node& n, const std::string& why) {
  throw ir::UnsupportedError("lowering: " + n.label() + ": " + why);
}

tile::Kernel lower_graph(const ir::Graph& g, const compiler::Target& t) {
  std::set<std::string> used;
  Ctx c(g.name.empty() ? "graph" : tensor_name(g.name, used), t);
  used.clear();
  const std::map<std::string, std::string> io = io_tensor_names(g);
  for (const auto& [value, tensor] : io) used.insert(tensor);
  std::set<const ir::Value*> outs(g.outputs().begin(), g.outputs().end());
  // The chip has no fp64: such nodes run on the host (compiler/partition.h).
  for (const auto& np : g.nodes()) {
    for (const ir::Value* v : np->inputs)
      if (v && v->elem() == ir::ElemType::fp64)
        unsupported(*np, "input '" + v->name + "' is " + v->type.str() +
                             ": the chip has no fp64 (double), so it runs on the host");
    for (const ir::Value* v : np->outputs)
      if (v->elem() == ir::ElemType::fp64)
        unsupported(*np, "output '" + v->name + "' is " + v->type.str() +
                             ": the chip has no fp64 (double), so it runs on the host");
  }
  c.int_ranges = int_ranges(g);
  for (const ir::Value* v : g.inputs())
    c.hbm[v] = c.b.input(io.at(v->name), hbm_shape(v), hbm_type(v));
  for (const ir::Value* v : g.outputs())
    if (!v->is_graph_input && !c.hbm.count(v))
      c.hbm[v] = c.b.output(io.at(v->name), hbm_shape(v), hbm_type(v));
  for (const auto& vp : g.values()) {
    const ir::Value* v = vp.get();
    if (!v->is_constant || c.hbm.count(v)) continue;
    if (conv_weight_only(g, v)) continue;  // lower_conv makes its own layout
    // lower_matmul casts it
    if (matmul_cast_weight_only(g, v)) continue;
    if (!v->has_data()) throw ir::CompileError("lowering: constant '" + v->name + "' has no data");
    c.hbm[v] = c.b.constant(
        tensor_name(v->name, used), hbm_shape(v), hbm_type(v),
        v->data->holds_floats() ? v->data->floats() : v->data->cast(ir::ElemType::fp32).floats());
  }
  std::vector<std::pair<size_t, size_t>> node_ops;  // ops [first, end) each node emitted
  for (const auto& np : g.nodes()) {
    const ir::Node& n = *np;
    const std::string& op = n.op;
    node_ops.emplace_back(c.b.kernel().ops.size(), 0);
    const bool known = std::binary_search(lowerable_ops().begin(), lowerable_ops().end(), op);
    if (!known) {
      // Ops the decompose graph pass rewrites: why this one was left.
      if (auto why = graph_passes::decompose_refusal(n)) unsupported(n, *why);
      // A recurrence the unroll_rnn pass left whole: its reason, not the op list.
      if (const std::string why = graph_passes::rnn_unroll_refusal(n); !why.empty())
        unsupported(n, "not unrolled: " + why);
      std::string list;
      for (const std::string& o : lowerable_ops()) list += (list.empty() ? "" : ", ") + o;
      throw ir::UnsupportedError("lowering: " + n.label() + ": op type '" + op +
                                 "' cannot be lowered to the chip yet; lowerable: " + list);
    }
    check_exact_integers(n, c.int_ranges);
    // Integers are fp32 on the device: a float Div would not truncate.
    if (op == "Div" && ir::is_integer(n.outputs[0]->elem()))
      unsupported(n, "integer Div (truncating) is not lowered yet");
    for (const ir::Value* o : n.outputs) {
      if (c.hbm.count(o)) continue;
      const ir::Value* in = n.input(0);
      if (alias_ops().count(op) && in && !outs.count(o)) {
        c.hbm[o] = c.view(in).reshape(hbm_shape(o));  // same bytes, new shape
        continue;
      }
      c.hbm[o] = c.b.scratch(tensor_name(o->name, used), hbm_shape(o), hbm_type(o));
    }
    if (alias_ops().count(op)) {
      if (c.view(n.outputs[0]).tensor() != c.view(n.input(0)).tensor())  // a graph output
        c.b.dma(c.view(n.outputs[0]), c.view(n.input(0)).reshape(hbm_shape(n.outputs[0])));
    } else if (op == "trn.TileKernel") {
      lower_tile_kernel(c, n);
    } else if (op == "trn.AllReduce") {
      lower_collective(c, n);
    } else if (is_conv_node(n)) {
      lower_conv(c, n);
    } else if (is_pool(op)) {
      lower_pool(c, n);
    } else if (op == "MatMul" || op == "trn.MatMulEpilogue") {
      lower_matmul(c, n);
    } else if (op == "Transpose") {
      lower_transpose(c, n);
    } else if (is_movement(op)) {
      lower_movement(c, n);
    } else if (is_rowwise(op)) {
      lower_rowwise(c, n);
    } else if (op == "TopK" || op == "ArgMax" || op == "ArgMin") {
      lower_topk(c, n);
    } else if (op == "CumSum") {
      lower_cumsum(c, n);
    } else if (op == "Trilu") {
      lower_trilu(c, n);
    } else if (op == "trn.Attention") {
      lower_attention(c, n);
    } else {
      lower_elementwise(c, n);
    }
    node_ops.back().second = c.b.kernel().ops.size();
  }
  // Graph outputs that no node computes. A constant (a Constant node, a folded
  // value, Dropout's mask) is copied into its output tensor. A graph input has no
  // output tensor (io_tensor_names gives both one name): the runtime hands the
  // input back (runtime/onnx_program.h).
  for (const ir::Value* v : g.outputs()) {
    if (v->is_graph_input || !v->is_constant) continue;
    if (!v->has_data()) throw ir::CompileError("lowering: constant '" + v->name + "' has no data");
    const kernels::HbmView data = c.b.constant(
        tensor_name(v->name + ".value", used), hbm_shape(v), hbm_type(v),
        v->data->holds_floats() ? v->data->floats() : v->data->cast(ir::ElemType::fp32).floats());
    c.b.dma(c.view(v), data);
  }
  tile::Kernel k = c.b.finish();
  for (size_t i = 0; i < node_ops.size(); ++i)
    for (size_t o = node_ops[i].first; o < node_ops[i].second && o < k.ops.size(); ++o)
      k.ops[o].node = static_cast<int>(i);
  return k;
}

}  // namespace trnsim::lower
