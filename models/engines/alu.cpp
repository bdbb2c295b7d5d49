#include "models/engines/alu.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <blis.h>  // BLIS, the serial build

namespace trnsim::models {

using isa::ActFunc;
using isa::AluOp;
using isa::Instruction;
using isa::Opcode;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// ---- Scalar kernels, one instantiation per function so loops vectorise. ----

// max/min propagate NaN (a NaN input must not vanish in a reduction) and order
// -0 below +0 whatever the operand order.
inline float max_nan(float a, float b) {
  return (a > b || (a == b && !std::signbit(a)) || std::isnan(a)) ? a : b;
}
inline float min_nan(float a, float b) {
  return (a < b || (a == b && std::signbit(a)) || std::isnan(a)) ? a : b;
}

template <AluOp op>
inline float alu(float a, float b) {
  if constexpr (op == AluOp::bypass)
    return a;
  else if constexpr (op == AluOp::add)
    return a + b;
  else if constexpr (op == AluOp::sub)
    return a - b;
  else if constexpr (op == AluOp::mul)
    return a * b;
  else if constexpr (op == AluOp::div)
    return a / b;
  else if constexpr (op == AluOp::max)
    return max_nan(a, b);
  else if constexpr (op == AluOp::min)
    return min_nan(a, b);
  else if constexpr (op == AluOp::pow)
    return std::pow(a, b);
  else if constexpr (op == AluOp::eq)
    return a == b ? 1.0f : 0.0f;
  else if constexpr (op == AluOp::ne)
    return a != b ? 1.0f : 0.0f;
  else if constexpr (op == AluOp::lt)
    return a < b ? 1.0f : 0.0f;
  else if constexpr (op == AluOp::le)
    return a <= b ? 1.0f : 0.0f;
  else if constexpr (op == AluOp::gt)
    return a > b ? 1.0f : 0.0f;
  else
    return a >= b ? 1.0f : 0.0f;  // ge
}

// Logistic function without overflow: for x < 0 use e^x/(1+e^x) so tiny results
// keep their (subnormal) value instead of 1/inf.
inline float sigmoid(float x) {
  if (x < 0.0f) {
    const float e = std::exp(x);
    return e / (1.0f + e);
  }
  return 1.0f / (1.0f + std::exp(-x));
}

template <ActFunc f>
inline float act(float x) {
  if constexpr (f == ActFunc::identity)
    return x;
  else if constexpr (f == ActFunc::relu)
    return x < 0.0f ? 0.0f : x;  // NaN passes
  else if constexpr (f == ActFunc::gelu) {
    // 0.5x(1+erf(x/sqrt2)) == 0.5x*erfc(-x/sqrt2); erfc keeps the small negative
    // tail that 1+erf would cancel. x*erfc is inf*0 at -inf: the limit is -0.
    if (x == -kInf) return -0.0f;
    return 0.5f * x * std::erfc(-x * 0.70710678118654752f);
  } else if constexpr (f == ActFunc::gelu_tanh) {
    // 0.5x(1+tanh(u)) == x*sigmoid(2u), u = sqrt(2/pi)(x+0.044715x^3).
    if (x == -kInf) return -0.0f;
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x * sigmoid(2.0f * u);
  } else if constexpr (f == ActFunc::sigmoid)
    return sigmoid(x);
  else if constexpr (f == ActFunc::tanh)
    return std::tanh(x);
  else if constexpr (f == ActFunc::exp)
    return std::exp(x);
  else if constexpr (f == ActFunc::log)
    return std::log(x);
  else if constexpr (f == ActFunc::silu) {
    if (x == -kInf) return -0.0f;  // -inf * 0 limit
    return x * sigmoid(x);
  } else if constexpr (f == ActFunc::sqrt)
    return std::sqrt(x);
  else if constexpr (f == ActFunc::rsqrt)
    return 1.0f / std::sqrt(x);
  else if constexpr (f == ActFunc::reciprocal)
    return 1.0f / x;
  else if constexpr (f == ActFunc::square)
    return x * x;
  else if constexpr (f == ActFunc::abs)
    return std::fabs(x);
  else if constexpr (f == ActFunc::erf)
    return std::erf(x);
  else {
    // softplus = log(1+e^x); for x > 0 factor out e^x so exp cannot overflow.
    static_assert(f == ActFunc::softplus);
    if (x > 0.0f) return x + std::log1p(std::exp(-x));
    return std::log1p(std::exp(x));
  }
}

template <AluOp op>
using AluTag = std::integral_constant<AluOp, op>;
template <ActFunc f>
using ActTag = std::integral_constant<ActFunc, f>;

// Calls fn(AluTag<op>{}) for the runtime op.
template <class Fn>
void dispatch_alu(AluOp op, Fn&& fn) {
  switch (op) {
    case AluOp::bypass:
      return fn(AluTag<AluOp::bypass>{});
    case AluOp::add:
      return fn(AluTag<AluOp::add>{});
    case AluOp::sub:
      return fn(AluTag<AluOp::sub>{});
    case AluOp::mul:
      return fn(AluTag<AluOp::mul>{});
    case AluOp::div:
      return fn(AluTag<AluOp::div>{});
    case AluOp::max:
      return fn(AluTag<AluOp::max>{});
    case AluOp::min:
      return fn(AluTag<AluOp::min>{});
    case AluOp::pow:
      return fn(AluTag<AluOp::pow>{});
    case AluOp::eq:
      return fn(AluTag<AluOp::eq>{});
    case AluOp::ne:
      return fn(AluTag<AluOp::ne>{});
    case AluOp::lt:
      return fn(AluTag<AluOp::lt>{});
    case AluOp::le:
      return fn(AluTag<AluOp::le>{});
    case AluOp::gt:
      return fn(AluTag<AluOp::gt>{});
    case AluOp::ge:
      return fn(AluTag<AluOp::ge>{});
  }
  throw std::logic_error("alu: bad AluOp " + std::to_string(static_cast<int>(op)));
}

template <class Fn>
void dispatch_act(ActFunc f, Fn&& fn) {
  switch (f) {
    case ActFunc::identity:
      return fn(ActTag<ActFunc::identity>{});
    case ActFunc::relu:
      return fn(ActTag<ActFunc::relu>{});
    case ActFunc::gelu:
      return fn(ActTag<ActFunc::gelu>{});
    case ActFunc::gelu_tanh:
      return fn(ActTag<ActFunc::gelu_tanh>{});
    case ActFunc::sigmoid:
      return fn(ActTag<ActFunc::sigmoid>{});
    case ActFunc::tanh:
      return fn(ActTag<ActFunc::tanh>{});
    case ActFunc::exp:
      return fn(ActTag<ActFunc::exp>{});
    case ActFunc::log:
      return fn(ActTag<ActFunc::log>{});
    case ActFunc::silu:
      return fn(ActTag<ActFunc::silu>{});
    case ActFunc::sqrt:
      return fn(ActTag<ActFunc::sqrt>{});
    case ActFunc::rsqrt:
      return fn(ActTag<ActFunc::rsqrt>{});
    case ActFunc::reciprocal:
      return fn(ActTag<ActFunc::reciprocal>{});
    case ActFunc::square:
      return fn(ActTag<ActFunc::square>{});
    case ActFunc::abs:
      return fn(ActTag<ActFunc::abs>{});
    case ActFunc::erf:
      return fn(ActTag<ActFunc::erf>{});
    case ActFunc::softplus:
      return fn(ActTag<ActFunc::softplus>{});
  }
  throw std::logic_error("alu: bad ActFunc " + std::to_string(static_cast<int>(f)));
}

// ---- Shape guards: validation runs first, so a failure here is a bug. ----

[[noreturn]] void bug(const Instruction& in, const std::string& what) {
  throw std::logic_error("alu: " + std::string(isa::opcode_name(in.op)) + ": " + what);
}

std::string shape(uint64_t p, uint64_t c) {
  return "[" + std::to_string(p) + "," + std::to_string(c) + "]";
}

void need_shape(const Instruction& in, const Tile& t, uint64_t p, uint64_t c, const char* name) {
  if (t.parts != p || t.cols != c || t.v.size() != p * c)
    bug(in, std::string(name) + " tile is " + shape(t.parts, t.cols) + " (" +
                std::to_string(t.v.size()) + " values), expected " + shape(p, c));
}

// Same element count as dst: element i pairs with element i (docs/isa.md).
void need_elems(const Instruction& in, const Tile& t, const Tile& dst, const char* name) {
  if (t.v.size() != dst.v.size() || size_t(t.parts) * t.cols != t.v.size())
    bug(in, std::string(name) + " tile is " + shape(t.parts, t.cols) + ", dst is " +
                shape(dst.parts, dst.cols));
}

// Per-partition value of a scalar operand (immediate or [P,1] tile).
struct Scalar {
  const Tile* tile = nullptr;
  float imm = 0.0f;
  float operator()(uint32_t p) const { return tile ? tile->v[p] : imm; }
};
Scalar scalar(const Instruction& in, const isa::ScalarOperand& s, const Tile& t, uint32_t parts,
              const char* name) {
  if (!s.is_ap) return {nullptr, s.imm};
  need_shape(in, t, parts, 1, name);
  return {&t, 0.0f};
}

// The accumulate op (add unless the program names another). bypass would keep
// only the first element; validation rejects it, so treat it as the default.
AluOp accum_op_of(const Instruction& in) {
  return in.accum_op == AluOp::bypass ? AluOp::add : in.accum_op;
}

// out.accum[p] = reduction of dst row p with op.
void accumulate_rows(const Instruction& in, ExecResult& out) {
  const Tile& d = out.dst;
  out.accum.resize(d.parts, 1);
  dispatch_alu(accum_op_of(in), [&]<AluOp op>(AluTag<op>) {
    for (uint32_t p = 0; p < d.parts; ++p) {
      const float* row = d.v.data() + size_t(p) * d.cols;
      float acc = d.cols ? row[0] : 0.0f;
      for (uint64_t c = 1; c < d.cols; ++c) acc = alu<op>(acc, row[c]);
      out.accum.v[p] = acc;
    }
  });
}

// Identity of a reduction op; -0 for add keeps the sum of {-0} at -0.
float reduce_identity(const Instruction& in, AluOp op) {
  switch (op) {
    case AluOp::add:
      return -0.0f;
    case AluOp::max:
      return -kInf;
    case AluOp::min:
      return kInf;
    default:
      bug(in, "reduce op must be add, max or min, got " + std::string(isa::alu_op_name(op)));
  }
}

// Free-axis dims right-aligned to 4 (as isa::for_each_free does), sizes only.
std::array<uint32_t, isa::kMaxDims> padded_sizes(const isa::AccessPattern& ap) {
  std::array<uint32_t, isa::kMaxDims> s{1, 1, 1, 1};
  const int pad = isa::kMaxDims - ap.ndims;
  for (int i = 0; i < ap.ndims; ++i) s[pad + i] = ap.dims[i].size;
  return s;
}

// Calls fn(p, flat_index, v) with v = base + pstep*p + sum(steps[k]*i_k) over the
// dst iteration, in double so the integer part stays exact.
template <class Fn>
void for_each_affine(const Instruction& in, uint32_t parts, double base, Fn&& fn) {
  const auto size = padded_sizes(in.dst);
  std::array<int64_t, isa::kMaxDims> step{0, 0, 0, 0};
  const int pad = isa::kMaxDims - in.dst.ndims;
  for (int i = 0; i < in.dst.ndims; ++i) step[pad + i] = in.steps[i];
  size_t idx = 0;
  for (uint32_t p = 0; p < parts; ++p) {
    const int64_t vp = int64_t(in.pstep) * p;
    for (uint32_t a = 0; a < size[0]; ++a)
      for (uint32_t b = 0; b < size[1]; ++b)
        for (uint32_t c = 0; c < size[2]; ++c) {
          const int64_t vabc = vp + a * step[0] + b * step[1] + c * step[2];
          for (uint32_t d = 0; d < size[3]; ++d)
            fn(idx++, base + static_cast<double>(vabc + d * step[3]));
        }
  }
}

bool compare_zero(const Instruction& in, AluOp op, double v) {
  switch (op) {
    case AluOp::eq:
      return v == 0.0;
    case AluOp::ne:
      return v != 0.0;
    case AluOp::lt:
      return v < 0.0;
    case AluOp::le:
      return v <= 0.0;
    case AluOp::gt:
      return v > 0.0;
    case AluOp::ge:
      return v >= 0.0;
    default:
      bug(in, "cmp must be a comparison, got " + std::string(isa::alu_op_name(op)));
  }
}

// ---- Opcodes ----

void exec_matmul(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Tile& st = a.src[0];  // [K, M], double_row: [K/2, 2M]
  const Tile& mv = a.src[1];  // [K, N], double_row: [K/2, 2N]
  const uint32_t k_dim = st.parts;
  const uint64_t m_dim = o.parts, n_dim = o.cols, halves = in.double_row ? 2 : 1;
  need_shape(in, st, k_dim, m_dim * halves, "stationary");
  need_shape(in, mv, k_dim, n_dim * halves, "moving");
  // out[M,N] = st[K,M]^T @ mv[K,N]: an fp32 sgemm by BLIS (serial, so the summation
  // order never depends on threads). st^T is read in place: row stride 1, column
  // stride = st's row length. Double-row: the second K half (columns M.. of st, N..
  // of mv) is added by a second sgemm.
  if (m_dim == 0 || n_dim == 0 || k_dim == 0) return;  // o is already zero
  float one = 1.0f, zero = 0.0f;
  for (uint64_t h = 0; h < halves; ++h)
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, dim_t(m_dim), dim_t(n_dim), dim_t(k_dim), &one,
              const_cast<float*>(st.v.data() + h * m_dim), 1, inc_t(m_dim * halves),
              const_cast<float*>(mv.v.data() + h * n_dim), inc_t(n_dim * halves), 1,
              h ? &one : &zero, o.v.data(), inc_t(n_dim), 1);
}

