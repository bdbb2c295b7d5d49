// Access checks on hand-written programs (tests/e2e/programs): the race detector
// reports a missing wait although this timing orders the accesses (the output is
// even right), the same program with its wait is clean, and poisoning turns a read
// of never-written SBUF into NaN outputs and a report. One Device per test process.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/isa/assembler.h"
#include "platform/config.h"
#include "runtime/device.h"

namespace trnsim::e2e {
namespace {

isa::Program load(const std::string& name) {
  return isa::assemble_file(std::string(TRNSIM_SOURCE_DIR) + "/tests/e2e/programs/checks/" + name);
}

runtime::HostTensor ramp(int64_t rows, int64_t cols) {
  std::vector<float> v(size_t(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 97) * 0.25f - 7.0f;
  return runtime::HostTensor::from_float({rows, cols}, isa::DType::fp32, v);
}

runtime::RunReport run(const std::string& prog, runtime::DeviceOptions o, isa::Program* keep) {
  *keep = load(prog);
  runtime::Device dev(platform::load_config("trn2"), o);
  runtime::Launch l;
  l.program = keep;
  l.inputs["X"] = ramp(128, 64);
  return dev.run({l});
}

runtime::DeviceOptions checks(bool races, bool poison) {
  runtime::DeviceOptions o;
  o.check_races = races;
  o.poison = poison;
  o.fail_on_findings = false;  // these tests look at the findings themselves
  return o;
}

TEST(Checks, MissingWaitIsARaceEvenWhenTimingOrdersIt) {
  isa::Program p;
  const auto rep = run("race_missing_wait.tasm", checks(true, true), &p);
  // The memset before the read takes longer than the load: Y = 2 X in this timing.
  const auto x = ramp(128, 64).to_float(), y = rep.launches[0].outputs.at("Y").to_float();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 2 * x[i]) << i;
  EXPECT_EQ(rep.races, 1u) << rep.check_report;
  EXPECT_EQ(rep.poisoned_reads, 0u) << rep.check_report;
  const std::string& r = rep.check_report;
  // X is [1,64] fp32 per partition at byte 0: bytes 0..255 of partitions 0..127.
  EXPECT_NE(r.find("race (read after write) on chip.core0.sbuf partitions 0..127 bytes 0..255"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("first:  chip.core0.dma0.q0 instruction 0 (line 15): dma_copy"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("second: chip.core0.gpsimd instruction 1 (line 20): tensor_scalar"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("missing edge: chip.core0.dma0.q0 instruction 0 -> chip.core0.gpsimd "
                   "instruction 1"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("s0+1@done"), std::string::npos) << r;
}

TEST(Checks, SameProgramWithItsWaitIsClean) {
  isa::Program p;
  const auto rep = run("race_fixed.tasm", checks(true, true), &p);
  EXPECT_EQ(rep.races, 0u) << rep.check_report;
  EXPECT_EQ(rep.poisoned_reads, 0u) << rep.check_report;
  EXPECT_TRUE(rep.check_report.empty()) << rep.check_report;
}

TEST(Checks, TimingOnlyRunsFindTheSameRace) {
  isa::Program p;
  auto o = checks(true, false);
  o.functional = false;
  const auto rep = run("race_missing_wait.tasm", o, &p);
  EXPECT_EQ(rep.races, 1u) << rep.check_report;
}

TEST(Checks, PoisonedReadIsReportedAndGivesNaN) {
  isa::Program p;
  const auto rep = run("poison_read.tasm", checks(false, true), &p);
  EXPECT_EQ(rep.poisoned_reads, 1u) << rep.check_report;
  // B is [1,64] fp32 at byte 512 of each partition: bytes 512..767.
  EXPECT_NE(rep.check_report.find(
                "poisoned read of never-written chip.core0.sbuf partitions 0..127 bytes 512..767"),
            std::string::npos)
      << rep.check_report;
  EXPECT_NE(rep.check_report.find("by chip.core0.vector instruction 0 (line 19): tensor_tensor"),
            std::string::npos)
      << rep.check_report;
  for (float v : rep.launches[0].outputs.at("Y").to_float()) ASSERT_TRUE(std::isnan(v)) << v;
}

TEST(Checks, WithoutPoisonTheSameBugLooksPlausible) {
  isa::Program p;
  const auto rep = run("poison_read.tasm", checks(false, false), &p);
  // SBUF starts as zeros: Y = X + 0, a plausible answer hiding the bug.
  const auto x = ramp(128, 64).to_float(), y = rep.launches[0].outputs.at("Y").to_float();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << i;
  EXPECT_EQ(rep.poisoned_reads, 0u);
}

TEST(Checks, FailOnFindingsThrowsWithTheReport) {
  isa::Program p;
  auto o = checks(true, false);
  o.fail_on_findings = true;  // what TRNSIM_CHECK=races sets for the test suite
  try {
    run("race_missing_wait.tasm", o, &p);
    FAIL() << "expected RunError";
  } catch (const runtime::RunError& e) {
    EXPECT_NE(std::string(e.what()).find("access checks failed: 1 race(s)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trnsim::e2e
