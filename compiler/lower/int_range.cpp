#include "compiler/lower/int_range.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/types.h"

namespace trnsim::lower {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_int(const ir::Value* v) {
  return v && ir::is_integer(v->elem());
}

bool within(double lo, double hi) {
  return lo >= -kExactIntLimit && hi <= kExactIntLimit;
}

// The values of an integer type; a result outside wraps in ONNX, which the device's
// fp32 does not do, so it is not exact either.
std::pair<double, double> type_range(ir::ElemType e) {
  switch (e) {
    case ir::ElemType::int8:
      return {-128, 127};
    case ir::ElemType::uint8:
      return {0, 255};
    case ir::ElemType::int16:
      return {-32768, 32767};
    case ir::ElemType::uint16:
      return {0, 65535};
    case ir::ElemType::int32:
      return {-2147483648.0, 2147483647.0};
    case ir::ElemType::uint32:
      return {0, 4294967295.0};
    default:
      return {-9.2233720368547758e18, 9.2233720368547758e18};
  }
}

IntRange make(double lo, double hi, bool exact_anyway = false) {
  if (std::isnan(lo) || std::isnan(hi)) lo = -kInf, hi = kInf;
  return {lo, hi, exact_anyway || within(lo, hi)};
}

// Ops whose integer outputs hold only values of their integer inputs (or their
// own constants, see `extra` below).
const std::set<std::string>& preserving_ops() {
  static const std::set<std::string> s = {
      "Reshape",       "Flatten",       "Squeeze",      "Unsqueeze",    "Identity",  "Transpose",
      "Concat",        "Split",         "Slice",        "Gather",       "Expand",    "Tile",
      "Pad",           "Trilu",         "DepthToSpace", "SpaceToDepth", "Max",       "Min",
      "Relu",          "Clip",          "Where",        "ReduceMax",    "ReduceMin", "MaxPool",
      "GlobalMaxPool", "GatherElements"};
  return s;
}

// The data inputs whose values a preserving op's output takes (indices and
// conditions excluded).
std::vector<const ir::Value*> data_inputs(const ir::Node& n) {
  if (n.op == "Gather" || n.op == "GatherElements" || n.op == "Pad" || n.op == "Slice" ||
      n.op == "Reshape" || n.op == "Expand" || n.op == "Tile" || n.op == "Trilu")
    return {n.input(0)};
  if (n.op == "Where") return {n.input(1), n.input(2)};
  std::vector<const ir::Value*> r;
  for (const ir::Value* v : n.inputs)
    if (v) r.push_back(v);
  return r;
}

IntRange output_range(const ir::Node& n, const IntRanges& r) {
  auto in = [&](size_t k) -> IntRange {
    const ir::Value* v = n.input(k);
    if (!v) return {0, 0, true};
    if (v->elem() == ir::ElemType::boolean) return {0, 1, true};
    auto it = r.find(v);
    return it == r.end() ? IntRange{-kInf, kInf, false} : it->second;
  };
  const std::string& op = n.op;
  const ir::Value* x = n.input(0);
  if (op == "Cast") {
    if (!x) return make(-kInf, kInf);
    if (x->elem() == ir::ElemType::boolean) return make(0, 1);
    if (ir::is_integer(x->elem())) return in(0);
    // Truncating an fp32 gives an fp32, exact at any size (a float beyond the type is
    // undefined in ONNX).
    const auto [tlo, thi] = type_range(n.outputs[0]->elem());
    return {tlo, thi, true};
  }
  if (op == "OneHot") return in(1);  // every element is one of `values` (off, on)
  if (op == "TopK") return in(0);    // Values: elements of the input (Indices: int_ranges)
  if (op == "ArgMax" || op == "ArgMin") {
    const int64_t axis = n.attr_int("axis");
    return make(0, static_cast<double>(std::max<int64_t>(x->shape().at(axis) - 1, 0)));
  }
  if (preserving_ops().count(op)) {
    double lo = kInf, hi = -kInf;
    bool exact = true;
    for (const ir::Value* v : data_inputs(n)) {
      IntRange a = v->elem() == ir::ElemType::boolean ? IntRange{0, 1, true}
                   : r.count(v)                       ? r.at(v)
                                                      : IntRange{-kInf, kInf, false};
      lo = std::min(lo, a.lo);
      hi = std::max(hi, a.hi);
      exact = exact && a.exact;
    }
    if (op == "Relu") lo = std::max(lo, 0.0), hi = std::max(hi, 0.0);
    if (op == "Trilu") lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
    if (op == "Pad") {
      const double v = n.has_attr("value") ? n.attr_float("value") : 0.0;
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    if (op == "Clip") {
      const double cl = n.attr_float("min"), ch = n.attr_float("max");
      lo = std::min(std::max(lo, cl), ch);
      hi = std::min(std::max(hi, cl), ch);
    }
    return make(lo, hi, exact);
  }
  if (op == "Mean" || op == "ReduceMean") {  // within the inputs' hull
    double lo = kInf, hi = -kInf;
    for (size_t k = 0; k < n.inputs.size(); ++k)
      lo = std::min(lo, in(k).lo), hi = std::max(hi, in(k).hi);
    return make(lo, hi);
  }
  if (op == "Div") {  // |a / b| <= |a| for integers (b != 0)
    const double m = std::max(std::fabs(in(0).lo), std::fabs(in(0).hi));
    return make(-m, m);
  }
  if (op == "Mod") {  // |a mod b| < |b|
    const double m = std::max(std::fabs(in(1).lo), std::fabs(in(1).hi));
    return make(-m, m);
  }
  if (op == "Neg") return make(-in(0).hi, -in(0).lo);
  if (op == "Abs") {
    const IntRange a = in(0);
    const double m = std::max(std::fabs(a.lo), std::fabs(a.hi));
    return make(a.lo <= 0 && a.hi >= 0 ? 0 : std::min(std::fabs(a.lo), std::fabs(a.hi)), m);
  }
  if (op == "Sign") return make(-1, 1);
  if (op == "Add" || op == "Sum") {
    double lo = 0, hi = 0;
    for (size_t k = 0; k < n.inputs.size(); ++k) lo += in(k).lo, hi += in(k).hi;
    return make(lo, hi);
  }
  if (op == "Sub") return make(in(0).lo - in(1).hi, in(0).hi - in(1).lo);
  if (op == "Mul") {
    const IntRange a = in(0), b = in(1);
    double lo = kInf, hi = -kInf;
    for (double p : {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi}) {
      if (std::isnan(p)) p = 0;  // 0 * inf: the zero bound
      lo = std::min(lo, p), hi = std::max(hi, p);
    }
    return make(lo, hi);
  }
  if (op == "ReduceSum" || op == "ReduceL1" || op == "ReduceSumSquare" || op == "CumSum" ||
      op == "MatMul") {
    const IntRange a = in(0);
    double count = 1;
    if (op == "CumSum") {
      count = static_cast<double>(x->shape().at(n.attr_int("axis")));
    } else if (op == "MatMul") {
      count = x->shape().empty() ? 1 : static_cast<double>(x->shape().back());
    } else {
      const int64_t out = std::max<int64_t>(n.outputs[0]->type.numel(), 1);
      count = static_cast<double>(x->type.numel()) / static_cast<double>(out);
    }
    double lo = a.lo, hi = a.hi;
    if (op == "MatMul") {
      const IntRange b = in(1);
      const double m =
          std::max(std::fabs(a.lo), std::fabs(a.hi)) * std::max(std::fabs(b.lo), std::fabs(b.hi));
      lo = -m, hi = m;
    } else if (op == "ReduceL1" || op == "ReduceSumSquare") {
      const double m = std::max(std::fabs(a.lo), std::fabs(a.hi));
      lo = 0, hi = op == "ReduceL1" ? m : m * m;
    }
    if (count == 0) return make(0, 0);
    return make(std::min(lo * count, 0.0), std::max(hi * count, 0.0));
  }
  if (op == "Pow" && n.input(1) && n.input(1)->has_data()) {
    const IntRange a = in(0);
    const double m = std::max(std::fabs(a.lo), std::fabs(a.hi));
    double e = 0;
    for (int64_t k = 0; k < n.input(1)->type.numel(); ++k) e = std::max(e, n.input(1)->data->at(k));
    const double p = std::max(std::pow(m, e), 1.0);
    return make(-p, p);
  }
  return make(-kInf, kInf);
}

std::string range_text(const IntRange& a) {
  auto num = [](double v) {
    if (std::isinf(v)) return std::string(v < 0 ? "-inf" : "inf");
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v);
    return std::string(b);
  };
  return "[" + num(a.lo) + ", " + num(a.hi) + "]";
}

}  // namespace

