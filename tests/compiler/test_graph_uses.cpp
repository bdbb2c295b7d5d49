// graph_passes::Uses: the O(edit) updates (added, replaced) the fusion passes make
// per rewrite leave the same readers as a full recount of the edited graph.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/graph_passes/util.h"
#include "compiler/ir/ops.h"
#include "tests/compiler/graph_pass_test_util.h"

namespace trnsim::graph_passes {
namespace {

using testing::parse_body;

// Readers of `v` as a sorted list (the order is unspecified).
std::vector<std::pair<ir::Node*, int>> readers(const Uses& u, const ir::Value* v) {
  auto r = u.of(v);
  std::sort(r.begin(), r.end());
  return r;
}

void expect_same(const ir::Graph& g, const Uses& incremental) {
  const Uses fresh(g);
  for (const auto& v : g.values()) {
    EXPECT_EQ(readers(incremental, v.get()), readers(fresh, v.get())) << v->name;
    EXPECT_EQ(incremental.is_output(v.get()), fresh.is_output(v.get())) << v->name;
    EXPECT_EQ(incremental.single_use(v.get()), fresh.single_use(v.get())) << v->name;
    EXPECT_EQ(incremental.unused(v.get()), fresh.unused(v.get())) << v->name;
  }
}

TEST(GraphUses, IncrementalUpdatesMatchARecount) {
  ir::Graph g = parse_body(R"IR(
    input %x: fp32[2,3]
    input %y: fp32[2,3]
    %a: fp32[2,3] = Mul(%x, %y) @a
    %b: fp32[2,3] = Sigmoid(%a) @b
    %c: fp32[2,3] = Add(%b, %x) @c
    %d: fp32[2,3] = Relu(%b) @d
    output %c, %d)IR");
  Uses u(g);
  ir::Node* c = g.find_value("c")->producer;
  // c = Add(b, x) rewritten as one node reading x twice and y, replacing b and c.
  ir::Value* b = g.find_value("b");
  ir::Node* f = ir::make_node(g, "Add", {g.find_value("x"), g.find_value("x")}, {}, "f", 1,
                              {g.unique_name("c.fused")}, c);
  u.added(f);
  expect_same(g, u);
  replace_value(g, c->outputs[0], f->outputs[0], true);  // a graph output
  u.replaced(c->outputs[0], f->outputs[0]);
  expect_same(g, u);
  // Readers of an inner value move too (d reads b; b itself stays read by c).
  ir::Node* s = ir::make_node(g, "Sigmoid", {g.find_value("a")}, {}, "s", 1, {g.unique_name("b2")},
                              b->producer);
  u.added(s);
  g.replace_all_uses(b, s->outputs[0]);
  u.replaced(b, s->outputs[0]);
  expect_same(g, u);
  EXPECT_TRUE(u.unused(b));
  // A refresh after the updates changes nothing, and neither does erasing what is dead.
  u.refresh();
  expect_same(g, u);
  g.erase_dead_nodes();
  u.refresh();
  expect_same(g, u);
}

}  // namespace
}  // namespace trnsim::graph_passes
