// Compute engines (models/engines/*) with an SBUF, a PSUM and semaphores: values
// and cycle counts per opcode, the scalar engine's table switch, semaphore ordering
// between engines, statistics, timing-only mode, faults and pending().
//
// Every engine and memory runs at 1 GHz (1 cycle = 1 ns) with min_ii 64 and a
// static overhead of 64 cycles. Memory ports move 128/128 = 1 element per cycle per
// lane, so an access of N free elements takes N ns (2N when its innermost stride
// exceeds 16 B). An instruction takes overhead + max(compute cycles, port time).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "models/engines/gpsimd_engine.h"
#include "models/engines/scalar_engine.h"
#include "models/engines/sync_engine.h"
#include "models/engines/tensor_engine.h"
#include "models/engines/vector_engine.h"
#include "models/memory/psum.h"
#include "models/memory/sbuf.h"
#include "tests/common/harness.h"

namespace trnsim::models {
namespace {

using isa::ActFunc;
using isa::AluOp;
using isa::DType;
using isa::Engine;
using isa::Instruction;
using isa::Opcode;
using sc_core::sc_time;
using test::instr;
using test::ns;
using test::ps;
using test::sb;
using test::with_signal;
using test::with_wait;

template <class P>
P at_1ghz(P p) {
  p.clock_hz = 1e9;
  p.min_ii_cycles = 64;
  p.overhead_cycles = 64;
  p.sem_latency_cycles = 0;
  return p;
}

struct engine_setup {
  tensor_engine_params te = at_1ghz(tensor_engine_params{});
  vector_engine_params ve = at_1ghz(vector_engine_params{});
  scalar_engine_params se = at_1ghz(scalar_engine_params{});
  gpsimd_engine_params ge = at_1ghz(gpsimd_engine_params{});
  sync_engine_params sy = at_1ghz(sync_engine_params{});
  sbuf_params sbuf;
  psum_params psum;
  engine_setup() {
    // The tensor engine without background load, tiling or throttling: each matmul
    // pass takes the fold formula 2R + C + S - 2 on the 128 x 128 array, S = max(N,
    // 64) (x 4 for fp32), after the overhead (tensor_engine.h).
    te.fp32_slowdown = 4;
    te.background_load = false;
    te.tile_size = 128;
    te.throttle = false;
    se.func_switch_cycles = 128;
    ge.start_cycles = 150;
    sbuf.partitions = 128;
    sbuf.partition_bytes = 32 * 1024;
    sbuf.clock_hz = 1e9;
    sbuf.port_elems_per_cycle = 128;
    psum.partitions = 128;
    psum.partition_bytes = 16 * 1024;
    psum.clock_hz = 1e9;
    psum.port_elems_per_cycle = 128;
  }
};

// One core's compute side: five engines on one SBUF, one PSUM and one semaphore file.
class engine_harness : public sc_core::sc_module {
 public:
  sim_context ctx;
  semaphores sems;
  sbuf sbuf_mem;
  psum psum_mem;
  tensor_engine te;
  vector_engine ve;
  scalar_engine se;
  gpsimd_engine ge;
  sync_engine sy;
  std::vector<Instruction> q[5];  // indexed by isa::Engine (tensor .. sync)

