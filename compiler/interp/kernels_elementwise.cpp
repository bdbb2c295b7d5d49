// Elementwise kernels: unary, broadcasting binary/variadic, comparisons, logic,
// Where, Cast.
#include <cmath>
#include <limits>

#include "compiler/interp/kernels.h"

namespace trnsim::interp {
namespace {

using FloatFn = std::function<double(double)>;

template <typename TA, typename TB, typename TO, typename Op>
void broadcast2(const std::vector<TA>& a, const Shape& sa, const std::vector<TB>& b,
                const Shape& sb, std::vector<TO>& o, const Shape& so, Op op) {
  for_each_broadcast<2>(so, {&sa, &sb}, [&](int64_t k, const std::array<int64_t, 2>& off) {
    o[k] = op(a[off[0]], b[off[1]]);
  });
}

// Two's-complement wrapping integer arithmetic (signed overflow is UB in C++).
int64_t wadd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wsub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wmul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t idiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  return a / b;
}
int64_t imod(int64_t a, int64_t b, bool c_fmod) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
double fmod_py(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
int64_t ipow(int64_t base, int64_t e) {
  if (e < 0) {
    // Truncated 1/base^|e|: only |base| == 1 gives a non-zero integer.
    if (base == 1) return 1;
    if (base == -1) return (e % 2) ? -1 : 1;
    return 0;
  }
  int64_t r = 1;
  while (e) {
    if (e & 1) r = wmul(r, base);
    base = wmul(base, base);
    e >>= 1;
  }
  return r;
}
template <typename T>
void where(const Tensor& c, const std::vector<T>& x, const Shape& sx, const std::vector<T>& y,
           const Shape& sy, std::vector<T>& o, const Shape& so) {
  const auto& cd = c.ints();
  for_each_broadcast<3>(so, {&c.shape(), &sx, &sy},
                        [&](int64_t k, const std::array<int64_t, 3>& off) {
                          o[k] = cd[off[0]] ? x[off[1]] : y[off[2]];
                        });
}

template <typename T>
T fmax_nan(T a, T b) {
  return (std::isnan(a) || std::isnan(b)) ? T(NAN) : (a > b ? a : b);
}
template <typename T>
T fmin_nan(T a, T b) {
  return (std::isnan(a) || std::isnan(b)) ? T(NAN) : (a < b ? a : b);
}
double dadd(double a, double b) {
  return a + b;
}

void unary_float(KernelMap& m, const std::string& op, std::function<FloatFn(const Node&)> make) {
  m[op] = [make](const Node& n, const Ins& in, Outs& out) {
    FloatFn f = make(n);
    if (in[0]->holds_doubles()) {  // fp64: the double function, kept in double
      const auto& x = in[0]->doubles();
      auto& y = out[0].doubles();
      for (size_t k = 0; k < x.size(); ++k) y[k] = f(x[k]);
      return;
    }
    const auto& x = in[0]->floats();
    auto& y = out[0].floats();
    for (size_t k = 0; k < x.size(); ++k) y[k] = static_cast<float>(f(x[k]));
  };
}
void unary_float(KernelMap& m, const std::string& op, FloatFn f) {
  unary_float(m, op, [f](const Node&) { return f; });
}

// Unary ops defined for floats and integers.
void unary_numeric(KernelMap& m, const std::string& op, std::function<double(double)> ff,
                   std::function<int64_t(int64_t)> fi) {
  m[op] = [ff, fi](const Node&, const Ins& in, Outs& out) {
    if (in[0]->holds_doubles()) {
      const auto& x = in[0]->doubles();
      auto& y = out[0].doubles();
      for (size_t k = 0; k < x.size(); ++k) y[k] = ff(x[k]);
    } else if (in[0]->holds_floats()) {
      const auto& x = in[0]->floats();
      auto& y = out[0].floats();
      for (size_t k = 0; k < x.size(); ++k) y[k] = static_cast<float>(ff(x[k]));
    } else {
      const auto& x = in[0]->ints();
      auto& y = out[0].ints();
      for (size_t k = 0; k < x.size(); ++k) y[k] = fi(x[k]);
    }
  };
}

// Broadcasting binary op on a float function, an integer function and (for fp64)
// a double function.
void binary(KernelMap& m, const std::string& op, std::function<float(float, float)> ff,
            std::function<int64_t(int64_t, int64_t)> fi,
            std::function<double(double, double)> fd = nullptr) {
  m[op] = [ff, fi, fd](const Node&, const Ins& in, Outs& out) {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    if (a.holds_doubles() && fd)
      broadcast2(a.doubles(), a.shape(), b.doubles(), b.shape(), out[0].doubles(), out[0].shape(),
                 fd);
    else if (a.holds_floats())
      broadcast2(a.floats(), a.shape(), b.floats(), b.shape(), out[0].floats(), out[0].shape(), ff);
    else
      broadcast2(a.ints(), a.shape(), b.ints(), b.shape(), out[0].ints(), out[0].shape(), fi);
  };
}

// Variadic broadcasting op: folds the inputs left to right into the output.
void variadic(KernelMap& m, const std::string& op, std::function<float(float, float)> ff,
              std::function<int64_t(int64_t, int64_t)> fi, std::function<double(double, double)> fd,
              bool mean = false) {
  m[op] = [ff, fi, fd, mean](const Node&, const Ins& in, Outs& out) {
    Tensor& o = out[0];
    const Shape& so = o.shape();
    // Start with input 0 broadcast to the output shape.
    if (o.holds_doubles()) {
      auto& od = o.doubles();
      const auto& a = in[0]->doubles();
      for_each_broadcast<1>(
          so, {&in[0]->shape()},
          [&](int64_t k, const std::array<int64_t, 1>& off) { od[k] = a[off[0]]; });
      for (size_t i = 1; i < in.size(); ++i) {
        const auto& b = in[i]->doubles();
        for_each_broadcast<1>(
            so, {&in[i]->shape()},
            [&](int64_t k, const std::array<int64_t, 1>& off) { od[k] = fd(od[k], b[off[0]]); });
      }
      if (mean)
        for (auto& v : od) v /= static_cast<double>(in.size());
    } else if (o.holds_floats()) {
      auto& od = o.floats();
      const auto& a = in[0]->floats();
      for_each_broadcast<1>(
          so, {&in[0]->shape()},
          [&](int64_t k, const std::array<int64_t, 1>& off) { od[k] = a[off[0]]; });
      for (size_t i = 1; i < in.size(); ++i) {
        const auto& b = in[i]->floats();
        for_each_broadcast<1>(
            so, {&in[i]->shape()},
            [&](int64_t k, const std::array<int64_t, 1>& off) { od[k] = ff(od[k], b[off[0]]); });
      }
      if (mean)
        for (auto& v : od) v /= static_cast<float>(in.size());
    } else {
      auto& od = o.ints();
      const auto& a = in[0]->ints();
      for_each_broadcast<1>(
          so, {&in[0]->shape()},
          [&](int64_t k, const std::array<int64_t, 1>& off) { od[k] = a[off[0]]; });
      for (size_t i = 1; i < in.size(); ++i) {
        const auto& b = in[i]->ints();
        for_each_broadcast<1>(
            so, {&in[i]->shape()},
            [&](int64_t k, const std::array<int64_t, 1>& off) { od[k] = fi(od[k], b[off[0]]); });
      }
      if (mean)
        for (auto& v : od) v = idiv(v, static_cast<int64_t>(in.size()));
    }
  };
}

template <typename Cmp>
void compare(KernelMap& m, const std::string& op, Cmp cmp) {
  m[op] = [cmp](const Node&, const Ins& in, Outs& out) {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    auto& o = out[0].ints();
    if (a.holds_doubles())
      broadcast2(a.doubles(), a.shape(), b.doubles(), b.shape(), o, out[0].shape(),
                 [&](double x, double y) -> int64_t { return cmp(x, y); });
    else if (a.holds_floats())
      broadcast2(a.floats(), a.shape(), b.floats(), b.shape(), o, out[0].shape(),
                 [&](float x, float y) -> int64_t { return cmp(x, y); });
    else
      broadcast2(a.ints(), a.shape(), b.ints(), b.shape(), o, out[0].shape(),
                 [&](int64_t x, int64_t y) -> int64_t { return cmp(x, y); });
  };
}

}  // namespace

void register_elementwise(KernelMap& m) {
  // --- unary float --------------------------------------------------------
  unary_float(m, "Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  unary_float(m, "Tanh", [](double x) { return std::tanh(x); });
  unary_float(m, "Erf", [](double x) { return std::erf(x); });
  unary_float(m, "Exp", [](double x) { return std::exp(x); });
  unary_float(m, "Log", [](double x) { return std::log(x); });
  unary_float(m, "Sqrt", [](double x) { return std::sqrt(x); });
  unary_float(m, "Reciprocal", [](double x) { return 1.0 / x; });
  // log(1 + e^x) without overflow for large x.
  unary_float(m, "Softplus", [](double x) {
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  });
  unary_float(m, "Softsign", [](double x) { return x / (1.0 + std::fabs(x)); });
  unary_float(m, "HardSwish",
              [](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); });
  unary_float(m, "Sin", [](double x) { return std::sin(x); });
  unary_float(m, "Cos", [](double x) { return std::cos(x); });
  unary_float(m, "Tan", [](double x) { return std::tan(x); });
  unary_float(m, "Asin", [](double x) { return std::asin(x); });
  unary_float(m, "Acos", [](double x) { return std::acos(x); });
  unary_float(m, "Atan", [](double x) { return std::atan(x); });
  unary_float(m, "Sinh", [](double x) { return std::sinh(x); });
  unary_float(m, "Cosh", [](double x) { return std::cosh(x); });
  unary_float(m, "Asinh", [](double x) { return std::asinh(x); });
  unary_float(m, "Acosh", [](double x) { return std::acosh(x); });
  unary_float(m, "Atanh", [](double x) { return std::atanh(x); });
  unary_float(m, "Floor", [](double x) { return std::floor(x); });
  unary_float(m, "Ceil", [](double x) { return std::ceil(x); });
  unary_float(m, "Round",
              [](double x) { return std::nearbyint(x); });  // default mode: half to even
  unary_float(m, "HardSigmoid", [](const Node& n) -> FloatFn {
    double a = n.attr_float("alpha"), b = n.attr_float("beta");
    return [a, b](double x) { return std::max(0.0, std::min(1.0, a * x + b)); };
  });
  unary_float(m, "Elu", [](const Node& n) -> FloatFn {
    double a = n.attr_float("alpha");
    return [a](double x) { return x < 0 ? a * (std::exp(x) - 1.0) : x; };
  });
  unary_float(m, "Celu", [](const Node& n) -> FloatFn {
    double a = n.attr_float("alpha");
    return [a](double x) { return std::max(0.0, x) + std::min(0.0, a * (std::exp(x / a) - 1.0)); };
  });
  unary_float(m, "Selu", [](const Node& n) -> FloatFn {
    double a = n.attr_float("alpha"), g = n.attr_float("gamma");
    return [a, g](double x) { return x > 0 ? g * x : g * (a * std::exp(x) - a); };
  });
  unary_float(m, "LeakyRelu", [](const Node& n) -> FloatFn {
    double a = n.attr_float("alpha");
    return [a](double x) { return x < 0 ? a * x : x; };
  });
  unary_float(m, "ThresholdedRelu", [](const Node& n) -> FloatFn {
    double a = n.attr_float("alpha");
    return [a](double x) { return x > a ? x : 0.0; };
  });

  // --- unary numeric ------------------------------------------------------
  unary_numeric(
      m, "Relu", [](double x) { return x < 0 ? 0.0 : x; }, [](int64_t x) { return x < 0 ? 0 : x; });
  unary_numeric(
      m, "Neg", [](double x) { return -x; }, [](int64_t x) { return wsub(0, x); });
  unary_numeric(
      m, "Abs", [](double x) { return std::fabs(x); },
      [](int64_t x) { return x < 0 ? wsub(0, x) : x; });
  unary_numeric(
      m, "Sign", [](double x) { return std::isnan(x) ? x : (x > 0) - (x < 0); },
      [](int64_t x) -> int64_t { return (x > 0) - (x < 0); });
  m["Clip"] = [](const Node& n, const Ins& in, Outs& out) {
    float lo = n.attr_float("min"), hi = n.attr_float("max");
    if (in[0]->holds_floats()) {
      const auto& x = in[0]->floats();
      auto& y = out[0].floats();
      // min(max(x, lo), hi) as numpy and torch: with lo > hi every element is hi.
      for (size_t k = 0; k < x.size(); ++k) {
        const float v = x[k] < lo ? lo : x[k];
        y[k] = v > hi ? hi : v;
      }
    } else {
      // Integer bounds: the front end only stores bounds that floats hold exactly.
      int64_t ilo = std::isinf(lo) ? INT64_MIN : static_cast<int64_t>(std::ceil(lo));
      int64_t ihi = std::isinf(hi) ? INT64_MAX : static_cast<int64_t>(std::floor(hi));
      const auto& x = in[0]->ints();
      auto& y = out[0].ints();
      for (size_t k = 0; k < x.size(); ++k) {
        const int64_t v = x[k] < ilo ? ilo : x[k];
        y[k] = v > ihi ? ihi : v;
      }
    }
  };
  m["Identity"] = [](const Node&, const Ins& in, Outs& out) { out[0] = *in[0]; };
  m["Not"] = [](const Node&, const Ins& in, Outs& out) {
    const auto& x = in[0]->ints();
    auto& y = out[0].ints();
    for (size_t k = 0; k < x.size(); ++k) y[k] = !x[k];
  };
  m["IsNaN"] = [](const Node&, const Ins& in, Outs& out) {
    auto& y = out[0].ints();
    for (int64_t k = 0; k < in[0]->numel(); ++k) y[k] = std::isnan(in[0]->at(k));
  };
  m["IsInf"] = [](const Node& n, const Ins& in, Outs& out) {
    bool neg = n.attr_int("detect_negative") != 0, pos = n.attr_int("detect_positive") != 0;
    const auto& x = in[0]->floats();
    auto& y = out[0].ints();
    for (size_t k = 0; k < x.size(); ++k) y[k] = std::isinf(x[k]) && ((x[k] > 0) ? pos : neg);
  };

  // --- binary / variadic ---------------------------------------------------
  binary(
      m, "Add", [](float a, float b) { return a + b; }, wadd, dadd);
  binary(
      m, "Sub", [](float a, float b) { return a - b; }, wsub,
      [](double a, double b) { return a - b; });
  binary(
      m, "Mul", [](float a, float b) { return a * b; }, wmul,
      [](double a, double b) { return a * b; });
  binary(
      m, "Div", [](float a, float b) { return a / b; }, idiv,
      [](double a, double b) { return a / b; });
  m["Mod"] = [](const Node& n, const Ins& in, Outs& out) {
    bool c_fmod = n.attr_int("fmod") != 0;
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    if (a.holds_doubles())
      broadcast2(a.doubles(), a.shape(), b.doubles(), b.shape(), out[0].doubles(), out[0].shape(),
                 [&](double x, double y) { return c_fmod ? std::fmod(x, y) : fmod_py(x, y); });
    else if (a.holds_floats())
      broadcast2(a.floats(), a.shape(), b.floats(), b.shape(), out[0].floats(), out[0].shape(),
                 [&](float x, float y) {
                   return static_cast<float>(c_fmod ? std::fmod(x, y) : fmod_py(x, y));
                 });
    else
      broadcast2(a.ints(), a.shape(), b.ints(), b.shape(), out[0].ints(), out[0].shape(),
                 [&](int64_t x, int64_t y) { return imod(x, y, c_fmod); });
  };
  m["Pow"] = [](const Node&, const Ins& in, Outs& out) {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const Shape& so = out[0].shape();
    if (a.holds_doubles() || b.holds_doubles()) {
      // fp64 base or exponent: every operand read exactly through double.
      for_each_broadcast<2>(
          so, {&a.shape(), &b.shape()}, [&](int64_t k, const std::array<int64_t, 2>& off) {
            const double r = std::pow(a.at(off[0]), b.at(off[1]));
            if (out[0].holds_doubles())
              out[0].doubles()[k] = r;
            else if (out[0].holds_floats())
              out[0].floats()[k] = static_cast<float>(r);
            else
              out[0].ints()[k] = std::isfinite(r) ? static_cast<int64_t>(r) : int64_t{0};
          });
    } else if (a.holds_floats()) {
      auto& o = out[0].floats();
      if (b.holds_floats())
        broadcast2(a.floats(), a.shape(), b.floats(), b.shape(), o, so, [](float x, float y) {
          return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y)));
        });
      else
        broadcast2(a.floats(), a.shape(), b.ints(), b.shape(), o, so, [](float x, int64_t y) {
          return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y)));
        });
    } else {
      auto& o = out[0].ints();
      if (b.holds_floats())
        broadcast2(a.ints(), a.shape(), b.floats(), b.shape(), o, so, [](int64_t x, float y) {
          double r = std::pow(static_cast<double>(x), static_cast<double>(y));
          return std::isfinite(r) ? static_cast<int64_t>(r) : int64_t{0};
        });
      else
        broadcast2(a.ints(), a.shape(), b.ints(), b.shape(), o, so, ipow);
    }
  };
  m["PRelu"] = [](const Node&, const Ins& in, Outs& out) {
    broadcast2(in[0]->floats(), in[0]->shape(), in[1]->floats(), in[1]->shape(), out[0].floats(),
               out[0].shape(), [](float x, float s) { return x < 0 ? x * s : x; });
  };
  variadic(
      m, "Max", fmax_nan<float>, [](int64_t a, int64_t b) { return std::max(a, b); },
      fmax_nan<double>);
  variadic(
      m, "Min", fmin_nan<float>, [](int64_t a, int64_t b) { return std::min(a, b); },
      fmin_nan<double>);
  variadic(
      m, "Sum", [](float a, float b) { return a + b; }, wadd, dadd);
  variadic(
      m, "Mean", [](float a, float b) { return a + b; }, wadd, dadd, true);

  compare(m, "Equal", [](auto a, auto b) { return a == b; });
  compare(m, "Less", [](auto a, auto b) { return a < b; });
  compare(m, "Greater", [](auto a, auto b) { return a > b; });
  compare(m, "LessOrEqual", [](auto a, auto b) { return a <= b; });
  compare(m, "GreaterOrEqual", [](auto a, auto b) { return a >= b; });
  binary(m, "And", nullptr, [](int64_t a, int64_t b) -> int64_t { return a && b; });
  binary(m, "Or", nullptr, [](int64_t a, int64_t b) -> int64_t { return a || b; });
  binary(m, "Xor", nullptr, [](int64_t a, int64_t b) -> int64_t { return (a != 0) != (b != 0); });

  m["Where"] = [](const Node&, const Ins& in, Outs& out) {
    const Tensor& c = *in[0];
    const Tensor& x = *in[1];
    const Tensor& y = *in[2];
    if (x.holds_doubles())
      where(c, x.doubles(), x.shape(), y.doubles(), y.shape(), out[0].doubles(), out[0].shape());
    else if (x.holds_floats())
      where(c, x.floats(), x.shape(), y.floats(), y.shape(), out[0].floats(), out[0].shape());
    else
      where(c, x.ints(), x.shape(), y.ints(), y.shape(), out[0].ints(), out[0].shape());
  };
  m["Cast"] = [](const Node&, const Ins& in, Outs& out) { out[0] = in[0]->cast(out[0].elem()); };
}

}  // namespace trnsim::interp
