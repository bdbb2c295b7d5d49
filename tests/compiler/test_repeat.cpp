// find_repeated_blocks: a stack of equal layers (different weights) is found as one
// run of blocks; a layer that differs in a shape, an attribute, a small constant or
// its wiring ends the run.
#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/text.h"
#include "compiler/repeat.h"

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

}  // namespace
}  // namespace trnsim::compiler