void exec_transpose(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Tile& s = a.src[0];  // [P, F]; dst [F, P]
  need_shape(in, s, o.cols, o.parts, "src");
  for (uint32_t p = 0; p < s.parts; ++p)
    for (uint64_t f = 0; f < s.cols; ++f) o.v[f * s.parts + p] = s.v[size_t(p) * s.cols + f];
}

void exec_activation(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Tile& s = a.src[0];
  need_elems(in, s, o, "src");
  const Scalar scale = scalar(in, in.arg0, a.arg0, o.parts, "scale");
  const Scalar bias = scalar(in, in.arg1, a.arg1, o.parts, "bias");
  dispatch_act(in.func, [&]<ActFunc f>(ActTag<f>) {
    for (uint32_t p = 0; p < o.parts; ++p) {
      const float sc = scale(p), bi = bias(p);
      const float* x = s.v.data() + size_t(p) * o.cols;
      float* y = o.v.data() + size_t(p) * o.cols;
      for (uint64_t c = 0; c < o.cols; ++c) y[c] = act<f>(x[c] * sc + bi);
    }
  });
}

void exec_tensor_tensor(const Instruction& in, const ExecArgs& a, Tile& o) {
  need_elems(in, a.src[0], o, "in0");
  need_elems(in, a.src[1], o, "in1");
  const float* x = a.src[0].v.data();
  const float* y = a.src[1].v.data();
  float* z = o.v.data();
  const size_t n = o.v.size();
  dispatch_alu(in.op0, [&]<AluOp op>(AluTag<op>) {
    for (size_t i = 0; i < n; ++i) z[i] = alu<op>(x[i], y[i]);
  });
}