  explicit engine_harness(const sc_core::sc_module_name& n, const engine_setup& s = engine_setup())
      : sc_module(n),
        sems("sems", semaphores_params{16}),
        sbuf_mem("sbuf", s.sbuf),
        psum_mem("psum", s.psum),
        te("tensor", s.te, sems, ctx),
        ve("vector", s.ve, sems, ctx),
        se("scalar", s.se, sems, ctx),
        ge("gpsimd", s.ge, sems, ctx),
        sy("sync", s.sy, sems, ctx) {
    for (engine* e : all()) {
      e->sbuf_socket.bind(sbuf_mem.tgt_socket);
      e->psum_socket.bind(psum_mem.tgt_socket);
    }
  }
  std::vector<engine*> all() { return {&te, &ve, &se, &ge, &sy}; }
  std::vector<Instruction>& queue(Engine e) { return q[static_cast<int>(e)]; }
  void load_and_start() {
    for (engine* e : all()) e->load(&q[static_cast<int>(e->engine_kind())]);
    for (engine* e : all()) e->start();
  }
  void sbuf_put(uint32_t p, uint64_t byte, float v) { test::put_f32(sbuf_mem.row(p) + byte, v); }
  float sbuf_f32(uint32_t p, uint64_t byte) { return test::f32_at(sbuf_mem.row(p) + byte); }
  float psum_f32(uint32_t p, uint64_t byte) { return test::f32_at(psum_mem.row(p) + byte); }
};

// As the runtime drives a launch: finish elaboration, load, start, simulate.
void run(std::initializer_list<engine_harness*> hs) {
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  for (auto* h : hs) h->load_and_start();
  sc_core::sc_start();
}

std::string faults_text(const sim_context& ctx) {
  std::string s;
  for (const auto& f : ctx.faults) s += f.where + ": " + f.message + "\n";
  return s;
}

Instruction tensor_scalar(const isa::AccessPattern& dst, const isa::AccessPattern& src, AluOp op0,
                          isa::ScalarOperand arg0, AluOp op1 = AluOp::bypass,
                          isa::ScalarOperand arg1 = test::imm(0)) {
  Instruction in = instr(Opcode::tensor_scalar, dst, {src});
  in.op0 = op0;
  in.arg0 = arg0;
  in.op1 = op1;
  in.arg1 = arg1;
  return in;
}

Instruction activation(const isa::AccessPattern& dst, const isa::AccessPattern& src, ActFunc f,
                       isa::ScalarOperand scale = test::imm(1),
                       isa::ScalarOperand bias = test::imm(0)) {
  Instruction in = instr(Opcode::activation, dst, {src});
  in.func = f;
  in.arg0 = scale;
  in.arg1 = bias;
  return in;
}

Instruction matmul(const isa::AccessPattern& dst, const isa::AccessPattern& st,
                   const isa::AccessPattern& mv, bool accumulate) {
  Instruction in = instr(Opcode::matmul, dst, {st, mv});
  in.accumulate = accumulate;
  return in;
}

// SBUF inputs of the vector tests: element e (< 1024) of partition p at byte 4e.
float vec_input(uint32_t p, uint32_t e) {
  return e < 512 ? float(p % 7) + 0.25f * float(e) : float((e - 512) % 5) - 0.5f * float(p);
}

TEST(Engines, VectorTensorTensorAndTensorScalarValuesAndCycles) {
  engine_harness h("h");
  for (uint32_t p = 0; p < 128; ++p) {
    for (uint32_t e = 0; e < 1024; ++e) h.sbuf_put(p, 4 * e, vec_input(p, e));
    for (uint32_t e = 0; e < 512; ++e)
      test::put_f32(h.psum_mem.row(p) + 4 * e, 0.5f + float(e % 3));
    h.sbuf_put(p, 16000, float(p) * 0.125f);  // per-partition arg0
  }
  std::vector<sc_time> done;
  test::record_semaphore(h.sems, 0, 5, &done);
  auto& q = h.queue(Engine::vector);
  // i0: in0 - in1, both SBUF, N = 512: 64 + max(64, 2 x 512 = 1024; port 512) = 1088 ns.
  Instruction tt =
      instr(Opcode::tensor_tensor, sb(0, 128, 8192, DType::fp32, {{1, 512}}),
            {sb(0, 128, 0, DType::fp32, {{1, 512}}), sb(0, 128, 2048, DType::fp32, {{1, 512}})});
  tt.op0 = AluOp::sub;
  q.push_back(with_signal(tt, 0));
  // i1: in0 * psum, one input in PSUM: 64 + max(64, N = 512; port 512) = 576 ns -> 1664.
  Instruction tp =
      instr(Opcode::tensor_tensor, sb(0, 128, 10240, DType::fp32, {{1, 512}}),
            {sb(0, 128, 0, DType::fp32, {{1, 512}}), ps(0, 128, 0, DType::fp32, {{1, 512}})});
  tp.op0 = AluOp::mul;
  q.push_back(with_signal(tp, 0));
  // i2: (x * 3) + -1 to bf16, N = 100: 64 + max(64, 100; port 100) = 164 ns -> 1828.
  q.push_back(with_signal(tensor_scalar(sb(0, 128, 12288, DType::bf16, {{1, 100}}),
                                        sb(0, 128, 0, DType::fp32, {{1, 100}}), AluOp::mul,
                                        test::imm(3), AluOp::add, test::imm(-1)),
                          0));
  // i3: max(x[8i], arg[p]), src stride 8 fp32 = 32 B > 16 B: port 2 x 100 = 200 beats
  //     the compute max(64, 100) = 100: 64 + 200 = 264 ns -> 2092.
  q.push_back(with_signal(tensor_scalar(sb(0, 128, 14336, DType::fp32, {{1, 100}}),
                                        sb(0, 128, 0, DType::fp32, {{8, 100}}), AluOp::max,
                                        test::per_partition(sb(0, 128, 16000, DType::fp32))),
                          0));
  // i4: x + 1 with an add-accumulate, N = 32: 64 + max(64, 32) + 64 = 192 ns -> 2284.
  Instruction acc = tensor_scalar(sb(0, 128, 16384, DType::fp32, {{1, 32}}),
                                  sb(0, 128, 0, DType::fp32, {{1, 32}}), AluOp::add, test::imm(1));
  acc.has_accum = true;
  acc.accum = sb(0, 128, 16512, DType::fp32);
  acc.accum_op = AluOp::add;
  q.push_back(with_signal(acc, 0));
  run({&h});
  ASSERT_TRUE(h.ctx.faults.empty()) << faults_text(h.ctx);
  EXPECT_EQ(done, test::times_ns({1088, 1664, 1828, 2092, 2284}));
  EXPECT_EQ(h.ve.last_done(), ns(2284));
  EXPECT_DOUBLE_EQ(h.ve.busy_ns(), 2284.0);
  EXPECT_EQ(h.ve.instructions(), 5u);
  for (uint32_t p = 0; p < 128; ++p) {
    for (uint32_t i = 0; i < 512; ++i) {
      ASSERT_EQ(h.sbuf_f32(p, 8192 + 4 * i), vec_input(p, i) - vec_input(p, 512 + i))
          << p << "," << i;
      ASSERT_EQ(h.sbuf_f32(p, 10240 + 4 * i), vec_input(p, i) * (0.5f + float(i % 3)));
    }
    for (uint32_t i = 0; i < 100; ++i) {
      const float t = vec_input(p, i) * 3.0f + -1.0f;
      ASSERT_EQ(test::u16_at(h.sbuf_mem.row(p) + 12288 + 2 * i), isa::fp32_to_bf16(t))
          << p << "," << i;
      ASSERT_EQ(h.sbuf_f32(p, 14336 + 4 * i), std::max(vec_input(p, 8 * i), float(p) * 0.125f));
    }
    float sum = 0;
    for (uint32_t i = 0; i < 32; ++i) {
      ASSERT_EQ(h.sbuf_f32(p, 16384 + 4 * i), vec_input(p, i) + 1.0f);
      sum += vec_input(p, i) + 1.0f;
    }
    // 32 (p%7) + 0.25 (0 + ... + 31) + 32 = 32 (p%7) + 124 + 32, exact in fp32.
    EXPECT_EQ(h.sbuf_f32(p, 16512), float(32 * (p % 7)) + 156.0f);
    EXPECT_EQ(h.sbuf_f32(p, 16512), sum);
  }
}

TEST(Engines, TensorMatmulAccumulatesIntoPsum) {
  engine_harness h("h");
  // bf16 operands with small half-integer values: every product is a multiple of
  // 0.25 and every sum is exact in fp32, so the result must match exactly.
  auto a1 = [](int k, int m) { return float((k * 3 + m * 5) % 9 - 4) * 0.5f; };   // [128, 64]
  auto b1 = [](int k, int n) { return float((k * 7 + n * 11) % 5 - 2) * 0.5f; };  // [128, 256]
  auto a2 = [](int k, int m) { return float((k + 2 * m) % 7 - 3) * 0.5f; };
  auto b2 = [](int k, int n) { return float((3 * k + n) % 6 - 2) * 0.25f; };
  auto put_bf16 = [&](uint32_t p, uint64_t byte, float v) {
    const uint16_t b = isa::fp32_to_bf16(v);
    std::memcpy(h.sbuf_mem.row(p) + byte, &b, 2);
  };
  // fp32 operands: st [16, 32] at 4096, mv [16, 32] at 4352; transpose src [128, 48] at 8192.
  auto fs = [](int k, int m) { return std::sin(0.37f * float(k) + 0.11f * float(m)); };
  auto fm = [](int k, int n) { return std::cos(0.23f * float(k) - 0.05f * float(n)) * 3.0f; };
  for (int k = 0; k < 128; ++k) {
    for (int m = 0; m < 64; ++m) put_bf16(k, 2 * m, a1(k, m)), put_bf16(k, 2048 + 2 * m, a2(k, m));
    for (int n = 0; n < 256; ++n)
      put_bf16(k, 1024 + 2 * n, b1(k, n)), put_bf16(k, 3072 + 2 * n, b2(k, n));
    if (k < 16)
      for (int j = 0; j < 32; ++j)
        h.sbuf_put(k, 4096 + 4 * j, fs(k, j)), h.sbuf_put(k, 4352 + 4 * j, fm(k, j));
    for (int f = 0; f < 48; ++f) h.sbuf_put(k, 8192 + 4 * f, float(k * 100 + f));
  }
  // Garbage in the destination: the first matmul of the group must overwrite it.
  for (uint32_t m = 0; m < 64; ++m)
    for (uint32_t n = 0; n < 256; ++n) test::put_f32(h.psum_mem.row(m) + 4 * n, 1000.0f);
  std::vector<sc_time> done;
  test::record_semaphore(h.sems, 0, 5, &done);
  auto& q = h.queue(Engine::tensor);
  const auto dst = ps(0, 64, 0, DType::fp32, {{1, 256}});
  // bf16, N = 256: 64 + (2 x 128 + 128 + 256 - 2 = 638) = 702 ns -> 702, 1404.
  q.push_back(with_signal(matmul(dst, sb(0, 128, 0, DType::bf16, {{1, 64}}),
                                 sb(0, 128, 1024, DType::bf16, {{1, 256}}), false),
                          0));
  q.push_back(with_signal(matmul(dst, sb(0, 128, 2048, DType::bf16, {{1, 64}}),
                                 sb(0, 128, 3072, DType::bf16, {{1, 256}}), true),
                          0));
  // fp32, N = 32: S = max(32, 64) x 4 = 256: 64 + (256 + 128 + 256 - 2) = 702 ns -> 2106.
  q.push_back(with_signal(
      matmul(ps(0, 32, 2048, DType::fp32, {{1, 32}}), sb(0, 16, 4096, DType::fp32, {{1, 32}}),
             sb(0, 16, 4352, DType::fp32, {{1, 32}}), false),
      0));
  // transpose [128, 48] -> [48, 128]: 64 + max(P = 128, min(64, F = 48)) = 192 ns -> 2298.
  q.push_back(with_signal(instr(Opcode::transpose, ps(0, 48, 4096, DType::fp32, {{1, 128}}),
                                {sb(0, 128, 8192, DType::fp32, {{1, 48}})}),
                          0));
  // bf16 with a short moving tile, N = 32: S = 64: 64 + (256 + 128 + 64 - 2) = 510 ns -> 2808.
  q.push_back(with_signal(
      matmul(ps(64, 64, 0, DType::fp32, {{1, 32}}), sb(0, 128, 0, DType::bf16, {{1, 64}}),
             sb(0, 128, 1024, DType::bf16, {{1, 32}}), false),
      0));
  run({&h});
  ASSERT_TRUE(h.ctx.faults.empty()) << faults_text(h.ctx);
  EXPECT_EQ(done, test::times_ns({702, 1404, 2106, 2298, 2808}));
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 256; ++n) {
      float ref = 0;
      for (int k = 0; k < 128; ++k) ref += a1(k, m) * b1(k, n) + a2(k, m) * b2(k, n);
      ASSERT_EQ(h.psum_f32(m, 4 * n), ref) << m << "," << n;
    }
  for (int m = 0; m < 32; ++m)
    for (int n = 0; n < 32; ++n) {
      double ref = 0, mag = 0;
      for (int k = 0; k < 16; ++k)
        ref += double(fs(k, m)) * fm(k, n), mag += std::fabs(double(fs(k, m)) * fm(k, n));
      // fp32 accumulation over K = 16: error below 16 x 2^-24 of the magnitude sum.
      ASSERT_NEAR(h.psum_f32(m, 2048 + 4 * n), ref, 2e-6 * mag + 1e-7) << m << "," << n;
    }
  for (int f = 0; f < 48; ++f)
    for (int p = 0; p < 128; ++p) ASSERT_EQ(h.psum_f32(f, 4096 + 4 * p), float(p * 100 + f));
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 32; ++n) {
      float ref = 0;
      for (int k = 0; k < 128; ++k) ref += a1(k, m) * b1(k, n);
      ASSERT_EQ(h.psum_f32(64 + m, 4 * n), ref) << m << "," << n;
    }
  // Partitions 64.. beyond the short tile's N = 32 columns are untouched.
  EXPECT_EQ(h.psum_f32(64, 4 * 32), 0.0f);
}

