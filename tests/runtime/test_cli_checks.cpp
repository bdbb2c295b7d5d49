// `trnsim run` access checks and sync mutation from the command line: exit codes,
// the report, --races=warn, --poison values, --drop-sync, and their usage errors.
#include <gtest/gtest.h>

#include <string>

#include "tests/runtime/cli_harness.h"

namespace trnsim {
namespace {

using test::run_cmd;
using test::source_path;
using test::trnsim_bin;

std::string program(const std::string& name) {
  return source_path("tests/e2e/programs/checks/" + name);
}

// Without the suite's TRNSIM_CHECK: these tests choose the checks themselves.
std::string bin() {
  return "env -u TRNSIM_CHECK " + trnsim_bin();
}

bool has(const std::string& out, const std::string& s) {
  return out.find(s) != std::string::npos;
}

TEST(CliChecks, RaceFailsTheRunUnlessWarn) {
  auto r = run_cmd(bin() + " run " + program("race_missing_wait.tasm") +
                   " -c tiny --random-inputs=1 --check-races");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "race (read after write) on chip.core0.sbuf")) << r.out;
  EXPECT_TRUE(has(r.out, "checks: 1 race(s), 0 poisoned read(s) (not checked)")) << r.out;
  r = run_cmd(bin() + " run " + program("race_missing_wait.tasm") +
              " -c tiny --random-inputs=1 --check-races --races=warn");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "checks: 1 race(s)")) << r.out;
}

TEST(CliChecks, CleanProgramPasses) {
  auto r = run_cmd(bin() + " run " + program("race_fixed.tasm") +
                   " -c tiny --random-inputs=1 --check-races --poison");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "checks: 0 race(s), 0 poisoned read(s)\n")) << r.out;
}

TEST(CliChecks, PoisonedReadFailsTheRun) {
  auto r = run_cmd(bin() + " run " + program("poison_read.tasm") +
                   " -c tiny --random-inputs=1 --poison=0xfe");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "poisoned read of never-written chip.core0.sbuf")) << r.out;
  EXPECT_TRUE(has(r.out, "checks: 0 race(s) (not checked), 1 poisoned read(s)")) << r.out;
}

TEST(CliChecks, DropSyncMakesACleanProgramRace) {
  // race_fixed.tasm's waits in disassembly order: 0 = the DMA store's s1>=1,
  // 1 = gpsimd's s0>=1. Either one dropped leaves a race.
  for (int n : {0, 1}) {
    auto r = run_cmd(bin() + " run " + program("race_fixed.tasm") +
                     " -c tiny --random-inputs=1 --check-races --drop-sync " + std::to_string(n));
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_TRUE(has(r.out, "drop-sync " + std::to_string(n) + " of 2: removed ")) << r.out;
    EXPECT_TRUE(has(r.out, "checks: 1 race(s)")) << r.out;
  }
  auto r = run_cmd(bin() + " run " + program("race_fixed.tasm") +
                   " -c tiny --random-inputs=1 --drop-sync 1");
  EXPECT_TRUE(has(r.out, "removed gpsimd instruction 1 (line 18): wait s0>=1")) << r.out;
}

TEST(CliChecks, UsageErrors) {
  const std::string base = bin() + " run " + program("race_fixed.tasm") + " -c tiny ";
  auto r = run_cmd(base + "--races=maybe");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--races: 'maybe' is not one of error, warn")) << r.out;
  r = run_cmd(base + "--poison=0x1ff");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--poison: '0x1ff' is not a byte value")) << r.out;
  r = run_cmd(base + "--drop-sync 2");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--drop-sync 2: program 'race_fixed' has 2 semaphore waits (0..1)"))
      << r.out;
  r = run_cmd(base + "--drop-sync -1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.out, "--drop-sync: '-1' is not an index")) << r.out;
}

}  // namespace
}  // namespace trnsim