// dst row = row op arg (or arg op row when reversed), in place when row == dst.
void scalar_pass(AluOp op, bool reverse, const float* in_rows, float* out_rows, uint32_t parts,
                 uint64_t cols, const Scalar& arg) {
  dispatch_alu(op, [&]<AluOp o>(AluTag<o>) {
    for (uint32_t p = 0; p < parts; ++p) {
      const float s = arg(p);
      const float* x = in_rows + size_t(p) * cols;
      float* y = out_rows + size_t(p) * cols;
      if (reverse)
        for (uint64_t c = 0; c < cols; ++c) y[c] = alu<o>(s, x[c]);
      else
        for (uint64_t c = 0; c < cols; ++c) y[c] = alu<o>(x[c], s);
    }
  });
}

void exec_tensor_scalar(const Instruction& in, const ExecArgs& a, Tile& o) {
  need_elems(in, a.src[0], o, "src");
  const Scalar arg0 = scalar(in, in.arg0, a.arg0, o.parts, "arg0");
  scalar_pass(in.op0, in.reverse0, a.src[0].v.data(), o.v.data(), o.parts, o.cols, arg0);
  if (in.op1 != AluOp::bypass) {
    const Scalar arg1 = scalar(in, in.arg1, a.arg1, o.parts, "arg1");
    scalar_pass(in.op1, in.reverse1, o.v.data(), o.v.data(), o.parts, o.cols, arg1);
  }
}

