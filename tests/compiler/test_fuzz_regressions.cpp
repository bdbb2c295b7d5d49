// ONNX inputs that crashed the front end under libFuzzer (tests/fuzz/fuzz_onnx.cpp),
// kept in tests/fuzz/regressions/onnx/: each must now be refused with a clear
// CompileError naming the node.
#include <gtest/gtest.h>

#include <string>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/error.h"

namespace trnsim::frontend::testing {
namespace {

std::string regression(const std::string& name) {
  return std::string(TRNSIM_SOURCE_DIR) + "/tests/fuzz/regressions/onnx/" + name;
}

// Import must throw a CompileError whose message contains every piece of `want`.
void expect_refused(const std::string& file, std::initializer_list<std::string> want) {
  try {
    import_onnx_file(regression(file));
    FAIL() << file << " imported; expected an error";
  } catch (const ir::CompileError& e) {
    const std::string msg = e.what();
    for (const auto& w : want) EXPECT_NE(msg.find(w), std::string::npos) << msg;
  }
}

// A Reshape whose target shape's known dims multiply past int64 (7449083940 *
// 499850701156 > 2^63): the -1 inference overflowed (signed overflow, UBSan).
TEST(FuzzRegressions, ReshapeShapeProductOverflow) {
  expect_refused("reshape_shape_overflow.onnx",
                 {"reshape_shape_overflow.onnx", "(op Reshape)", "more elements than int64"});
}

// A MaxPool node with no outputs: converters read output(0) of an empty list.
TEST(FuzzRegressions, NodeWithoutOutputs) {
  expect_refused("node_without_outputs.onnx",
                 {"node_without_outputs.onnx", "(op MaxPool)", "has no outputs"});
}

// A float initializer of shape [2^31, 2^31] with 4 bytes of raw_data: the element
// count fits int64, but checking the byte size as count * 4 overflowed (UBSan).
TEST(FuzzRegressions, InitializerRawSizeOverflow) {
  expect_refused("initializer_raw_size_overflow.onnx",
                 {"initializer_raw_size_overflow.onnx", "raw_data holds 4 bytes",
                  "expected 4611686018427387904 values of 4 bytes"});
}

}  // namespace
}  // namespace trnsim::frontend::testing
