// Elementwise ops and trn.Elementwise on [rows, cols] layouts: leading dims are
// flattened onto partitions (tiles of up to 128 rows, a shorter last one), the last
// dim is cut into chunks of up to kColChunk columns.
//
// Ops the chip has no single instruction for are short exact sequences (each
// formula is noted where it is built); bool results are fp32 0.0/1.0. Branches go
// through `select`, so an inf/NaN in the branch not taken never reaches the result.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <variant>

#include "compiler/ir/trn_ops.h"
#include "compiler/lower/context.h"

namespace trnsim::lower {

using isa::ActFunc;
using isa::AluOp;
using isa::DType;
using kernels::all;
using kernels::sl;
using kernels::TileView;

namespace {

constexpr int64_t kColChunk = 512;

const std::map<std::string, ActFunc>& unary_acts() {
  static const std::map<std::string, ActFunc> m = {
      {"Relu", ActFunc::relu},
      {"Sigmoid", ActFunc::sigmoid},
      {"Tanh", ActFunc::tanh},
      {"Exp", ActFunc::exp},
      {"Log", ActFunc::log},
      {"Sqrt", ActFunc::sqrt},
      {"Reciprocal", ActFunc::reciprocal},
      {"Abs", ActFunc::abs},
      {"Erf", ActFunc::erf},
      {"Softplus", ActFunc::softplus},
      {"trn.Silu", ActFunc::silu},
  };
  return m;
}

const std::map<std::string, AluOp>& binary_alus() {
  static const std::map<std::string, AluOp> m = {
      {"Add", AluOp::add},
      {"Sub", AluOp::sub},
      {"Mul", AluOp::mul},
      {"Div", AluOp::div},
      {"Max", AluOp::max},
      {"Min", AluOp::min},
      {"Pow", AluOp::pow},
      {"Sum", AluOp::add},
      {"Mean", AluOp::add},
      // Comparisons give 1.0/0.0: the device form of bool.
      {"Equal", AluOp::eq},
      {"Less", AluOp::lt},
      {"Greater", AluOp::gt},
      {"LessOrEqual", AluOp::le},
      {"GreaterOrEqual", AluOp::ge},
      // Logic on 0.0/1.0 operands.
      {"And", AluOp::mul},
      {"Or", AluOp::max},
      {"Xor", AluOp::ne},
  };
  return m;
}

// True when `in` broadcasts to `out` as the same [R, C] layout (equal shapes after
// dropping leading 1s).
bool same_layout(const ir::Shape& in, const ir::Shape& out) {
  size_t i = 0;
  while (i < in.size() && in.size() - i > out.size()) {
    if (in[i] != 1) return false;
    ++i;
  }
  size_t off = out.size() - (in.size() - i);
  for (size_t j = 0; j < off; ++j)
    if (out[j] != 1) return false;
  for (size_t j = i; j < in.size(); ++j)
    if (in[j] != out[off + j - i]) return false;
  return true;
}

// Ops built from several instructions (apply_elementwise).
const std::set<std::string>& composite_ops() {
  static const std::set<std::string> s = {
      "Neg",  "trn.Gelu", "Identity",    "LeakyRelu", "PRelu",          "Elu",  "Selu",
      "Celu", "Clip",     "HardSigmoid", "HardSwish", "Softsign",       "Sign", "Floor",
      "Ceil", "Round",    "Not",         "Where",     "ThresholdedRelu"};
  return s;
}

float attr_float(const std::map<std::string, ir::Attribute>& attrs, const std::string& key,
                 float dflt) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return dflt;
  if (const float* f = std::get_if<float>(&it->second.storage())) return *f;
  if (const int64_t* i = std::get_if<int64_t>(&it->second.storage())) return static_cast<float>(*i);
  return dflt;
}

// Temporaries of one step come from a per-node pool of kTmpBufs rotating buffers;
// a step never holds more than that many at once (checked).
constexpr uint32_t kTmpBufs = 4;

struct Temps {
  Ctx& c;
  const ir::Node& n;
  int64_t rt, ct;
  uint32_t used = 0;
  TileView operator()() {
    if (c.tmp_node != &n) {
      const std::string name =
          c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size()) + ".tmp";
      c.tmp_pool = c.b.pool(name, isa::MemSpace::sbuf, kTmpBufs);
      c.tmp_node = &n;
    }
    if (++used > kTmpBufs)
      throw ir::CompileError("lowering: " + n.label() + ": a step needs more than " +
                             std::to_string(kTmpBufs) + " temporaries");
    return c.b.tile(c.tmp_pool, {rt, ct}, DType::fp32);
  }
};

}  // namespace

