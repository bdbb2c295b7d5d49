// The tensor engine with `core.tensor.impl: rtl` on configs/tiny_rtl.yaml, through
// the trnsim command line (one simulation per process): a hand-written matmul
// program against the systolic reference and the fold formula, the timing relation
// when N < min_ii, unsupported dtypes as errors naming the instruction, and the
// waveform option of the config.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "cosim_test_util.h"
#include "models/cosim/systolic_reference.h"
#include "models/cosim/tlm_matmul.h"
#include "runtime/tensor.h"
#include "tests/runtime/cli_harness.h"

namespace trnsim::cosim {
namespace {

namespace fs = std::filesystem;
namespace cli = trnsim::test;  // the command-line harness

// C[24,40] = A[16,24]^T @ B[16,40]: K = 16 (2 folds of 8 rows), M = 24 (3 column
// folds), N = 40 vectors; then PSUM -> SBUF (vector engine) -> HBM.
constexpr uint32_t K = 16, M = 24, N = 40;

std::string program(const char* dtype) {
  const bool bf = std::string(dtype) == "bf16";
  const int esz = bf ? 2 : 4;
  std::ostringstream p;
  p << ".program mm\n.semaphores 3\n"
    << ".tensor A [16,24] " << dtype << " input @0\n"
    << ".tensor B [16,40] " << dtype << " input @" << 16 * 24 * esz << "\n"
    << ".tensor C [24,40] fp32 output @8192\n"
    << ".queue dma 0 0\n"
    << "dma_copy dst=sbuf[0:16, 0, " << dtype << ", [1,24]] src=hbm[16x24, @A, " << dtype
    << ", [1,24]] signal=s0+1\n"
    << ".queue dma 1 0\n"
    << "dma_copy dst=sbuf[0:16, 256, " << dtype << ", [1,40]] src=hbm[16x40, @B, " << dtype
    << ", [1,40]] signal=s0+1\n"
    << ".queue tensor\n"
    << "matmul dst=psum[0:24, 0, fp32, [1,40]] stationary=sbuf[0:16, 0, " << dtype
    << ", [1,24]] moving=sbuf[0:16, 256, " << dtype
    << ", [1,40]] accumulate=0 wait=s0>=2 signal=s1+1\n"
    << ".queue vector\n"
    << "tensor_copy dst=sbuf[0:24, 512, fp32, [1,40]] src=psum[0:24, 0, fp32, [1,40]] "
       "wait=s1>=1 signal=s2+1\n"
    << ".queue dma 2 0\n"
    << "dma_copy dst=hbm[24x40, @C, fp32, [1,40]] src=sbuf[0:24, 512, fp32, [1,40]] "
       "wait=s2>=1\n";
  return p.str();
}

float bf16_value(uint16_t h) {
  return std::bit_cast<float>(uint32_t{h} << 16);
}

struct CliRun {
  int code = -1;
  std::string log;
  std::vector<float> c;
  std::map<std::string, double> stat;
  double stat_of(const std::string& key) const {
    const auto it = stat.find(key);
    if (it != stat.end()) return it->second;
    ADD_FAILURE() << "no stat " << key << " in\n" << log;
    return -1;
  }
};

class TensorRtl : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = cli::temp_dir(std::string("tensor_rtl_") +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::mt19937_64 rng(3);
    a_ = test::random_bf16(rng, K * M);
    b_ = test::random_bf16(rng, K * N);
    std::vector<float> af, bf;
    for (uint16_t h : a_) af.push_back(bf16_value(h));
    for (uint16_t h : b_) bf.push_back(bf16_value(h));
    runtime::write_npy((dir_ / "a.npy").string(),
                       runtime::HostTensor::from_float({K, M}, isa::DType::fp32, af));
    runtime::write_npy((dir_ / "b.npy").string(),
                       runtime::HostTensor::from_float({K, N}, isa::DType::fp32, bf));
  }

  CliRun run(const std::string& name, const std::string& dtype, const std::string& sets) {
    const std::string prog = cli::write_text(dir_ / (name + ".tasm"), program(dtype.c_str()));
    const fs::path out = dir_ / name;
    const std::string cmd =
        cli::trnsim_bin() + " run " + prog + " -c " + cli::source_path("configs/tiny_rtl.yaml") +
        " --input A=" + (dir_ / "a.npy").string() + " --input B=" + (dir_ / "b.npy").string() +
        " --output-dir " + out.string() + " --stats-text " + (dir_ / (name + ".stats")).string() +
        sets;
    const cli::CmdResult r = cli::run_cmd(cmd);
    CliRun c;
    c.code = r.code;
    c.log = cmd + "\n" + r.out;
    if (r.code != 0) return c;
    c.c = runtime::read_npy((out / "C.npy").string()).to_float();
    std::ifstream st(dir_ / (name + ".stats"));
    for (std::string line; std::getline(st, line);) {
      std::istringstream ls(line);
      std::string key;
      double v;
      if (ls >> key >> v) c.stat[key] = v;
    }
    return c;
  }

  // The systolic numerics folded on the 8x8 array, as rtl_matmul_transport folds.
  std::vector<float> reference() const {
    std::vector<float> out(M * N);
    const auto job = [](const std::vector<uint16_t>& w, const std::vector<uint16_t>& x,
                        uint32_t vectors, fold_job& j) {
      j.out = systolic_reference(w, 8, 8, x, vectors);
      return true;
    };
    fold_matmul(a_.data(), b_.data(), K, M, N, 8, 8, job, out.data());
    return out;
  }