void exec_tensor_reduce(const Instruction& in, const ExecArgs& a, Tile& o) {
  const isa::AccessPattern& sp = in.src[0];
  const Tile& s = a.src[0];
  need_shape(in, s, o.parts, sp.free_elems(), "src");
  if (in.axes >> sp.ndims) bug(in, "axes name a dim beyond the src's " + std::to_string(sp.ndims));
  // Output strides: kept dims row-major in their original order, reduced dims 0.
  const auto size = padded_sizes(sp);
  const int pad = isa::kMaxDims - sp.ndims;
  std::array<uint64_t, isa::kMaxDims> ostride{0, 0, 0, 0};
  uint64_t kept = 1;
  for (int i = isa::kMaxDims - 1; i >= pad; --i) {
    if (in.axes & (1u << (i - pad))) continue;
    ostride[i] = kept;
    kept *= size[i];
  }
  if (kept != o.cols)
    bug(in, "kept dims hold " + std::to_string(kept) + " elements, dst " + std::to_string(o.cols));
  const float init = reduce_identity(in, in.op0);
  dispatch_alu(in.op0, [&]<AluOp op>(AluTag<op>) {
    for (uint32_t p = 0; p < o.parts; ++p) {
      const float* x = s.v.data() + size_t(p) * s.cols;
      float* y = o.v.data() + size_t(p) * o.cols;
      for (uint64_t c = 0; c < o.cols; ++c) y[c] = init;
      for (uint32_t i0 = 0; i0 < size[0]; ++i0)
        for (uint32_t i1 = 0; i1 < size[1]; ++i1)
          for (uint32_t i2 = 0; i2 < size[2]; ++i2) {
            float* yb = y + i0 * ostride[0] + i1 * ostride[1] + i2 * ostride[2];
            for (uint32_t i3 = 0; i3 < size[3]; ++i3, ++x)
              yb[i3 * ostride[3]] = alu<op>(yb[i3 * ostride[3]], *x);
          }
    }
  });
}

