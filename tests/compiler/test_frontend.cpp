// ONNX front end: import of in-memory models, opset-dependent forms, constant
// folding of shape computations, and the errors for dynamic shapes, unsupported
// ops and unreadable files.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/tensor_proto.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/text.h"
#include "tests/compiler/interp_test_util.h"
#include "tests/compiler/onnx_test_util.h"

namespace trnsim::frontend::testing {
namespace {

using ir::testing::expect_floats;
using ir::testing::expect_ints;
using ir::testing::F;
using ir::testing::I;
constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

ir::Graph import(const ModelBuilder& b, const ImportOptions& opts = {}) {
  return import_onnx_bytes(b.bytes(), "m.onnx", opts);
}

// Expects the import to throw E with every fragment in the message.
template <typename E>
void expect_import_error(const ModelBuilder& b, const std::vector<std::string>& fragments,
                         const ImportOptions& opts = {}) {
  try {
    import(b, opts);
    FAIL() << "expected an import error";
  } catch (const E& e) {
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(Frontend, ImportsAndRunsASmallModel) {
  ModelBuilder b(13);
  b.input("x", kFloat, {1, 2});
  b.init("w", F({2, 3}, {1, 0, 1, 0, 1, 1}));
  b.init("bias", F({3}, {0.5f, 0.5f, 0.5f}));
  b.node("MatMul", {"x", "w"}, {"h"}, "mm");
  b.node("Add", {"h", "bias"}, {"y"}, "add");
  b.output("y");
  ir::Graph g = import(b);
  ASSERT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.inputs()[0]->name, "x");
  EXPECT_TRUE(g.find_value("w")->has_data());
  EXPECT_EQ(g.outputs()[0]->type.str(), "fp32[1,3]");
  // [1,2] @ [[1,0,1],[0,1,1]] = [1,2,3]; + 0.5.
  expect_floats(interp::run(g, {{"x", F({1, 2}, {1, 2})}}).at("y"), {1.5f, 2.5f, 3.5f});
  // The text form names the ONNX node.
  EXPECT_NE(ir::print_graph(g).find("= MatMul(%x, %w) @mm"), std::string::npos)
      << ir::print_graph(g);
}

TEST(Frontend, DynamicShapesNeedConcreteShapes) {
  ModelBuilder b(13);
  b.input("x", kFloat, {-1, 3}, {"batch"});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  expect_import_error<ir::UnsupportedError>(
      b, {"m.onnx: input 'x' has dynamic dim 0 ('batch') in [batch,3]",
          "ImportOptions::input_shapes"});
  ImportOptions opts;
  opts.input_shapes["x"] = {4, 3};
  EXPECT_EQ(import(b, opts).outputs()[0]->type.str(), "fp32[4,3]");
  // A given shape must agree with the declared static dims.
  opts.input_shapes["x"] = {4, 5};
  expect_import_error<ir::CompileError>(
      b, {"given shape [4,5] does not match the declared shape [batch,3]"}, opts);
  // A shape for a name that is not an input is a typo, not something to ignore.
  opts.input_shapes.clear();
  opts.input_shapes["X"] = {4, 3};
  expect_import_error<ir::CompileError>(
      b, {"m.onnx: a shape is given for input 'X', but the graph's inputs are 'x'"}, opts);
}

TEST(Frontend, UnsupportedOpsAreRefusedWithTheSupportedSet) {
  ModelBuilder b(13);
  b.input("x", kFloat, {1, 2, 3});
  b.node("TfIdfVectorizer", {"x"}, {"y"}, "Foo_3");
  b.output("y");
  expect_import_error<ir::UnsupportedError>(
      b, {"m.onnx: node 'Foo_3' has unsupported op type 'TfIdfVectorizer'; supported: Abs, Acos, ",
          "Conv", "Where"});
  ModelBuilder c(13);
  c.input("x", kFloat, {2});
  c.node("FusedGelu", {"x"}, {"y"}, "g").set_domain("com.microsoft");
  c.output("y");
  expect_import_error<ir::UnsupportedError>(c, {"unsupported op type 'com.microsoft.FusedGelu'"});
  // Non-float element types the interpreter does not handle are refused too.
  ModelBuilder d(13);
  d.input("x", onnx::TensorProto::UINT64, {2});
  d.node("Relu", {"x"}, {"y"});
  d.output("y", onnx::TensorProto::UINT64);
  expect_import_error<ir::UnsupportedError>(
      d, {"input 'x' has element type UINT64 (supported: FLOAT, DOUBLE, "});
  const auto& ops = supported_onnx_ops();
  for (const char* op :
       {"Conv", "Gemm", "LayerNormalization", "Dropout", "Constant", "ConstantOfShape", "Shape"})
    EXPECT_TRUE(std::binary_search(ops.begin(), ops.end(), op)) << op;
}

TEST(Frontend, InvalidModelsNameTheNode) {
  ModelBuilder b(13);
  b.input("x", kFloat, {1, 3, 8, 8});
  b.init("w", ir::Tensor(ir::ElemType::fp32, {8, 4, 3, 3}));
  b.node("Conv", {"x", "w"}, {"y"}, "Conv_12");
  b.output("y");
  expect_import_error<ir::CompileError>(b,
                                        {"m.onnx: node 'Conv_12' (op Conv): weights fp32[8,4,3,3] "
                                         "expect 4 input channels (group 1), input has 3"});
  // A node reading a value nobody defined.
  ModelBuilder c(13);
  c.input("x", kFloat, {2});
  c.node("Add", {"x", "ghost"}, {"y"}, "add");
  c.output("y");
  expect_import_error<ir::CompileError>(c, {"node 'add' (op Add): input 'ghost' is not defined"});
  // Declared output shape disagreeing with inference.
  ModelBuilder d(13);
  d.input("x", kFloat, {2, 3});
  d.node("Transpose", {"x"}, {"y"});
  d.output("y", kFloat, {2, 3}, true);
  expect_import_error<ir::CompileError>(
      d, {"output 'y' is declared [2,3] but shape inference gives fp32[3,2]"});
}

TEST(Frontend, BadFiles) {
  try {
    import_onnx_file("/nonexistent/model.onnx");
    FAIL();
  } catch (const ir::CompileError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/model.onnx: cannot open file: No such file or directory");
  }
  std::string path = std::filesystem::temp_directory_path() / "trnsim_bad_model.onnx";
  std::ofstream(path) << "this is not a protobuf \xff\xff\xff";
  try {
    import_onnx_file(path);
    FAIL();
  } catch (const ir::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not a valid ONNX model"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_tensor_pb(path), ir::CompileError);
  std::remove(path.c_str());
}

TEST(Frontend, TensorProtoRoundTrip) {
  std::string path = std::filesystem::temp_directory_path() / "trnsim_tensor.pb";
  for (const ir::Tensor& t :
       {F({2, 2}, {1.5f, -2, 0, 1e-8f}), I({3}, {-1, 0, 1LL << 40}), ir::testing::B({2}, {1, 0}),
        ir::Tensor::from_floats({2}, {0.1f, 65504}, ir::ElemType::fp16),
        I({2}, {-128, 127}, ir::ElemType::int8)}) {
    write_tensor_pb(t, path, "t");
    std::string name;
    EXPECT_EQ(read_tensor_pb(path, &name), t) << t.str();
    EXPECT_EQ(name, "t");
  }
  std::remove(path.c_str());
}

// y = op(x) built for an opset; returns the output for input x.
ir::Tensor run_model(ModelBuilder& b, const ir::Tensor& x) {
  ir::Graph g = import(b);
  return interp::run(g, {{"x", x}}).at("y");
}

TEST(Frontend, AxesAsAttributesOrInputsByOpset) {
  ir::Tensor x = F({1, 3, 1}, {1, 2, 3});
  // Squeeze: attribute before opset 13, input from 13.
  ModelBuilder s11(11);
  s11.input("x", kFloat, {1, 3, 1});
  attr_ints(s11.node("Squeeze", {"x"}, {"y"}), "axes", {0, -1});
  s11.output("y");
  ModelBuilder s13(13);
  s13.input("x", kFloat, {1, 3, 1});
  s13.init("axes", I({2}, {0, -1}));
  s13.node("Squeeze", {"x", "axes"}, {"y"});
  s13.output("y");
  EXPECT_EQ(run_model(s11, x).type().str(), "fp32[3]");
  EXPECT_EQ(run_model(s13, x).type().str(), "fp32[3]");
  // ReduceSum: axes attribute (11) vs input (13); noop_with_empty_axes keeps x.
  ModelBuilder r11(11);
  r11.input("x", kFloat, {1, 3, 1});
  auto& n11 = r11.node("ReduceSum", {"x"}, {"y"});
  attr_ints(n11, "axes", {1});
  attr_i(n11, "keepdims", 0);
  r11.output("y");
  expect_floats(run_model(r11, x), {6});
  ModelBuilder r13(13);
  r13.input("x", kFloat, {1, 3, 1});
  r13.init("axes", I({1}, {1}));
  attr_i(r13.node("ReduceSum", {"x", "axes"}, {"y"}), "keepdims", 0);
  r13.output("y");
  expect_floats(run_model(r13, x), {6});
  ModelBuilder noop(13);
  noop.input("x", kFloat, {1, 3, 1});
  attr_i(noop.node("ReduceSum", {"x"}, {"y"}), "noop_with_empty_axes", 1);
  noop.output("y");
  expect_floats(run_model(noop, x), {1, 2, 3});
  // Split sizes: attribute (11) vs input (13).
  ModelBuilder p11(11);
  p11.input("x", kFloat, {1, 3, 1});
  auto& sp = p11.node("Split", {"x"}, {"a", "y"});
  attr_i(sp, "axis", 1);
  attr_ints(sp, "split", {1, 2});
  p11.output("y");
  expect_floats(run_model(p11, x), {2, 3});
  ModelBuilder p13(13);
  p13.input("x", kFloat, {1, 3, 1});
  p13.init("split", I({2}, {1, 2}));
  attr_i(p13.node("Split", {"x", "split"}, {"a", "y"}), "axis", 1);
  p13.output("y");
  expect_floats(run_model(p13, x), {2, 3});
}

TEST(Frontend, ClipPadSliceByOpset) {
  ir::Tensor x = F({1, 4}, {-2, -1, 1, 2});
  ModelBuilder c6(6);
  c6.input("x", kFloat, {1, 4});
  auto& cn = c6.node("Clip", {"x"}, {"y"});
  attr_f(cn, "min", -1.5f);
  attr_f(cn, "max", 1.5f);
  c6.output("y");
  expect_floats(run_model(c6, x), {-1.5f, -1, 1, 1.5f});
  ModelBuilder c11(11);
  c11.input("x", kFloat, {1, 4});
  c11.init("lo", F({}, {-1.5f}));
  c11.node("Clip", {"x", "lo", ""}, {"y"});  // max absent
  c11.output("y");
  expect_floats(run_model(c11, x), {-1.5f, -1, 1, 2});
  // Pad: attributes before 11, inputs from 11 (edge mode).
  ModelBuilder pa2(2);
  pa2.input("x", kFloat, {1, 4});
  auto& pn = pa2.node("Pad", {"x"}, {"y"});
  attr_ints(pn, "pads", {0, 1, 0, 0});
  attr_f(pn, "value", 7);
  pa2.output("y");
  expect_floats(run_model(pa2, x), {7, -2, -1, 1, 2});
  ModelBuilder pa11(11);
  pa11.input("x", kFloat, {1, 4});
  pa11.init("pads", I({4}, {0, 1, 0, 0}));
  attr_s(pa11.node("Pad", {"x", "pads"}, {"y"}), "mode", "edge");
  pa11.output("y");
  expect_floats(run_model(pa11, x), {-2, -2, -1, 1, 2});
  // Slice: attributes before 10, inputs (with steps) from 10.
  ModelBuilder sl9(9);
  sl9.input("x", kFloat, {1, 4});
  auto& sn = sl9.node("Slice", {"x"}, {"y"});
  attr_ints(sn, "starts", {1});
  attr_ints(sn, "ends", {3});
  attr_ints(sn, "axes", {1});
  sl9.output("y");
  expect_floats(run_model(sl9, x), {-1, 1});
  ModelBuilder sl10(10);
  sl10.input("x", kFloat, {1, 4});
  sl10.init("starts", I({1}, {-1}));
  sl10.init("ends", I({1}, {-100}));
  sl10.init("axes", I({1}, {1}));
  sl10.init("steps", I({1}, {-2}));
  sl10.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  sl10.output("y");
  expect_floats(run_model(sl10, x), {2, -1});  // columns 3, 1
}

TEST(Frontend, SoftmaxBeforeOpset13FlattensTo2D) {
  ir::Tensor x = F({1, 2, 2}, {0, 1, 2, 3});
  for (int opset : {11, 13}) {
    ModelBuilder b(opset);
    b.input("x", kFloat, {1, 2, 2});
    attr_i(b.node("Softmax", {"x"}, {"y"}), "axis", 1);
    b.output("y");
    ir::Tensor y = run_model(b, x);
    EXPECT_EQ(y.type().str(), "fp32[1,2,2]");
    if (opset == 11) {
      // Coerced to [1,4]: softmax over all four values, e^(x-3) / 1.553001792.
      expect_floats(y, {0.0320586033f, 0.0871443187f, 0.236882818f, 0.643914260f});
    } else {
      // Over dim 1 only: pairs (0,2) and (1,3) -> [1, e^2] / (1 + e^2).
      expect_floats(y, {0.119202922f, 0.119202922f, 0.880797078f, 0.880797078f});
    }
  }
}

TEST(Frontend, TorchReshapePatternFolds) {
  // x.view(x.size(0), -1) as torch exports it: Shape -> Gather -> Unsqueeze ->
  // Concat([n, -1]) -> Reshape. Everything but the Reshape folds away.
  ModelBuilder b(13);
  b.input("x", kFloat, {2, 3, 4});
  b.init("zero", I({}, {0}));
  b.init("axes0", I({1}, {0}));
  b.init("minus1", I({1}, {-1}));
  b.node("Shape", {"x"}, {"shape"}, "Shape_0");
  attr_i(b.node("Gather", {"shape", "zero"}, {"n"}, "Gather_1"), "axis", 0);
  b.node("Unsqueeze", {"n", "axes0"}, {"n1"}, "Unsqueeze_2");
  attr_i(b.node("Concat", {"n1", "minus1"}, {"target"}, "Concat_3"), "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"}, "Reshape_4");
  b.output("y");
  ir::Graph g = import(b);
  ASSERT_EQ(g.num_nodes(), 1u) << ir::print_graph(g);
  EXPECT_EQ(g.nodes()[0]->op, "Reshape");
  EXPECT_EQ(g.nodes()[0]->attr_ints("shape"), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(g.find_value("shape"), nullptr);  // folded constants nobody reads are dropped
}

TEST(Frontend, ReshapeZeroAndMinusOne) {
  ModelBuilder b(14);
  b.input("x", kFloat, {2, 3, 4});
  b.init("s", I({3}, {0, -1, 2}));
  b.node("Reshape", {"x", "s"}, {"y"});
  b.output("y");
  // 0 copies dim 0 (2); -1 takes 24 / (2*2) = 6.
  EXPECT_EQ(import(b).outputs()[0]->type.str(), "fp32[2,6,2]");
  ModelBuilder z(14);
  z.input("x", kFloat, {2, 0});
  z.init("s", I({2}, {0, 5}));
  attr_i(z.node("Reshape", {"x", "s"}, {"y"}), "allowzero", 1);
  z.output("y");
  EXPECT_EQ(import(z).outputs()[0]->type.str(), "fp32[0,5]");  // allowzero: a literal 0
}

TEST(Frontend, AutoPadBecomesExplicitPads) {
  // Input 5, kernel 2, stride 2: SAME output ceil(5/2) = 3 needs (3-1)*2 + 2 - 5 = 1
  // pad: at the end for SAME_UPPER, at the start for SAME_LOWER.
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    ModelBuilder b(13);
    b.input("x", kFloat, {1, 1, 5});
    b.init("w", F({1, 1, 2}, {1, 1}));
    auto& n = b.node("Conv", {"x", "w"}, {"y"});
    attr_s(n, "auto_pad", mode);
    attr_ints(n, "strides", {2});
    b.output("y");
    ir::Graph g = import(b);
    const auto& pads = g.nodes()[0]->attr_ints("pads");
    ir::Tensor y = interp::run(g, {{"x", F({1, 1, 5}, {1, 2, 3, 4, 5})}}).at("y");
    if (std::string(mode) == "SAME_UPPER") {
      EXPECT_EQ(pads, (std::vector<int64_t>{0, 1}));
      expect_floats(y, {3, 7, 5});  // 1+2, 3+4, 5+pad
    } else if (std::string(mode) == "SAME_LOWER") {
      EXPECT_EQ(pads, (std::vector<int64_t>{1, 0}));
      expect_floats(y, {1, 5, 9});  // pad+1, 2+3, 4+5
    } else {
      EXPECT_EQ(pads, (std::vector<int64_t>{0, 0}));
      expect_floats(y, {3, 7});
    }
  }
}

TEST(Frontend, DropoutAndConstants) {
  ModelBuilder b(13);
  b.input("x", kFloat, {2});
  attr_t(b.node("Constant", {}, {"c"}, "const"), "value", F({2}, {10, 20}));
  b.node("Dropout", {"x"}, {"d", "mask"}, "drop");
  b.node("Add", {"d", "c"}, {"y"});
  b.node("Not", {"mask"}, {"nm"});
  b.output("y");
  b.output("nm", onnx::TensorProto::BOOL);
  ir::Graph g = import(b);
  // Dropout became Identity; its mask is an all-true constant, so Not folds.
  EXPECT_EQ(g.find_value("d")->producer->op, "Identity");
  EXPECT_TRUE(g.find_value("nm")->has_data());
  auto out = interp::run(g, {{"x", F({2}, {1, 2})}});
  expect_floats(out.at("y"), {11, 22});
  expect_ints(out.at("nm"), {0, 0});
}

TEST(Frontend, InitializersListedAsInputsAreConstants) {
  // IR version 3 models list every initializer among the graph inputs.
  ModelBuilder b(6, 3);
  b.input("x", kFloat, {2});
  b.input("w", kFloat, {2});
  b.init("w", F({2}, {3, 4}));
  b.node("Mul", {"x", "w"}, {"y"});
  b.output("y");
  ir::Graph g = import(b);
  ASSERT_EQ(g.inputs().size(), 1u);
  expect_floats(interp::run(g, {{"x", F({2}, {1, 2})}}).at("y"), {3, 8});
}

TEST(Frontend, LegacyBroadcastAndPerChannelPRelu) {
  // Opset 6 Add with broadcast=1, axis=1: B [3] aligns with dim 1 of A [2,3,2].
  ModelBuilder b(6);
  b.input("x", kFloat, {2, 3, 2});
  b.init("b", F({3}, {100, 200, 300}));
  auto& n = b.node("Add", {"x", "b"}, {"y"});
  attr_i(n, "broadcast", 1);
  attr_i(n, "axis", 1);
  b.output("y");
  ir::Tensor y = run_model(b, ir::Tensor(ir::ElemType::fp32, {2, 3, 2}));
  expect_floats(y, {100, 100, 200, 200, 300, 300, 100, 100, 200, 200, 300, 300});
  // Opset 6 PRelu with a [C] slope applies per channel (dim 1).
  ModelBuilder p(6);
  p.input("x", kFloat, {1, 2, 2});
  p.init("s", F({2}, {0.5f, 0.25f}));
  p.node("PRelu", {"x", "s"}, {"y"});
  p.output("y");
  expect_floats(run_model(p, F({1, 2, 2}, {-4, -4, -4, 4})), {-2, -2, -1, 4});
}

TEST(Frontend, ParametersGivenAsInputsNeedConstants) {
  ModelBuilder b(13);
  b.input("x", kFloat, {2, 3});
  b.input("shape", kInt64, {1});
  b.node("Reshape", {"x", "shape"}, {"y"}, "r");
  b.output("y");
  try {
    import(b);
    FAIL();
  } catch (const NeedsConstantError& e) {
    EXPECT_EQ(e.value(), "shape");
    EXPECT_NE(std::string(e.what()).find(
                  "node 'r' (op Reshape): input 1 ('shape', shape) must be a constant"),
              std::string::npos)
        << e.what();
  }
  ImportOptions opts;
  opts.constant_inputs["shape"] = I({1}, {6});
  ir::Graph g = import(b, opts);
  EXPECT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->type.str(), "fp32[6]");
}

TEST(Frontend, TrainingFeaturesAreRefused) {
  ModelBuilder b(15);
  b.input("x", kFloat, {1, 2, 2});
  for (const char* p : {"s", "bias", "m", "v"}) b.init(p, F({2}, {1, 1}));
  b.node("BatchNormalization", {"x", "s", "bias", "m", "v"}, {"y", "rm", "rv"}, "bn");
  b.output("y");
  b.output("rm");
  expect_import_error<ir::UnsupportedError>(
      b, {"node 'bn' (op BatchNormalization): output 1 (training statistics)"});
}

TEST(Frontend, MaxPoolIndicesOutputImports) {
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 1, 4, 4});
  auto& mp = m.node("MaxPool", {"x"}, {"y", "idx"}, "mp");
  attr_ints(mp, "kernel_shape", {2, 2});
  m.output("y");
  m.output("idx", kInt64);
  ir::Graph g = import(m);
  EXPECT_EQ(g.outputs()[1]->type.str(), "int64[1,1,3,3]");
}

}  // namespace
}  // namespace trnsim::frontend::testing
