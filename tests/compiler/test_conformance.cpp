// Interpreter-level conformance (tests/compiler/onnx_conformance.h): the reference
// interpreter against the ONNX test data; expected states conformance_interp.txt.
#include <filesystem>

#include "compiler/interp/interpreter.h"
#include "tests/compiler/onnx_conformance.h"

namespace trnsim::conformance {
namespace {

TEST(ConformanceInterp, OnnxTestData) {
  const Executor interp = [](const ir::Graph& g, const interp::TensorMap& feed) {
    return interp::run(g, feed);
  };
  run_suite("reference interpreter",
            fs::path(TRNSIM_SOURCE_DIR) / "tests/compiler/conformance_interp.txt",
            "TRNSIM_UPDATE_CONFORMANCE=1 ./test_compiler --gtest_filter='ConformanceInterp*'",
            [&](const fs::path& dir, const std::string& id) { return run_case(dir, id, interp); });
}

}  // namespace
}  // namespace trnsim::conformance