void exec_partition_reduce(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Tile& s = a.src[0];
  need_shape(in, s, s.parts, o.cols, "src");
  const float init = reduce_identity(in, in.op0);
  float* r = o.v.data();  // reduce into row 0, then copy it to the others
  for (uint64_t c = 0; c < o.cols; ++c) r[c] = init;
  dispatch_alu(in.op0, [&]<AluOp op>(AluTag<op>) {
    for (uint32_t p = 0; p < s.parts; ++p) {
      const float* x = s.v.data() + size_t(p) * s.cols;
      for (uint64_t c = 0; c < o.cols; ++c) r[c] = alu<op>(r[c], x[c]);
    }
  });
  for (uint32_t p = 1; p < o.parts; ++p) std::copy(r, r + o.cols, o.v.data() + size_t(p) * o.cols);
}

void exec_partition_broadcast(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Tile& s = a.src[0];
  need_shape(in, s, 1, o.cols, "src");
  for (uint32_t p = 0; p < o.parts; ++p)
    std::copy(s.v.begin(), s.v.end(), o.v.begin() + size_t(p) * o.cols);
}

void exec_memset(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Scalar v = scalar(in, in.arg0, a.arg0, o.parts, "value");
  for (uint32_t p = 0; p < o.parts; ++p) {
    const float x = v(p);
    std::fill_n(o.v.data() + size_t(p) * o.cols, o.cols, x);
  }
}

