// End to end (docs/rtl-cosim.md, End to end): an ONNX MLP compiled for the
// small-array config configs/tiny_rtl.yaml runs with the tensor engine's matmuls on
// the RTL PE array (`core.tensor.impl: rtl`), and again on the C++ model in the
// array's numerics (`--set core.tensor.impl=cpp`, `numerics: systolic` from the
// config). The outputs are the same bits; the simulated times are printed side by
// side, and with every N >= min_ii (the config's 16) the RTL's cycles equal the
// model's fold formula, so the simulated times are equal too. The trnsim command
// line runs each simulation in its own process (SystemC elaborates once per
// process).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "runtime/tensor.h"
#include "tests/compiler/onnx_test_util.h"
#include "tests/runtime/cli_harness.h"

namespace trnsim::cosim {
namespace {

namespace fs = std::filesystem;
using test::run_cmd;

// x [64, 96] -> Linear(96, 80), ReLU -> Linear(80, 48), ReLU -> Linear(48, 32) -> y.
constexpr int64_t kBatch = 64, kIn = 96, kH1 = 80, kH2 = 48, kOut = 32;

ir::Tensor random_tensor(ir::Shape shape, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return ir::Tensor::from_floats(std::move(shape), std::move(v));
}

// Writes mlp.onnx and x.npy into `dir`.
void write_mlp(const fs::path& dir) {
  using frontend::testing::ModelBuilder;
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {kBatch, kIn});
  const int64_t dims[] = {kIn, kH1, kH2, kOut};
  std::string h = "x";
  for (int l = 0; l < 3; ++l) {
    const std::string n = std::to_string(l + 1);
    b.init("W" + n, random_tensor({dims[l], dims[l + 1]}, 10 + l, 1.0f / std::sqrt(dims[l])));
    b.init("b" + n, random_tensor({dims[l + 1]}, 20 + l, 0.1f));
    b.node("MatMul", {h, "W" + n}, {"mm" + n});
    const std::string out = l == 2 ? "y" : "a" + n;
    b.node("Add", {"mm" + n, "b" + n}, {l == 2 ? out : "z" + n});
    if (l < 2) b.node("Relu", {"z" + n}, {out});
    h = out;
  }
  b.output("y");
  std::ofstream(dir / "mlp.onnx", std::ios::binary) << b.bytes();
  const ir::Tensor x = random_tensor({kBatch, kIn}, 5, 1.0f);
  runtime::write_npy((dir / "x.npy").string(),
                     runtime::HostTensor::from_float({kBatch, kIn}, isa::DType::fp32, x.floats()));
}

struct MlpRun {
  std::string log;
  std::vector<uint8_t> y;              // the output's bytes
  std::map<std::string, double> stat;  // --stats-text values by dotted name
  double stat_of(const std::string& key) const {
    const auto it = stat.find(key);
    if (it != stat.end()) return it->second;
    ADD_FAILURE() << "no stat " << key << " in\n" << log;
    return -1;
  }
};

MlpRun run_mlp(const fs::path& dir, const std::string& name, const std::string& sets) {
  const fs::path out = dir / name;
  const std::string cmd = test::trnsim_bin() + " run " + (dir / "mlp.onnx").string() + " -c " +
                          test::source_path("configs/tiny_rtl.yaml") +
                          " --precision bf16 --input x=" + (dir / "x.npy").string() +
                          " --output-dir " + out.string() + " --stats-text " +
                          (dir / (name + ".stats")).string() + sets;
  const test::CmdResult r = run_cmd(cmd);
  MlpRun run;
  run.log = cmd + "\n" + r.out;
  EXPECT_EQ(r.code, 0) << run.log;
  std::ifstream y(out / "y.npy", std::ios::binary);
  run.y.assign(std::istreambuf_iterator<char>(y), std::istreambuf_iterator<char>());
  std::ifstream st(dir / (name + ".stats"));
  for (std::string line; std::getline(st, line);) {
    std::istringstream ls(line);
    std::string key;
    double v;
    if (ls >> key >> v) run.stat[key] = v;
  }
  return run;
}

class MlpRtl : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    write_mlp(dir_);
  }
  fs::path dir_;
};

const std::string kRtl = "chip.core0.engines.tensor.rtl.";

// The three matmuls, each stationary = the activations^T block [K, M = 64 rows] and
// moving = the weights [K, N]: on the 8x8 array, ceil(K/8) ceil(64/8) passes of
// 2*8 + 8 + N - 2 cycles (the fold formula; N >= min_ii = 16 streams N columns):
//   K=96, N=80: 12 * 8 * 102 = 9792;  K=80, N=48: 10 * 8 * 70 = 5600;
//   K=48, N=32:  6 * 8 * 54 = 2592;   in all 17984 cycles, in 96 + 80 + 48 = 224 jobs.
constexpr double kFoldCycles = 9792 + 5600 + 2592, kJobs = 96 + 80 + 48;