TEST(Engines, ScalarActivationChargesTheFunctionSwitchOnce) {
  engine_harness h("h");
  auto x = [](uint32_t p, uint32_t i) { return (float(i) - 128.0f) / 32.0f + float(p) * 0.01f; };
  for (uint32_t p = 0; p < 128; ++p) {
    for (uint32_t i = 0; i < 256; ++i) h.sbuf_put(p, 4 * i, x(p, i));
    h.sbuf_put(p, 12000, float(p) * 0.01f);  // per-partition bias
  }
  std::vector<sc_time> done;
  test::record_semaphore(h.sems, 0, 6, &done);
  auto& q = h.queue(Engine::scalar);
  const auto src = sb(0, 128, 0, DType::fp32, {{1, 256}});
  auto dst = [](uint64_t off) { return sb(0, 128, off, DType::fp32, {{1, 256}}); };
  // N = 256 each. i0 exp: first table load: 64 + max(64, 256) + 128 = 448 ns -> 448.
  q.push_back(
      with_signal(activation(dst(4096), src, ActFunc::exp, test::imm(0.5f), test::imm(-1.0f)), 0));
  // i1 exp again (per-partition bias): table loaded: 64 + 256 = 320 -> 768.
  q.push_back(with_signal(activation(dst(5120), src, ActFunc::exp, test::imm(1.0f),
                                     test::per_partition(sb(0, 128, 12000, DType::fp32))),
                          0));
  // i2 tensor_copy does not touch the table: 64 + 256 = 320 -> 1088.
  q.push_back(with_signal(instr(Opcode::tensor_copy, dst(6144), {src}), 0));
  // i3 exp: still loaded: 320 -> 1408.
  q.push_back(with_signal(activation(dst(7168), src, ActFunc::exp), 0));
  // i4 relu: switch again: 448 -> 1856.
  q.push_back(with_signal(activation(dst(8192), src, ActFunc::relu), 0));
  // i5 relu with add-accumulate: 64 + max(64, 256) + 64 = 384 -> 2240.
  Instruction r = activation(dst(9216), src, ActFunc::relu, test::imm(2.0f));
  r.has_accum = true;
  r.accum = sb(0, 128, 10240, DType::fp32);
  q.push_back(with_signal(r, 0));
  run({&h});
  ASSERT_TRUE(h.ctx.faults.empty()) << faults_text(h.ctx);
  EXPECT_EQ(done, test::times_ns({448, 768, 1088, 1408, 1856, 2240}));
  for (uint32_t p = 0; p < 128; ++p) {
    double sum = 0;
    for (uint32_t i = 0; i < 256; ++i) {
      const float v = x(p, i);
      EXPECT_NEAR(h.sbuf_f32(p, 4096 + 4 * i), std::exp(double(v) * 0.5 - 1.0),
                  2e-6 * std::exp(double(v) * 0.5 - 1.0));
      EXPECT_NEAR(h.sbuf_f32(p, 5120 + 4 * i), std::exp(double(v) + p * 0.01),
                  2e-6 * std::exp(double(v) + p * 0.01));
      EXPECT_EQ(h.sbuf_f32(p, 6144 + 4 * i), v);
      EXPECT_FLOAT_EQ(h.sbuf_f32(p, 7168 + 4 * i), std::exp(v));
      EXPECT_EQ(h.sbuf_f32(p, 8192 + 4 * i), std::max(v, 0.0f));
      EXPECT_EQ(h.sbuf_f32(p, 9216 + 4 * i), std::max(2.0f * v, 0.0f));
      sum += std::max(2.0f * v, 0.0f);
    }
    // fp32 summation of 256 positive terms: error below 256 x 2^-24 relative.
    EXPECT_NEAR(h.sbuf_f32(p, 10240), sum, 2e-5 * sum + 1e-5) << p;
  }
}

