#include "compiler/ir/tile_kernel.h"

#include <algorithm>

#include "compiler/ir/error.h"

namespace trnsim::ir {

namespace {

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> r;
  if (s.empty()) return r;
  size_t b = 0;
  for (;;) {
    const size_t e = s.find(',', b);
    r.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return r;
}

// The last few kernels parsed (per thread): a model has few distinct kernels, and
// the graph passes infer types many times.
std::shared_ptr<const tile::Kernel> parsed(const std::string& text) {
  constexpr size_t kKeep = 4;
  thread_local std::vector<std::pair<std::string, std::shared_ptr<const tile::Kernel>>> cache;
  for (size_t i = 0; i < cache.size(); ++i)
    if (cache[i].first == text) {
      std::rotate(cache.begin(), cache.begin() + static_cast<std::ptrdiff_t>(i),
                  cache.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return cache.front().second;
    }
  std::shared_ptr<const tile::Kernel> k;
  try {
    k = std::make_shared<const tile::Kernel>(tile::parse(text, "tir"));
  } catch (const tile::KernelError& e) {
    throw CompileError(std::string("its tile IR does not parse: ") + e.what());
  }
  cache.insert(cache.begin(), {text, k});
  if (cache.size() > kKeep) cache.pop_back();
  return k;
}

std::string shape_text(const std::vector<int64_t>& s) {
  return shape_str(Shape(s.begin(), s.end()));
}

}  // namespace

TileKernelOp tile_kernel_of(const Node& n) {
  TileKernelOp r;
  r.kernel = parsed(n.attr_string("tir"));
  const tile::Kernel& k = *r.kernel;
  std::vector<int> bound(k.tensors.size(), 0);
  auto bind = [&](const std::string& key, isa::TensorRole role, size_t count,
                  std::vector<int>& out) {
    const std::vector<std::string> names = split_names(n.attr_string(key));
    const char* what = role == isa::TensorRole::input ? "input" : "output";
    if (names.size() != count)
      throw CompileError("'" + key + "' names " + std::to_string(names.size()) +
                         " kernel tensor(s) for the node's " + std::to_string(count) + " " + what +
                         "(s)");
    for (const std::string& name : names) {
      const int t = k.find_tensor(name);
      if (t < 0)
        throw CompileError("'" + key + "': kernel '" + k.name + "' has no tensor '" + name + "'");
      if (k.tensors[t].role != role)
        throw CompileError("'" + key + "': tensor '" + name + "' of kernel '" + k.name +
                           "' is not an " + what);
      if (bound[t]++) throw CompileError("tensor '" + name + "' is bound twice");
      out.push_back(t);
    }
  };
  bind("inputs", isa::TensorRole::input, n.inputs.size(), r.inputs);
  size_t n_out = 0;
  for (const tile::Tensor& t : k.tensors) n_out += t.role == isa::TensorRole::output;
  bind("outputs", isa::TensorRole::output, n_out, r.outputs);
  if (!n.outputs.empty() && n.outputs.size() != n_out)
    throw CompileError("kernel '" + k.name + "' has " + std::to_string(n_out) +
                       " output tensor(s), the node " + std::to_string(n.outputs.size()) +
                       " output(s)");
  for (size_t i = 0; i < k.tensors.size(); ++i)
    if (k.tensors[i].role == isa::TensorRole::input && !bound[i])
      throw CompileError("input tensor '" + k.tensors[i].name + "' of kernel '" + k.name +
                         "' is bound to no node input");
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    const tile::Tensor& t = k.tensors[r.inputs[i]];
    if (!v) throw CompileError("input " + std::to_string(i) + " is missing");
    const Shape want(t.shape.begin(), t.shape.end());
    if (v->elem() != from_isa(t.dtype) || v->shape() != want)
      throw CompileError("input " + std::to_string(i) + " ('" + v->name + "') is " + v->type.str() +
                         ", but kernel '" + k.name + "' was traced with '" + t.name + "' " +
                         shape_text(t.shape) + " " + std::string(isa::dtype_name(t.dtype)) +
                         "; export the model again");
  }
  return r;
}

std::vector<TensorType> infer_trn_tile_kernel(const Node& n) {
  const TileKernelOp op = tile_kernel_of(n);
  std::vector<TensorType> r;
  for (int t : op.outputs) {
    const tile::Tensor& tt = op.kernel->tensors[t];
    r.push_back({from_isa(tt.dtype), Shape(tt.shape.begin(), tt.shape.end())});
  }
  return r;
}

}  // namespace trnsim::ir
