// The scatter/gather, data-shaped, quantisation, loss and window ops of the
// reference interpreter against independent references: interp_scatter/gen_cases.py
// writes single-node ONNX models with outputs computed in numpy from the operator
// spec, interp_scatter/torch_cases.py exports tiny PyTorch models (scatter_add,
// index_put with and without accumulate, boolean mask indexing, cumsum, one_hot,
// nonzero, unique, cross_entropy, fake quantisation, quantize_per_tensor/channel)
// with eager PyTorch's outputs. Every case goes through the ONNX import (graph
// inputs the compiler needs as constants are specialised, as for the ONNX test
// data) and must match; a case with an `expect_error` file must be refused with an
// error containing its text and naming the node.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/frontend/onnx_import.h"
#include "compiler/interp/interpreter.h"
#include "tests/common/python_env.h"
#include "tests/compiler/onnx_conformance.h"
#include "tests/compiler/onnx_test_util.h"

namespace trnsim::conformance {
namespace {

struct Counts {
  int cases = 0, passed = 0;
};

Counts run_dir(const fs::path& out) {
  Counts c;
  for (const fs::path& dir : case_dirs(out)) {
    ++c.cases;
    c.passed += check_generated_case(dir, interpreter()).status == Status::kPass;
  }
  return c;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path out = fs::path(TRNSIM_BINARY_DIR) / name;
  fs::remove_all(out);
  fs::create_directories(out);
  return out;
}

TEST(InterpScatter, SpecCases) {
  const fs::path out = fresh_dir("interp_scatter_cases");
  const std::string script =
      std::string(TRNSIM_SOURCE_DIR) + "/tests/compiler/interp_scatter/gen_cases.py";
  TRNSIM_REQUIRE_PYTHON(test::run_python("-c \"" + test::python_require({"numpy", "onnx"}) +
                                         "\" && " + test::kPython + " " + script + " " +
                                         out.string()));
  const Counts c = run_dir(out);
  EXPECT_GT(c.cases, 80);
  std::cout << "interp scatter: " << c.cases << " cases, " << c.passed << " passed\n";
}

TEST(InterpScatter, TorchModels) {
  const fs::path out = fresh_dir("interp_scatter_torch");
  const std::string script =
      std::string(TRNSIM_SOURCE_DIR) + "/tests/compiler/interp_scatter/torch_cases.py";
  TRNSIM_REQUIRE_PYTHON(
      test::run_python("-c \"" + test::python_require({"torch", "numpy", "onnx"}) + "\" && " +
                       test::kPython + " " + script + " " + out.string()));
  const Counts c = run_dir(out);
  EXPECT_EQ(c.cases, 10);
  EXPECT_EQ(c.passed, 10);
}

// NonZero of a value computed from a graph input (torch's nonzero(x > 0)): the
// refusal names that graph input, and with it specialised the chain folds.
TEST(InterpScatter, NeedsConstantNamesTheSourceInput) {
  frontend::testing::ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.init("zero", Tensor::scalar(0.0f));
  b.node("Greater", {"x", "zero"}, {"pos"}, "gt");
  b.node("NonZero", {"pos"}, {"idx"}, "nz");
  b.output("idx", onnx::TensorProto::INT64);
  try {
    frontend::import_onnx_bytes(b.bytes(), "m.onnx");
    FAIL() << "NonZero of a runtime value must be refused";
  } catch (const frontend::NeedsConstantError& e) {
    EXPECT_EQ(e.value(), "x");
    EXPECT_NE(std::string(e.what()).find("node 'nz' (op NonZero): input 0 ('pos', "),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("computed from graph input 'x'"), std::string::npos)
        << e.what();
  }
  frontend::ImportOptions opts;
  opts.constant_inputs["x"] = Tensor::from_floats({2, 3}, {1, -1, 0, 0, 2, 3});
  ir::Graph g = frontend::import_onnx_bytes(b.bytes(), "m.onnx", opts);
  const Tensor idx = interp::run(g, {}).at("idx");
  EXPECT_EQ(idx.shape(), (ir::Shape{2, 3}));
  EXPECT_EQ(idx.ints(), (std::vector<int64_t>{0, 1, 1, 0, 1, 2}));
}

}  // namespace
}  // namespace trnsim::conformance
