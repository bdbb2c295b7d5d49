// The resampling and index ops (LRN, Shrink, MaxPool with Indices, MaxUnpool,
// GridSample, Det, RoiAlign; Resize and Einsum in the forms the decompose
// pass leaves: tf_crop_and_resize, integers) have no device lowering: between
// device ops they must fall back to the host cleanly, each reported by its op name
// with the lowering's reason, and the partitioned run must equal the reference
// interpreter. (TopK between them runs on the device: compiler/lower/topk.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "compiler/ir/ops.h"
#include "compiler/lower/int_range.h"
#include "compiler/partition.h"
#include "runtime/fallback.h"
#include "tests/e2e/lowering_check.h"

namespace trnsim::e2e {
namespace {

using ir::Attribute;

ir::Graph index_ops_graph() {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::fp32, {1, 2, 4, 6}});
  auto op = [&](const std::string& type, std::vector<ir::Value*> in,
                std::map<std::string, Attribute> attrs = {}, int outs = 1) {
    return ir::make_node(g, type, std::move(in), std::move(attrs), "", outs)->outputs;
  };
  ir::Value* r = op("Relu", {x})[0];
  ir::Value* a =
      op("Resize", {r},
         {{"mode", Attribute(std::string("linear"))},
          {"coordinate_transformation_mode", Attribute(std::string("tf_crop_and_resize"))},
          {"roi", Attribute(std::vector<float>{0, 0, 0.1f, 0.2f, 1, 1, 0.9f, 1.1f})},
          {"sizes", Attribute(std::vector<int64_t>{1, 2, 8, 12})}})[0];
  ir::Value* b = op("LRN", {a}, {{"size", Attribute(int64_t{3})}})[0];
  ir::Value* c = op("Shrink", {b}, {{"lambd", Attribute(0.1f)}})[0];
  auto pooled = op("MaxPool", {c},
                   {{"kernel_shape", Attribute(std::vector<int64_t>{2, 2})},
                    {"strides", Attribute(std::vector<int64_t>{2, 2})}},
                   2);
  ir::Value* u = op("MaxUnpool", {pooled[0], pooled[1]},
                    {{"kernel_shape", Attribute(std::vector<int64_t>{2, 2})},
                     {"strides", Attribute(std::vector<int64_t>{2, 2})}})[0];
  ir::Value* grid = g.add_constant("grid", random_tensor({1, 3, 5, 2}, 5, -1.2f, 1.2f));
  ir::Value* s = op("GridSample", {u, grid})[0];
  auto top = op("TopK", {s}, {{"k", Attribute(int64_t{2})}}, 2);
  ir::Value* sq = op("Slice", {s},
                     {{"starts", Attribute(std::vector<int64_t>{0})},
                      {"ends", Attribute(std::vector<int64_t>{3})},
                      {"axes", Attribute(std::vector<int64_t>{3})}})[0];
  ir::Value* si = op("Cast", {sq}, {{"to", Attribute(std::string("int32"))}})[0];
  ir::Value* ei = op("Einsum", {si}, {{"equation", Attribute(std::string("nchh->nc"))}})[0];
  ir::Value* e = op("Cast", {ei}, {{"to", Attribute(std::string("fp32"))}})[0];
  ir::Value* d = op("Det", {sq})[0];
  ir::Value* rois = g.add_constant(
      "rois", Tensor::from_floats({2, 4}, {0.5f, 0.5f, 6.0f, 5.0f, 2.0f, 1.0f, 11.0f, 7.0f}));
  ir::Value* bi = g.add_constant("bi", Tensor::from_ints({2}, {0, 0}));
  ir::Value* ra =
      op("RoiAlign", {u, rois, bi},
         {{"output_height", Attribute(int64_t{2})}, {"output_width", Attribute(int64_t{3})}})[0];
  // Device ops after the host ones.
  g.add_output(op("Relu", {top[0]})[0]);
  g.add_output(op("Add", {e, d})[0]);
  g.add_output(op("Relu", {ra})[0]);
  return g;
}