const std::vector<std::string>& elementwise_ops() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> r;
    for (const auto& [op, f] : unary_acts()) r.push_back(op);
    for (const auto& [op, a] : binary_alus()) r.push_back(op);
    for (const std::string& op : composite_ops()) r.push_back(op);
    std::sort(r.begin(), r.end());
    return r;
  }();
  return v;
}

bool is_lowerable_elementwise(const std::string& op) {
  return unary_acts().count(op) || binary_alus().count(op) || composite_ops().count(op);
}

Operand load_operand(Ctx& c, const ir::Node& n, const ir::Value* v, const ir::Shape& out,
                     int64_t r0, int64_t rt, int64_t c0, int64_t ct) {
  Operand o;
  const ir::Shape& s = v->shape();
  const int64_t numel = v->type.numel();
  if (numel == 1 && v->has_data()) {
    o.kind = Operand::Kind::imm;
    o.imm = static_cast<float>(v->data->at(0));
    return o;
  }
  const auto [R, C] = rows_cols(out);
  const kernels::HbmView& x = c.view(v);
  if (same_layout(s, out)) {
    o.t = c.b.tile(c.in_pool, {rt, ct}, DType::fp32);
    c.b.dma(o.t, x.reshape({R, C})({sl(r0, r0 + rt), sl(c0, c0 + ct)}));
    return o;
  }
  if (numel == 1) {  // a run-time scalar: one value per partition
    o.kind = Operand::Kind::column;
    o.t = c.b.tile(c.in_pool, {rt, 1}, DType::fp32);
    c.b.dma(o.t, x.reshape({1}).broadcast(0, rt));
    return o;
  }
  // A row vector over the last axis: [..1.., C].
  if (!s.empty() && s.back() == C && numel == C) {
    o.t = c.b.tile(c.in_pool, {rt, ct}, DType::fp32);
    c.b.dma(o.t, x.reshape({C})({sl(c0, c0 + ct)}).broadcast(0, rt));
    return o;
  }
  // A column: the output's leading dims with last dim 1.
  if (!s.empty() && s.back() == 1 && numel == R) {
    ir::Shape lead(out.begin(), out.end() - 1), slead(s.begin(), s.end() - 1);
    if (same_layout(slead, lead)) {
      o.kind = Operand::Kind::column;
      o.t = c.b.tile(c.in_pool, {rt, 1}, DType::fp32);
      c.b.dma(o.t, x.reshape({R, 1})({sl(r0, r0 + rt), all()}));
      return o;
    }
  }
  // General ONNX broadcasting: the operand row each output row reads, loaded in
  // runs of rows that read one operand row (stride 0) or consecutive ones.
  if (s.size() > out.size()) unsupported(n, "operand '" + v->name + "' has a higher rank");
  ir::Shape sal(out.size() - s.size(), 1);
  sal.insert(sal.end(), s.begin(), s.end());
  const int64_t sc = sal.back();
  if (sc != C && sc != 1)
    unsupported(n, "operand '" + v->name + "' " + v->type.str() + " does not broadcast to " +
                       ir::shape_str(out));
  const int64_t srows = numel / sc;
  auto src_row = [&](int64_t r) {
    int64_t off = 0, stride = 1;
    for (int64_t d = static_cast<int64_t>(out.size()) - 2; d >= 0; --d) {
      const int64_t i = r % out[d];
      r /= out[d];
      if (sal[d] != 1) off += i * stride;
      stride *= sal[d];
    }
    return off;
  };
  struct Run {
    int64_t i0, len, s0, delta;
  };
  std::vector<Run> runs;
  bool aligned = true;
  for (int64_t i0 = 0; i0 < rt && aligned;) {
    const int64_t s0 = src_row(r0 + i0);
    int64_t len = 1, delta = 0;
    if (i0 + 1 < rt) delta = src_row(r0 + i0 + 1) - s0;
    if (delta != 0 && delta != 1) delta = 0;
    while (i0 + len < rt && src_row(r0 + i0 + len) == s0 + delta * len) ++len;
    // DMAs may start only at some partitions (the partition-start rule).
    aligned = isa::partition_start_ok(static_cast<uint32_t>(i0), static_cast<uint32_t>(len));
    runs.push_back({i0, len, s0, delta});
    i0 += len;
  }
  if (!aligned) {
    // Runs that a DMA cannot start at: broadcast the operand to the output's shape
    // once, in an HBM scratch tensor (a strided HBM -> HBM DMA with stride-0 axes),
    // and load that like a full operand.
    auto key = std::make_pair(&n, v);
    auto it = c.expanded.find(key);
    if (it == c.expanded.end()) {
      std::vector<int64_t> squeezed;
      for (int64_t d : sal)
        if (d != 1) squeezed.push_back(d);
      ir::Shape tgt = out;  // a column stays a column
      tgt.back() = sc;
      kernels::HbmView src = x.reshape(squeezed);  // numel > 1: not empty
      for (size_t d = 0; d < sal.size(); ++d)
        if (sal[d] == 1) src = src.broadcast(static_cast<int>(d), tgt[d]);
      const std::string name = c.b.kernel().name + ".n" +
                               std::to_string(c.b.kernel().pools.size()) + ".bcast" +
                               std::to_string(c.expanded.size());
      kernels::HbmView full = c.b.scratch(name, {R, sc}, DType::fp32);
      c.b.dma(full.reshape(tgt), src);
      it = c.expanded.emplace(key, full).first;
    }
    o.kind = sc == 1 ? Operand::Kind::column : Operand::Kind::tile;
    o.t = c.b.tile(c.in_pool, {rt, sc == 1 ? 1 : ct}, DType::fp32);
    c.b.dma(o.t, it->second({sl(r0, r0 + rt), sc == 1 ? all() : sl(c0, c0 + ct)}));
    return o;
  }
  o.kind = sc == 1 ? Operand::Kind::column : Operand::Kind::tile;
  o.t = c.b.tile(c.in_pool, {rt, sc == 1 ? 1 : ct}, DType::fp32);
  for (const Run& run : runs) {
    const int64_t i0 = run.i0, len = run.len, s0 = run.s0, delta = run.delta;
    const TileView dst = o.t({sl(i0, i0 + len), all()});
    if (sc == 1) {
      const kernels::HbmView col = x.reshape({srows});
      c.b.dma(dst, delta ? col({sl(s0, s0 + len)}).reshape({len, 1})
                         : col({sl(s0, s0 + 1)}).broadcast(0, len));
    } else if (delta) {
      c.b.dma(dst, x.reshape({srows, sc})({sl(s0, s0 + len), sl(c0, c0 + ct)}));
    } else {
      c.b.dma(dst, x.reshape({numel})({sl(s0 * sc + c0, s0 * sc + c0 + ct)}).broadcast(0, len));
    }
  }
  return o;
}

