// Reductions, ArgMax/ArgMin and CumSum.
#include <cmath>
#include <limits>

#include "compiler/interp/kernels.h"

namespace trnsim::interp {
namespace {

// The keepdims shape of a reduction (reduced dims set to 1).
Shape keep_shape(const Node& n, const Shape& in) {
  const auto& axes = n.attr_ints("axes");
  Shape k = in;
  for (size_t d = 0; d < k.size(); ++d)
    if (axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end())
      k[d] = 1;
  return k;
}

void reduce(const Node& n, const Ins& in, Outs& out) {
  const Tensor& x = *in[0];
  const Shape ks = keep_shape(n, x.shape());
  const int64_t nout = ir::num_elements(ks);
  const double count = nout ? static_cast<double>(x.numel()) / static_cast<double>(nout) : 0.0;
  const std::string& op = n.op;
  const double inf = std::numeric_limits<double>::infinity();
  // Pass 1 (LogSumExp only): the max per output, for a stable exp.
  std::vector<double> mx(nout, -inf);
  if (op == "ReduceLogSumExp")
    for_each_broadcast<1>(x.shape(), {&ks}, [&](int64_t k, const std::array<int64_t, 1>& off) {
      mx[off[0]] = std::max(mx[off[0]], x.at(k));
    });
  const double init = op == "ReduceProd"  ? 1.0
                      : op == "ReduceMax" ? -inf
                      : op == "ReduceMin" ? inf
                                          : 0.0;
  if (x.holds_floats() || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp" ||
      op == "ReduceMean") {
    std::vector<double> acc(nout, init);
    for_each_broadcast<1>(x.shape(), {&ks}, [&](int64_t k, const std::array<int64_t, 1>& off) {
      const double v = x.at(k);
      double& a = acc[off[0]];
      if (op == "ReduceSum" || op == "ReduceMean" || op == "ReduceLogSum")
        a += v;
      else if (op == "ReduceMax")
        a = (v > a || std::isnan(v)) && !std::isnan(a) ? v : a;
      else if (op == "ReduceMin")
        a = (v < a || std::isnan(v)) && !std::isnan(a) ? v : a;
      else if (op == "ReduceProd")
        a *= v;
      else if (op == "ReduceL1")
        a += std::fabs(v);
      else if (op == "ReduceL2" || op == "ReduceSumSquare")
        a += v * v;
      else if (op == "ReduceLogSumExp" && !std::isinf(mx[off[0]]))
        a += std::exp(v - mx[off[0]]);
      else if (op == "ReduceLogSumExp" && std::isnan(v))
        a = v;
    });
    for (int64_t o = 0; o < nout; ++o) {
      double& a = acc[o];
      if (op == "ReduceMean")
        a /= count;
      else if (op == "ReduceL2")
        a = std::sqrt(a);
      else if (op == "ReduceLogSum")
        a = std::log(a);
      else if (op == "ReduceLogSumExp")
        // An infinite max is the result (inf - inf would make the shifted exp NaN);
        // -inf also for an empty set.
        a = std::isinf(mx[o]) ? (std::isnan(a) ? a : mx[o]) : std::log(a) + mx[o];
    }
    if (out[0].holds_doubles()) {
      out[0].doubles() = std::move(acc);
    } else if (out[0].holds_floats()) {
      auto& y = out[0].floats();
      for (int64_t o = 0; o < nout; ++o) y[o] = static_cast<float>(acc[o]);
    } else {
      auto& y = out[0].ints();
      for (int64_t o = 0; o < nout; ++o)
        y[o] = std::isfinite(acc[o]) ? static_cast<int64_t>(acc[o]) : 0;
    }
    return;
  }
  // Exact integer reductions (wrapping like the element type's arithmetic).
  const auto& xd = x.ints();
  std::vector<int64_t> acc(nout, op == "ReduceProd"  ? 1
                                 : op == "ReduceMax" ? std::numeric_limits<int64_t>::min()
                                 : op == "ReduceMin" ? std::numeric_limits<int64_t>::max()
                                                     : 0);
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  for_each_broadcast<1>(x.shape(), {&ks}, [&](int64_t k, const std::array<int64_t, 1>& off) {
    const int64_t v = xd[k];
    int64_t& a = acc[off[0]];
    const uint64_t ua = static_cast<uint64_t>(a), uv = static_cast<uint64_t>(v);
    if (op == "ReduceSum")
      a = wrap(ua + uv);
    else if (op == "ReduceMax")
      a = std::max(a, v);
    else if (op == "ReduceMin")
      a = std::min(a, v);
    else if (op == "ReduceProd")
      a = wrap(ua * uv);
    else if (op == "ReduceL1")
      a = wrap(ua + static_cast<uint64_t>(v < 0 ? -v : v));
    else if (op == "ReduceSumSquare")
      a = wrap(ua + uv * uv);
  });
  out[0].ints() = acc;
}

void arg_reduce(const Node& n, const Ins& in, Outs& out) {
  const Tensor& x = *in[0];
  const Shape& s = x.shape();
  const int64_t axis = n.attr_int("axis");
  const bool is_max = n.op == "ArgMax", last = n.attr_int("select_last_index") != 0;
  const int64_t O = ir::num_elements(Shape(s.begin(), s.begin() + axis)), D = s[axis],
                I = ir::num_elements(Shape(s.begin() + axis + 1, s.end()));
  auto& y = out[0].ints();
  if (D == 0 && O * I > 0)
    kfail("axis " + std::to_string(axis) + " has no elements to choose from");
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) {
      const int64_t base = o * D * I + i;
      int64_t best = 0;
      double bv = x.at(base);
      for (int64_t d = 1; d < D; ++d) {
        const double v = x.at(base + d * I);
        if (std::isnan(bv)) break;  // the first NaN wins, as numpy's argmax
        bool better = is_max ? (v > bv || (last && v == bv)) : (v < bv || (last && v == bv));
        if (better || std::isnan(v)) {
          best = d;
          bv = v;
        }
      }
      y[o * I + i] = best;
    }
}

void cumsum(const Node& n, const Ins& in, Outs& out) {
  const Tensor& x = *in[0];
  const Shape& s = x.shape();
  const int64_t axis = n.attr_int("axis");
  const bool excl = n.attr_int("exclusive") != 0, rev = n.attr_int("reverse") != 0;
  const int64_t O = ir::num_elements(Shape(s.begin(), s.begin() + axis)), D = s[axis],
                I = ir::num_elements(Shape(s.begin() + axis + 1, s.end()));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) {
      double facc = 0;
      uint64_t iacc = 0;
      for (int64_t j = 0; j < D; ++j) {
        const int64_t d = rev ? D - 1 - j : j;
        const int64_t idx = o * D * I + d * I + i;
        if (x.holds_doubles()) {
          if (!excl) facc += x.doubles()[idx];
          out[0].doubles()[idx] = facc;
          if (excl) facc += x.doubles()[idx];
        } else if (x.holds_floats()) {
          if (!excl) facc += x.floats()[idx];
          out[0].floats()[idx] = static_cast<float>(facc);
          if (excl) facc += x.floats()[idx];
        } else {
          if (!excl) iacc += static_cast<uint64_t>(x.ints()[idx]);
          out[0].ints()[idx] = static_cast<int64_t>(iacc);
          if (excl) iacc += static_cast<uint64_t>(x.ints()[idx]);
        }
      }
    }
}

}  // namespace

void register_reduce(KernelMap& m) {
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    m[op] = reduce;
  m["ArgMax"] = arg_reduce;
  m["ArgMin"] = arg_reduce;
  m["CumSum"] = cumsum;
}

}  // namespace trnsim::interp