IntRanges int_ranges(const ir::Graph& g) {
  IntRanges r;
  for (const auto& vp : g.values()) {
    const ir::Value* v = vp.get();
    if (!is_int(v)) continue;
    if (v->has_data()) {
      double lo = kInf, hi = -kInf;
      for (int64_t k = 0; k < v->data->numel(); ++k)
        lo = std::min(lo, v->data->at(k)), hi = std::max(hi, v->data->at(k));
      if (v->data->numel() == 0) lo = hi = 0;
      r[v] = make(lo, hi);
    } else if (v->is_graph_input || !v->producer) {
      const auto [tlo, thi] = type_range(v->elem());
      r[v] = v->int_range ? *v->int_range
                          : make(std::max(tlo, -kExactIntLimit), std::min(thi, kExactIntLimit));
    }
  }
  for (const auto& np : g.nodes())
    for (const ir::Value* o : np->outputs)
      if (is_int(o)) {
        // MaxPool's Indices output holds offsets into its input, not its values.
        const bool offsets = np->op == "MaxPool" && o != np->outputs[0];
        IntRange a = offsets ? make(0, static_cast<double>(
                                           std::max<int64_t>(np->inputs[0]->type.numel() - 1, 0)))
                             : output_range(*np, r);
        // TopK's Indices are positions along its axis.
        if (np->op == "TopK" && o != np->outputs[0])
          a = make(0, static_cast<double>(std::max<int64_t>(
                          np->inputs[0]->shape().at(np->attr_int("axis")) - 1, 0)));
        const auto [tlo, thi] = type_range(o->elem());
        a.exact = a.exact && a.lo >= tlo && a.hi <= thi;
        r[o] = a;
      }
  return r;
}

void annotate_int_ranges(ir::Graph& g) {
  const IntRanges r = int_ranges(g);
  for (const auto& vp : g.values())
    if (auto it = r.find(vp.get()); it != r.end()) vp->int_range = it->second;
}

void check_exact_integers(const ir::Node& n, const IntRanges& r) {
  auto check = [&](const ir::Value* v, const char* role) {
    if (!is_int(v)) return;
    auto it = r.find(v);
    if (it != r.end() && it->second.exact) return;
    throw ir::UnsupportedError(
        "lowering: " + n.label() + ": " + role + " '" + v->name + "' (" + v->type.str() +
        ") is not provably within +-2^24 (range " +
        (it == r.end() ? std::string("unknown") : range_text(it->second)) +
        "): the device holds integers as fp32, which would round larger ones");
  };
  // Constant inputs are parameters (shapes, pads, bounds) or data whose size the
  // result's range already covers.
  for (const ir::Value* v : n.inputs)
    if (v && !v->is_constant) check(v, "integer input");
  for (const ir::Value* v : n.outputs) check(v, "integer result");
}

}  // namespace trnsim::lower