namespace {

// One elementwise step being lowered: its operands, the result tile `dst` and the
// helpers the op families share.
struct Step {
  Ctx& c;
  const ir::Node& n;
  const std::string& op;
  const std::map<std::string, ir::Attribute>& attrs;
  const std::vector<Operand>& args;
  int64_t rt, ct;
  TileView dst;
  Temps tmp;

  // Any operand as a full tile (columns and immediates broadcast on chip).
  TileView full(const Operand& a) {
    if (a.kind == Operand::Kind::tile) return a.t;
    TileView t = c.b.tile(c.work_pool, {rt, ct}, DType::fp32);
    if (a.kind == Operand::Kind::imm)
      c.b.memset(t, a.imm);
    else {  // 0 + column, per partition
      c.b.memset(t, 0.0f);
      c.b.tensor_scalar(t, t, AluOp::add, a.t);
    }
    return t;
  }
  void need(size_t k) const {
    if (args.size() != k)
      unsupported(n, "step " + op + " takes " + std::to_string(k) + " operands, got " +
                         std::to_string(args.size()));
  }
  // d = a op b for any operand kinds (a tile and a column/immediate use tensor_scalar).
  void binop(const TileView& d, const Operand& a, const Operand& bb, AluOp alu) {
    auto scalar_of = [](const Operand& o) -> kernels::Scalar {
      if (o.kind == Operand::Kind::imm) return o.imm;
      return o.t;
    };
    if (a.kind == Operand::Kind::tile && bb.kind != Operand::Kind::tile) {
      c.b.tensor_scalar(d, a.t, alu, scalar_of(bb));
    } else if (bb.kind == Operand::Kind::tile && a.kind != Operand::Kind::tile) {
      kernels::TensorScalarOpts o;
      o.reverse0 = true;  // scalar op tile
      c.b.tensor_scalar(d, bb.t, alu, scalar_of(a), o);
    } else {
      c.b.tensor_tensor(d, full(a), full(bb), alu);
    }
  }
  // d = (s o0 a0) o1 a1 in one instruction.
  void ts2(const TileView& d, const TileView& s, AluOp o0, float a0, AluOp o1, float a1) {
    kernels::TensorScalarOpts o;
    o.op1 = o1;
    o.arg1 = a1;
    c.b.tensor_scalar(d, s, o0, a0, o);
  }
  // mult * expm1(k * min(x, 0)) as 2t/(1-t) * mult with t = tanh(k*min(x,0)/2):
  // accurate to a few ulp near 0, where exp(x) - 1 would cancel; min(x, 0) keeps
  // 1 - t away from 0. Two temporaries; the result is the second.
  TileView expm1_neg(const TileView& x, float k, float mult) {
    TileView u = tmp(), t = tmp();
    c.b.tensor_scalar(u, x, AluOp::min, 0.0f);
    c.b.activation(t, u, ActFunc::tanh, 0.5f * k);
    kernels::TensorScalarOpts rev;
    rev.reverse0 = true;
    c.b.tensor_scalar(u, t, AluOp::sub, 1.0f, rev);  // 1 - t
    c.b.tensor_scalar(t, t, AluOp::mul, 2.0f * mult);
    c.b.tensor_tensor(t, t, u, AluOp::div);
    return t;
  }
};

// Gelu, Neg, Identity, Not and Where: one instruction each; false for other ops.
bool single_instruction_step(Step& s) {
  if (s.op == "trn.Gelu") {
    s.need(1);
    std::string approx = "none";
    if (auto a = s.attrs.find("approximate"); a != s.attrs.end())
      approx = std::get<std::string>(a->second.storage());
    s.c.b.activation(s.dst, s.full(s.args[0]),
                     approx == "tanh" ? ActFunc::gelu_tanh : ActFunc::gelu);
  } else if (s.op == "Neg") {
    s.need(1);
    s.c.b.tensor_scalar(s.dst, s.full(s.args[0]), AluOp::mul, -1.0f);
  } else if (s.op == "Identity") {
    s.need(1);
    s.c.b.tensor_copy(s.dst, s.full(s.args[0]));
  } else if (s.op == "Not") {
    s.need(1);
    s.c.b.tensor_scalar(s.dst, s.full(s.args[0]), AluOp::eq, 0.0f);
  } else if (s.op == "Where") {  // a select: the branch not taken never reaches dst
    s.need(3);
    s.c.b.select(s.dst, s.full(s.args[0]), s.full(s.args[1]), s.full(s.args[2]));
  } else {
    return false;
  }
  return true;
}

// The ReLU relatives: LeakyRelu, PRelu, ThresholdedRelu (a compare and a select).
void relu_family_step(Step& s) {
  kernels::Builder& b = s.c.b;
  if (s.op == "ThresholdedRelu") {  // x > alpha ? x : 0
    s.need(1);
    const TileView x = s.full(s.args[0]);
    TileView keep = s.tmp(), zero = s.tmp();
    b.tensor_scalar(keep, x, AluOp::gt, attr_float(s.attrs, "alpha", 1.0f));
    b.memset(zero, 0.0f);
    b.select(s.dst, keep, x, zero);
    return;
  }
  // LeakyRelu, PRelu: x < 0 ? slope * x : x
  s.need(s.op == "PRelu" ? 2 : 1);
  const TileView x = s.full(s.args[0]);
  TileView neg = s.tmp(), sx = s.tmp();
  b.tensor_scalar(neg, x, AluOp::lt, 0.0f);
  if (s.op == "PRelu")
    s.binop(sx, s.args[0], s.args[1], AluOp::mul);
  else
    b.tensor_scalar(sx, x, AluOp::mul, attr_float(s.attrs, "alpha", 0.01f));
  b.select(s.dst, neg, sx, x);
}

// Elu, Selu, Celu: x > 0 ? scale * x : mult * expm1(k * x).
void exp_linear_step(Step& s) {
  s.need(1);
  const TileView x = s.full(s.args[0]);
  float k = 1, mult = attr_float(s.attrs, "alpha", 1.0f), pos_scale = 1;
  if (s.op == "Selu") {  // x > 0 ? g*x : g*a*(e^x - 1)
    pos_scale = attr_float(s.attrs, "gamma", 1.05070102214813232421875f);
    mult = pos_scale * attr_float(s.attrs, "alpha", 1.67326319217681884765625f);
  } else if (s.op == "Celu") {  // x > 0 ? x : a*(e^(x/a) - 1)
    if (!(mult > 0)) unsupported(s.n, "Celu with alpha " + std::to_string(mult) + " <= 0");
    k = 1.0f / mult;
  }  // Elu: x > 0 ? x : a*(e^x - 1) (x == 0 gives 0 either way)
  const TileView e = s.expm1_neg(x, k, mult);
  TileView pos = s.tmp();
  s.c.b.tensor_scalar(pos, x, AluOp::gt, 0.0f);
  if (pos_scale != 1.0f) {
    TileView gx = s.tmp();
    s.c.b.tensor_scalar(gx, x, AluOp::mul, pos_scale);
    s.c.b.select(s.dst, pos, gx, e);
  } else {
    s.c.b.select(s.dst, pos, x, e);
  }
}

// The clamps and ratios: Clip, HardSigmoid, HardSwish, Softsign, Sign; false for
// other ops.
bool clamp_step(Step& s) {
  kernels::Builder& b = s.c.b;
  if (s.op == "Clip") {
    s.need(1);
    const float inf = std::numeric_limits<float>::infinity();
    const float lo = attr_float(s.attrs, "min", -inf), hi = attr_float(s.attrs, "max", inf);
    // max then min, as numpy and torch: with lo > hi every element is hi.
    s.ts2(s.dst, s.full(s.args[0]), AluOp::max, lo, AluOp::min, hi);
  } else if (s.op == "HardSigmoid") {  // max(0, min(1, a*x + b))
    s.need(1);
    s.ts2(s.dst, s.full(s.args[0]), AluOp::mul, attr_float(s.attrs, "alpha", 0.2f), AluOp::add,
          attr_float(s.attrs, "beta", 0.5f));
    s.ts2(s.dst, s.dst, AluOp::min, 1.0f, AluOp::max, 0.0f);
  } else if (s.op == "HardSwish") {  // x * max(0, min(1, x/6 + 1/2))
    s.need(1);
    const TileView x = s.full(s.args[0]);
    TileView h = s.tmp();
    s.ts2(h, x, AluOp::div, 6.0f, AluOp::add, 0.5f);
    s.ts2(h, h, AluOp::min, 1.0f, AluOp::max, 0.0f);
    b.tensor_tensor(s.dst, x, h, AluOp::mul);
  } else if (s.op == "Softsign") {  // x / (1 + |x|)
    s.need(1);
    const TileView x = s.full(s.args[0]);
    TileView d = s.tmp();
    b.activation(d, x, ActFunc::abs);
    b.tensor_scalar(d, d, AluOp::add, 1.0f);
    b.tensor_tensor(s.dst, x, d, AluOp::div);
  } else if (s.op == "Sign") {
    // x * 2^200 is +-inf or at least 2^51 in magnitude for any non-zero x (the
    // smallest subnormal is 2^-149), so clamping to [-1, 1] gives the sign; 0
    // stays 0 and NaN stays NaN (max/min propagate it).
    s.need(1);
    const float big = 0x1p100f;
    s.ts2(s.dst, s.full(s.args[0]), AluOp::mul, big, AluOp::mul, big);
    s.ts2(s.dst, s.dst, AluOp::max, -1.0f, AluOp::min, 1.0f);
  } else {
    return false;
  }
  return true;
}

// Floor, Ceil, Round.
void rounding_step(Step& s) {
  // r = (x + m) - m with m = +-2^23 (the sign of x) rounds x to an integer, half
  // to even: x + m lies where the fp32 spacing is 1. Floor takes 1 off where
  // r > x, Ceil adds 1 where r < x. |x| >= 2^23 (and inf) is already integral and
  // passes through a select; NaN stays NaN on either path.
  kernels::Builder& b = s.c.b;
  s.need(1);
  const TileView x = s.full(s.args[0]);
  TileView m = s.tmp(), r = s.tmp();
  s.ts2(m, x, AluOp::ge, 0.0f, AluOp::mul, 0x1p24f);
  b.tensor_scalar(m, m, AluOp::add, -0x1p23f);
  b.tensor_tensor(r, x, m, AluOp::add);
  b.tensor_tensor(r, r, m, AluOp::sub);
  if (s.op == "Floor") {
    b.tensor_tensor(m, r, x, AluOp::gt);
    b.tensor_tensor(r, r, m, AluOp::sub);
  } else if (s.op == "Ceil") {
    b.tensor_tensor(m, r, x, AluOp::lt);
    b.tensor_tensor(r, r, m, AluOp::add);
  }
  b.activation(m, x, ActFunc::abs);
  b.tensor_scalar(m, m, AluOp::ge, 0x1p23f);
  b.select(s.dst, m, x, r);
}

// Pow by a constant 2, -1 or 1 (exact forms); false for any other exponent, which
// takes the ALU's pow (C pow semantics: negative bases with integral exponents, 0.5
// of -0 and -inf, ...).
bool pow_immediate_step(Step& s) {
  const float e = s.args[1].imm;
  if (e == 2.0f) {  // x*x is the correctly rounded square
    const TileView x = s.full(s.args[0]);
    s.c.b.tensor_tensor(s.dst, x, x, AluOp::mul);
    return true;
  }
  if (e == -1.0f) {  // 1/x, correctly rounded
    kernels::TensorScalarOpts rev;
    rev.reverse0 = true;
    s.c.b.tensor_scalar(s.dst, s.full(s.args[0]), AluOp::div, 1.0f, rev);
    return true;
  }
  if (e == 1.0f) {
    s.c.b.tensor_copy(s.dst, s.full(s.args[0]));
    return true;
  }
  return false;
}

// A binary ALU op, or a variadic Max/Min/Sum/Mean folded over its operands.
void binary_step(Step& s, AluOp alu) {
  const bool variadic = s.op == "Max" || s.op == "Min" || s.op == "Sum" || s.op == "Mean";
  if (!variadic) s.need(2);
  if (s.args.empty()) unsupported(s.n, "step " + s.op + " has no operands");
  if (s.args.size() == 1) {
    s.c.b.tensor_copy(s.dst, s.full(s.args[0]));
    return;
  }
  s.binop(s.dst, s.args[0], s.args[1], alu);
  Operand acc;
  acc.t = s.dst;
  for (size_t k = 2; k < s.args.size(); ++k) s.binop(s.dst, acc, s.args[k], alu);
  if (s.op == "Mean")
    s.c.b.tensor_scalar(s.dst, s.dst, AluOp::div, static_cast<float>(s.args.size()));
}

}  // namespace

