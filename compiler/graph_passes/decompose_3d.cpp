// decompose_3d: 3-D Conv, ConvTranspose, MaxPool and AveragePool (NCDHW) become
// 2-D ones, which the device lowers.
//   - Conv: the depth taps go into the channels. The input, padded along D and
//     viewed as [N, D', G, C/G, H, W], is sliced once per depth tap kd (rows
//     kd*dd + od*sd for every output depth od), the slices are concatenated per
//     group into [N*OD, G*KD*C/G, H, W], and one 2-D Conv with the kernel
//     re-laid out as [M, KD*C/G, KH, KW] (W transposed and reshaped; constant
//     weights fold) gives [N*OD, M, OH, OW], transposed back to [N, M, OD, OH, OW].
//   - ConvTranspose: per depth tap kd, one 2-D ConvTranspose of every input
//     depth slice ([N*D, C, H, W]) by W[:, :, kd]; input depth id lands on output
//     depth id*sd + kd*dd - pd, so each result is zero-inserted along D (Pad of a
//     unit axis, Reshape), shifted and cut to OD (Slice, Pad), and the taps are
//     summed; the bias is added once at the end.
//   - MaxPool / AveragePool: a box window is separable (max of maxes; the sum of
//     sums over a divisor that is the product of the per-dim counts, with or
//     without pads), so a 2-D pool over (H, W) of [N, C*D, H, W] is followed by a
//     pool with a (KD, 1) window over [N, C, D, OH*OW]; ceil_mode applies per dim.
// MaxPool's Indices output and other ranks are left alone.
#include <algorithm>

#include "compiler/graph_passes/pass.h"
#include "compiler/graph_passes/util.h"
#include "compiler/ir/ops.h"

namespace trnsim::graph_passes {
namespace {

using ir::Node;
using ir::Shape;
using ir::Value;
using Attrs = std::map<std::string, ir::Attribute>;

constexpr std::string_view kPass = "decompose_3d";

class Builder {
 public:
  Builder(ir::Graph& g, const Node* at) : g_(g), at_(at), base_(at->outputs[0]->name) {}
  Value* op(const std::string& op, std::vector<Value*> ins, Attrs attrs = {}) {
    Node* m = ir::make_node(g_, op, std::move(ins), std::move(attrs), at_->name, 1,
                            {g_.unique_name(base_ + "." + op)}, at_);
    return m->outputs[0];
  }
  Value* reshape(Value* v, Shape s) {
    if (v->shape() == s) return v;
    return op("Reshape", {v}, {{"shape", std::move(s)}});
  }