TEST(Engines, GpSimdIotaAndAffineSelectCostStartPlusN) {
  engine_harness h("h");
  std::vector<sc_time> done;
  test::record_semaphore(h.sems, 0, 3, &done);
  auto& q = h.queue(Engine::gpsimd);
  // i0: 5 + 1000p + i over N = 200: 64 + 150 + 200 = 414 ns -> 414.
  Instruction i0 = instr(Opcode::iota, sb(0, 128, 0, DType::fp32, {{1, 200}}));
  i0.arg0 = test::imm(5);
  i0.pstep = 1000;
  i0.steps = {1, 0, 0, 0};
  q.push_back(with_signal(i0, 0));
  // i1: int32 -7 + 3p + 10a + b over [8,4],[1,8] (N = 32): 64 + 150 + 32 = 246 -> 660.
  Instruction i1 = instr(Opcode::iota, sb(0, 128, 1024, DType::int32, {{8, 4}, {1, 8}}));
  i1.arg0 = test::imm(-7);
  i1.pstep = 3;
  i1.steps = {10, 1, 0, 0};
  q.push_back(with_signal(i1, 0));
  // i2: keep i0's values where p - i >= 0, else -1 (N = 16): 64 + 150 + 16 = 230 -> 890.
  Instruction i2 = instr(Opcode::affine_select, sb(0, 128, 2048, DType::fp32, {{1, 16}}),
                         {sb(0, 128, 0, DType::fp32, {{1, 16}})});
  i2.op0 = AluOp::ge;
  i2.arg0 = test::imm(0);
  i2.pstep = 1;
  i2.steps = {-1, 0, 0, 0};
  i2.fill = -1.0f;
  q.push_back(with_signal(i2, 0));
  run({&h});
  ASSERT_TRUE(h.ctx.faults.empty()) << faults_text(h.ctx);
  EXPECT_EQ(done, test::times_ns({414, 660, 890}));
  for (uint32_t p = 0; p < 128; ++p) {
    for (uint32_t i = 0; i < 200; ++i) ASSERT_EQ(h.sbuf_f32(p, 4 * i), float(5 + 1000 * p + i));
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 8; ++b) {
        int32_t v;
        std::memcpy(&v, h.sbuf_mem.row(p) + 1024 + 4 * (8 * a + b), 4);
        ASSERT_EQ(v, -7 + 3 * int(p) + 10 * a + b);
      }
    for (uint32_t i = 0; i < 16; ++i)
      ASSERT_EQ(h.sbuf_f32(p, 2048 + 4 * i), p >= i ? float(5 + 1000 * p + i) : -1.0f)
          << p << "," << i;
  }
}

