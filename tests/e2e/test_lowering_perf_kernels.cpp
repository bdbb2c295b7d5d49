// Numerics of the memory-bound kernels' fast paths on the simulated `tiny` chip
// against the reference interpreter: LayerNorm/RMSNorm normalised on three engines
// (scalar -> PSUM, vector * gamma, GpSimd + beta; rowwise.cpp) and Transpose through
// tensor-engine block transposes (movement.cpp), on shapes that are not multiples of
// 128 (1, 127, 129, 300) and with batch dims. One check_graph per test process.
// Speed is measured by scripts/bench_memory.py, not here.
#include <gtest/gtest.h>

#include "compiler/ir/ops.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

using ir::Graph;
using ir::Value;

Value* transpose(Graph& g, Value* x, std::vector<int64_t> perm) {
  return ir::make_node(g, "Transpose", {x}, {{"perm", perm}})->outputs[0];
}

Value* norm(Graph& g, const char* op, std::vector<Value*> in, int64_t axis, float eps) {
  return ir::make_node(g, op, in, {{"axis", axis}, {"epsilon", eps}})->outputs[0];
}

// 2-D: [300, 257] -> [257, 300]: A = 300 rows in tiles of 128 + 128 + 44, L = 257
// columns = 2 full blocks + a 1-column tail. A transpose moves values only: exact.
TEST(LoweringPerfKernels, Transpose2dFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {300, 257}});
  g.add_output(transpose(g, x, {1, 0}));
  check_graph(std::move(g), Precision::fp32, 0, 0);
}

// Batch dims looped: swap the last two axes, move the last axis to the front, and
// a rank-4 permutation whose batch axes (0 and 2) are not adjacent in the output.
TEST(LoweringPerfKernels, TransposeBatchedFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {3, 129, 130}});
  g.add_output(transpose(g, x, {0, 2, 1}));
  g.add_output(transpose(g, x, {2, 0, 1}));
  g.add_output(transpose(g, x, {1, 2, 0}));
  Value* y = g.add_input("y", {ElemType::fp32, {2, 127, 3, 40}});
  g.add_output(transpose(g, y, {2, 3, 0, 1}));
  check_graph(std::move(g), Precision::fp32, 0, 0);
}

// Odd sizes: 1 batch of [127, 300]; a 600-column row (two loads of 512 + 88); and
// a tiny tensor that stays on the DMA path (below the tensor-engine threshold).
TEST(LoweringPerfKernels, TransposeOddShapesFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {1, 127, 300}});
  g.add_output(transpose(g, x, {0, 2, 1}));
  Value* w = g.add_input("w", {ElemType::fp32, {129, 600}});
  g.add_output(transpose(g, w, {1, 0}));
  Value* s = g.add_input("s", {ElemType::fp32, {5, 7}});
  g.add_output(transpose(g, s, {1, 0}));
  check_graph(std::move(g), Precision::fp32, 0, 0);
}

// A MatMul with a transposed operand at bf16 (the transpose itself stays fp32 in
// HBM; the matmul rounds its operands to bf16, which the reference emulates).
TEST(LoweringPerfKernels, TransposeIntoMatMulBf16) {
  Graph g;
  Value* a = g.add_input("a", {ElemType::fp32, {2, 129, 70}});
  Value* b = g.add_input("b", {ElemType::fp32, {2, 300, 70}});
  Value* bt = transpose(g, b, {0, 2, 1});  // [2, 70, 300]
  g.add_output(ir::make_node(g, "MatMul", {a, bt})->outputs[0]);
  check_graph(std::move(g), Precision::bf16, 2e-2, 2e-2);
}

// LayerNorm with gamma and beta on rows of 129 and 300 elements, 300 and 1 rows,
// and over the last two axes of a batched input; fp32 tight.
TEST(LoweringPerfKernels, LayerNormOddShapesFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {300, 129}});
  Value* g1 = g.add_constant("g1", random_tensor({129}, 11, 0.5f, 1.5f));
  Value* b1 = g.add_constant("b1", random_tensor({129}, 12));
  g.add_output(norm(g, "trn.LayerNorm", {x, g1, b1}, -1, 1e-5f));
  Value* r = g.add_input("r", {ElemType::fp32, {1, 300}});
  Value* g2 = g.add_constant("g2", random_tensor({300}, 13, 0.5f, 1.5f));
  Value* b2 = g.add_constant("b2", random_tensor({300}, 14));
  g.add_output(norm(g, "trn.LayerNorm", {r, g2, b2}, -1, 1e-5f));
  Value* z = g.add_input("z", {ElemType::fp32, {2, 3, 127, 129}});
  Value* g3 = g.add_constant("g3", random_tensor({127, 129}, 15, 0.5f, 1.5f));
  Value* b3 = g.add_constant("b3", random_tensor({127, 129}, 16));
  g.add_output(norm(g, "trn.LayerNorm", {z, g3, b3}, 2, 1e-5f));
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

// LayerNorm of rows with a large mean: (x - mean) is formed before the rstd
// multiply, so the result keeps fp32 accuracy (x * rstd - mean * rstd would not).
TEST(LoweringPerfKernels, LayerNormLargeMeanFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {129, 300}});
  Value* g1 = g.add_constant("g1", random_tensor({300}, 21, 0.5f, 1.5f));
  Value* b1 = g.add_constant("b1", random_tensor({300}, 22));
  g.add_output(norm(g, "trn.LayerNorm", {x, g1, b1}, -1, 1e-5f));
  interp::TensorMap in;
  in["x"] = random_tensor({129, 300}, 23, 999.0f, 1001.0f);
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-4, in);
}

// RMSNorm on 127, 129, 300-element rows with batch dims, and LayerNorm without beta.
TEST(LoweringPerfKernels, RmsNormAndGammaOnlyFp32) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {2, 3, 127}});
  Value* g1 = g.add_constant("g1", random_tensor({127}, 31, 0.5f, 1.5f));
  g.add_output(norm(g, "trn.RMSNorm", {x, g1}, -1, 1e-6f));
  Value* y = g.add_input("y", {ElemType::fp32, {129, 300}});
  Value* g2 = g.add_constant("g2", random_tensor({300}, 32, 0.5f, 1.5f));
  g.add_output(norm(g, "trn.RMSNorm", {y, g2}, -1, 1e-6f));
  Value* z = g.add_input("z", {ElemType::fp32, {300, 129}});
  Value* g3 = g.add_constant("g3", random_tensor({129}, 33, 0.5f, 1.5f));
  g.add_output(norm(g, "trn.LayerNorm", {z, g3}, -1, 1e-5f));
  check_graph(std::move(g), Precision::fp32, 1e-4, 1e-5);
}

// The norms at bf16 precision (matmul operands only: the norms stay fp32 on chip,
// so the tolerance is what the bf16 reference emulation allows).
TEST(LoweringPerfKernels, NormsBf16) {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {4, 129, 300}});
  Value* g1 = g.add_constant("g1", random_tensor({300}, 41, 0.5f, 1.5f));
  Value* b1 = g.add_constant("b1", random_tensor({300}, 42));
  g.add_output(norm(g, "trn.LayerNorm", {x, g1, b1}, -1, 1e-5f));
  g.add_output(norm(g, "trn.RMSNorm", {x, g1}, -1, 1e-6f));
  check_graph(std::move(g), Precision::bf16, 2e-2, 2e-2);
}

}  // namespace
}  // namespace trnsim::e2e
