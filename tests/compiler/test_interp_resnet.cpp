// Whole-network check of the interpreter: a ResNet-18 (224x224, random weights)
// built with the IR API must run (conv is im2col + blocked matmul), give finite logits and
// give outputs identical to a run with every intermediate kept.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/ops.h"

namespace trnsim::ir {
namespace {

class ResNetBuilder {
 public:
  explicit ResNetBuilder(Graph& g) : g_(g) {}

  Tensor random(Shape s, float scale) {
    std::vector<float> v(num_elements(s));
    std::normal_distribution<float> d(0.0f, scale);
    for (auto& x : v) x = d(rng_);
    return Tensor::from_floats(std::move(s), std::move(v));
  }
  Value* conv_bn(Value* x, int64_t out_ch, int64_t k, int64_t stride, bool relu) {
    int64_t in_ch = x->shape()[1];
    std::string p = "l" + std::to_string(n_++);
    // He-style init keeps activations O(1) through 18 layers.
    Value* w =
        g_.add_constant(p + ".w", random({out_ch, in_ch, k, k}, std::sqrt(2.0f / (in_ch * k * k))));
    int64_t pad = k / 2;
    Value* y = make_node(g_, "Conv", {x, w},
                         {{"strides", std::vector<int64_t>{stride, stride}},
                          {"pads", std::vector<int64_t>{pad, pad, pad, pad}}},
                         p + ".conv")
                   ->outputs[0];
    Tensor ones = Tensor::from_floats({out_ch}, std::vector<float>(out_ch, 1.0f));
    Tensor zeros = Tensor::from_floats({out_ch}, std::vector<float>(out_ch, 0.0f));
    Value* bn = make_node(g_, "BatchNormalization",
                          {y, g_.add_constant(p + ".s", ones),
                           g_.add_constant(p + ".b", random({out_ch}, 0.1f)),
                           g_.add_constant(p + ".m", zeros), g_.add_constant(p + ".v", ones)},
                          {}, p + ".bn")
                    ->outputs[0];
    return relu ? make_node(g_, "Relu", {bn}, {}, p + ".relu")->outputs[0] : bn;
  }
  Value* block(Value* x, int64_t ch, int64_t stride) {
    Value* y = conv_bn(conv_bn(x, ch, 3, stride, true), ch, 3, 1, false);
    Value* skip = (stride != 1 || x->shape()[1] != ch) ? conv_bn(x, ch, 1, stride, false) : x;
    Value* s = make_node(g_, "Add", {y, skip})->outputs[0];
    return make_node(g_, "Relu", {s})->outputs[0];
  }

 private:
  Graph& g_;
  std::mt19937 rng_{42};
  int n_ = 0;
};

TEST(InterpResNet, ResNet18RunsAndKeepsIntermediatesExactly) {
  Graph g;
  g.name = "resnet18";
  ResNetBuilder b(g);
  Value* x = g.add_input("x", {ElemType::fp32, {1, 3, 224, 224}});
  Value* y = b.conv_bn(x, 64, 7, 2, true);
  y = make_node(g, "MaxPool", {y},
                {{"kernel_shape", std::vector<int64_t>{3, 3}},
                 {"strides", std::vector<int64_t>{2, 2}},
                 {"pads", std::vector<int64_t>{1, 1, 1, 1}}})
          ->outputs[0];
  for (int64_t ch : {64, 128, 256, 512}) {
    y = b.block(y, ch, ch == 64 ? 1 : 2);
    y = b.block(y, ch, 1);
  }
  y = make_node(g, "GlobalAveragePool", {y})->outputs[0];
  y = make_node(g, "Flatten", {y})->outputs[0];
  Value* fc = g.add_constant("fc.w", b.random({1000, 512}, 0.05f));
  Value* fcb = g.add_constant("fc.b", b.random({1000}, 0.05f));
  y = make_node(g, "Gemm", {y, fc, fcb}, {{"transB", 1}}, "fc", 1, {"logits"})->outputs[0];
  g.add_output(y);
  g.verify();
  // 2 convs per block x 8 blocks + stem + 3 downsample 1x1 convs = 20 convs.
  int convs = 0;
  for (const auto& n : g.nodes()) convs += n->op == "Conv";
  EXPECT_EQ(convs, 20);
  EXPECT_EQ(y->type.str(), "fp32[1,1000]");

  interp::TensorMap in{{"x", b.random({1, 3, 224, 224}, 1.0f)}};
  interp::TensorMap out = interp::run(g, in);
  const Tensor& logits = out.at("logits");
  for (float v : logits.floats()) ASSERT_TRUE(std::isfinite(v));
  // Keeping intermediates must not change the result.
  interp::TensorMap all = interp::run(g, in, {.keep_intermediates = true});
  EXPECT_EQ(all.at("logits"), logits);
  EXPECT_GT(all.size(), g.num_nodes());
}

}  // namespace
}  // namespace trnsim::ir
