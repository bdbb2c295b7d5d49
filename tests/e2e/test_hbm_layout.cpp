// The compiled program's HBM layout (compiler/passes/alloc_hbm.cpp): scratch tensors
// reuse dead ones' bytes and the program still computes the reference's outputs with
// no race (the suite runs with TRNSIM_CHECK=races,poison); a bf16 program's image
// holds the bf16 casts of its matmul weights, not the fp32 originals no instruction
// reads, and the roofline counts the bytes read.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "compiler/roofline.h"
#include "models/isa/binary.h"
#include "tests/common/bf16_linear.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

TEST(HbmLayout, Bf16ImageHoldsNoUnreadFp32Weights) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::bf16;
  o.target = runtime::target_from_config(cfg);
  ir::Graph g =
      test::bf16_linear_graph(random_tensor({256, 512}, 3, -0.1f, 0.1f), random_tensor({512}, 4));
  const ir::Graph original = g.clone();
  compiler::run_graph_pipeline(g, o, nullptr);
  compiler::ProgramRoofline roof;
  const isa::Program p = compiler::generate(g, o, nullptr, nullptr, &roof);
  test::expect_bf16_linear_program(p, roof);
  // The file: constants plus instructions and the tensor table, well under the
  // 788480 bytes of the constants alone before.
  const std::string path = ::testing::TempDir() + "trnsim_hbm_layout_bf16.tbin";
  isa::save_program(p, path);
  const uint64_t file = std::filesystem::file_size(path);
  std::remove(path.c_str());
  EXPECT_GT(file, 264192u);
  EXPECT_LT(file, 788480u);
  // Same outputs as the reference with bf16 operands.
  const interp::TensorMap in = {{"X", random_tensor({64, 256}, 5)}};
  const interp::TensorMap want = reference_outputs(original, in, Precision::bf16);
  expect_outputs_close(original, want, run_on_tiny(cfg, p, in), 1e-3, 1e-3);
}

// A chain of matmuls whose intermediates go through HBM (keep_on_chip off): each is
// dead once the next matmul has read it, so later ones reuse its bytes; the run
// (races and poison checked) still computes the reference's outputs.
TEST(HbmLayout, ScratchReusesDeadTensorsWithoutRaces) {
  const platform::platform_config cfg = platform::load_config("tiny");
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.keep_on_chip = false;
  o.target = runtime::target_from_config(cfg);
  ir::Graph g;
  ir::Value* y = g.add_input("X", {ElemType::fp32, {128, 128}});
  for (uint32_t i = 0; i < 6; ++i) {
    ir::Value* w =
        g.add_constant("W" + std::to_string(i), random_tensor({128, 128}, 10 + i, -0.15f, 0.15f));
    y = ir::make_node(g, "MatMul", {y, w})->outputs[0];
    y = ir::make_node(g, "Tanh", {y})->outputs[0];
  }
  g.add_output(y);
  const ir::Graph original = g.clone();
  const isa::Program p = compiler::compile_graph(std::move(g), o).program;
  // Scratch: the intermediates of 128 x 128 x 4 = 65536 bytes (the last node writes
  // the output). Each matmul loads its whole input into SBUF before it stores its
  // output, so no two intermediates are ever live together: one 65536-byte range
  // after the inputs, outputs and constants serves them all, where a range each took
  // their sum.
  uint64_t fixed = 0, scratch_sum = 0, n_scratch = 0;
  std::set<uint64_t> scratch_offsets;
  for (const auto& d : p.tensors) {
    if (d.role == isa::TensorRole::scratch) {
      scratch_sum += d.bytes();
      ++n_scratch;
      scratch_offsets.insert(d.hbm_offset);
    } else {
      fixed = std::max(fixed, d.hbm_offset + d.bytes());
    }
  }
  EXPECT_GE(n_scratch, 5u);
  EXPECT_EQ(scratch_sum, n_scratch * 65536u);
  EXPECT_EQ(p.hbm_bytes() - fixed, 65536u);
  EXPECT_EQ(scratch_offsets.size(), 1u);
  const interp::TensorMap in = {{"X", random_tensor({128, 128}, 7)}};
  const interp::TensorMap want = reference_outputs(original, in, Precision::fp32);
  expect_outputs_close(original, want, run_on_tiny(cfg, p, in), 1e-4, 1e-4);
}

}  // namespace
}  // namespace trnsim::e2e