void exec_iota(const Instruction& in, const ExecArgs& a, Tile& o) {
  if (in.arg0.is_ap) bug(in, "base must be an immediate");
  for_each_affine(in, o.parts, in.arg0.imm,
                  [&](size_t i, double v) { o.v[i] = static_cast<float>(v); });
}

void exec_affine_select(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Tile& s = a.src[0];
  need_elems(in, s, o, "src");
  if (in.arg0.is_ap) bug(in, "base must be an immediate");
  compare_zero(in, in.op0, 0.0);  // reject a non-comparison before the loop
  for_each_affine(in, o.parts, in.arg0.imm, [&](size_t i, double v) {
    o.v[i] = compare_zero(in, in.op0, v) ? s.v[i] : in.fill;
  });
}

void exec_select(const Instruction& in, const ExecArgs& a, Tile& o) {
  need_elems(in, a.src[0], o, "pred");
  need_elems(in, a.src[1], o, "on_true");
  need_elems(in, a.src[2], o, "on_false");
  const float* pr = a.src[0].v.data();
  const float* t = a.src[1].v.data();
  const float* f = a.src[2].v.data();
  for (size_t i = 0; i < o.v.size(); ++i) o.v[i] = pr[i] != 0.0f ? t[i] : f[i];
}

void exec_bn_stats(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Tile& s = a.src[0];
  need_shape(in, s, o.parts, s.cols, "src");
  if (o.cols != 3) bug(in, "dst must hold 3 values per partition, has " + std::to_string(o.cols));
  // Two passes in double: the mean, then squared deviations from it. Stable
  // (no E[x^2]-E[x]^2 cancellation) and exact enough for fp32 results.
  for (uint32_t p = 0; p < o.parts; ++p) {
    const float* x = s.v.data() + size_t(p) * s.cols;
    double sum = 0.0;
    for (uint64_t c = 0; c < s.cols; ++c) sum += x[c];
    const double mean = s.cols ? sum / static_cast<double>(s.cols) : 0.0;
    double m2 = 0.0;
    for (uint64_t c = 0; c < s.cols; ++c) {
      const double d = x[c] - mean;
      m2 += d * d;
    }
    float* y = o.v.data() + size_t(p) * 3;
    y[0] = static_cast<float>(s.cols);
    y[1] = static_cast<float>(mean);
    y[2] = static_cast<float>(m2);
  }
}

