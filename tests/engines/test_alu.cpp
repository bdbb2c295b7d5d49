// Functional semantics of the compute opcodes (models/engines/alu.cpp) against
// hand-computed values and naive reference loops.
#include "models/engines/alu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::models {
namespace {

using isa::AccessPattern;
using isa::ActFunc;
using isa::AluOp;
using isa::Instruction;
using isa::Opcode;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// An sbuf fp32 pattern of `parts` partitions with contiguous free dims `sizes`.
AccessPattern ap(uint32_t parts, std::initializer_list<uint32_t> sizes) {
  AccessPattern a;
  a.partition_count = parts;
  a.ndims = static_cast<uint8_t>(sizes.size());
  int64_t stride = 1;
  int i = a.ndims - 1;
  for (auto it = std::rbegin(sizes); it != std::rend(sizes); ++it, --i) {
    a.dims[i] = {stride, *it};
    stride *= *it;
  }
  return a;
}

Tile tile(uint32_t parts, uint64_t cols, std::vector<float> v) {
  Tile t;
  t.parts = parts;
  t.cols = cols;
  t.v = std::move(v);
  EXPECT_EQ(t.v.size(), size_t(parts) * cols) << "test tile literal has the wrong size";
  return t;
}

Tile random_tile(uint32_t parts, uint64_t cols, std::mt19937& rng, float lo = -2, float hi = 2) {
  std::uniform_real_distribution<float> d(lo, hi);
  Tile t;
  t.resize(parts, cols);
  for (auto& x : t.v) x = d(rng);
  return t;
}

Instruction inst(Opcode op, AccessPattern dst, std::initializer_list<AccessPattern> srcs = {}) {
  Instruction in;
  in.op = op;
  in.dst = dst;
  for (const auto& s : srcs) in.src[in.nsrc++] = s;
  return in;
}

ExecResult run(const Instruction& in, const ExecArgs& args) {
  ExecResult r;
  execute(in, args, r);
  EXPECT_EQ(r.dst.parts, in.dst.partition_count);
  EXPECT_EQ(r.dst.cols, in.dst.free_elems());
  EXPECT_EQ(r.dst.v.size(), size_t(r.dst.parts) * r.dst.cols);
  return r;
}

void expect_values(const Tile& t, const std::vector<float>& expect) {
  ASSERT_EQ(t.v.size(), expect.size());
  for (size_t i = 0; i < expect.size(); ++i) {
    if (std::isnan(expect[i]))
      EXPECT_TRUE(std::isnan(t.v[i])) << "element " << i;
    else
      EXPECT_EQ(t.v[i], expect[i]) << "element " << i;
  }
}

// ---------------------------------------------------------------- eval_alu

TEST(AluEval, EveryOp) {
  EXPECT_EQ(eval_alu(AluOp::bypass, 3.0f, 5.0f), 3.0f);
  EXPECT_EQ(eval_alu(AluOp::add, 3.0f, 5.0f), 8.0f);
  EXPECT_EQ(eval_alu(AluOp::sub, 3.0f, 5.0f), -2.0f);
  EXPECT_EQ(eval_alu(AluOp::mul, 3.0f, 5.0f), 15.0f);
  EXPECT_EQ(eval_alu(AluOp::div, 3.0f, 4.0f), 0.75f);
  EXPECT_EQ(eval_alu(AluOp::max, 3.0f, 5.0f), 5.0f);
  EXPECT_EQ(eval_alu(AluOp::min, 3.0f, 5.0f), 3.0f);
  EXPECT_EQ(eval_alu(AluOp::pow, 2.0f, 10.0f), 1024.0f);
  EXPECT_EQ(eval_alu(AluOp::pow, 9.0f, 0.5f), 3.0f);
  // Comparisons give 1/0; each at a < b, a == b, a > b.
  const struct {
    AluOp op;
    float lt, eq, gt;
  } cmp[] = {{AluOp::eq, 0, 1, 0}, {AluOp::ne, 1, 0, 1}, {AluOp::lt, 1, 0, 0},
             {AluOp::le, 1, 1, 0}, {AluOp::gt, 0, 0, 1}, {AluOp::ge, 0, 1, 1}};
  for (const auto& c : cmp) {
    SCOPED_TRACE(std::string(isa::alu_op_name(c.op)));
    EXPECT_EQ(eval_alu(c.op, 1.0f, 2.0f), c.lt);
    EXPECT_EQ(eval_alu(c.op, 2.0f, 2.0f), c.eq);
    EXPECT_EQ(eval_alu(c.op, 3.0f, 2.0f), c.gt);
  }
}

TEST(AluEval, IeeeSpecials) {
  EXPECT_EQ(eval_alu(AluOp::div, 1.0f, 0.0f), kInf);
  EXPECT_EQ(eval_alu(AluOp::div, 1.0f, -0.0f), -kInf);
  EXPECT_TRUE(std::isnan(eval_alu(AluOp::div, 0.0f, 0.0f)));
  EXPECT_TRUE(std::isnan(eval_alu(AluOp::pow, -8.0f, 1.0f / 3.0f)));  // powf: negative base
  // max/min propagate NaN from either side, so NaNs survive reductions.
  EXPECT_TRUE(std::isnan(eval_alu(AluOp::max, kNaN, 1.0f)));
  EXPECT_TRUE(std::isnan(eval_alu(AluOp::max, 1.0f, kNaN)));
  EXPECT_TRUE(std::isnan(eval_alu(AluOp::min, kNaN, 1.0f)));
  EXPECT_TRUE(std::isnan(eval_alu(AluOp::min, 1.0f, kNaN)));
  // Signed zeros order -0 < +0 in either operand order.
  EXPECT_FALSE(std::signbit(eval_alu(AluOp::max, -0.0f, 0.0f)));
  EXPECT_FALSE(std::signbit(eval_alu(AluOp::max, 0.0f, -0.0f)));
  EXPECT_TRUE(std::signbit(eval_alu(AluOp::min, -0.0f, 0.0f)));
  EXPECT_TRUE(std::signbit(eval_alu(AluOp::min, 0.0f, -0.0f)));
  // Comparisons with NaN: only ne holds.
  EXPECT_EQ(eval_alu(AluOp::eq, kNaN, kNaN), 0.0f);
  EXPECT_EQ(eval_alu(AluOp::ne, kNaN, kNaN), 1.0f);
  EXPECT_EQ(eval_alu(AluOp::ge, kNaN, 0.0f), 0.0f);
  EXPECT_EQ(eval_alu(AluOp::lt, kNaN, 0.0f), 0.0f);
  EXPECT_EQ(eval_alu(AluOp::eq, -0.0f, 0.0f), 1.0f);
}

// ---------------------------------------------------------------- eval_act

double ref_sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

// Double-precision reference of every function, indexed by ActFunc.
double ref_act(ActFunc f, double x) {
  switch (f) {
    case ActFunc::identity:
      return x;
    case ActFunc::relu:
      return x > 0 ? x : 0;
    case ActFunc::gelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case ActFunc::gelu_tanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case ActFunc::sigmoid:
      return ref_sigmoid(x);
    case ActFunc::tanh:
      return std::tanh(x);
    case ActFunc::exp:
      return std::exp(x);
    case ActFunc::log:
      return std::log(x);
    case ActFunc::silu:
      return x * ref_sigmoid(x);
    case ActFunc::sqrt:
      return std::sqrt(x);
    case ActFunc::rsqrt:
      return 1 / std::sqrt(x);
    case ActFunc::reciprocal:
      return 1 / x;
    case ActFunc::square:
      return x * x;
    case ActFunc::abs:
      return std::fabs(x);
    case ActFunc::erf:
      return std::erf(x);
    case ActFunc::softplus:
      return std::log1p(std::exp(x));
  }
  return std::nan("");
}

TEST(AluAct, EveryFunctionMatchesReference) {
  const std::vector<float> anywhere{-6.0f, -3.0f, -1.0f, -0.5f, -0.1f, 0.0f,
                                    0.1f,  0.5f,  1.0f,  2.0f,  3.0f,  6.0f};
  const std::vector<float> positive{0.01f, 0.1f, 0.5f, 1.0f, 2.0f, 10.0f, 1000.0f};
  for (int i = 0; i < isa::kNumActFuncs; ++i) {
    const auto f = static_cast<ActFunc>(i);
    SCOPED_TRACE(std::string(isa::act_func_name(f)));
    const bool pos_only = f == ActFunc::log || f == ActFunc::sqrt || f == ActFunc::rsqrt;
    int n = 0;
    for (float x : pos_only ? positive : anywhere) {
      if (f == ActFunc::reciprocal && x == 0.0f) continue;
      const double ref = ref_act(f, x);
      // A few fp32 ulps relative, plus an absolute floor for results near 0.
      EXPECT_NEAR(eval_act(f, x), ref, 4e-7 * std::fabs(ref) + 1e-7) << "x=" << x;
      ++n;
    }
    EXPECT_GE(n, 7);
  }
}

TEST(AluAct, HandValues) {
  EXPECT_EQ(eval_act(ActFunc::relu, -2.0f), 0.0f);
  EXPECT_EQ(eval_act(ActFunc::relu, 2.5f), 2.5f);
  EXPECT_EQ(eval_act(ActFunc::square, -3.0f), 9.0f);
  EXPECT_EQ(eval_act(ActFunc::rsqrt, 4.0f), 0.5f);
  EXPECT_EQ(eval_act(ActFunc::reciprocal, 4.0f), 0.25f);
  EXPECT_EQ(eval_act(ActFunc::sigmoid, 0.0f), 0.5f);
  EXPECT_EQ(eval_act(ActFunc::gelu, 0.0f), 0.0f);
  // softplus(0) = log 2; silu(0) = 0 * 0.5.
  EXPECT_FLOAT_EQ(eval_act(ActFunc::softplus, 0.0f), std::log(2.0f));
  EXPECT_EQ(eval_act(ActFunc::silu, 0.0f), 0.0f);
  // gelu(1) = 0.5*(1+erf(1/sqrt2)) = 0.8413447; gelu_tanh(1) = 0.8411920.
  EXPECT_NEAR(eval_act(ActFunc::gelu, 1.0f), 0.8413447, 1e-6);
  EXPECT_NEAR(eval_act(ActFunc::gelu_tanh, 1.0f), 0.8411920, 1e-6);
}

TEST(AluAct, SpecialValuesAndTails) {
  EXPECT_TRUE(std::isnan(eval_act(ActFunc::log, -1.0f)));
  EXPECT_EQ(eval_act(ActFunc::log, 0.0f), -kInf);
  EXPECT_TRUE(std::isnan(eval_act(ActFunc::sqrt, -1.0f)));
  EXPECT_TRUE(std::isnan(eval_act(ActFunc::rsqrt, -1.0f)));
  EXPECT_EQ(eval_act(ActFunc::rsqrt, 0.0f), kInf);
  EXPECT_EQ(eval_act(ActFunc::reciprocal, -0.0f), -kInf);
  EXPECT_EQ(eval_act(ActFunc::exp, 100.0f), kInf);  // e^100 > FLT_MAX
  // softplus is stable at both ends: x + log1p(e^-x) for large x, e^x for very negative.
  EXPECT_EQ(eval_act(ActFunc::softplus, 100.0f), 100.0f);
  EXPECT_EQ(eval_act(ActFunc::softplus, 1000.0f), 1000.0f);
  EXPECT_NEAR(eval_act(ActFunc::softplus, -50.0f), std::exp(-50.0), 1e-28);
  EXPECT_EQ(eval_act(ActFunc::softplus, kInf), kInf);
  EXPECT_EQ(eval_act(ActFunc::softplus, -kInf), 0.0f);
  // sigmoid(-100) = e^-100 / (1 + e^-100) ~ 3.72e-44: a subnormal, not 0.
  EXPECT_GT(eval_act(ActFunc::sigmoid, -100.0f), 0.0f);
  EXPECT_EQ(eval_act(ActFunc::sigmoid, kInf), 1.0f);
  EXPECT_EQ(eval_act(ActFunc::sigmoid, -kInf), 0.0f);
  // Limits at infinities, not inf*0 = NaN.
  for (ActFunc f : {ActFunc::gelu, ActFunc::gelu_tanh, ActFunc::silu}) {
    SCOPED_TRACE(std::string(isa::act_func_name(f)));
    EXPECT_EQ(eval_act(f, kInf), kInf);
    EXPECT_EQ(eval_act(f, -kInf), 0.0f);
    EXPECT_TRUE(std::isnan(eval_act(f, kNaN)));
  }
  // gelu's negative tail keeps its small value: gelu(-10) = -10*Phi(-10) ~ -7.62e-23.
  EXPECT_NEAR(eval_act(ActFunc::gelu, -10.0f), -7.6198530e-23, 1e-28);
  EXPECT_TRUE(std::isnan(eval_act(ActFunc::relu, kNaN)));
  EXPECT_TRUE(std::isnan(eval_act(ActFunc::tanh, kNaN)));
}

// ---------------------------------------------------------------- tensor engine

TEST(AluMatmul, HandComputed) {
  // stationary [K=2, M=2] = [[1,2],[3,4]], moving [K=2, N=3] = [[1,0,2],[0,1,3]]
  // out[m][n] = sum_k st[k][m]*mv[k][n]:
  //   m=0: [1*1+3*0, 1*0+3*1, 1*2+3*3] = [1, 3, 11]
  //   m=1: [2*1+4*0, 2*0+4*1, 2*2+4*3] = [2, 4, 16]
  auto in = inst(Opcode::matmul, ap(2, {3}), {ap(2, {2}), ap(2, {3})});
  ExecArgs a;
  a.src[0] = tile(2, 2, {1, 2, 3, 4});
  a.src[1] = tile(2, 3, {1, 0, 2, 0, 1, 3});
  expect_values(run(in, a).dst, {1, 3, 11, 2, 4, 16});
}

TEST(AluMatmul, RandomAgainstNaiveLoop) {
  std::mt19937 rng(42);
  const uint32_t K = 128, M = 37, N = 301;
  auto in = inst(Opcode::matmul, ap(M, {N}), {ap(K, {M}), ap(K, {N})});
  ExecArgs a;
  a.src[0] = random_tile(K, M, rng);
  a.src[1] = random_tile(K, N, rng);
  const Tile out = run(in, a).dst;
  for (uint32_t m = 0; m < M; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      double ref = 0, mag = 0;
      for (uint32_t k = 0; k < K; ++k) {
        const double t = double(a.src[0].at(k, m)) * a.src[1].at(k, n);
        ref += t, mag += std::fabs(t);
      }
      // fp32 accumulation of K terms: error bounded by ~K*eps*sum|terms|.
      ASSERT_NEAR(out.at(m, n), ref, K * 6e-8 * mag) << m << "," << n;
    }
}

TEST(AluTranspose, TwoByThree) {
  // src [P=2, F=3] = [[1,2,3],[4,5,6]] -> dst [3, 2] = [[1,4],[2,5],[3,6]]
  auto in = inst(Opcode::transpose, ap(3, {2}), {ap(2, {3})});
  ExecArgs a;
  a.src[0] = tile(2, 3, {1, 2, 3, 4, 5, 6});
  expect_values(run(in, a).dst, {1, 4, 2, 5, 3, 6});
}

// ---------------------------------------------------------------- scalar engine

TEST(AluActivation, ScaleBiasAndAccum) {
  // y = relu(x*2 - 1); row 0: x=[0,1,2] -> [-1,1,3] -> [0,1,3], sum 4
  //                    row 1: x=[-1,0.5,3] -> [-3,0,5] -> [0,0,5], sum 5
  auto in = inst(Opcode::activation, ap(2, {3}), {ap(2, {3})});
  in.func = ActFunc::relu;
  in.arg0.imm = 2.0f;
  in.arg1.imm = -1.0f;
  in.has_accum = true;
  in.accum = ap(2, {1});
  ExecArgs a;
  a.src[0] = tile(2, 3, {0, 1, 2, -1, 0.5f, 3});
  const auto r = run(in, a);
  expect_values(r.dst, {0, 1, 3, 0, 0, 5});
  ASSERT_EQ(r.accum.parts, 2u);
  ASSERT_EQ(r.accum.cols, 1u);
  expect_values(r.accum, {4, 5});
}

TEST(AluActivation, PerPartitionScaleAndBias) {
  // y = exp(x*scale[p] + bias[p]); scale = [1, 0], bias = [0, ln 2]:
  // row 0 = exp(x) at x = [0, 1]; row 1 = exp(ln 2) = 2 everywhere.
  auto in = inst(Opcode::activation, ap(2, {2}), {ap(2, {2})});
  in.func = ActFunc::exp;
  in.arg0.is_ap = true;
  in.arg0.ap = ap(2, {1});
  in.arg1.is_ap = true;
  in.arg1.ap = ap(2, {1});
  ExecArgs a;
  a.src[0] = tile(2, 2, {0, 1, 5, 7});
  a.arg0 = tile(2, 1, {1, 0});
  a.arg1 = tile(2, 1, {0, std::log(2.0f)});
  const auto r = run(in, a);
  EXPECT_EQ(r.dst.at(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(r.dst.at(0, 1), std::exp(1.0f));
  EXPECT_FLOAT_EQ(r.dst.at(1, 0), 2.0f);
  EXPECT_FLOAT_EQ(r.dst.at(1, 1), 2.0f);
  EXPECT_TRUE(r.accum.v.empty());  // no accum requested
}

TEST(AluActivation, AccumOpMax) {
  // square then max-reduce: row [-3, 2, 1] -> [9, 4, 1], max 9.
  auto in = inst(Opcode::activation, ap(1, {3}), {ap(1, {3})});
  in.func = ActFunc::square;
  in.arg0.imm = 1.0f;
  in.has_accum = true;
  in.accum_op = AluOp::max;
  ExecArgs a;
  a.src[0] = tile(1, 3, {-3, 2, 1});
  expect_values(run(in, a).accum, {9});
}

// ---------------------------------------------------------------- vector engine

TEST(AluTensorTensor, EveryOp) {
  const std::vector<float> x{1, 2, 3, 4}, y{4, 2, 1, 0.5f};
  const struct {
    AluOp op;
    std::vector<float> expect;
  } cases[] = {
      {AluOp::bypass, {1, 2, 3, 4}}, {AluOp::add, {5, 4, 4, 4.5f}},  {AluOp::sub, {-3, 0, 2, 3.5f}},
      {AluOp::mul, {4, 4, 3, 2}},    {AluOp::div, {0.25f, 1, 3, 8}}, {AluOp::max, {4, 2, 3, 4}},
      {AluOp::min, {1, 2, 1, 0.5f}}, {AluOp::pow, {1, 4, 3, 2}},  // 1^4, 2^2, 3^1, 4^0.5
      {AluOp::eq, {0, 1, 0, 0}},     {AluOp::ne, {1, 0, 1, 1}},      {AluOp::lt, {1, 0, 0, 0}},
      {AluOp::le, {1, 1, 0, 0}},     {AluOp::gt, {0, 0, 1, 1}},      {AluOp::ge, {0, 1, 1, 1}},
  };
  static_assert(std::size(cases) == isa::kNumAluOps);
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(isa::alu_op_name(c.op)));
    auto in = inst(Opcode::tensor_tensor, ap(2, {2}), {ap(2, {2}), ap(2, {2})});
    in.op0 = c.op;
    ExecArgs a;
    a.src[0] = tile(2, 2, x);
    a.src[1] = tile(2, 2, y);
    expect_values(run(in, a).dst, c.expect);
  }
}

TEST(AluTensorScalar, TwoOpsReverseAndAccum) {
  ExecArgs a;
  a.src[0] = tile(2, 3, {1, 2, 3, 4, 5, 6});
  auto base = inst(Opcode::tensor_scalar, ap(2, {3}), {ap(2, {3})});

  // (x - 1) * 10
  auto in = base;
  in.op0 = AluOp::sub, in.arg0.imm = 1;
  in.op1 = AluOp::mul, in.arg1.imm = 10;
  expect_values(run(in, a).dst, {0, 10, 20, 30, 40, 50});

  // reverse0: 12 / x; no op1
  in = base;
  in.op0 = AluOp::div, in.arg0.imm = 12, in.reverse0 = true;
  expect_values(run(in, a).dst, {12, 6, 4, 3, 2.4f, 2});

  // reverse1: 100 - (x * 2)
  in = base;
  in.op0 = AluOp::mul, in.arg0.imm = 2;
  in.op1 = AluOp::sub, in.arg1.imm = 100, in.reverse1 = true;
  expect_values(run(in, a).dst, {98, 96, 94, 92, 90, 88});

  // Per-partition arg0 = [3, 5] with ge: row 0 [1,2,3] >= 3 -> [0,0,1];
  // row 1 [4,5,6] >= 5 -> [0,1,1]; accum (add): [1, 2].
  in = base;
  in.op0 = AluOp::ge, in.arg0.is_ap = true, in.arg0.ap = ap(2, {1});
  in.has_accum = true, in.accum = ap(2, {1});
  a.arg0 = tile(2, 1, {3, 5});
  auto r = run(in, a);
  expect_values(r.dst, {0, 0, 1, 0, 1, 1});
  expect_values(r.accum, {1, 2});

  // accum_op min over x + 0.5: rows [1.5, 2.5, 3.5] and [4.5, 5.5, 6.5] -> [1.5, 4.5]
  in = base;
  in.op0 = AluOp::add, in.arg0.imm = 0.5f;
  in.has_accum = true, in.accum_op = AluOp::min;
  r = run(in, a);
  expect_values(r.accum, {1.5f, 4.5f});

  // Per-partition arg1 on the second op: max(x*1, arg1[p]) with arg1 = [2.5, 10]
  in = base;
  in.op0 = AluOp::mul, in.arg0.imm = 1;
  in.op1 = AluOp::max, in.arg1.is_ap = true, in.arg1.ap = ap(2, {1});
  a.arg1 = tile(2, 1, {2.5f, 10});
  expect_values(run(in, a).dst, {2.5f, 2.5f, 3, 10, 10, 10});
}

TEST(AluTensorReduce, HandComputed) {
  // src [1 partition, dims 2x3] = [[1,2,3],[4,5,6]]
  ExecArgs a;
  a.src[0] = tile(1, 6, {1, 2, 3, 4, 5, 6});
  auto in = inst(Opcode::tensor_reduce, ap(1, {3}), {ap(1, {2, 3})});
  in.op0 = AluOp::add, in.axes = 0b01;  // over dim 0: column sums [5, 7, 9]
  expect_values(run(in, a).dst, {5, 7, 9});
  in.dst = ap(1, {2});
  in.axes = 0b10;  // over dim 1: row sums [6, 15]
  expect_values(run(in, a).dst, {6, 15});
  in.op0 = AluOp::max;  // row maxima [3, 6]
  expect_values(run(in, a).dst, {3, 6});
  in.dst = ap(1, {});
  in.axes = 0b11, in.op0 = AluOp::min;  // everything: 1
  expect_values(run(in, a).dst, {1});
  // NaN is not lost by max.
  a.src[0].v[4] = kNaN;
  in.op0 = AluOp::max;
  expect_values(run(in, a).dst, {kNaN});
}

TEST(AluTensorReduce, AxesCombinationsAgainstReference) {
  std::mt19937 rng(5);
  const uint32_t P = 3, D0 = 2, D1 = 3, D2 = 4, D3 = 5;
  const uint32_t sizes[4] = {D0, D1, D2, D3};
  ExecArgs a;
  a.src[0] = random_tile(P, D0 * D1 * D2 * D3, rng);
  for (uint8_t axes = 0; axes < 16; ++axes)
    for (AluOp op : {AluOp::add, AluOp::max, AluOp::min}) {
      SCOPED_TRACE("axes=" + std::to_string(axes) + " op=" + std::string(isa::alu_op_name(op)));
      // Kept dims, in order, give the dst shape.
      std::vector<uint32_t> kept;
      for (int d = 0; d < 4; ++d)
        if (!(axes & (1 << d))) kept.push_back(sizes[d]);
      AccessPattern dst = ap(P, {});
      dst.ndims = static_cast<uint8_t>(kept.size());
      for (size_t d = 0; d < kept.size(); ++d) dst.dims[d].size = kept[d];
      auto in = inst(Opcode::tensor_reduce, dst, {ap(P, {D0, D1, D2, D3})});
      in.op0 = op, in.axes = axes;
      const Tile out = run(in, a).dst;
      // Reference: visit every src element, fold it into its kept-index slot.
      std::vector<double> ref(size_t(P) * out.cols, op == AluOp::add   ? 0.0
                                                    : op == AluOp::max ? -1e30
                                                                       : 1e30);
      for (uint32_t p = 0; p < P; ++p) {
        size_t i = 0;
        for (uint32_t i0 = 0; i0 < D0; ++i0)
          for (uint32_t i1 = 0; i1 < D1; ++i1)
            for (uint32_t i2 = 0; i2 < D2; ++i2)
              for (uint32_t i3 = 0; i3 < D3; ++i3, ++i) {
                const uint32_t idx[4] = {i0, i1, i2, i3};
                size_t o = 0;
                for (int d = 0; d < 4; ++d)
                  if (!(axes & (1 << d))) o = o * sizes[d] + idx[d];
                double& r = ref[p * out.cols + o];
                const double x = a.src[0].at(p, i);
                r = op == AluOp::add ? r + x : op == AluOp::max ? std::max(r, x) : std::min(r, x);
              }
      }
      for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(out.v[i], ref[i], 1e-4) << i;
    }
}

// ---------------------------------------------------------------- gpsimd

TEST(AluPartition, ReduceAndBroadcast) {
  // src [3, 2] = [[1,5],[4,2],[-1,3]]; add -> [4, 10], max -> [4, 5], min -> [-1, 2]
  ExecArgs a;
  a.src[0] = tile(3, 2, {1, 5, 4, 2, -1, 3});
  auto in = inst(Opcode::partition_reduce, ap(2, {2}), {ap(3, {2})});
  in.op0 = AluOp::add;
  expect_values(run(in, a).dst, {4, 10, 4, 10});
  in.op0 = AluOp::max;
  expect_values(run(in, a).dst, {4, 5, 4, 5});
  in.op0 = AluOp::min;
  expect_values(run(in, a).dst, {-1, 2, -1, 2});

  auto bc = inst(Opcode::partition_broadcast, ap(3, {2}), {ap(1, {2})});
  ExecArgs b;
  b.src[0] = tile(1, 2, {7, 8});
  expect_values(run(bc, b).dst, {7, 8, 7, 8, 7, 8});
}

TEST(AluCopyMemset, Values) {
  auto cp = inst(Opcode::tensor_copy, ap(2, {2}), {ap(2, {2})});
  ExecArgs a;
  a.src[0] = tile(2, 2, {1, -0.0f, kInf, 3});
  const auto r = run(cp, a);
  expect_values(r.dst, {1, 0, kInf, 3});
  EXPECT_TRUE(std::signbit(r.dst.v[1]));

  auto ms = inst(Opcode::memset, ap(2, {3}));
  ms.arg0.imm = -2.5f;
  expect_values(run(ms, {}).dst, {-2.5f, -2.5f, -2.5f, -2.5f, -2.5f, -2.5f});
}

TEST(AluIota, AffineValues) {
  // dst [2 partitions, dims 2x3], base 0.5, pstep 100, steps [10, 1]:
  // v = 0.5 + 100p + 10*i0 + i1 -> p=0: 0.5,1.5,2.5, 10.5,11.5,12.5; p=1: +100.
  auto in = inst(Opcode::iota, ap(2, {2, 3}));
  in.arg0.imm = 0.5f, in.pstep = 100, in.steps = {10, 1, 0, 0};
  expect_values(run(in, {}).dst, {0.5f, 1.5f, 2.5f, 10.5f, 11.5f, 12.5f, 100.5f, 101.5f, 102.5f,
                                  110.5f, 111.5f, 112.5f});
  // Negative steps: v = 5 - p - 2i over [3, 3].
  in = inst(Opcode::iota, ap(3, {3}));
  in.arg0.imm = 5, in.pstep = -1, in.steps = {-2, 0, 0, 0};
  expect_values(run(in, {}).dst, {5, 3, 1, 4, 2, 0, 3, 1, -1});
}

TEST(AluAffineSelect, CausalMask) {
  // Row p may see columns i <= p: keep where v = p - i >= 0, else -inf.
  const uint32_t N = 4;
  auto in = inst(Opcode::affine_select, ap(N, {N}), {ap(N, {N})});
  in.op0 = AluOp::ge, in.arg0.imm = 0, in.pstep = 1, in.steps = {-1, 0, 0, 0}, in.fill = -kInf;
  ExecArgs a;
  a.src[0].resize(N, N);
  for (size_t i = 0; i < a.src[0].v.size(); ++i) a.src[0].v[i] = float(i + 1);
  const Tile out = run(in, a).dst;
  for (uint32_t p = 0; p < N; ++p)
    for (uint32_t i = 0; i < N; ++i)
      EXPECT_EQ(out.at(p, i), i <= p ? float(p * N + i + 1) : -kInf) << p << "," << i;

  // eq with base: keep only the diagonal shifted by one, v = 1 + p - i == 0 (i = p+1).
  in.op0 = AluOp::eq, in.arg0.imm = 1, in.fill = 0;
  const Tile diag = run(in, a).dst;
  for (uint32_t p = 0; p < N; ++p)
    for (uint32_t i = 0; i < N; ++i)
      EXPECT_EQ(diag.at(p, i), i == p + 1 ? float(p * N + i + 1) : 0.0f) << p << "," << i;
}

TEST(AluSelect, PredicateNonZero) {
  // pred [1,0,-2,nan] -> on_true where pred != 0 (NaN != 0 too).
  auto in = inst(Opcode::select, ap(1, {4}), {ap(1, {4}), ap(1, {4}), ap(1, {4})});
  ExecArgs a;
  a.src[0] = tile(1, 4, {1, 0, -2, kNaN});
  a.src[1] = tile(1, 4, {10, 11, 12, 13});
  a.src[2] = tile(1, 4, {20, 21, 22, 23});
  expect_values(run(in, a).dst, {10, 21, 12, 13});
}

// ---------------------------------------------------------------- batch norm

TEST(AluBatchNorm, StatsHandComputed) {
  // [1,2,3,4]: count 4, mean 2.5, M2 = 2.25+0.25+0.25+2.25 = 5
  auto in = inst(Opcode::bn_stats, ap(1, {3}), {ap(1, {4})});
  ExecArgs a;
  a.src[0] = tile(1, 4, {1, 2, 3, 4});
  expect_values(run(in, a).dst, {4, 2.5f, 5});
  // aggr of (4, 2.5, 5) and (2, 10, 2): n = 6, delta = 7.5,
  // mean = 2.5 + 7.5*2/6 = 5, M2 = 5 + 2 + 56.25*4*2/6 = 82, var = 82/6.
  auto ag = inst(Opcode::bn_aggr, ap(1, {2}), {ap(1, {6})});
  ExecArgs b;
  b.src[0] = tile(1, 6, {4, 2.5f, 5, 2, 10, 2});
  const Tile r = run(ag, b).dst;
  EXPECT_FLOAT_EQ(r.v[0], 5.0f);
  EXPECT_FLOAT_EQ(r.v[1], 82.0f / 6.0f);
}

TEST(AluBatchNorm, StatsThenAggrMatchTwoPass) {
  // 4 partitions, each split into k=3 chunks of different sizes and offsets (a
  // large common offset exercises cancellation). bn_stats per chunk, then bn_aggr.
  std::mt19937 rng(11);
  const uint32_t P = 4;
  const uint32_t chunk[3] = {64, 100, 17};
  std::vector<std::vector<float>> data(P);
  Tile triples;
  triples.resize(P, 9);
  for (uint32_t p = 0; p < P; ++p)
    for (int c = 0; c < 3; ++c) {
      std::normal_distribution<float> d(1000.0f + 3.0f * c, 1.0f + c);
      auto in = inst(Opcode::bn_stats, ap(P, {3}), {ap(P, {chunk[c]})});
      ExecArgs a;
      a.src[0].resize(P, chunk[c]);
      for (auto& x : a.src[0].v) x = d(rng);
      const Tile st = run(in, a).dst;
      for (uint32_t i = 0; i < chunk[c]; ++i) data[p].push_back(a.src[0].at(p, i));
      for (int j = 0; j < 3; ++j) triples.at(p, 3 * c + j) = st.at(p, j);
    }
  auto ag = inst(Opcode::bn_aggr, ap(P, {2}), {ap(P, {9})});
  ExecArgs a;
  a.src[0] = triples;
  const Tile out = run(ag, a).dst;
  for (uint32_t p = 0; p < P; ++p) {
    double mean = 0, var = 0;
    for (float x : data[p]) mean += x;
    mean /= data[p].size();
    for (float x : data[p]) var += (x - mean) * (x - mean);
    var /= data[p].size();
    EXPECT_NEAR(out.at(p, 0), mean, 1e-4 * std::fabs(mean)) << p;
    EXPECT_NEAR(out.at(p, 1), var, 1e-4 * var) << p;
    EXPECT_EQ(triples.at(p, 0), 64.0f);  // counts are exact
  }
}

// ---------------------------------------------------------------- bug guards

TEST(AluErrors, NonComputeAndBadShapesThrow) {
  for (Opcode op : {Opcode::nop, Opcode::dma_copy}) {
    ExecResult r;
    try {
      execute(inst(op, ap(1, {1})), {}, r);
      ADD_FAILURE() << "no exception";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string(isa::opcode_name(op))), std::string::npos)
          << e.what();
    }
  }
  // moving tile with the wrong K
  auto mm = inst(Opcode::matmul, ap(2, {2}), {ap(2, {2}), ap(3, {2})});
  ExecArgs a;
  a.src[0] = tile(2, 2, {1, 2, 3, 4});
  a.src[1] = tile(3, 2, {1, 2, 3, 4, 5, 6});
  ExecResult r;
  EXPECT_THROW(execute(mm, a, r), std::logic_error);
  // tensor_reduce with a non-reducing op
  auto tr = inst(Opcode::tensor_reduce, ap(1, {}), {ap(1, {2})});
  tr.op0 = AluOp::sub, tr.axes = 1;
  ExecArgs b;
  b.src[0] = tile(1, 2, {1, 2});
  EXPECT_THROW(execute(tr, b, r), std::logic_error);
  // per-partition scalar tile missing
  auto ts = inst(Opcode::tensor_scalar, ap(2, {1}), {ap(2, {1})});
  ts.op0 = AluOp::add, ts.arg0.is_ap = true;
  ExecArgs c;
  c.src[0] = tile(2, 1, {1, 2});
  EXPECT_THROW(execute(ts, c, r), std::logic_error);
}

}  // namespace
}  // namespace trnsim::models
