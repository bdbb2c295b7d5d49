// Kernels for the control-flow ops If, Loop and Scan: their bodies run through the
// interpreter itself (interp::run), one call per branch taken or iteration. The
// node's inputs map to the body's inputs by position (compiler/ir/ops.h).
#include "compiler/interp/interpreter.h"
#include "compiler/interp/kernels.h"

namespace trnsim::interp {
namespace {

// A Loop whose condition never turns false (and whose trip count, if any, is
// huge) would not return in any useful time: stop it with an error instead.
constexpr int64_t kMaxLoopIterations = int64_t{1} << 24;

Tensor bool_scalar(bool b) {
  return Tensor::from_ints({}, {b ? 1 : 0}, ElemType::boolean);
}

// Element (outer, index, inner) of a tensor viewed as [outer, dim(axis), inner].
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
  AxisView(const Shape& s, int64_t axis) {
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
      if (d < axis) outer *= s[d];
      if (d > axis) inner *= s[d];
    }
    dim = s[axis];
  }
};

template <typename T>
void copy_slice(const std::vector<T>& src, std::vector<T>& dst, const AxisView& v, int64_t idx,
                bool into) {
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t big = (o * v.dim + idx) * v.inner + i, small = o * v.inner + i;
      if (into)
        dst[big] = src[small];
      else
        dst[small] = src[big];
    }
}

// t[..., idx, ...] along `axis` as a tensor of type `type`.
Tensor take_slice(const Tensor& t, int64_t axis, int64_t idx, const ir::TensorType& type) {
  Tensor r(type);
  const AxisView v(t.shape(), axis);
  if (t.holds_floats())
    copy_slice(t.floats(), r.floats(), v, idx, false);
  else
    copy_slice(t.ints(), r.ints(), v, idx, false);
  return r;
}

// dst[..., idx, ...] = src along `axis`.
void put_slice(Tensor& dst, int64_t axis, int64_t idx, const Tensor& src) {
  const AxisView v(dst.shape(), axis);
  if (dst.holds_floats())
    copy_slice(src.floats(), dst.floats(), v, idx, true);
  else
    copy_slice(src.ints(), dst.ints(), v, idx, true);
}

void run_if(const Node& n, const Ins& in, Outs& out) {
  const bool cond = in[0]->at(0) != 0;
  const ir::Graph& b = n.attr_graph(cond ? "then_branch" : "else_branch");
  TensorMap feed;
  for (size_t k = 1; k < in.size(); ++k) feed[b.inputs()[k - 1]->name] = *in[k];
  TensorMap res = run(b, feed);
  for (size_t k = 0; k < out.size(); ++k) out[k] = std::move(res.at(b.outputs()[k]->name));
}

void run_loop(const Node& n, const Ins& in, Outs& out) {
  const ir::Graph& b = n.attr_graph("body");
  const size_t nin = in.size();
  const size_t C = static_cast<size_t>(n.attr_int("num_captures"));
  const size_t N = nin - 2 - C;
  const size_t K = b.outputs().size() - 1 - N;
  const bool has_trip = in[0] != nullptr;
  const int64_t trip = has_trip ? in[0]->ints()[0] : 0;
  bool cond = in[1] ? in[1]->at(0) != 0 : true;
  const int64_t rows = K > 0 ? out[N].shape()[0] : 0;
  TensorMap feed;
  const auto& bin = b.inputs();
  for (size_t k = 2; k < nin; ++k) feed[bin[k]->name] = *in[k];
  int64_t i = 0;
  for (; (!has_trip || i < trip) && cond; ++i) {
    if (i >= kMaxLoopIterations)
      kfail("the condition is still true after " + std::to_string(i) +
            " iterations (stopped: a loop this long is taken for one that never ends)");
    if (K > 0 && i >= rows)
      kfail("runs more than the " + std::to_string(rows) + " iterations its scan outputs hold");
    feed[bin[0]->name] = Tensor::scalar_int(i);
    feed[bin[1]->name] = bool_scalar(cond);
    TensorMap res = run(b, feed);
    cond = res.at(b.outputs()[0]->name).at(0) != 0;
    for (size_t k = 0; k < N; ++k) feed[bin[2 + k]->name] = res.at(b.outputs()[1 + k]->name);
    for (size_t j = 0; j < K; ++j)
      put_slice(out[N + j], 0, i, res.at(b.outputs()[1 + N + j]->name));
  }
  if (K > 0 && i != rows)
    kfail("stopped after " + std::to_string(i) +
          " iterations, but its scan outputs were sized for " + std::to_string(rows) +
          " (the condition decides a shape; static shapes only)");
  for (size_t k = 0; k < N; ++k) out[k] = feed.at(bin[2 + k]->name);
}

void run_scan(const Node& n, const Ins& in, Outs& out) {
  const ir::Graph& b = n.attr_graph("body");
  const size_t K = static_cast<size_t>(n.attr_int("num_scan_inputs"));
  const size_t C = static_cast<size_t>(n.attr_int("num_captures"));
  const size_t N = in.size() - K - C;
  const size_t L = b.outputs().size() - N;
  const auto& ia = n.attr_ints("scan_input_axes");
  const auto& id = n.attr_ints("scan_input_directions");
  const auto& oa = n.attr_ints("scan_output_axes");
  const auto& od = n.attr_ints("scan_output_directions");
  const auto& bin = b.inputs();
  const int64_t S = in[N]->shape()[ia[0]];
  TensorMap feed;
  for (size_t k = 0; k < in.size(); ++k)
    if (k < N || k >= N + K) feed[bin[k]->name] = *in[k];
  for (int64_t t = 0; t < S; ++t) {
    for (size_t j = 0; j < K; ++j)
      feed[bin[N + j]->name] =
          take_slice(*in[N + j], ia[j], id[j] ? S - 1 - t : t, bin[N + j]->type);
    TensorMap res = run(b, feed);
    for (size_t k = 0; k < N; ++k) feed[bin[k]->name] = res.at(b.outputs()[k]->name);
    for (size_t j = 0; j < L; ++j)
      put_slice(out[N + j], oa[j], od[j] ? S - 1 - t : t, res.at(b.outputs()[N + j]->name));
  }
  for (size_t k = 0; k < N; ++k) out[k] = feed.at(bin[k]->name);
}

}  // namespace

void register_control(KernelMap& m) {
  m["If"] = run_if;
  m["Loop"] = run_loop;
  m["Scan"] = run_scan;
}

}  // namespace trnsim::interp
