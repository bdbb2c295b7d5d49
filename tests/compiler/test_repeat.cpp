// find_repeated_blocks: a stack of equal layers (different weights) is found as one
// run of blocks; a layer that differs in a shape, an attribute, a small constant or
// its wiring ends the run.
#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/text.h"
#include "compiler/partition.h"
#include "compiler/repeat.h"
#include "compiler/reuse.h"

namespace trnsim::compiler {
namespace {

// Layer i of a toy stack: y = Relu(MatMul(x, W_i) + b_i) + x (W_i 256 elements: a
// weight, whose data may differ), with optional differences.
std::string layer(int i, const std::string& in, const std::string& relu = "Relu", int width = 16,
                  const std::string& bias = "0.5") {
  const std::string s = std::to_string(i);
  const std::string w = std::to_string(width);
  return "const %w" + s + ": fp32[16," + w + "]\n" +                             //
         "const %b" + s + ": fp32[] = [" + bias + "]\n" +                        //
         "%m" + s + ": fp32[4," + w + "] = MatMul(" + in + ", %w" + s + ")\n" +  //
         "%a" + s + ": fp32[4," + w + "] = Add(%m" + s + ", %b" + s + ")\n" +    //
         "%r" + s + ": fp32[4," + w + "] = " + relu + "(%a" + s + ")\n" +        //
         "%y" + s + ": fp32[4," + w + "] = Add(%r" + s + ", " + in + ")\n";
}

ir::Graph stack(const std::string& layers, const std::string& out) {
  return ir::parse_graph("graph t {\ninput %x: fp32[4,16]\n" + layers + "output " + out + "\n}\n",
                         "test.tir");
}

TEST(RepeatedBlocks, FindsAStackOfEqualLayers) {
  std::string body = "%x0: fp32[4,16] = Sigmoid(%x)\n";  // a prelude: not part of the stack
  std::string in = "%x0";
  for (int i = 0; i < 5; ++i) {
    body += layer(i, in);
    in = "%y" + std::to_string(i);
  }
  body += "%z: fp32[4,16] = Tanh(" + in + ")\n";
  const RepeatedBlocks rb = find_repeated_blocks(stack(body, "%z"));
  EXPECT_EQ(rb.count, 5u);
  EXPECT_EQ(rb.nodes, 4u);  // MatMul, Add, Relu, Add
  EXPECT_EQ(rb.start, 1u);  // after the Sigmoid
}

TEST(RepeatedBlocks, TheFirstLayerMayReadTheGraphInput) {
  std::string body, in = "%x";
  for (int i = 0; i < 3; ++i) {
    body += layer(i, in);
    in = "%y" + std::to_string(i);
  }
  const RepeatedBlocks rb = find_repeated_blocks(stack(body, in));
  EXPECT_EQ(rb.count, 3u);
  EXPECT_EQ(rb.start, 0u);
}

TEST(RepeatedBlocks, ADifferentLayerEndsTheRun) {
  // Layers 0-1 equal; layer 2 uses Tanh; layer 3 a different small constant; 4-5 equal.
  std::string body = "%x0: fp32[4,16] = Sigmoid(%x)\n" + layer(0, "%x0") + layer(1, "%y0") +
                     layer(2, "%y1", "Tanh") + layer(3, "%y2", "Relu", 16, "0.25") +
                     layer(4, "%y3") + layer(5, "%y4");
  const RepeatedBlocks rb = find_repeated_blocks(stack(body, "%y5"));
  EXPECT_EQ(rb.count, 2u);
  EXPECT_EQ(rb.nodes, 4u);
  EXPECT_EQ(rb.start, 1u);  // two runs of two cover as many nodes: the first is kept
}

TEST(RepeatedBlocks, NoneInAGraphWithoutRepeats) {
  const RepeatedBlocks rb = find_repeated_blocks(stack(layer(0, "%x"), "%y0"));
  EXPECT_EQ(rb.count, 0u);
}

// A lent segment holds the very storage of g's constants (no copy of a model's
// weights per piece) and gives it back, unchanged, when it goes.
TEST(LentSegment, MovesConstantsInAndBack) {
  ir::Graph g = ir::parse_graph(
      "graph t {\ninput %x: fp32[4]\nconst %w: fp32[4] = [1, 2, 3, 4]\n"
      "const %v: fp32[4] = [5, 6, 7, 8]\n%a: fp32[4] = Add(%x, %w)\n"
      "%b: fp32[4] = Mul(%a, %w)\n%c: fp32[4] = Sub(%b, %v)\noutput %c\n}\n",
      "test.tir");
  ir::Value* w = g.find_value("w");
  ir::Value* v = g.find_value("v");
  ASSERT_TRUE(w && v);
  const float* storage = w->data->floats().data();
  const std::vector<float> wv = w->data->floats();
  const std::string copied = ir::print_graph(extract_segment(g, 0, 2));
  {
    const LentSegment lent(g, 0, 2);
    EXPECT_EQ(ir::print_graph(lent.graph()), copied);  // what extract_segment makes
    const ir::Value* sw = lent.graph().find_value("w");
    ASSERT_TRUE(sw && sw->has_data());
    EXPECT_EQ(sw->data->floats().data(), storage);  // moved, not copied
    EXPECT_EQ(w->data->numel(), 0);
    EXPECT_EQ(v->data->floats(), (std::vector<float>{5, 6, 7, 8}));  // not read: stays
  }
  ASSERT_TRUE(w->has_data());
  EXPECT_EQ(w->data->floats(), wv);
  EXPECT_EQ(w->data->floats().data(), storage);
  EXPECT_EQ(w->data->type(), (ir::TensorType{ir::ElemType::fp32, {4}}));
}

// Compiling a stack with its blocks reused lends each piece its weights: the graph
// the compiler returns (the reference's) still holds every weight as it was.
TEST(LentSegment, ReusingBlocksLeavesTheGraphsWeights) {
  std::string body, in = "%x";
  for (int i = 0; i < 3; ++i) {
    body += layer(i, in);
    in = "%y" + std::to_string(i);
  }
  ir::Graph g = stack(body, in);
  for (const auto& val : g.values())
    if (val->is_constant && !val->has_data()) {
      std::vector<float> d(static_cast<size_t>(ir::num_elements(val->shape())));
      for (size_t i = 0; i < d.size(); ++i) d[i] = 0.01f * static_cast<float>(i % 97);
      val->data = ir::Tensor::from_floats(val->shape(), d);
    }
  const ir::Graph before = g.clone();
  ASSERT_GE(find_repeated_blocks(g).count, 2u);
  CompileOnnxOptions o;
  const PartitionedModel m = compile_partitioned(std::move(g), o, false);
  EXPECT_GE(m.stats.at("repeat.reused_blocks"), 1.0);
  for (int i = 0; i < 3; ++i) {
    const std::string name = "w" + std::to_string(i);
    const ir::Value* was = before.find_value(name);
    const ir::Value* after = m.graph.find_value(name);
    ASSERT_TRUE(was && after && after->has_data()) << name;
    EXPECT_EQ(*after->data, *was->data) << name;
  }
}

}  // namespace
}  // namespace trnsim::compiler
