// Text form of the IR: print -> parse -> print is the identity, hand-written
// graphs parse (defaults filled, types checked), and errors carry FILE:LINE:COL.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/text.h"

namespace trnsim::ir {
namespace {

const char* kHandWritten = R"(# a small conv block
graph block {
  input %x: fp32[1,2,4,4]
  const %w: fp32[3,2,3,3]                 # data omitted
  const %b: fp32[3] = [0.5, -1, 2]
  const %"onnx::Shape_1": int64[2] = [1, 48]
  %c: fp32[1,3,4,4] = Conv(%x, %w, %b) {pads=[1,1,1,1]} @"/conv/Conv"
  %r: fp32[1,3,4,4] = Clip(%c) {min=0.0, max=6.0}
  %f: fp32[1,48] = Reshape(%r) {shape=[1,48]}
  %p: fp32[1,24], %q: fp32[1,24] = Split(%f) {axis=-1}
  %k: fp32[1,1] = Gemm(%p, %q, _) {transB=1, alpha=0.5} @gemm
  output %k, %q
}
)";

TEST(IrText, ParsesHandWrittenGraphWithDefaults) {
  Graph g = parse_graph(kHandWritten, "block.tir");
  EXPECT_EQ(g.name, "block");
  ASSERT_EQ(g.num_nodes(), 5u);
  const Node& conv = *g.nodes()[0];
  EXPECT_EQ(conv.name, "/conv/Conv");
  EXPECT_EQ(conv.attr_ints("kernel_shape"), (std::vector<int64_t>{3, 3}));  // filled from w
  EXPECT_EQ(conv.attr_int("group"), 1);
  EXPECT_FALSE(g.find_value("w")->has_data());
  EXPECT_EQ(g.find_value("b")->data->floats(), (std::vector<float>{0.5f, -1.0f, 2.0f}));
  EXPECT_EQ(g.find_value("onnx::Shape_1")->data->ints(), (std::vector<int64_t>{1, 48}));
  const Node& split = *g.nodes()[3];
  EXPECT_EQ(split.attr_int("axis"), 1);  // -1 normalized
  EXPECT_EQ(split.attr_ints("split"), (std::vector<int64_t>{24, 24}));
  const Node& gemm = *g.nodes()[4];
  EXPECT_EQ(gemm.inputs.size(), 3u);
  EXPECT_EQ(gemm.inputs[2], nullptr);  // `_`
  EXPECT_FLOAT_EQ(gemm.attr_float("alpha"), 0.5f);
  EXPECT_FLOAT_EQ(gemm.attr_float("beta"), 1.0f);
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[1]->name, "q");
}

TEST(IrText, RoundTripIsExact) {
  Graph g = parse_graph(kHandWritten, "block.tir");
  std::string once = print_graph(g);
  Graph g2 = parse_graph(once, "printed.tir");
  EXPECT_EQ(print_graph(g2), once);
  // Quoted names, node names and normalized attributes appear in the text.
  EXPECT_NE(once.find("const %\"onnx::Shape_1\": int64[2] = [1, 48]"), std::string::npos) << once;
  EXPECT_NE(once.find("@/conv/Conv\n"), std::string::npos) << once;
  EXPECT_NE(once.find("{max=6.0, min=0.0}"), std::string::npos) << once;
  EXPECT_NE(once.find("const %w: fp32[3,2,3,3]\n"), std::string::npos) << once;
}

