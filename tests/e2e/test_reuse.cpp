// Reusing a repeated block's program (compiler/reuse.h): a stack of equal layers
// with different weights, between a prelude and a tail, compiled with the first
// block's tile passes reused for the others, computes what the interpreter computes
// and what the block-by-block compile computes (bit for bit: the same instructions
// in each block), with the tile passes run once per piece (prelude, block, tail).
// Races and poisoned reads are checked by TRNSIM_CHECK in ctest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "compiler/ir/ops.h"
#include "compiler/partition.h"
#include "compiler/reuse.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

using ir::Graph;
using ir::Value;

Value* node(Graph& g, const char* op, std::vector<Value*> in,
            std::map<std::string, ir::Attribute> attrs = {}) {
  return ir::make_node(g, op, std::move(in), std::move(attrs))->outputs[0];
}

// x[64,32] -> Sigmoid -> `layers` x [h = Softmax(Relu(x W1_i + b_i) * s) W2_i; x + h]
// -> Tanh (hidden width 128). W1_i, W2_i and b_i differ per layer (more than 64
// elements: weights, not constants that steer lowering); s (a [1,128] scale) is one
// constant every layer reads.
Graph stack(int layers) {
  Graph g;
  Value* x = node(g, "Sigmoid", {g.add_input("x", {ElemType::fp32, {64, 32}})});
  Value* s = g.add_constant("s", random_tensor({1, 128}, 99, 0.5f, 1.5f));
  for (int i = 0; i < layers; ++i) {
    const std::string n = std::to_string(i);
    Value* w1 = g.add_constant("w1_" + n, random_tensor({32, 128}, 10 + i));
    Value* b = g.add_constant("b_" + n, random_tensor({1, 128}, 20 + i));
    Value* w2 = g.add_constant("w2_" + n, random_tensor({128, 32}, 30 + i));
    Value* h = node(g, "Relu", {node(g, "Add", {node(g, "MatMul", {x, w1}), b})});
    h = node(g, "Softmax", {node(g, "Mul", {h, s})}, {{"axis", ir::Attribute(int64_t{-1})}});
    x = node(g, "Add", {x, node(g, "MatMul", {h, w2})});
  }
  g.add_output(node(g, "Tanh", {x}));
  return g;
}

