// Resize (Upsample imports as Resize) -> MatMul by constant interpolation matrices.
//
// Nearest, linear and cubic resizing are separable: along each resized axis d the
// output is R_d @ x, where R_d [out_d, in_d] holds the interpolation weights of
// every output coordinate (computed here from the ONNX definition: coordinate
// transformation, nearest rounding, cubic coefficients, edge values repeated
// outside the input). Each axis is one MatMul: R_d @ x viewed as [pre, in_d, post]
// (R_d shared by the batches), or x @ R_d^T for the last axis. A nearest resize
// whose every resized axis repeats each input element s times (an integer factor)
// is instead an Expand of x with a unit axis after each of them: exact for every
// value, where in a MatMul an inf or NaN would also reach the outputs its zero
// weights multiply (0 * inf is NaN) -- the one way the MatMul form differs.
// Refused: tf_crop_and_resize (its extrapolation value is not a weighted sum of
// inputs) and integer inputs. (exclude_outside changes only cubic weights: the
// outside tap of a linear pair gets the edge value, which renormalising also gives.)
#include <algorithm>
#include <cmath>

#include "compiler/graph_passes/decompose.h"

namespace trnsim::graph_passes {

namespace {

using ir::Value;

// The scale of axis d: the given one, else the ratio of the lengths.
double axis_scale(const ir::Node& n, size_t d) {
  const auto& scales = n.attr_floats("scales");
  const ir::Shape& xs = n.inputs[0]->shape();
  const ir::Shape& ys = n.outputs[0]->shape();
  return scales.empty() ? static_cast<double>(ys[d]) / static_cast<double>(xs[d])
                        : static_cast<double>(scales[d]);
}

// R [out_len, in_len], row-major: output coordinate o reads sum_i R[o, i] x[i].
std::vector<double> interp_matrix(const ir::Node& n, int64_t in_len, int64_t out_len,
                                  double scale) {
  const std::string& mode = n.attr_string("mode");
  const std::string& ctm = n.attr_string("coordinate_transformation_mode");
  const std::string& nm = n.attr_string("nearest_mode");
  // The resized length as a real number (input length times the scale).
  const double out_real = scale * static_cast<double>(in_len);
  std::vector<double> r(static_cast<size_t>(out_len * in_len), 0.0);
  auto add = [&](int64_t o, double i, double w) {
    const int64_t k = std::clamp<int64_t>(static_cast<int64_t>(i), 0, in_len - 1);
    r[static_cast<size_t>(o * in_len + k)] += w;
  };
  for (int64_t o = 0; o < out_len; ++o) {
    const double x = static_cast<double>(o);
    double src;
    if (ctm == "align_corners")
      src = out_real == 1 ? 0 : x * static_cast<double>(in_len - 1) / (out_real - 1);
    else if (ctm == "asymmetric")
      src = x / scale;
    else if (ctm == "pytorch_half_pixel")
      src = out_len > 1 ? (x + 0.5) / scale - 0.5 : 0;
    else if (ctm == "tf_half_pixel_for_nn")
      src = (x + 0.5) / scale;
    else  // half_pixel
      src = (x + 0.5) / scale - 0.5;
    const double fl = std::floor(src), t = src - fl;
    if (mode == "nearest") {
      const bool up = t != 0 && (nm == "ceil" || (nm == "round_prefer_floor" && t > 0.5) ||
                                 (nm == "round_prefer_ceil" && t >= 0.5));
      add(o, up ? fl + 1 : fl, 1.0);
    } else if (mode == "linear") {  // the two neighbours (clamped: edge values repeat)
      add(o, fl, 1 - t);
      add(o, fl + 1, t);
    } else {  // cubic: four neighbours, Keys' kernel with a = cubic_coeff_a
      const double a = n.attr_float("cubic_coeff_a");
      auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };  // |d| <= 1
      auto far = [a](double d) {
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
      };  // 1 < |d| < 2
      double w[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
      if (n.attr_int("exclude_outside") != 0) {
        // Taps outside the input get no weight; the rest are renormalised.
        double sum = 0;
        for (int j = 0; j < 4; ++j) {
          const double i = fl - 1 + j;
          if (i < 0 || i > static_cast<double>(in_len - 1)) w[j] = 0;
          sum += w[j];
        }
        if (sum != 0)
          for (double& v : w) v /= sum;
      }
      for (int j = 0; j < 4; ++j) add(o, fl - 1 + j, w[j]);
    }
  }
  return r;
}

// s when row o of R picks input o / s alone (nearest by an integer factor), else 0.
int64_t repeat_factor(const std::vector<double>& r, int64_t in_len, int64_t out_len) {
  if (out_len % in_len != 0) return 0;
  const int64_t s = out_len / in_len;
  for (int64_t o = 0; o < out_len; ++o)
    if (r[static_cast<size_t>(o * in_len + o / s)] != 1.0) return 0;
  return s;
}

ir::Tensor as_tensor(const std::vector<double>& m, ir::Shape shape, ir::ElemType elem) {
  std::vector<float> f(m.begin(), m.end());
  ir::Tensor t = ir::Tensor::from_floats(std::move(shape), std::move(f));
  return elem == ir::ElemType::fp32 ? t : t.cast(elem);
}

// Interpolation matrices beyond this many elements (64 MiB of fp32) are not made:
// a resize that large stays on the host rather than filling HBM with weights.
constexpr int64_t kMaxMatrixElements = int64_t{1} << 24;

}  // namespace

std::string resize_refusal(const ir::Node& n) {
  const std::string& mode = n.attr_string("mode");
  const std::string& ctm = n.attr_string("coordinate_transformation_mode");
  if (!ir::is_float(n.outputs[0]->elem()))
    return "Resize of " + std::string(ir::elem_type_name(n.outputs[0]->elem())) +
           " is not rewritten (interpolation runs on the tensor engine in float)";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return "Resize mode '" + mode + "' is not rewritten for the device";
  if (ctm != "half_pixel" && ctm != "pytorch_half_pixel" && ctm != "align_corners" &&
      ctm != "asymmetric" && ctm != "tf_half_pixel_for_nn")
    return "Resize coordinate_transformation_mode '" + ctm + "' is not rewritten for the device";
  const ir::Shape& xs = n.inputs[0]->shape();
  const ir::Shape& ys = n.outputs[0]->shape();
  for (size_t d = 0; d < xs.size(); ++d)
    if (xs[d] != ys[d] && xs[d] * ys[d] > kMaxMatrixElements)
      return "Resize of axis " + std::to_string(d) + " from " + std::to_string(xs[d]) + " to " +
             std::to_string(ys[d]) + " would need a " + std::to_string(ys[d]) + "x" +
             std::to_string(xs[d]) + " interpolation matrix (more than " +
             std::to_string(kMaxMatrixElements) + " elements)";
  return "";
}

Value* decompose_resize(ir::Graph& g, ir::Node* n) {
  Emitter e(g, n);
  Value* x = n->inputs[0];
  const ir::Shape xs = x->shape();
  const ir::Shape ys = n->outputs[0]->shape();
  const ir::ElemType elem = x->elem();
  std::vector<size_t> axes;
  std::vector<std::vector<double>> mats;
  bool repeat = true;
  for (size_t d = 0; d < xs.size(); ++d) {
    std::vector<double> r = interp_matrix(*n, xs[d], ys[d], axis_scale(*n, d));
    bool identity = xs[d] == ys[d];
    for (int64_t o = 0; identity && o < ys[d]; ++o)
      identity = r[static_cast<size_t>(o * xs[d] + o)] == 1.0;
    if (identity) continue;
    axes.push_back(d);
    repeat = repeat && repeat_factor(r, xs[d], ys[d]) > 0;
    mats.push_back(std::move(r));
  }
  if (axes.empty()) return x;
  if (repeat) {
    // x [.., in_d, ..] -> [.., in_d, 1, ..] -> Expand [.., in_d, s, ..] -> [.., out_d, ..].
    ir::Shape unit, full;
    for (size_t d = 0; d < xs.size(); ++d) {
      unit.push_back(xs[d]);
      full.push_back(xs[d]);
      if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
        unit.push_back(1);
        full.push_back(ys[d] / xs[d]);
      }
    }
    Value* u = e.reshape(x, unit, "unit");
    Value* big = e.node("Expand", {u}, {{"shape", full}}, "repeat");
    return e.reshape(big, ys, "out");
  }
  ir::Shape cur = xs;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t d = axes[k];
    const int64_t in_len = xs[d], out_len = ys[d];
    int64_t pre = 1, post = 1;
    for (size_t i = 0; i < d; ++i) pre *= cur[i];
    for (size_t i = d + 1; i < cur.size(); ++i) post *= cur[i];
    ir::Shape next = cur;
    next[d] = out_len;
    const std::string ax = std::to_string(d);
    if (post == 1) {
      // The last (non-unit) axis: x [.., in] @ R^T [in, out]. MatMul flattens x's
      // leading dims itself, so the result needs no reshape (a reshaped graph
      // output would cost a copy).
      std::vector<double> rt(static_cast<size_t>(in_len * out_len));
      for (int64_t o = 0; o < out_len; ++o)
        for (int64_t i = 0; i < in_len; ++i)
          rt[static_cast<size_t>(i * out_len + o)] = mats[k][static_cast<size_t>(o * in_len + i)];
      Value* w = e.constant("interp" + ax, as_tensor(rt, {in_len, out_len}, elem));
      const bool last = d + 1 == cur.size() && cur.size() >= 2;
      Value* rows = last ? x : e.reshape(x, {pre, in_len}, "rows" + ax);
      x = e.reshape(e.node("MatMul", {rows, w}, {}, "resize" + ax), next, "axis" + ax);
    } else {
      // R [out, in] @ x [pre, in, post], R shared by the pre batches.
      Value* w = e.constant("interp" + ax, as_tensor(mats[k], {out_len, in_len}, elem));
      Value* v3 = e.reshape(x, pre == 1 ? ir::Shape{in_len, post} : ir::Shape{pre, in_len, post},
                            "cols" + ax);
      x = e.reshape(e.node("MatMul", {w, v3}, {}, "resize" + ax), next, "axis" + ax);
    }
    cur = next;
  }
  return x;
}

}  // namespace trnsim::graph_passes