TEST(IrText, RoundTripKeepsEveryAttributeKindAndValue) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {2, 3}});
  // Values that need all 9 digits, and specials.
  Tensor data = Tensor::from_floats({4}, {0.1f, 1.0f / 3.0f, -INFINITY, 1e-30f});
  Value* c = g.add_constant("c", data);
  Value* s = make_node(g, "Shape", {x})->outputs[0];
  Tensor v = Tensor::from_ints({1}, {7}, ElemType::int32);
  make_node(g, "ConstantOfShape", {g.add_constant("shape", Tensor::from_ints({2}, {2, 2}))},
            {{"value", v}}, "cos");
  Node* pad =
      make_node(g, "Pad", {x}, {{"pads", std::vector<int64_t>{0, 1, 0, 1}}, {"mode", "reflect"}});
  Node* lrelu = make_node(g, "LeakyRelu", {pad->outputs[0]}, {{"alpha", 0.1f}});
  g.add_output(lrelu->outputs[0]);
  g.add_output(c);
  g.add_output(s);
  g.add_output(g.find_value("cos_out"));
  std::string text = print_graph(g);
  Graph g2 = parse_graph(text);
  EXPECT_EQ(print_graph(g2), text);
  EXPECT_EQ(*g2.find_value("c")->data, data);
  EXPECT_EQ(g2.find_value("cos_out")->producer->attr_tensor("value"), v);
  EXPECT_EQ(g2.find_value("cos_out")->type.str(), "int32[2,2]");
  EXPECT_NE(text.find("value=int32[1] [7]"), std::string::npos) << text;
  EXPECT_NE(text.find("mode=\"reflect\""), std::string::npos) << text;
  EXPECT_NE(text.find("[0.100000001, 0.333333343, -inf, 1e-30]"), std::string::npos) << text;
  // The parsed graph computes what the original does.
  interp::TensorMap in{{"x", Tensor::from_floats({2, 3}, {1, -2, 3, -4, 5, -6})}};
  EXPECT_EQ(interp::run(g, in), interp::run(g2, in));
}

TEST(IrText, LargeConstantsPrintWithoutData) {
  Graph g;
  Value* c = g.add_constant("big", Tensor::from_floats({100}, std::vector<float>(100, 1.0f)));
  g.add_output(c);
  std::string text = print_graph(g);
  EXPECT_NE(text.find("const %big: fp32[100]\n"), std::string::npos) << text;
  std::string full = print_graph(g, {.max_const_elems = 1000});
  EXPECT_NE(full.find("const %big: fp32[100] = [1, 1,"), std::string::npos);
  Graph g2 = parse_graph(text);
  EXPECT_FALSE(g2.find_value("big")->has_data());
  // Running needs the data: a clear error, not garbage.
  try {
    interp::run(g2, {});
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("constant 'big' has no data"), std::string::npos)
        << e.what();
  }
}

void expect_parse_error(const std::string& text, const std::string& where,
                        const std::string& what) {
  try {
    parse_graph(text, "t.tir");
    FAIL() << "expected an error for:\n" << text;
  } catch (const CompileError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(where), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

TEST(IrText, ErrorsNameFileLineAndColumn) {
  expect_parse_error("graph g {\n  input %x: fp33[2]\n}\n",
                     "t.tir:2:13:", "unknown element type 'fp33'");
  expect_parse_error("graph g {\n  %y: fp32[2] = Relu(%x)\n}\n",
                     "t.tir:2:22:", "value '%x' is not defined");
  expect_parse_error("graph g {\n  input %x: fp32[2]\n  %y: fp32[3] = Relu(%x)\n}\n",
                     "t.tir:3:3:", "output '%y' is written fp32[3] but Relu gives fp32[2]");
  expect_parse_error("graph g {\n  input %x: fp32[2]\n  %y: fp32[2] = Frob(%x)\n}\n",
                     "t.tir:3:17:", "unknown op type 'Frob'");
  expect_parse_error("graph g {\n  input %x: fp32[2]\n  %y: fp32[2] = Relu(%x) {bogus=1}\n}\n",
                     "t.tir:3:3:", "unknown attribute 'bogus'");
  expect_parse_error("graph g {\n  const %c: fp32[3] = [1, 2]\n}\n",
                     "t.tir:2:", "fp32[3] needs 3 values, got 2");
  expect_parse_error("graph g {\n  input %x: fp32[2]\n  input %x: fp32[2]\n}\n",
                     "t.tir:3:9:", "already defined");
  expect_parse_error("graph g {\n  input %x: fp32[2]\n", "t.tir:3:1:", "missing '}'");
  expect_parse_error("graph g {\n  const %c: int64[1] = [1.5]\n}\n",
                     "t.tir:2:25:", "expected an integer");
}

}  // namespace
}  // namespace trnsim::ir