struct Compiled {
  compiler::PartitionedModel m;
  runtime::RunReport rep;
  std::vector<float> out;
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// `g` (input x [64,32]) compiled in bf16 for `cfg`, its blocks reused or not, and run.
Compiled compile_and_run(runtime::Device& dev, const platform::platform_config& cfg, const Graph& g,
                         const ir::Tensor& x, bool reuse, bool keep_on_chip) {
  compiler::CompileOnnxOptions o;
  o.precision = Precision::bf16;
  o.keep_on_chip = keep_on_chip;
  o.target = runtime::target_from_config(cfg);
  o.print_after = {"insert_sync"};
  compiler::set_reuse_blocks(reuse);
  Compiled c;
  c.m = compiler::compile_partitioned(g.clone(), o, false);
  compiler::set_reuse_blocks(true);
  const isa::Program& prog = c.m.segments.at(0).program;
  runtime::Launch l{&prog, {}, 0};
  l.inputs["x"] = runtime::HostTensor::from_float({64, 32}, isa::DType::fp32, x.floats());
  c.rep = dev.run({l});
  c.out = c.rep.launches.at(0).outputs.begin()->second.to_float();
  return c;
}

TEST(ReuseBlocks, StackMatchesInterpreterAndBlockByBlockCompile) {
  const int layers = 4;
  const Graph g0 = stack(layers);
  const platform::platform_config cfg = platform::load_config("tiny");
  runtime::Device dev(cfg);
  const ir::Tensor x = random_tensor({64, 32}, 1);
  const Compiled reused = compile_and_run(dev, cfg, g0, x, true, true);
  const Compiled separate = compile_and_run(dev, cfg, g0, x, false, true);

  // The stack is found, and its blocks after the first take the first's program.
  // (The blocks found may start mid-layer, after the first layer's MatMul, so that
  // fewer than `layers` whole blocks fit.)
  const double blocks = reused.m.stats.at("repeat.blocks");
  EXPECT_GE(blocks, layers - 1);
  EXPECT_EQ(reused.m.stats.at("repeat.compiled_blocks"), 1);
  EXPECT_EQ(reused.m.stats.at("repeat.reused_blocks"), blocks - 1);
  EXPECT_EQ(separate.m.stats.count("repeat.reused_blocks"), 0u);
  // The tile passes ran once per piece: prelude, first block, tail.
  EXPECT_EQ(count(reused.m.dump_text, "# IR after insert_sync"), 3u);
  EXPECT_EQ(count(separate.m.dump_text, "# IR after insert_sync"), 1u);

  // Same results as the block-by-block compile, and as the interpreter.
  EXPECT_TRUE(same_bits(reused.out, separate.out));
  const interp::TensorMap want = reference_outputs(g0, {{"x", x}}, Precision::bf16);
  expect_close("y", reused.out, as_floats(want.begin()->second), 2e-2, 2e-3);
  // Every block's instructions, but no more than the barriers add.
  EXPECT_GE(reused.rep.instructions, separate.rep.instructions);
  std::printf("[reuse] %d layers: %.0f ns reused, %.0f ns block by block\n", layers,
              reused.rep.simulated_ns, separate.rep.simulated_ns);
}

// The most bytes of node outputs live at once in node order (each from its node to
// its last reader; graph outputs excluded), at 4 bytes an element: what the HBM
// scratch of a program of `g` needs at least when intermediates go through HBM.
uint64_t live_peak_bytes(const Graph& g) {
  const auto& nodes = g.nodes();
  std::map<const Value*, size_t> last;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Value* v : nodes[i]->inputs) last[v] = i;
  std::set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  uint64_t live = 0, peak = 0;
  std::map<size_t, uint64_t> frees;  // node -> bytes dead after it
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const Value* v : nodes[i]->outputs) {
      if (outputs.count(v) || !last.count(v)) continue;
      const uint64_t bytes = 4 * static_cast<uint64_t>(v->type.numel());
      live += bytes;
      frees[last[v]] += bytes;
    }
    peak = std::max(peak, live);
    live -= frees[i];
  }
  return peak;
}

// Reused blocks' scratch tensors share HBM: each piece's scratch (placed by alloc_hbm
// within the piece) and each value passed between pieces reuses the bytes of those
// dead by an earlier barrier. With intermediates in HBM (keep_on_chip off), 8
// layers' scratch stays within twice the graph's live peak, where one range per
// tensor took about the sum of every layer's; the run is race- and poison-free
// (TRNSIM_CHECK) and computes the block-by-block compile's outputs bit for bit.
TEST(ReuseBlocks, ScratchSharesHbmAcrossBlocks) {
  const int layers = 8;
  const Graph g0 = stack(layers);
  const platform::platform_config cfg = platform::load_config("tiny");
  runtime::Device dev(cfg);
  const ir::Tensor x = random_tensor({64, 32}, 2);
  // Scratch footprint: the program's less its other tensors (64-byte aligned).
  auto scratch_bytes = [](const isa::Program& p) {
    uint64_t fixed = 0;
    for (const auto& d : p.tensors)
      if (d.role != isa::TensorRole::scratch) fixed += (d.bytes() + 63) / 64 * 64;
    return p.hbm_bytes() - std::min(fixed, p.hbm_bytes());
  };
  const Compiled reused = compile_and_run(dev, cfg, g0, x, true, false);
  const Compiled separate = compile_and_run(dev, cfg, g0, x, false, false);
  EXPECT_GE(reused.m.stats.at("repeat.reused_blocks"), layers - 2);
  const uint64_t reused_scratch = scratch_bytes(reused.m.segments.at(0).program);
  const uint64_t separate_scratch = scratch_bytes(separate.m.segments.at(0).program);
  const uint64_t peak = live_peak_bytes(g0);
  std::printf("[reuse] scratch %llu bytes reused, %llu block by block; live peak %llu\n",
              static_cast<unsigned long long>(reused_scratch),
              static_cast<unsigned long long>(separate_scratch),
              static_cast<unsigned long long>(peak));
  EXPECT_LE(reused_scratch, 2 * peak);
  EXPECT_TRUE(same_bits(reused.out, separate.out));
}

}  // namespace
}  // namespace trnsim::e2e