TEST_F(MlpRtl, OutputsBitIdenticalToSystolicCppAndTimesSideBySide) {
  const MlpRun rtl = run_mlp(dir_, "rtl", "");
  const MlpRun cpp = run_mlp(dir_, "cpp", " --set core.tensor.impl=cpp");
  const MlpRun fast =
      run_mlp(dir_, "fast", " --set core.tensor.impl=cpp --set core.tensor.numerics=fast");
  ASSERT_FALSE(rtl.y.empty()) << rtl.log;
  EXPECT_EQ(rtl.y, cpp.y) << "impl: rtl and impl: cpp with numerics: systolic differ";

  EXPECT_EQ(rtl.stat_of(kRtl + "matmuls"), 3);
  EXPECT_EQ(rtl.stat_of(kRtl + "tile_jobs"), kJobs);
  EXPECT_EQ(rtl.stat_of(kRtl + "rtl_cycles"), kFoldCycles);
  EXPECT_EQ(rtl.stat_of(kRtl + "model_cycles"), kFoldCycles);
  // Equal cycles: the whole run takes the same simulated time on either side.
  EXPECT_EQ(rtl.stat_of("simulated_ns"), cpp.stat_of("simulated_ns"));
  EXPECT_EQ(rtl.stat_of("chip.core0.engines.tensor.busy_ns"),
            cpp.stat_of("chip.core0.engines.tensor.busy_ns"));

  // The fast numerics (one fp32 sgemm over all of K) round differently, but little.
  const auto yr = runtime::read_npy((dir_ / "rtl" / "y.npy").string()).to_float();
  const auto yf = runtime::read_npy((dir_ / "fast" / "y.npy").string()).to_float();
  ASSERT_EQ(yr.size(), size_t{kBatch * kOut});
  ASSERT_EQ(yf.size(), yr.size());
  size_t differ = 0;
  double worst = 0;
  for (size_t i = 0; i < yr.size(); ++i) {
    differ += yr[i] != yf[i];
    worst = std::max(worst, std::fabs(double(yr[i]) - yf[i]) / (1e-3 + std::fabs(double(yf[i]))));
  }
  EXPECT_LT(worst, 1e-2);  // the bf16 output rounding dominates

  std::printf(
      "MLP x[64,96] -> 80 -> 48 -> 32 on tiny_rtl (8x8 PE array, bf16):\n"
      "  %-28s %12s %14s %12s\n"
      "  %-28s %9.0f ns %14.0f %12.3f\n"
      "  %-28s %9.0f ns %14.0f %12s\n"
      "  %-28s %9.0f ns %14s %12s\n"
      "  outputs: rtl == cpp systolic bit for bit; cpp fast differs in %zu of %zu values "
      "(max rel. %.1e)\n",
      "run", "simulated", "matmul cycles", "host s", "impl: rtl", rtl.stat_of("simulated_ns"),
      rtl.stat_of(kRtl + "rtl_cycles"), rtl.stat_of(kRtl + "host_seconds"),
      "impl: cpp, numerics: systolic", cpp.stat_of("simulated_ns"),
      rtl.stat_of(kRtl + "model_cycles"), "-", "impl: cpp, numerics: fast",
      fast.stat_of("simulated_ns"), "same", "-", differ, yr.size(), worst);
}

// Back-pressure on the result stream (30 %, seeded) stretches the RTL's cycles by
// exactly the stalled cycles and changes no bit; the timed adapter (a --sc block on
// a SystemC clock) gives the same data, cycles, stalls and simulated time as the
// decoupled one.
TEST_F(MlpRtl, BackPressureAndTimedModeChangeNoBit) {
  const MlpRun base = run_mlp(dir_, "base", "");
  const std::string bp = " --set core.tensor.rtl.back_pressure=0.3 --set core.tensor.rtl.seed=7";
  const MlpRun dec = run_mlp(dir_, "decoupled", bp);
  const MlpRun timed = run_mlp(dir_, "timed",
                               bp + " --set core.tensor.rtl.block=pe_array_8x8_sc"
                                    " --set core.tensor.rtl.mode=timed");
  ASSERT_FALSE(base.y.empty()) << base.log;
  EXPECT_EQ(dec.y, base.y);
  EXPECT_EQ(timed.y, base.y);
  const double stalls = dec.stat_of(kRtl + "stall_cycles");
  EXPECT_GT(stalls, 0);
  EXPECT_EQ(dec.stat_of(kRtl + "rtl_cycles"), kFoldCycles + stalls);
  EXPECT_EQ(dec.stat_of(kRtl + "model_cycles"), kFoldCycles);
  // The tensor engine runs one instruction at a time (no background load): its busy
  // time grows by the stalls, 1 ns each at 1 GHz.
  EXPECT_NEAR(dec.stat_of("chip.core0.engines.tensor.busy_ns") -
                  base.stat_of("chip.core0.engines.tensor.busy_ns"),
              stalls, 1e-6);
  EXPECT_GT(dec.stat_of("simulated_ns"), base.stat_of("simulated_ns"));
  for (const char* k : {"rtl_cycles", "stall_cycles", "tile_jobs"})
    EXPECT_EQ(timed.stat_of(kRtl + k), dec.stat_of(kRtl + k)) << k;
  EXPECT_EQ(timed.stat_of("simulated_ns"), dec.stat_of("simulated_ns"));
  std::printf(
      "MLP on tiny_rtl at 30%% back-pressure: %g stall cycles; simulated %g ns "
      "(decoupled) = %g ns (timed), %g ns without; RTL speed %.0f (decoupled) vs %.0f "
      "(timed) cycles/s\n",
      stalls, dec.stat_of("simulated_ns"), timed.stat_of("simulated_ns"),
      base.stat_of("simulated_ns"), dec.stat_of(kRtl + "rtl_cycles_per_host_second"),
      timed.stat_of(kRtl + "rtl_cycles_per_host_second"));
}

}  // namespace
}  // namespace trnsim::cosim