TEST(Engines, SyncNopCostsTheOverhead) {
  engine_harness h("h");
  std::vector<sc_time> done;
  test::record_semaphore(h.sems, 0, 2, &done);
  // Two nops: 64 cycles each -> 64, 128 ns.
  h.queue(Engine::sync) = {with_signal(test::nop(), 0), with_signal(test::nop(), 0)};
  run({&h});
  EXPECT_EQ(done, test::times_ns({64, 128}));
  EXPECT_EQ(h.sy.instructions(), 2u);
  EXPECT_DOUBLE_EQ(h.sy.busy_ns(), 128.0);
  EXPECT_TRUE(h.sy.idle());
  EXPECT_EQ(h.sy.pending(), "");
}

// Regression test: a nop only waits and signals (docs/isa.md), so it should cost
// the static overhead alone on every engine, as on the sync engine. The vector, scalar
// and GpSimd cost tables used to charge it max(min_ii, 1) = 64 cycles, the tensor engine 1.
TEST(Engines, NopCostsOnlyTheOverheadOnEveryEngine) {
  engine_harness h("h");
  std::vector<sc_time> done[5];
  for (int e = 0; e < 5; ++e) {
    test::record_semaphore(h.sems, uint16_t(e), 1, &done[e]);
    h.q[e] = {with_signal(test::nop(), uint16_t(e))};
  }
  run({&h});
  for (engine* e : h.all()) {
    const int k = static_cast<int>(e->engine_kind());
    EXPECT_EQ(done[k], test::times_ns({64})) << e->name() << ": nop = 64 overhead cycles at 1 GHz";
  }
}