TileView apply_elementwise(Ctx& c, const ir::Node& n, const std::string& op,
                           const std::map<std::string, ir::Attribute>& attrs,
                           const std::vector<Operand>& args, int64_t rt, int64_t ct) {
  Step s{c,
         n,
         op,
         attrs,
         args,
         rt,
         ct,
         c.b.tile(c.work_pool, {rt, ct}, DType::fp32),
         Temps{c, n, rt, ct}};
  if (auto it = unary_acts().find(op); it != unary_acts().end()) {
    s.need(1);
    c.b.activation(s.dst, s.full(args[0]), it->second);
    return s.dst;
  }
  if (single_instruction_step(s)) return s.dst;
  if (op == "LeakyRelu" || op == "PRelu" || op == "ThresholdedRelu") {
    relu_family_step(s);
    return s.dst;
  }
  if (op == "Elu" || op == "Selu" || op == "Celu") {
    exp_linear_step(s);
    return s.dst;
  }
  if (clamp_step(s)) return s.dst;
  if (op == "Floor" || op == "Ceil" || op == "Round") {
    rounding_step(s);
    return s.dst;
  }
  if (op == "Pow" && args.size() == 2 && args[1].kind == Operand::Kind::imm &&
      pow_immediate_step(s))
    return s.dst;
  if (auto it = binary_alus().find(op); it != binary_alus().end()) {
    binary_step(s, it->second);
    return s.dst;
  }
  unsupported(n, "elementwise step " + op + " is not lowered yet");
}

