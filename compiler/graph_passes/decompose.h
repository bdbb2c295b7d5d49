// The decompose pass (decompose.cpp) rewrites ops the device lowering has no kernel
// for into ops it lowers, one file per op family:
//   Einsum                 -> Transpose / Reshape / ReduceSum / MatMul
//                             (decompose_einsum.cpp)
//   Resize (and Upsample)  -> MatMul by constant interpolation matrices, or an
//                             Expand for integer-factor nearest (decompose_resize.cpp)
//   InstanceNormalization  -> trn.LayerNorm over the spatial dims, then the
//                             per-channel Mul / Add (decompose_norm.cpp)
// A node a rewrite cannot express stays as it is; the lowering then refuses it
// with the reason decompose_refusal() gives, and it runs on the host.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {

// Why `n` is left alone ("" when it can be rewritten).
std::string einsum_refusal(const ir::Node& n);
std::string resize_refusal(const ir::Node& n);
std::string instance_norm_refusal(const ir::Node& n);

// Rewrite `n` (whose refusal is "") into new nodes before it; the caller makes
// them stand for n's output. Returns the value that replaces n's output.
ir::Value* decompose_einsum(ir::Graph& g, ir::Node* n);
ir::Value* decompose_resize(ir::Graph& g, ir::Node* n);
ir::Value* decompose_instance_norm(ir::Graph& g, ir::Node* n);

// For an op the decompose pass handles: why it left `n` (never empty: a node
// that can be rewritten does not reach the lowering). nullopt for other ops.
std::optional<std::string> decompose_refusal(const ir::Node& n);

// Appends nodes before `before`, named after it ("NAME/tag").
class Emitter {
 public:
  Emitter(ir::Graph& g, const ir::Node* before)
      : g_(g),
        before_(before),
        base_(before->name.empty() ? before->outputs[0]->name : before->name) {}
  ir::Value* node(const std::string& op, std::vector<ir::Value*> inputs,
                  std::map<std::string, ir::Attribute> attrs, const std::string& tag) {
    const std::string name = g_.unique_name(base_ + "/" + tag);
    return ir::make_node(g_, op, std::move(inputs), std::move(attrs), name, 1, {name}, before_)
        ->outputs[0];
  }
  ir::Value* constant(const std::string& tag, ir::Tensor t) {
    return g_.add_constant(g_.unique_name(base_ + "/" + tag), std::move(t));
  }
  // x reshaped to `shape` (x itself when it has that shape already).
  ir::Value* reshape(ir::Value* x, const ir::Shape& shape, const std::string& tag) {
    if (x->shape() == shape) return x;
    return node("Reshape", {x}, {{"shape", shape}}, tag);
  }
  // x transposed by `perm` (x itself for the identity).
  ir::Value* transpose(ir::Value* x, const std::vector<int64_t>& perm, const std::string& tag) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return node("Transpose", {x}, {{"perm", perm}}, tag);
    return x;
  }
  ir::Graph& graph() { return g_; }

 private:
  ir::Graph& g_;
  const ir::Node* before_;
  std::string base_;
};

}  // namespace trnsim::graph_passes