TEST(Engines, SemaphoresOrderEnginesAndShowInStats) {
  engine_harness h("h");
  for (uint32_t p = 0; p < 128; ++p)
    for (uint32_t i = 0; i < 512; ++i) h.sbuf_put(p, 4 * i, float(p) - 0.5f * float(i));
  stats::group g("core");
  for (engine* e : h.all())
    e->register_stats(g.child(std::string(isa::engine_name(e->engine_kind()))));
  std::vector<sc_time> consumer_started;
  test::record_semaphore(h.sems, 1, 1, &consumer_started);
  const auto x = sb(0, 128, 0, DType::fp32, {{1, 512}});
  const auto y = sb(0, 128, 4096, DType::fp32, {{1, 512}});
  const auto z = sb(0, 128, 8192, DType::fp32, {{1, 512}});
  const auto w = sb(0, 128, 12288, DType::fp32, {{1, 512}});
  // Producer (vector): y = 2x, N = 512: 64 + 512 = 576 ns; signals s0 at 576.
  h.queue(Engine::vector) = {with_signal(tensor_scalar(y, x, AluOp::mul, test::imm(2)), 0)};
  // Consumer (scalar): waits s0 >= 1, signals s1 at read start (576), copies y to z:
  // 64 + 512 = 576 ns, done at 1152, signals s2.
  Instruction copy = with_wait(instr(Opcode::tensor_copy, z, {y}), 0, 1);
  copy = with_signal(std::move(copy), 1, 1, isa::SignalWhen::start);
  h.queue(Engine::scalar) = {with_signal(std::move(copy), 2)};
  // GpSimd waits s2: w = z + x, both SBUF: 64 + max(64, 2 x 512) = 1088 -> 2240; signals s3.
  Instruction add = with_wait(instr(Opcode::tensor_tensor, w, {z, x}), 2, 1);
  add.op0 = AluOp::add;
  h.queue(Engine::gpsimd) = {with_signal(std::move(add), 3)};
  // Sync waits s3: nop, 64 -> 2304.
  h.queue(Engine::sync) = {with_wait(test::nop(), 3, 1)};
  run({&h});
  ASSERT_TRUE(h.ctx.faults.empty()) << faults_text(h.ctx);
  EXPECT_EQ(consumer_started, test::times_ns({576}));
  EXPECT_EQ(h.ve.last_done(), ns(576));
  EXPECT_EQ(h.se.last_done(), ns(1152));
  EXPECT_EQ(h.ge.last_done(), ns(2240));
  EXPECT_EQ(h.sy.last_done(), ns(2304));
  // busy = own durations; semaphore_wait = time from launch (0) to the wait's release.
  EXPECT_DOUBLE_EQ(g.value("vector.busy_ns"), 576.0);
  EXPECT_DOUBLE_EQ(g.value("vector.semaphore_wait_ns"), 0.0);
  EXPECT_DOUBLE_EQ(g.value("scalar.busy_ns"), 576.0);
  EXPECT_DOUBLE_EQ(g.value("scalar.semaphore_wait_ns"), 576.0);
  EXPECT_DOUBLE_EQ(g.value("gpsimd.busy_ns"), 1088.0);
  EXPECT_DOUBLE_EQ(g.value("gpsimd.semaphore_wait_ns"), 1152.0);
  EXPECT_DOUBLE_EQ(g.value("sync.busy_ns"), 64.0);
  EXPECT_DOUBLE_EQ(g.value("sync.semaphore_wait_ns"), 2240.0);
  EXPECT_EQ(g.value("scalar.instructions"), 1.0);
  EXPECT_EQ(g.value("scalar.opcodes.tensor_copy"), 1.0);
  EXPECT_EQ(g.value("scalar.opcodes.activation"), 0.0);
  EXPECT_TRUE(std::isnan(g.value("scalar.opcodes.matmul")));  // not a scalar opcode
  EXPECT_EQ(g.value("tensor.instructions"), 0.0);
  // The consumers saw the producers' results.
  for (uint32_t p = 0; p < 128; ++p)
    for (uint32_t i = 0; i < 512; ++i) {
      const float xv = float(p) - 0.5f * float(i);
      ASSERT_EQ(h.sbuf_f32(p, 8192 + 4 * i), 2 * xv);
      ASSERT_EQ(h.sbuf_f32(p, 12288 + 4 * i), 3 * xv);
    }
}

// Regression test: engine_params::sem_latency_cycles (latency from a satisfied
// semaphore wait to issue) was once ignored by engine::run.
TEST(Engines, SemLatencyDelaysIssueAfterAWait) {
  engine_setup s;
  s.se.sem_latency_cycles = 10;  // 10 ns at 1 GHz
  engine_harness h("h", s);
  std::vector<sc_time> started;
  test::record_semaphore(h.sems, 1, 1, &started);
  const auto x = sb(0, 128, 0, DType::fp32, {{1, 512}});
  const auto y = sb(0, 128, 4096, DType::fp32, {{1, 512}});
  // Vector: 64 + 512 = 576 ns, signals s0 at 576.
  h.queue(Engine::vector) = {with_signal(tensor_scalar(y, x, AluOp::mul, test::imm(2)), 0)};
  // Scalar waits s0 >= 1: released at 576, issues 10 ns later at 586 (s1 @start),
  // then 64 + 512 = 576 ns: done at 1162.
  Instruction copy =
      with_wait(instr(Opcode::tensor_copy, sb(0, 128, 8192, DType::fp32, {{1, 512}}), {y}), 0, 1);
  h.queue(Engine::scalar) = {with_signal(std::move(copy), 1, 1, isa::SignalWhen::start)};
  run({&h});
  EXPECT_EQ(started, test::times_ns({586}));
  EXPECT_EQ(h.se.last_done(), ns(1162));
}