void lower_elementwise(Ctx& c, const ir::Node& n) {
  // Integers are fp32 on the device: ops whose integer result truncates a fraction
  // would come out wrong.
  if (ir::is_integer(n.outputs[0]->elem())) {
    if (n.op == "Mean") unsupported(n, "integer Mean (truncating) is not lowered yet");
    if (n.op == "Pow") {
      const ir::Value* e = n.input(1);
      bool ok = e && e->has_data();
      if (ok)
        for (int64_t i = 0; i < e->type.numel(); ++i) {
          const double v = e->data->at(i);
          ok = ok && v >= 0 && v == std::floor(v);
        }
      if (!ok)
        unsupported(n,
                    "integer Pow is lowered only with constant non-negative integral "
                    "exponents (others truncate)");
    }
  }
  std::vector<ir::FusedStep> steps;
  if (n.op == "trn.Elementwise") {
    steps = ir::fused_steps(n);
  } else {
    ir::FusedStep s;
    s.op = n.op;
    s.attrs = n.attrs;
    for (size_t k = 0; k < n.num_inputs(); ++k) s.args.push_back({false, static_cast<int>(k)});
    steps.push_back(s);
  }
  const ir::Value* outv = n.outputs[0];
  const ir::Shape& out = outv->shape();
  const auto [R, C] = rows_cols(out);
  const uint32_t nin = static_cast<uint32_t>(std::max<size_t>(1, n.num_inputs()));
  const std::string pfx = c.b.kernel().name + ".n" + std::to_string(c.b.kernel().pools.size());
  // Each step's result plus a broadcast temp per operand, double-buffered.
  const uint32_t in_bufs = 2 * nin, work_bufs = 2 * static_cast<uint32_t>(steps.size() + nin);
  c.in_pool = c.b.pool(pfx + ".in", isa::MemSpace::sbuf, in_bufs);
  c.work_pool = c.b.pool(pfx + ".work", isa::MemSpace::sbuf, work_bufs);
  // Columns per chunk: the buffers take at most half of a partition.
  int64_t chunk = kColChunk;
  while (chunk > 16 && static_cast<uint64_t>(chunk) * 4 * (in_bufs + work_bufs + kTmpBufs) >
                           c.target.sbuf_partition_bytes / 2)
    chunk /= 2;
  const kernels::HbmView y = c.view(outv).reshape({R, C});
  const int64_t P = c.target.partitions;
  for (int64_t r0 = 0; r0 < R; r0 += P) {
    const int64_t rt = std::min<int64_t>(P, R - r0);
    for (int64_t c0 = 0; c0 < C; c0 += chunk) {
      const int64_t ct = std::min<int64_t>(chunk, C - c0);
      std::vector<Operand> ins;
      for (size_t k = 0; k < n.num_inputs(); ++k)
        ins.push_back(load_operand(c, n, n.inputs[k], out, r0, rt, c0, ct));
      std::vector<Operand> res;
      for (const ir::FusedStep& s : steps) {
        std::vector<Operand> args;
        for (const ir::FusedArg& a : s.args)
          args.push_back(a.is_step ? res[a.index] : ins[a.index]);
        Operand r;
        r.t = apply_elementwise(c, n, s.op, s.attrs, args, rt, ct);
        res.push_back(r);
      }
      c.b.dma(y({sl(r0, r0 + rt), sl(c0, c0 + ct)}), res.back().t);
    }
  }
}

}  // namespace trnsim::lower
