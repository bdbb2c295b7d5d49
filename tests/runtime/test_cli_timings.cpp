// `trnsim compile --timings`: one line per compiler phase, and the same program as
// without the flag.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "tests/runtime/cli_harness.h"

namespace trnsim::test {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(CliTimings, PrintsEveryPhaseAndKeepsTheProgram) {
  const auto d = temp_dir("cli_timings_phases");
  const std::string model = source_path("tests/e2e/fuzz_regressions/error-pad-s305.onnx");
  const std::string plain = (d / "plain.tbin").string(), timed = (d / "timed.tbin").string();
  const CmdResult a = expect_exit(trnsim_bin() + " compile " + model + " -o " + plain, 0, "wrote");
  EXPECT_EQ(a.out.find("timing "), std::string::npos) << a.out;
  const CmdResult b =
      expect_exit(trnsim_bin() + " compile " + model + " -o " + timed + " --timings", 0, "wrote");
  for (const char* phase : {"import", "graph.canonicalize", "graph.verify", "lower",
                            "tile.keep_on_chip", "tile.split_dma", "tile.schedule",
                            "tile.insert_sync", "tile.verify", "codegen", "write", "total"})
    EXPECT_NE(b.out.find(std::string("timing ") + phase + " "), std::string::npos) << phase << "\n"
                                                                                   << b.out;
  EXPECT_EQ(slurp(plain), slurp(timed));
}

TEST(CliTimings, InCompileHelp) {
  expect_exit(trnsim_bin() + " compile --help", 0, "--timings");
}

}  // namespace
}  // namespace trnsim::test
