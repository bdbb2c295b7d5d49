#include "compiler/interp/interpreter.h"

#include <unordered_map>

#include "compiler/interp/kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ir/trn_ops.h"

namespace trnsim::interp {
namespace {

const KernelMap& kernel_map() {
  static const KernelMap m = [] {
    KernelMap k;
    register_elementwise(k);
    register_nn(k);
    register_reduce(k);
    register_shape(k);
    register_trn(k);
    register_scatter(k);
    register_index(k);
    register_rnn(k);
    register_control(k);
    return k;
  }();
  return m;
}

}  // namespace

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> own = ir::strides_of(in);
  size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) st[off + d] = in[d] == 1 ? 0 : own[d];
  return st;
}

bool has_kernel(std::string_view op) {
  return kernel_map().count(op) != 0;
}

std::vector<Tensor> eval_node(const ir::Node& n, const std::vector<const Tensor*>& inputs) {
  auto it = kernel_map().find(n.op);
  if (it == kernel_map().end())
    throw ir::UnsupportedError(n.label() + ": the interpreter has no kernel");
  const bool types_only = n.op == "Shape" || n.op == "Size";  // they read n.inputs[0]->type
  for (size_t k = 0; k < inputs.size() && k < n.inputs.size(); ++k) {
    if (!n.inputs[k] || (types_only && !inputs[k])) continue;
    if (!inputs[k])
      throw ir::CompileError(n.label() + ": input " + std::to_string(k) + " ('" +
                             n.inputs[k]->name + "') has no data");
    if (inputs[k]->type() != n.inputs[k]->type)
      throw ir::CompileError(n.label() + ": input '" + n.inputs[k]->name + "' is " +
                             inputs[k]->type().str() + ", the graph says " +
                             n.inputs[k]->type.str());
  }
  Outs outs;
  for (const ir::Value* o : n.outputs) outs.emplace_back(o->type);
  try {
    it->second(n, inputs, outs);
  } catch (const ir::UnsupportedError& e) {
    throw ir::UnsupportedError(n.label() + ": " + e.what());
  } catch (const ir::CompileError& e) {
    throw ir::CompileError(n.label() + ": " + e.what());
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    if (outs[k].type() != n.outputs[k]->type)
      throw ir::CompileError(n.label() + ": internal: kernel produced " + outs[k].type().str() +
                             " for output '" + n.outputs[k]->name + "' typed " +
                             n.outputs[k]->type.str());
    outs[k].normalize();
  }
  return outs;
}

TensorMap run(const ir::Graph& g, const TensorMap& inputs, const RunOptions& opts) {
  std::unordered_map<const ir::Value*, Tensor> env;
  for (const auto& [name, t] : inputs) {
    const ir::Value* v = g.find_value(name);
    if (!v || !v->is_graph_input)
      throw ir::CompileError("interpreter: '" + name + "' is not an input of graph '" + g.name +
                             "'");
    if (t.type() != v->type)
      throw ir::CompileError("interpreter: input '" + name + "' is " + t.type().str() +
                             ", the graph expects " + v->type.str());
  }
  for (const ir::Value* v : g.inputs()) {
    auto it = inputs.find(v->name);
    if (it == inputs.end())
      throw ir::CompileError("interpreter: missing input '" + v->name + "' (" + v->type.str() +
                             ")");
    env.emplace(v, it->second);
  }
  // Last reader of each value, so dead intermediates are freed as we go.
  std::unordered_map<const ir::Value*, size_t> last_use;
  const auto& nodes = g.nodes();
  for (size_t k = 0; k < nodes.size(); ++k)
    for (const ir::Value* in : nodes[k]->inputs)
      if (in) last_use[in] = k;

  auto value_of = [&](const ir::Value* v) -> const Tensor* {
    if (v->is_constant) {
      if (!v->data)
        throw ir::CompileError("interpreter: constant '" + v->name +
                               "' has no data (type-only constant)");
      return &*v->data;
    }
    auto it = env.find(v);
    if (it == env.end())
      throw ir::CompileError("interpreter: value '" + v->name + "' is used before it is computed");
    return &it->second;
  };
  for (size_t k = 0; k < nodes.size(); ++k) {
    const ir::Node& n = *nodes[k];
    std::vector<const Tensor*> ins;
    for (const ir::Value* v : n.inputs) ins.push_back(v ? value_of(v) : nullptr);
    // Emulated precision: the operands (inputs 0 and 1) go through compute_dtype.
    std::vector<Tensor> rounded;
    if (opts.emulate_precision && n.has_attr("compute_dtype")) {
      ir::ElemType dt = *ir::compute_dtype(n);
      rounded.reserve(2);
      for (size_t i = 0; i < 2 && i < ins.size(); ++i) {
        if (!ins[i] || !ins[i]->holds_floats() || ins[i]->holds_doubles() ||
            dt == ir::ElemType::fp32)
          continue;
        rounded.push_back(*ins[i]);
        for (float& f : rounded.back().floats()) f = isa::round_to(*ir::to_isa(dt), f);
        ins[i] = &rounded.back();
      }
    }
    std::vector<Tensor> outs = eval_node(n, ins);
    for (size_t o = 0; o < outs.size(); ++o) env[n.outputs[o]] = std::move(outs[o]);
    if (!opts.keep_intermediates) {
      for (const ir::Value* v : n.inputs)
        if (v && !v->is_constant && !v->is_graph_input && last_use[v] == k && !g.is_output(v))
          env.erase(v);
    }
  }
  TensorMap result;
  if (opts.keep_intermediates)
    for (const auto& [v, t] : env) result[v->name] = t;
  for (const ir::Value* o : g.outputs()) result[o->name] = *value_of(o);
  return result;
}

}  // namespace trnsim::interp
