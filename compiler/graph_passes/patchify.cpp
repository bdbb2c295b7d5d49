// patchify_convs: a 2-D Conv whose windows tile the input exactly (strides equal to
// the kernel, no padding or dilation, one group: ViT's patch embedding) is a
// MatMul of the patches:
//   X [N, C, H, W] as [N*C*H/kh, kh, W/kw, kw] -> Transpose [.., W/kw, kh, kw]
//   as [N, C, H/kh*W/kw, kh*kw] -> Transpose [N, patches, C, kh*kw]
//   as [N*patches, C*kh*kw] -> MatMul(., W^T) [+ b]
//   -> Reshape [N, H/kh, W/kw, M] -> Transpose [N, M, H/kh, W/kw]
// with W^T = the constant weight as [C*kh*kw, M]. The window loop of the Conv
// lowering runs one matmul per kernel position with only C rows of contraction
// (3 for RGB: a few % of the tensor engine); this is one matmul with C*kh*kw.
#include "compiler/graph_passes/patchify.h"

#include "compiler/graph_passes/util.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {

void patchify_convs(ir::Graph& g, PassContext& ctx) {
  bool changed = false;
  for (ir::Node* n : g.nodes_snapshot()) {
    if (n->op != "Conv" || n->inputs.size() < 2) continue;
    ir::Value* x = n->inputs[0];
    ir::Value* w = n->inputs[1];
    ir::Value* b = n->inputs.size() > 2 ? n->inputs[2] : nullptr;
    ir::Value* y = n->outputs[0];
    if (x->rank() != 4 || !w->has_data() || w->elem() != ir::ElemType::fp32 ||
        x->elem() != ir::ElemType::fp32 || y->elem() != ir::ElemType::fp32 ||
        (b && (!b->has_data() || b->elem() != ir::ElemType::fp32)))
      continue;
    const ir::Shape &xs = x->shape(), &ws = w->shape();
    const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], M = ws[0], kh = ws[2], kw = ws[3];
    if (ws[1] != C || kh <= 0 || kw <= 0 || (n->has_attr("group") && n->attr_int("group") != 1))
      continue;
    auto all_eq = [&](const char* key, std::vector<int64_t> want) {
      return !n->has_attr(key) || n->attr_ints(key) == want;
    };
    if (!all_eq("strides", {kh, kw}) || !all_eq("dilations", {1, 1}) ||
        !all_eq("pads", {0, 0, 0, 0}) || !n->has_attr("strides") || kh * kw == 1 || H % kh ||
        W % kw)
      continue;
    const int64_t Ho = H / kh, Wo = W / kw, K = C * kh * kw;
    if (y->shape() != ir::Shape{N, M, Ho, Wo}) continue;
    // W [M, K] -> W^T [K, M].
    const std::vector<float>& f = w->data->floats();
    std::vector<float> wt(static_cast<size_t>(K * M));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) wt[k * M + m] = f[m * K + k];
    const std::string& nm = n->name;
    ir::Value* wv = g.add_constant(g.unique_name(w->name + ".patches"),
                                   ir::Tensor::from_floats({K, M}, std::move(wt)));
    auto add = [&](const std::string& op, std::vector<ir::Value*> ins,
                   std::map<std::string, ir::Attribute> attrs, const std::string& suffix) {
      ir::Node* m = ir::make_node(g, op, std::move(ins), std::move(attrs), nm + suffix, 1,
                                  {g.unique_name(y->name + suffix)}, n);
      m->merge_origin(*n);
      return m->outputs[0];
    };
    // The patches in two 4-D transposes (a copy's access pattern has few dims).
    const std::vector<int64_t> swap12{0, 2, 1, 3};
    ir::Value* v = add("Reshape", {x}, {{"shape", ir::Shape{N * C * Ho, kh, Wo, kw}}}, "_rows");
    v = add("Transpose", {v}, {{"perm", swap12}}, "_cols");
    v = add("Reshape", {v}, {{"shape", ir::Shape{N, C, Ho * Wo, kh * kw}}}, "_grid");
    v = add("Transpose", {v}, {{"perm", swap12}}, "_patches");
    v = add("Reshape", {v}, {{"shape", ir::Shape{N * Ho * Wo, K}}}, "_flat");
    v = add("MatMul", {v, wv}, {}, "_mm");
    if (b) {
      ir::Value* bv = g.add_constant(g.unique_name(b->name + ".row"), b->data->reshaped({M}));
      v = add("Add", {v, bv}, {}, "_bias");
    }
    v = add("Reshape", {v}, {{"shape", ir::Shape{N, Ho, Wo, M}}}, "_nhwc");
    v = add("Transpose", {v}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}, "_nchw");
    if (v->type != y->type) continue;  // the nodes made are left dead, erased below
    replace_value(g, y, v, true);
    changed = true;
    bump(ctx, "fuse_patterns", "PatchConv");
  }
  if (changed) g.erase_dead_nodes();
}

}  // namespace trnsim::graph_passes