TEST(FallbackIndex, EveryIndexOpRunsOnTheHost) {
  const platform::platform_config cfg = platform::load_config("tiny");
  ir::Graph g = index_ops_graph();
  interp::TensorMap in{{"X", random_tensor({1, 2, 4, 6}, 1)}};
  const interp::TensorMap want = interp::run(g, in);
  compiler::CompileOnnxOptions o;
  o.precision = Precision::fp32;
  o.target = runtime::target_from_config(cfg);
  compiler::PartitionedModel m = compiler::compile_partitioned(std::move(g), o, true);
  std::set<std::string> host;
  for (const auto& f : m.fallback) {
    host.insert(f.op);
    EXPECT_FALSE(f.reason.empty()) << f.op;
    if (f.op == "Resize") {
      EXPECT_NE(f.reason.find("tf_crop_and_resize"), std::string::npos) << f.reason;
    }
    if (f.op == "Einsum") {
      EXPECT_NE(f.reason.find("Einsum on int32 is not rewritten"), std::string::npos) << f.reason;
    }
  }
  for (const char* op : {"Resize", "LRN", "Shrink", "MaxPool", "MaxUnpool", "GridSample", "Einsum",
                         "Det", "RoiAlign"})
    EXPECT_TRUE(host.count(op)) << op << " should run on the host";
  bool any_device = false;
  for (const auto& s : m.segments) any_device = any_device || s.on_device;
  EXPECT_TRUE(any_device);

  runtime::Device dev(cfg);
  runtime::FallbackResult r = runtime::run_partitioned(dev, cfg, m, in);
  for (const ir::Value* out : m.graph.outputs()) {
    const auto& got = r.outputs.at(out->name).floats();
    const auto& exp = want.at(out->name).floats();
    ASSERT_EQ(got.size(), exp.size()) << out->name;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], exp[i], 1e-4 + 1e-4 * std::fabs(exp[i])) << out->name << "[" << i << "]";
  }
}

// The Indices of a MaxPool over integers are offsets into its input: their range
// is [0, numel - 1], not the input's values (which a Gather reading them on the
// device would otherwise trust).
TEST(FallbackIndex, MaxPoolIndicesRangeIsTheInputsOffsets) {
  ir::Graph g;
  ir::Value* x = g.add_input("X", {ElemType::uint8, {1, 2, 6, 6}});
  ir::Node* mp = ir::make_node(g, "MaxPool", {x},
                               {{"kernel_shape", Attribute(std::vector<int64_t>{2, 2})},
                                {"strides", Attribute(std::vector<int64_t>{2, 2})}},
                               "", 2);
  g.add_output(mp->outputs[0]);
  g.add_output(mp->outputs[1]);
  const lower::IntRanges r = lower::int_ranges(g);
  EXPECT_EQ(r.at(mp->outputs[0]).hi, 255.0);
  EXPECT_EQ(r.at(mp->outputs[1]).lo, 0.0);
  EXPECT_EQ(r.at(mp->outputs[1]).hi, 71.0);
}

// OneHot's elements are its `values` (off, on), whatever the indices: with small
// constant values a Cast or Gather after it can run on the device.
TEST(FallbackIndex, OneHotRangeIsItsValues) {
  ir::Graph g;
  ir::Value* idx = g.add_input("I", {ElemType::int64, {5}});
  ir::Value* values =
      g.add_constant("values", ir::Tensor::from_ints({2}, {-3, 9}, ElemType::int64));
  ir::Node* oh = ir::make_node(g, "OneHot", {idx, values}, {{"depth", Attribute(int64_t{7})}});
  g.add_output(oh->outputs[0]);
  const lower::IntRanges r = lower::int_ranges(g);
  EXPECT_EQ(r.at(oh->outputs[0]).lo, -3.0);
  EXPECT_EQ(r.at(oh->outputs[0]).hi, 9.0);
}

}  // namespace
}  // namespace trnsim::e2e