void exec_bn_aggr(const Instruction& in, const ExecArgs& a, Tile& o) {
  const Tile& s = a.src[0];
  need_shape(in, s, o.parts, s.cols, "src");
  if (s.cols == 0 || s.cols % 3 != 0)
    bug(in, "src must hold (count, mean, M2) triples, has " + std::to_string(s.cols) + " values");
  if (o.cols != 2) bug(in, "dst must hold 2 values per partition, has " + std::to_string(o.cols));
  for (uint32_t p = 0; p < o.parts; ++p) {
    const float* x = s.v.data() + size_t(p) * s.cols;
    // Chan et al.'s pairwise update, one triple at a time; empty triples skip.
    double n = 0.0, mean = 0.0, m2 = 0.0;
    for (uint64_t t = 0; t < s.cols; t += 3) {
      const double nb = x[t], mb = x[t + 1], m2b = x[t + 2];
      if (nb == 0.0) continue;
      const double nt = n + nb, delta = mb - mean;
      mean += delta * nb / nt;
      m2 += m2b + delta * delta * n * nb / nt;
      n = nt;
    }
    float* y = o.v.data() + size_t(p) * 2;
    // No samples at all: 0/0, reported as NaN rather than a made-up zero.
    y[0] = n > 0.0 ? static_cast<float>(mean) : std::numeric_limits<float>::quiet_NaN();
    y[1] = n > 0.0 ? static_cast<float>(m2 / n) : std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace

float eval_act(ActFunc f, float x) {
  float y = 0.0f;
  dispatch_act(f, [&]<ActFunc g>(ActTag<g>) { y = act<g>(x); });
  return y;
}

float eval_alu(AluOp op, float a, float b) {
  float y = 0.0f;
  dispatch_alu(op, [&]<AluOp o>(AluTag<o>) { y = alu<o>(a, b); });
  return y;
}

void execute(const Instruction& in, const ExecArgs& args, ExecResult& out) {
  if (in.dst.ndims > isa::kMaxDims || in.src[0].ndims > isa::kMaxDims)
    bug(in, "more than " + std::to_string(isa::kMaxDims) + " free dims");
  out.dst.resize(in.dst.partition_count, in.dst.free_elems());
  out.accum = Tile{};
  Tile& o = out.dst;
  switch (in.op) {
    case Opcode::matmul:
      exec_matmul(in, args, o);
      break;
    case Opcode::transpose:
      exec_transpose(in, args, o);
      break;
    case Opcode::activation:
      exec_activation(in, args, o);
      break;
    case Opcode::tensor_tensor:
      exec_tensor_tensor(in, args, o);
      break;
    case Opcode::tensor_scalar:
      exec_tensor_scalar(in, args, o);
      break;
    case Opcode::tensor_reduce:
      exec_tensor_reduce(in, args, o);
      break;
    case Opcode::partition_reduce:
      exec_partition_reduce(in, args, o);
      break;
    case Opcode::partition_broadcast:
      exec_partition_broadcast(in, args, o);
      break;
    case Opcode::tensor_copy:
      need_elems(in, args.src[0], o, "src");
      o.v = args.src[0].v;
      break;
    case Opcode::memset:
      exec_memset(in, args, o);
      break;
    case Opcode::iota:
      exec_iota(in, args, o);
      break;
    case Opcode::affine_select:
      exec_affine_select(in, args, o);
      break;
    case Opcode::select:
      exec_select(in, args, o);
      break;
    case Opcode::bn_stats:
      exec_bn_stats(in, args, o);
      break;
    case Opcode::bn_aggr:
      exec_bn_aggr(in, args, o);
      break;
    default:
      bug(in, "not a compute opcode");
  }
  if (in.has_accum) {
    if (in.op != Opcode::activation && in.op != Opcode::tensor_scalar)
      bug(in, "accum is only defined for activation and tensor_scalar");
    accumulate_rows(in, out);
  }
}

}  // namespace trnsim::models
