// Elementwise ops and trn.Elementwise on [rows, cols] layouts: leading dims are
// flattened onto partitions (tiles of up to 128 rows, a shorter last one), the last
// dim is cut into chunks of up to kColChunk columns.
#include <algorithm>
#include <set>

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
      {"Add", AluOp::add}, {"Sub", AluOp::sub}, {"Mul", AluOp::mul},
      {"Div", AluOp::div}, {"Max", AluOp::max}, {"Min", AluOp::min},
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

}  // namespace

bool is_lowerable_elementwise(const std::string& op) {
  return unary_acts().count(op) || binary_alus().count(op) || op == "Neg" || op == "trn.Gelu" ||
         op == "Identity";
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
  o.kind = sc == 1 ? Operand::Kind::column : Operand::Kind::tile;
  o.t = c.b.tile(c.in_pool, {rt, sc == 1 ? 1 : ct}, DType::fp32);
  struct Run {
    int64_t i0, len, s0, delta;
  };
  std::vector<Run> runs;
  for (int64_t i0 = 0; i0 < rt;) {
    const int64_t s0 = src_row(r0 + i0);
    int64_t len = 1, delta = 0;
    if (i0 + 1 < rt) delta = src_row(r0 + i0 + 1) - s0;
    if (delta != 0 && delta != 1) delta = 0;
    while (i0 + len < rt && src_row(r0 + i0 + len) == s0 + delta * len) ++len;
    // DMAs may start only at some partitions (>64: 0; 33..64: 0, 64; <=32: 0, 32, 64, 96).
    const bool ok = i0 == 0 || (len <= 64 && i0 == 64) || (len <= 32 && i0 % 32 == 0);
    if (!ok)
      unsupported(n, "operand '" + v->name + "' " + v->type.str() + " broadcasts to " +
                         ir::shape_str(out) + " in runs of rows that do not start at a DMA " +
                         "partition boundary (row " + std::to_string(r0 + i0) +
                         "); not lowered yet");
    runs.push_back({i0, len, s0, delta});
    i0 += len;
  }
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

TileView apply_elementwise(Ctx& c, const ir::Node& n, const std::string& op,
                           const std::map<std::string, ir::Attribute>& attrs,
                           const std::vector<Operand>& args, int64_t rt, int64_t ct) {
  TileView dst = c.b.tile(c.work_pool, {rt, ct}, DType::fp32);
  // Any operand as a full tile (columns and immediates broadcast on chip).
  auto full = [&](const Operand& a) -> TileView {
    if (a.kind == Operand::Kind::tile) return a.t;
    TileView t = c.b.tile(c.work_pool, {rt, ct}, DType::fp32);
    if (a.kind == Operand::Kind::imm)
      c.b.memset(t, a.imm);
    else {  // 0 + column, per partition
      c.b.memset(t, 0.0f);
      c.b.tensor_scalar(t, t, AluOp::add, a.t);
    }
    return t;
  };
  auto need = [&](size_t k) {
    if (args.size() != k)
      unsupported(n, "step " + op + " takes " + std::to_string(k) + " operands, got " +
                         std::to_string(args.size()));
  };
  if (auto it = unary_acts().find(op); it != unary_acts().end()) {
    need(1);
    c.b.activation(dst, full(args[0]), it->second);
    return dst;
  }
  if (op == "trn.Gelu") {
    need(1);
    std::string approx = "none";
    if (auto a = attrs.find("approximate"); a != attrs.end())
      approx = std::get<std::string>(a->second.storage());
    c.b.activation(dst, full(args[0]), approx == "tanh" ? ActFunc::gelu_tanh : ActFunc::gelu);
    return dst;
  }
  if (op == "Neg") {
    need(1);
    c.b.tensor_scalar(dst, full(args[0]), AluOp::mul, -1.0f);
    return dst;
  }
  if (op == "Identity") {
    need(1);
    c.b.tensor_copy(dst, full(args[0]));
    return dst;
  }
  if (auto it = binary_alus().find(op); it != binary_alus().end()) {
    need(2);
    const Operand &a = args[0], &bb = args[1];
    auto scalar_of = [](const Operand& o) -> kernels::Scalar {
      if (o.kind == Operand::Kind::imm) return o.imm;
      return o.t;
    };
    if (a.kind == Operand::Kind::tile && bb.kind != Operand::Kind::tile) {
      c.b.tensor_scalar(dst, a.t, it->second, scalar_of(bb));
    } else if (bb.kind == Operand::Kind::tile && a.kind != Operand::Kind::tile) {
      kernels::TensorScalarOpts o;
      o.reverse0 = true;  // scalar op tile
      c.b.tensor_scalar(dst, bb.t, it->second, scalar_of(a), o);
    } else {
      c.b.tensor_tensor(dst, full(a), full(bb), it->second);
    }
    return dst;
  }
  unsupported(n, "elementwise step " + op + " is not lowered yet");
}

void lower_elementwise(Ctx& c, const ir::Node& n) {
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
  while (chunk > 16 && static_cast<uint64_t>(chunk) * 4 * (in_bufs + work_bufs) >
                           c.target.sbuf_partition_bytes / 2)
    chunk /= 2;
  const kernels::HbmView y = c.view(outv).reshape({R, C});
  for (int64_t r0 = 0; r0 < R; r0 += 128) {
    const int64_t rt = std::min<int64_t>(128, R - r0);
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
