// keep_on_chip end to end: an MLP and a LayerNorm block compiled with and without
// the pass give bit-identical outputs on the simulated `tiny` chip (the copies cast
// exactly as the DMA round trip did), with less HBM traffic and less simulated time;
// with a small SBUF some intermediates spill (keep their round trip) and the outputs
// are still identical. Races and poisoned reads are checked by TRNSIM_CHECK in ctest.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/ir/ops.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

using ir::Graph;
using ir::Value;

struct Result {
  std::map<std::string, double> stats;
  runtime::RunReport rep;
  std::vector<float> out;
};

// Compiles `g0` with keep_on_chip on and off and runs both on one device (SystemC
// allows one per process) with the same random inputs.
std::pair<Result, Result> on_and_off(const Graph& g0, const std::vector<std::string>& sets = {}) {
  const platform::platform_config cfg = platform::load_config("tiny", sets);
  runtime::Device dev(cfg);
  auto one = [&](bool keep) {
    compiler::CompileOnnxOptions o;
    o.precision = Precision::bf16;
    o.target = runtime::target_from_config(cfg);
    o.keep_on_chip = keep;
    Graph g = g0.clone();
    compiler::run_graph_pipeline(g, o, nullptr);
    Result r;
    const isa::Program prog = compiler::generate(g, o, nullptr, &r.stats);
    runtime::Launch l{&prog, {}, 0};
    uint32_t seed = 1;
    for (const Value* v : g0.inputs()) {
      const ir::Tensor t = random_tensor(v->shape(), seed++);
      l.inputs[v->name] = runtime::HostTensor::from_float(v->shape(), isa::DType::fp32, t.floats());
    }
    r.rep = dev.run({l});
    r.out = r.rep.launches.at(0).outputs.begin()->second.to_float();
    return r;
  };
  Result on = one(true);
  return {std::move(on), one(false)};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

Value* node(Graph& g, const char* op, std::vector<Value*> in,
            std::map<std::string, ir::Attribute> attrs = {}) {
  return ir::make_node(g, op, std::move(in), std::move(attrs))->outputs[0];
}

// x[256,192] -> Linear(192, 384) -> Relu -> Linear(384, 160): the hidden activation
// is stored by the first matmul's evacuation and loaded (cast to bf16) by the second.
Graph mlp() {
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {256, 192}});
  Value* w1 = g.add_input("w1", {ElemType::fp32, {192, 384}});
  Value* w2 = g.add_input("w2", {ElemType::fp32, {384, 160}});
  Value* h = node(g, "Relu", {node(g, "MatMul", {x, w1})});
  g.add_output(node(g, "MatMul", {h, w2}));
  return g;
}

TEST(KeepOnChip, MlpBitIdenticalWithLessTrafficAndTime) {
  const auto [on, off] = on_and_off(mlp());
  EXPECT_TRUE(same_bits(on.out, off.out));
  EXPECT_GT(on.stats.at("keep_on_chip.loads_forwarded"), 0);
  EXPECT_EQ(on.stats.at("keep_on_chip.loads_spilled"), 0);
  EXPECT_EQ(off.stats.count("keep_on_chip.loads_forwarded"), 0u);
  // The hidden activation (256 x 384 fp32 = 384 KiB) is neither written nor read back.
  EXPECT_EQ(off.rep.hbm_write_bytes - on.rep.hbm_write_bytes, 256u * 384 * 4);
  EXPECT_EQ(off.rep.hbm_read_bytes - on.rep.hbm_read_bytes, 256u * 384 * 4);
  EXPECT_LT(on.rep.simulated_ns, off.rep.simulated_ns);
  std::printf("[keep_on_chip] mlp: %.0f ns kept, %.0f ns through HBM\n", on.rep.simulated_ns,
              off.rep.simulated_ns);
}

TEST(KeepOnChip, SmallSbufSpillsAndStaysIdentical) {
  // 5 KiB per partition: the lowering's working buffers (smaller tiles here) leave
  // room for some kept tiles only; the other loads keep their HBM round trip.
  const std::vector<std::string> small{"core.sbuf.partition_size=5KiB"};
  const auto [on, off] = on_and_off(mlp(), small);
  EXPECT_TRUE(same_bits(on.out, off.out));
  EXPECT_GT(on.stats.at("keep_on_chip.loads_forwarded"), 0);
  EXPECT_GT(on.stats.at("keep_on_chip.loads_spilled"), 0);
  EXPECT_LT(on.rep.hbm_read_bytes, off.rep.hbm_read_bytes);
  std::printf("[keep_on_chip] mlp on 5 KiB: %.0f loads forwarded, %.0f spilled\n",
              on.stats.at("keep_on_chip.loads_forwarded"),
              on.stats.at("keep_on_chip.loads_spilled"));
}

TEST(KeepOnChip, NormBlockBitIdentical) {
  // Residual add into LayerNorm into a matmul: elementwise and rowwise kernels hand
  // their tiles on too.
  Graph g;
  Value* x = g.add_input("x", {ElemType::fp32, {200, 96}});
  Value* r = g.add_input("r", {ElemType::fp32, {200, 96}});
  Value* gamma = g.add_input("gamma", {ElemType::fp32, {96}});
  Value* beta = g.add_input("beta", {ElemType::fp32, {96}});
  Value* w = g.add_input("w", {ElemType::fp32, {96, 64}});
  Value* n = node(g, "LayerNormalization", {node(g, "Add", {x, r}), gamma, beta},
                  {{"axis", int64_t{-1}}, {"epsilon", 1e-5f}});
  g.add_output(node(g, "MatMul", {n, w}));
  const auto [on, off] = on_and_off(g);
  EXPECT_TRUE(same_bits(on.out, off.out));
  EXPECT_GT(on.stats.at("keep_on_chip.loads_forwarded"), 0);
  EXPECT_LT(on.rep.hbm_write_bytes, off.rep.hbm_write_bytes);
}

}  // namespace
}  // namespace trnsim::e2e