// The same program on two harnesses elaborated together: one functional, one timing-only.
void load_mixed_program(engine_harness& h) {
  for (uint32_t p = 0; p < 128; ++p)
    for (uint32_t i = 0; i < 512; ++i) h.sbuf_put(p, 4 * i, std::sin(float(p * 512 + i)));
  // Vector: add N = 256: 64 + max(64, 512) = 576 -> 576, signals s0.
  Instruction add =
      instr(Opcode::tensor_tensor, sb(0, 128, 8192, DType::fp32, {{1, 256}}),
            {sb(0, 128, 0, DType::fp32, {{1, 256}}), sb(0, 128, 1024, DType::fp32, {{1, 256}})});
  add.op0 = AluOp::add;
  h.queue(Engine::vector) = {with_signal(add, 0)};
  // Tensor waits s0: fp32 matmul [128,64]^T x [128,256]: S = 256 x 4 = 1024, 64 + (2 x
  // 128 + 128 + 1024 - 2 = 1406) = 1470 -> 576 + 1470 = 2046, signals s1.
  h.queue(Engine::tensor) = {with_signal(
      with_wait(
          matmul(ps(0, 64, 0, DType::fp32, {{1, 256}}), sb(0, 128, 8192, DType::fp32, {{1, 64}}),
                 sb(0, 128, 0, DType::fp32, {{1, 256}}), false),
          0, 1),
      1)};
  // Scalar: exp (first table load) 64 + 256 + 128 = 448 -> 448; then waits s1 and
  // reads PSUM: exp again 64 + 256 = 320 -> 2046 + 320 = 2366, signals s2.
  h.queue(Engine::scalar) = {
      activation(sb(0, 128, 12288, DType::fp32, {{1, 256}}), sb(0, 128, 0, DType::fp32, {{1, 256}}),
                 ActFunc::exp, test::imm(0.01f)),
      with_signal(with_wait(activation(sb(0, 64, 16384, DType::bf16, {{1, 256}}),
                                       ps(0, 64, 0, DType::fp32, {{1, 256}}), ActFunc::exp,
                                       test::imm(0.001f)),
                            1, 1),
                  2)};
  // GpSimd: iota N = 100: 64 + 150 + 100 = 314.
  Instruction io = instr(Opcode::iota, sb(0, 128, 20480, DType::fp32, {{1, 100}}));
  io.arg0 = test::imm(1);
  io.pstep = 1;
  io.steps = {1, 0, 0, 0};
  h.queue(Engine::gpsimd) = {io};
  // Sync waits s2: 2366 + 64 = 2430.
  h.queue(Engine::sync) = {with_wait(test::nop(), 2, 1)};
}

TEST(Engines, TimingOnlyModeGivesTheSameTimesAsFunctional) {
  engine_harness fn("functional"), tm("timing");
  tm.ctx.functional = false;
  load_mixed_program(fn);
  load_mixed_program(tm);
  run({&fn, &tm});
  ASSERT_TRUE(fn.ctx.faults.empty()) << faults_text(fn.ctx);
  ASSERT_TRUE(tm.ctx.faults.empty()) << faults_text(tm.ctx);
  const double expect_done[5] = {2046, 576, 2366, 314, 2430};  // tensor vector scalar gpsimd sync
  auto fe = fn.all(), te = tm.all();
  for (size_t i = 0; i < fe.size(); ++i) {
    const int k = static_cast<int>(fe[i]->engine_kind());
    EXPECT_EQ(fe[i]->last_done(), ns(expect_done[k])) << fe[i]->name();
    EXPECT_EQ(te[i]->last_done(), fe[i]->last_done()) << te[i]->name();
    EXPECT_EQ(te[i]->busy_ns(), fe[i]->busy_ns()) << te[i]->name();
    EXPECT_EQ(te[i]->sem_wait_ns(), fe[i]->sem_wait_ns()) << te[i]->name();
    EXPECT_EQ(te[i]->instructions(), fe[i]->instructions()) << te[i]->name();
  }
  // Functional wrote results, timing-only nothing.
  EXPECT_NE(fn.sbuf_f32(0, 8192 + 4), 0.0f);
  EXPECT_NE(fn.psum_f32(3, 8), 0.0f);
  EXPECT_EQ(fn.sbuf_f32(127, 20480 + 4 * 99), 1.0f + 127 + 99);
  for (uint32_t p = 0; p < 128; ++p) {
    for (uint64_t b = 8192; b < 8192 + 1024; b += 4) ASSERT_EQ(tm.sbuf_f32(p, b), 0.0f);
    for (uint64_t b = 12288; b < 12288 + 1024; b += 4) ASSERT_EQ(tm.sbuf_f32(p, b), 0.0f);
    for (uint64_t b = 20480; b < 20480 + 400; b += 4) ASSERT_EQ(tm.sbuf_f32(p, b), 0.0f);
    for (uint64_t b = 0; b < 1024; b += 4) ASSERT_EQ(tm.psum_f32(p, b), 0.0f);
  }
}