 private:
  ir::Graph& g_;
  const Node* at_;
  std::string base_;
};

// The window attributes of dims `dims` (indices into the k spatial dims) of a
// rank-5 Conv/pool node, for a 2-D node.
Attrs window_attrs(const Node& n, const ir::WindowGeometry& geo, std::vector<size_t> dims) {
  std::vector<int64_t> kernel, strides, dilations, pads_b, pads_e;
  for (size_t d : dims) {
    kernel.push_back(geo.kernel[d]);
    strides.push_back(geo.strides[d]);
    dilations.push_back(geo.dilations[d]);
    pads_b.push_back(geo.pads_begin[d]);
    pads_e.push_back(geo.pads_end[d]);
  }
  pads_b.insert(pads_b.end(), pads_e.begin(), pads_e.end());
  Attrs a{{"kernel_shape", kernel}, {"strides", strides}, {"pads", pads_b}};
  if (n.op != "AveragePool") a["dilations"] = dilations;
  for (const char* key : {"ceil_mode", "count_include_pad", "group", "compute_dtype"})
    if (n.has_attr(key)) a[key] = n.attrs.at(key);
  if (n.op == "ConvTranspose") {
    std::vector<int64_t> op;
    for (size_t d : dims) op.push_back(n.attr_ints("output_padding")[d]);
    a["output_padding"] = op;
  }
  return a;
}

Value* slice1(Builder& b, Value* v, int64_t axis, int64_t start, int64_t end) {
  return b.op("Slice", {v},
              {{"starts", std::vector<int64_t>{start}},
               {"ends", std::vector<int64_t>{end}},
               {"axes", std::vector<int64_t>{axis}},
               {"steps", std::vector<int64_t>{1}}});
}

Value* pad1(Builder& b, Value* v, int64_t axis, int64_t begin, int64_t end) {
  if (begin == 0 && end == 0) return v;
  std::vector<int64_t> pads(2 * static_cast<size_t>(v->rank()), 0);
  pads[static_cast<size_t>(axis)] = begin;
  pads[static_cast<size_t>(axis + v->rank())] = end;
  return b.op("Pad", {v}, {{"pads", pads}});
}

Value* conv_transpose3d(ir::Graph& g, Node* n) {
  Builder b(g, n);
  const ir::WindowGeometry geo = ir::window_geometry(*n);
  Value* x = n->inputs[0];
  Value* w = n->inputs[1];
  const Shape& xs = x->shape();
  const int64_t N = xs[0], C = xs[1], D = xs[2];
  const int64_t KD = geo.kernel[0], OD = geo.out[0], sd = geo.strides[0], dd = geo.dilations[0];
  const int64_t M = n->outputs[0]->shape()[1], OH = geo.out[1], OW = geo.out[2];
  const int64_t F = M * OH * OW;
  auto reach = [&](int64_t kd, int64_t& lo, int64_t& begin) {  // output depths tap kd fills
    const int64_t shift = kd * dd - geo.pads_begin[0];         // input depth id -> id*sd + shift
    lo = std::max<int64_t>(0, -shift);
    begin = std::max<int64_t>(0, shift);
    return std::min(D * sd - lo, OD - begin);
  };
  bool any = false;
  for (int64_t kd = 0, lo, begin; kd < KD; ++kd) any = any || reach(kd, lo, begin) > 0;
  if (!any) return nullptr;  // every tap lands in the cropped pads: left alone
  x = b.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
  x = b.reshape(x, {N * D, C, xs[3], xs[4]});
  Value* sum = nullptr;
  for (int64_t kd = 0; kd < KD; ++kd) {
    int64_t lo = 0, begin = 0;
    const int64_t take = reach(kd, lo, begin);
    if (take <= 0) continue;  // this tap only reaches cropped depths
    const Shape ws = w->shape();
    Value* wk = b.reshape(slice1(b, w, 2, kd, kd + 1), {ws[0], ws[1], ws[3], ws[4]});
    Value* y = b.op("ConvTranspose", {x, wk}, window_attrs(*n, geo, {1, 2}));
    y = b.reshape(y, {N, D, 1, F});
    y = b.reshape(pad1(b, y, 2, 0, sd - 1), {N, D * sd, F});  // zeros between depths
    y = pad1(b, slice1(b, y, 1, lo, lo + take), 1, begin, OD - begin - take);
    sum = sum ? b.op("Add", {sum, y}) : y;
  }
  Value* y = b.reshape(sum, {N, OD, M, OH, OW});
  y = b.op("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
  if (Value* bias = n->input(2)) y = b.op("Add", {y, b.reshape(bias, {M, 1, 1, 1})});
  return y;
}

Value* conv3d(ir::Graph& g, Node* n) {
  Builder b(g, n);
  const ir::WindowGeometry geo = ir::window_geometry(*n);
  Value* x = n->inputs[0];
  Value* w = n->inputs[1];
  const Shape& xs = x->shape();
  const int64_t N = xs[0], C = xs[1], H = xs[3], W = xs[4];
  const int64_t M = w->shape()[0], G = n->attr_int("group"), Cg = C / G;
  const int64_t KD = geo.kernel[0], OD = geo.out[0], sd = geo.strides[0], dd = geo.dilations[0];
  // Pad along D, then depth-major: [N, D', G, Cg, H, W].
  if (geo.pads_begin[0] || geo.pads_end[0])
    x = b.op("Pad", {x},
             {{"pads",
               std::vector<int64_t>{0, 0, geo.pads_begin[0], 0, 0, 0, 0, geo.pads_end[0], 0, 0}}});
  const int64_t Dp = x->shape()[2];
  x = b.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
  x = b.reshape(x, {N, Dp, G, Cg, H, W});
  std::vector<Value*> taps;
  for (int64_t kd = 0; kd < KD; ++kd)
    taps.push_back(b.op("Slice", {x},
                        {{"starts", std::vector<int64_t>{kd * dd}},
                         {"ends", std::vector<int64_t>{kd * dd + (OD - 1) * sd + 1}},
                         {"axes", std::vector<int64_t>{1}},
                         {"steps", std::vector<int64_t>{sd}}}));
  x = taps.size() == 1 ? taps[0] : b.op("Concat", taps, {{"axis", int64_t{3}}});
  x = b.reshape(x, {N * OD, G * KD * Cg, H, W});
  // W [M, Cg, KD, KH, KW] -> [M, KD*Cg, KH, KW], input channel kd*Cg + c.
  Value* w2 = b.op("Transpose", {w}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
  w2 = b.reshape(w2, {M, KD * Cg, geo.kernel[1], geo.kernel[2]});
  std::vector<Value*> ins{x, w2};
  if (Value* bias = n->input(2)) ins.push_back(bias);
  Value* y = b.op("Conv", ins, window_attrs(*n, geo, {1, 2}));
  y = b.reshape(y, {N, OD, M, geo.out[1], geo.out[2]});
  return b.op("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
}

Value* pool3d(ir::Graph& g, Node* n) {
  Builder b(g, n);
  const ir::WindowGeometry geo = ir::window_geometry(*n);
  Value* x = n->inputs[0];
  const Shape& xs = x->shape();
  const int64_t N = xs[0], C = xs[1], D = xs[2];
  Value* y = b.op(n->op, {b.reshape(x, {N, C * D, xs[3], xs[4]})}, window_attrs(*n, geo, {1, 2}));
  const int64_t OH = geo.out[1], OW = geo.out[2];
  Attrs a = window_attrs(*n, geo, {0});
  auto widen = [&](const char* key, int64_t v) {  // a second, trivial window dim
    if (!a.count(key)) return;
    auto vals = std::get<std::vector<int64_t>>(a[key].storage());
    if (std::string(key) == "pads")
      vals = {vals[0], 0, vals[1], 0};
    else
      vals.push_back(v);
    a[key] = vals;
  };
  widen("kernel_shape", 1);
  widen("strides", 1);
  widen("dilations", 1);
  widen("pads", 0);
  y = b.op(n->op, {b.reshape(y, {N, C, D, OH * OW})}, a);
  return b.reshape(y, {N, C, geo.out[0], OH, OW});
}

bool applies(const Node& n) {
  if (n.inputs.empty() || !n.inputs[0] || n.inputs[0]->rank() != 5) return false;
  if (n.op == "Conv" || n.op == "ConvTranspose") return true;
  return (n.op == "MaxPool" || n.op == "AveragePool") && n.outputs.size() == 1;
}

void run(ir::Graph& g, PassContext& ctx) {
  for (Node* n : g.nodes_snapshot()) {
    if (!applies(*n)) continue;
    Value* y = n->op == "Conv"            ? conv3d(g, n)
               : n->op == "ConvTranspose" ? conv_transpose3d(g, n)
                                          : pool3d(g, n);
    if (!y) continue;
    replace_value(g, n->outputs[0], y, true);
    bump(ctx, kPass, n->op);
    g.erase_node(n);
  }
}

}  // namespace

const PassInfo& decompose_3d_pass() {
  static const PassInfo p{kPass,
                          "3-D Conv -> 2-D Conv over depth taps stacked as channels; 3-D "
                          "ConvTranspose -> 2-D ones per depth tap, placed and summed; 3-D "
                          "MaxPool/AveragePool -> 2-D pool over (H, W) then over D",
                          run};
  return p;
}

}  // namespace trnsim::graph_passes
