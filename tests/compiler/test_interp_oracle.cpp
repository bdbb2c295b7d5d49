// The reference interpreter against an independent oracle: interp_oracle/gen_cases.py
// builds one small ONNX model per op and corner case and computes the expected
// outputs in numpy from the operator spec (never through trnsim or onnx.reference).
// Every case must import and match (tolerances of onnx_conformance.h); a case with
// an `expect_error` file must fail with an error containing its text.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "compiler/interp/interpreter.h"
#include "tests/compiler/onnx_conformance.h"

namespace trnsim::conformance {
namespace {

bool ci() {
  const char* v = std::getenv("CI");
  return v && std::string(v) == "true";
}

TEST(InterpOracle, SpecCases) {
  if (std::system("/usr/bin/python3 -c 'import numpy, onnx' >/dev/null 2>&1") != 0) {
    if (ci()) FAIL() << "numpy and onnx are needed for /usr/bin/python3 (CI=true)";
    GTEST_SKIP() << "numpy or onnx is not installed for /usr/bin/python3";
  }
  const fs::path out = fs::path(TRNSIM_BINARY_DIR) / "interp_oracle_cases";
  fs::remove_all(out);
  const std::string script =
      std::string(TRNSIM_SOURCE_DIR) + "/tests/compiler/interp_oracle/gen_cases.py";
  ASSERT_EQ(
      std::system(("/usr/bin/python3 " + script + " " + out.string() + " >/dev/null").c_str()), 0)
      << script;
  const std::vector<fs::path> cases = case_dirs(out);
  ASSERT_GT(cases.size(), 200u);
  int passed = 0;
  for (const fs::path& c : cases)
    passed += check_generated_case(c, interpreter()).status == Status::kPass;
  std::cout << "interp oracle: " << cases.size() << " cases, " << passed << " passed\n";
}

}  // namespace
}  // namespace trnsim::conformance
