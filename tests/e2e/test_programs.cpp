// End-to-end: hand-written assembly programs (tests/e2e/programs/*.tasm) assembled,
// validated, run on the `tiny` platform through the runtime, and every output
// element compared with a plain C++ reference. SystemC elaborates once per
// process, so each test builds at most one Device (ctest runs each test alone).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "models/isa/assembler.h"
#include "models/isa/validate.h"
#include "platform/config.h"
#include "runtime/device.h"
#include "tests/e2e/reference.h"

namespace trnsim::e2e {
namespace {

using isa::DType;
using runtime::HostTensor;

std::string program_path(const std::string& name) {
  return std::string(TRNSIM_SOURCE_DIR) + "/tests/e2e/programs/" + name;
}

isa::Program load_program(const std::string& name) {
  return isa::assemble_file(program_path(name));
}

// Uniform values in [lo, hi) from a fixed seed, rounded to `t` (so bf16 inputs are
// exactly what the reference sees).
HostTensor random_tensor(const std::vector<int64_t>& shape, DType t, uint32_t seed, float lo,
                         float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return HostTensor::from_float(shape, t, v);
}

// Checks every launch reports what the program holds and took simulated time.
void check_report(const runtime::RunReport& rep, const isa::Program& p, size_t launches) {
  ASSERT_EQ(rep.launches.size(), launches);
  EXPECT_GT(rep.simulated_ns, 0.0);
  for (const runtime::LaunchResult& l : rep.launches) {
    EXPECT_GT(l.simulated_ns, 0.0);
    EXPECT_LE(l.simulated_ns, rep.simulated_ns);
    EXPECT_EQ(l.instructions, p.instruction_count());
    uint64_t per_engine = 0;
    for (const runtime::EngineStats& e : l.engines) per_engine += e.instructions;
    EXPECT_EQ(per_engine, p.instruction_count()) << "per-engine counts should cover every queue";
  }
}

const HostTensor& output(const runtime::LaunchResult& l, const std::string& name) {
  auto it = l.outputs.find(name);
  if (it == l.outputs.end()) throw std::runtime_error("launch has no output '" + name + "'");
  return it->second;
}

// ---- static checks of all programs (no Device) -------------------------------------

TEST(E2EPrograms, AssembleAndValidateOnTiny) {
  const platform::platform_config cfg = platform::load_config("tiny");
  // name -> instruction count, worked out from the .tasm files:
  //   matmul_gelu: 3 x (A^T + 2 W halves) + bias = 10 loads, 5 chunks x 3 matmuls,
  //                5 activations, 5 chunks x 2 half stores = 10 + 15 + 5 + 10 = 40
  //   softmax: 2 loads + 2 stores + 4 vector + 1 scalar = 9
  //   layernorm: 4 loads + 2 stores + 2 x 4 vector + 2 scalar + 4 gpsimd = 20
  //   dma16: 16 queues x (load + store) = 32
  const std::map<std::string, size_t> programs = {
      {"matmul_gelu.tasm", 40}, {"softmax.tasm", 9}, {"layernorm.tasm", 20}, {"dma16.tasm", 32}};
  for (const auto& [name, count] : programs) {
    SCOPED_TRACE(name);
    isa::Program p = load_program(name);
    EXPECT_EQ(p.instruction_count(), count);
    EXPECT_NO_THROW(isa::validate(p, cfg.limits()));
    // Every program fits twice into HBM (the two-core run loads two copies).
    EXPECT_LE(2 * p.hbm_bytes(), cfg.hbm.size_bytes);
  }
  isa::Program d = load_program("dma16.tasm");
  ASSERT_EQ(d.queues.size(), 16u);
  std::vector<bool> engine_used(16);
  for (const isa::Queue& q : d.queues) {
    EXPECT_EQ(q.engine, isa::Engine::dma);
    ASSERT_LT(q.dma_engine, 16);
    EXPECT_FALSE(engine_used[q.dma_engine]) << "DMA engine " << q.dma_engine << " used twice";
    engine_used[q.dma_engine] = true;
  }
}

// ---- matmul + bias + gelu ---------------------------------------------------------

constexpr int kM = 256, kK = 384, kN = 640;

struct MatmulGeluCase {
  std::map<std::string, HostTensor> inputs;
  std::vector<double> want;
};

// A uniform in [-1,1), W in [-0.1,0.1) so the pre-activations (std ~0.65) exercise
// both the linear and the curved part of gelu; bias in [-0.5,0.5).
MatmulGeluCase matmul_gelu_case(uint32_t seed) {
  MatmulGeluCase c;
  HostTensor a = random_tensor({kM, kK}, DType::bf16, seed, -1.0f, 1.0f);
  HostTensor w = random_tensor({kK, kN}, DType::bf16, seed + 1, -0.1f, 0.1f);
  HostTensor b = random_tensor({1, kN}, DType::fp32, seed + 2, -0.5f, 0.5f);
  c.want = ref_matmul_gelu(a.to_float(), w.to_float(), b.to_float(), kM, kK, kN);
  c.inputs = {{"A", a}, {"W", w}, {"b", b}};
  return c;
}

// bf16 x bf16 products are exact in fp32 and the 384-term sums are accumulated in
// fp32, so the result is within 1e-3 (abs + rel) of the fp64 reference.
void check_matmul_gelu(const runtime::LaunchResult& l, const MatmulGeluCase& c,
                       const std::string& what) {
  const HostTensor& out = output(l, "C");
  EXPECT_EQ(out.dtype, DType::fp32);
  ASSERT_EQ(out.shape, (std::vector<int64_t>{kM, kN}));
  EXPECT_TRUE(all_close(what, out.to_float(), c.want, out.shape, 1e-3, 1e-3));
}

TEST(E2EMatmulGelu, OneCore) {
  const platform::platform_config cfg = platform::load_config("tiny");
  isa::Program p = load_program("matmul_gelu.tasm");
  isa::validate(p, cfg.limits());
  MatmulGeluCase c = matmul_gelu_case(1234);
  runtime::Device dev(cfg);
  runtime::RunReport rep = dev.run({runtime::Launch{&p, c.inputs, 0}});
  check_report(rep, p, 1);
  check_matmul_gelu(rep.launches[0], c, "C");
  // Loads, matmuls, activations and stores overlap: the run is shorter than the
  // engines' busy times added up (14 DMA engines alone move 1.35 MB at 10 B/ns each).
  double busy = 0;
  for (const runtime::EngineStats& e : rep.launches[0].engines) busy += e.busy_ns;
  EXPECT_LT(rep.launches[0].simulated_ns, busy);
}

// The same program on both cores of the chip in one run, with different inputs:
// the runtime places each copy at its own HBM base.
TEST(E2EMatmulGelu, TwoCoresOneRun) {
  const platform::platform_config cfg = platform::load_config("tiny");
  ASSERT_GE(cfg.cores, 2u) << "the tiny chip should have two cores";
  isa::Program p = load_program("matmul_gelu.tasm");
  MatmulGeluCase c0 = matmul_gelu_case(77);
  MatmulGeluCase c1 = matmul_gelu_case(9001);
  runtime::Device dev(cfg);
  runtime::RunReport rep =
      dev.run({runtime::Launch{&p, c0.inputs, 0}, runtime::Launch{&p, c1.inputs, 1}});
  check_report(rep, p, 2);
  check_matmul_gelu(rep.launches[0], c0, "core 0 C");
  check_matmul_gelu(rep.launches[1], c1, "core 1 C");
  // The two results really differ (each core read its own inputs).
  EXPECT_NE(output(rep.launches[0], "C").data, output(rep.launches[1], "C").data);
}

// ---- softmax ------------------------------------------------------------------------

TEST(E2ESoftmax, Rows128x1000) {
  const platform::platform_config cfg = platform::load_config("tiny");
  isa::Program p = load_program("softmax.tasm");
  isa::validate(p, cfg.limits());
  // Uniform [-10, 10) plus a row offset of -60, 0, 60 or 120: softmax is shift
  // invariant, so only the overflow of exp(x) near x = 130 (fp32 overflows past
  // e^88.7) reveals a missing or wrong max subtraction.
  HostTensor x0 = random_tensor({128, 1000}, DType::fp32, 42, -10.0f, 10.0f);
  std::vector<float> xv = x0.to_float();
  for (int r = 0; r < 128; ++r)
    for (int c = 0; c < 1000; ++c) xv[r * 1000 + c] += (r % 4) * 60.0f - 60.0f;
  HostTensor x = HostTensor::from_float({128, 1000}, DType::fp32, xv);
  std::vector<double> want = ref_softmax(x.to_float(), 128, 1000);
  runtime::Device dev(cfg);
  runtime::RunReport rep = dev.run({runtime::Launch{&p, {{"X", x}}, 0}});
  check_report(rep, p, 1);
  const HostTensor& y = output(rep.launches[0], "Y");
  ASSERT_EQ(y.shape, (std::vector<int64_t>{128, 1000}));
  EXPECT_TRUE(all_close("Y", y.to_float(), want, y.shape, 1e-5, 1e-4));
}

// ---- layer norm ---------------------------------------------------------------------

TEST(E2ELayerNorm, Rows256x768) {
  const platform::platform_config cfg = platform::load_config("tiny");
  isa::Program p = load_program("layernorm.tasm");
  isa::validate(p, cfg.limits());
  // Each row gets its own offset and scale so mean and variance differ per row.
  HostTensor x0 = random_tensor({256, 768}, DType::fp32, 7, -1.0f, 1.0f);
  std::vector<float> xv = x0.to_float();
  for (int r = 0; r < 256; ++r)
    for (int c = 0; c < 768; ++c)
      xv[r * 768 + c] = xv[r * 768 + c] * (0.5f + r / 64.0f) + (r - 128) * 0.05f;
  HostTensor x = HostTensor::from_float({256, 768}, DType::fp32, xv);
  HostTensor gamma = random_tensor({768}, DType::fp32, 8, 0.5f, 1.5f);
  HostTensor beta = random_tensor({768}, DType::fp32, 9, -0.5f, 0.5f);
  std::vector<double> want = ref_layernorm(xv, gamma.to_float(), beta.to_float(), 256, 768, 1e-5);
  runtime::Device dev(cfg);
  runtime::RunReport rep =
      dev.run({runtime::Launch{&p, {{"X", x}, {"gamma", gamma}, {"beta", beta}}, 0}});
  check_report(rep, p, 1);
  const HostTensor& y = output(rep.launches[0], "Y");
  ASSERT_EQ(y.shape, (std::vector<int64_t>{256, 768}));
  EXPECT_TRUE(all_close("Y", y.to_float(), want, y.shape, 1e-5, 1e-4));
}

// ---- 16 DMA engines ---------------------------------------------------------------

TEST(E2EDma16, CopiesExactly) {
  const platform::platform_config cfg = platform::load_config("tiny");
  isa::Program p = load_program("dma16.tasm");
  isa::validate(p, cfg.limits());
  HostTensor x = random_tensor({2048, 256}, DType::fp32, 16, -100.0f, 100.0f);
  runtime::Device dev(cfg);
  runtime::RunReport rep = dev.run({runtime::Launch{&p, {{"X", x}}, 0}});
  check_report(rep, p, 1);
  const HostTensor& y = output(rep.launches[0], "Y");
  ASSERT_EQ(y.shape, x.shape);
  ASSERT_EQ(y.dtype, DType::fp32);
  // Exact: compare every element bit for bit (all_close with zero tolerance).
  std::vector<float> xf = x.to_float();
  EXPECT_TRUE(
      all_close("Y", y.to_float(), std::vector<double>(xf.begin(), xf.end()), y.shape, 0.0, 0.0));
  EXPECT_EQ(y.data, x.data);
  // The 16 engines run at once. 2 x 2 MiB cross HBM, so the run takes at least
  // 4 MiB / HBM bandwidth (tiny: 4194304 B / 100 B/ns = 41943 ns); one engine
  // doing all of it would need 4 MiB / 10 B/ns = 419430 ns; require < 1/4 of that.
  const double bytes = 2.0 * static_cast<double>(x.data.size());
  const double hbm_ns = bytes / cfg.hbm.bandwidth_bps * 1e9;
  const double one_engine_ns = bytes / cfg.core.dma.bandwidth_bps * 1e9;
  EXPECT_GE(rep.launches[0].simulated_ns, hbm_ns);
  EXPECT_LT(rep.launches[0].simulated_ns, one_engine_ns / 4);
}

}  // namespace
}  // namespace trnsim::e2e
