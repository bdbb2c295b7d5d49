// A linear layer Y = relu(X [64,256] @ W [256,512] + b), W and b constants, and what
// its bf16 program must hold (the compiler's and the end-to-end HBM layout suites
// both check it): W's bf16 cast and b, not W's fp32 original no instruction reads.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "compiler/compile.h"
#include "compiler/ir/ops.h"
#include "compiler/roofline.h"
#include "models/isa/program.h"

namespace trnsim::test {

// W [256,512] and b [512] are the given constants.
inline ir::Graph bf16_linear_graph(ir::Tensor w, ir::Tensor b) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ir::ElemType::fp32, {64, 256}});
  ir::Value* wv = g.add_constant("W", std::move(w));
  ir::Value* bv = g.add_constant("b", std::move(b));
  ir::Value* y = ir::make_node(g, "MatMul", {x, wv})->outputs[0];
  y = ir::make_node(g, "Add", {y, bv})->outputs[0];
  g.add_output(ir::make_node(g, "Relu", {y})->outputs[0]);
  return g;
}

// Constants: W cast to bf16, 256 x 512 x 2 = 262144 bytes, and b in fp32,
// 512 x 4 = 2048: 264192. Keeping W's fp32 original too (256 x 512 x 4 = 524288
// bytes that no instruction reads) made 788480. Every constant declared has its data.
// Roofline minimum bytes: X 64 x 256 x 4 = 65536, W as read 262144, b 2048, Y
// 64 x 512 x 4 = 131072: 460800 (W counted at fp32 made it 722944).
inline void expect_bf16_linear_program(const isa::Program& p,
                                       const compiler::ProgramRoofline& roof) {
  uint64_t constant_bytes = 0;
  for (const auto& [name, bytes] : p.constants) {
    const isa::TensorDecl* d = p.find_tensor(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_FALSE(d->dtype == isa::DType::fp32 && d->bytes() == 524288u) << name;
    constant_bytes += bytes.size();
  }
  EXPECT_EQ(constant_bytes, 264192u);
  for (const auto& d : p.tensors) {
    EXPECT_FALSE(d.role == isa::TensorRole::constant && !p.constants.count(d.name)) << d.name;
  }
  EXPECT_EQ(roof.min_bytes, 460800u);
}

}  // namespace trnsim::test