TEST(Engines, FaultIsRecordedNamingTheInstructionAndDoesNotCrash) {
  engine_harness h("h");
  // Vector: i0 fine (N = 64: 64 + 64 = 128 ns), i1 writes past the 32 KiB partition
  // (bytes [32760, 33016)), i2 never runs.
  Instruction ok = tensor_scalar(sb(0, 128, 4096, DType::fp32, {{1, 64}}),
                                 sb(0, 128, 0, DType::fp32, {{1, 64}}), AluOp::add, test::imm(1));
  Instruction bad = instr(Opcode::tensor_copy, sb(0, 128, 32760, DType::fp32, {{1, 64}}),
                          {sb(0, 128, 0, DType::fp32, {{1, 64}})});
  bad.line = 7;
  h.queue(Engine::vector) = {with_signal(ok, 0), with_signal(bad, 1), with_signal(test::nop(), 2)};
  // GpSimd: operands whose element counts differ (16 vs 8) fail inside the ALU.
  Instruction mismatch =
      instr(Opcode::tensor_tensor, sb(0, 128, 8192, DType::fp32, {{1, 16}}),
            {sb(0, 128, 0, DType::fp32, {{1, 16}}), sb(0, 128, 0, DType::fp32, {{1, 8}})});
  mismatch.op0 = AluOp::add;
  h.queue(Engine::gpsimd) = {mismatch};
  // Sync carries on: 64 ns.
  h.queue(Engine::sync) = {with_signal(test::nop(), 3)};
  run({&h});
  ASSERT_EQ(h.ctx.faults.size(), 2u) << faults_text(h.ctx);
  const sim_fault* vf = nullptr;
  const sim_fault* gf = nullptr;
  for (const auto& f : h.ctx.faults) (f.where == h.ve.name() ? vf : gf) = &f;
  ASSERT_NE(vf, nullptr) << faults_text(h.ctx);
  ASSERT_NE(gf, nullptr) << faults_text(h.ctx);
  EXPECT_NE(vf->message.find("instruction 1 (line 7): tensor_copy"), std::string::npos)
      << vf->message;
  EXPECT_NE(vf->message.find("write of sbuf[0:128, 32760, fp32, [1,64]] failed"), std::string::npos)
      << vf->message;
  EXPECT_NE(vf->message.find("bytes [32760, 33016) outside the partition size 32768"),
            std::string::npos)
      << vf->message;
  EXPECT_EQ(gf->where, h.ge.name());
  EXPECT_NE(gf->message.find("instruction 0: tensor_tensor"), std::string::npos) << gf->message;
  EXPECT_TRUE(h.ve.failed());
  EXPECT_FALSE(h.ve.idle());
  EXPECT_EQ(h.ve.pending().rfind("stopped at instruction 1 (line 7): tensor_copy", 0), 0u)
      << h.ve.pending();
  EXPECT_EQ(h.ve.instructions(), 1u);
  EXPECT_EQ(h.ve.last_done(), ns(128));
  EXPECT_EQ(h.sems.value(0), 1u);
  EXPECT_EQ(h.sems.value(1), 0u);  // the faulting instruction never completed
  EXPECT_EQ(h.sems.value(2), 0u);
  EXPECT_TRUE(h.ge.failed());
  EXPECT_TRUE(h.sy.idle());
  EXPECT_EQ(h.sy.last_done(), ns(64));
  EXPECT_EQ(h.sems.value(3), 1u);
  EXPECT_EQ(h.sbuf_f32(5, 4096 + 4 * 10), 1.0f);  // i0's result (0 + 1) is there
}

// Instruction times past the simulated time range (clocks and costs the config would
// refuse, given to the models directly) are faults naming the instruction, whether
// one duration is too long or the time accumulated over instructions gets there;
// they used to wrap round 2^64 ticks into small or negative-looking times.
TEST(Engines, TimePastTheSimulatedRangeIsAFaultNamingTheInstruction) {
  engine_setup s;
  s.ve.clock_hz = 1e-7;         // 64 overhead cycles: 6.4e8 s
  s.sy.clock_hz = 1e-3;         // 1000 s a cycle
  s.sy.overhead_cycles = 3000;  // 3e6 s a nop: the second ends past 4.6e6 s
  engine_harness h("h", s);
  Instruction v = tensor_scalar(sb(0, 128, 4096, DType::fp32, {{1, 64}}),
                                sb(0, 128, 0, DType::fp32, {{1, 64}}), AluOp::add, test::imm(1));
  v.line = 3;
  h.queue(Engine::vector) = {with_signal(v, 0)};
  Instruction n = with_signal(test::nop(), 1);
  n.line = 5;
  h.queue(Engine::sync) = {n, n};
  run({&h});
  ASSERT_EQ(h.ctx.faults.size(), 2u) << faults_text(h.ctx);
  for (const auto& f : h.ctx.faults) {
    EXPECT_NE(f.message.find("past the simulated time range"), std::string::npos) << f.message;
    const bool vec = f.where == h.ve.name();
    EXPECT_NE(f.message.find(vec ? "instruction 0 (line 3): tensor_scalar"
                                 : "instruction 1 (line 5): nop"),
              std::string::npos)
        << f.message;
  }
  EXPECT_TRUE(h.ve.failed());
  EXPECT_EQ(h.sems.value(0), 0u);
  EXPECT_TRUE(h.sy.failed());
  EXPECT_EQ(h.sems.value(1), 1u);  // the first nop completed, at 3e6 s
  EXPECT_EQ(h.sy.last_done(), sc_time(3e6, sc_core::SC_SEC));
}

TEST(Engines, PendingNamesTheWaitThatBlocks) {
  engine_harness h("h");
  Instruction stuck = with_wait(test::nop(), 9, 1);
  stuck.line = 4;
  h.queue(Engine::scalar) = {with_signal(test::nop(), 0), stuck};
  run({&h});
  EXPECT_FALSE(h.se.idle());
  EXPECT_FALSE(h.se.failed());
  EXPECT_EQ(h.se.pending().rfind("waiting for s9 >= 1 (now 0) at instruction 1 (line 4): nop", 0),
            0u)
      << h.se.pending();
  EXPECT_NE(h.se.pending().find("wait=s9>=1"), std::string::npos) << h.se.pending();
  EXPECT_EQ(h.se.instructions(), 1u);
  EXPECT_TRUE(h.ve.idle());
  EXPECT_EQ(h.ve.pending(), "");
}

}  // namespace
}  // namespace trnsim::models