  fs::path dir_;
  std::vector<uint16_t> a_, b_;
};

const std::string kRtl = "chip.core0.engines.tensor.rtl.";
const std::string kTensor = "chip.core0.engines.tensor.";

TEST_F(TensorRtl, MatmulMatchesTheReferenceAndTheRtlCyclesReplaceTheFoldFormula) {
  // min_ii = 64 > N: the cost model streams 64 columns a pass, the RTL streams N.
  const CliRun rtl = run("rtl", "bf16", " --set core.tensor.min_ii=64");
  const CliRun cpp = run("cpp", "bf16", " --set core.tensor.min_ii=64 --set core.tensor.impl=cpp");
  ASSERT_EQ(rtl.code, 0) << rtl.log;
  ASSERT_EQ(cpp.code, 0) << cpp.log;
  const std::vector<float> want = reference();
  ASSERT_EQ(rtl.c.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(rtl.c[i]), std::bit_cast<uint32_t>(want[i])) << i;
  EXPECT_EQ(cpp.c, rtl.c);  // numerics: systolic, bit for bit

  // 2 K folds x 3 M folds = 6 passes (tile jobs). RTL: 6 (2*8 + 8 + 40 - 2) = 6 * 62 =
  // 372 cycles; model: 6 (2*8 + 8 + max(40, 64) - 2) = 6 * 86 = 516.
  EXPECT_EQ(rtl.stat_of(kRtl + "matmuls"), 1);
  EXPECT_EQ(rtl.stat_of(kRtl + "tile_jobs"), 6);
  EXPECT_EQ(rtl.stat_of(kRtl + "rtl_cycles"), 372);
  EXPECT_EQ(rtl.stat_of(kRtl + "model_cycles"), 516);
  EXPECT_EQ(rtl.stat_of(kRtl + "stall_cycles"), 0);
  EXPECT_GT(rtl.stat_of(kRtl + "rtl_cycles_per_host_second"), 0);
  EXPECT_EQ(cpp.stat.count(kRtl + "rtl_cycles"), 0u);  // no RTL group with impl: cpp
  // The matmul is the tensor engine's only instruction: 64 cycles of overhead plus its
  // array time at 1 GHz, 64 + 372 = 436 ns on the RTL, 64 + 516 = 580 ns on the model.
  EXPECT_DOUBLE_EQ(rtl.stat_of(kTensor + "busy_ns"), 436);
  EXPECT_DOUBLE_EQ(cpp.stat_of(kTensor + "busy_ns"), 580);
  EXPECT_DOUBLE_EQ(cpp.stat_of("simulated_ns") - rtl.stat_of("simulated_ns"), 580 - 436);
  std::printf(
      "matmul [16,24]^T x [16,40] on 8x8: rtl %g ns (%g RTL cycles), cpp %g ns (%g model "
      "cycles)\n",
      rtl.stat_of("simulated_ns"), rtl.stat_of(kRtl + "rtl_cycles"), cpp.stat_of("simulated_ns"),
      rtl.stat_of(kRtl + "model_cycles"));
}

TEST_F(TensorRtl, UnsupportedDtypeIsAnErrorNamingTheInstruction) {
  // The matmul is instruction 0 of the tensor queue, on line 11 of the program.
  const CliRun rtl = run("rtl", "fp32", "");
  EXPECT_NE(rtl.code, 0);
  EXPECT_NE(rtl.log.find("instruction 0 (line 11): matmul"), std::string::npos) << rtl.log;
  EXPECT_NE(rtl.log.find("rtl pe_array_8x8: the RTL PE array takes bf16 stationary and moving "
                         "operands and writes fp32, got fp32 x fp32 -> fp32"),
            std::string::npos)
      << rtl.log;
  const CliRun cpp = run("cpp", "fp32", " --set core.tensor.impl=cpp");
  EXPECT_NE(cpp.code, 0);
  EXPECT_NE(cpp.log.find("instruction 0 (line 11): matmul"), std::string::npos) << cpp.log;
  EXPECT_NE(cpp.log.find("numerics: systolic (the PE array's numerics) takes bf16 stationary "
                         "and moving operands and writes fp32, got fp32 x fp32 -> fp32"),
            std::string::npos)
      << cpp.log;
  // The C++ model's fast numerics take fp32.
  EXPECT_EQ(run("fast", "fp32", " --set core.tensor.impl=cpp --set core.tensor.numerics=fast").code,
            0);
}

TEST_F(TensorRtl, WaveformFromTheConfig) {
  const std::string fst = (dir_ / "te.fst").string();
  const CliRun r = run(
      "wave", "bf16",
      " --set core.tensor.rtl.block=pe_array_8x8_trace --set 'core.tensor.rtl.waveform={path: " +
          fst + ", depth: 1, to: 200}'");
  ASSERT_EQ(r.code, 0) << r.log;
  EXPECT_EQ(r.stat_of(kRtl + "rtl_cycles"), 372);  // 6 (2*8 + 8 + 40 - 2), as above
  ASSERT_TRUE(fs::exists(fst));
  EXPECT_GT(fs::file_size(fst), 0u);
  // Without TRACE in the build there is no waveform: a config error naming the key.
  const CliRun bad = run("bad", "bf16", " --set core.tensor.rtl.waveform.path=" + fst);
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.log.find("--set core.tensor.rtl.waveform: block pe_array_8x8 was built without "
                         "TRACE"),
            std::string::npos)
      << bad.log;
}

}  // namespace
}  // namespace trnsim::cosim
