// compiler::timings: phases accumulate by name in first-seen order, and nothing is
// recorded while timing is off.
#include "compiler/timings.h"

#include <gtest/gtest.h>

namespace trnsim::compiler::timings {
namespace {

TEST(Timings, AccumulateByNameInFirstSeenOrder) {
  reset();
  enable(false);
  { Scope s("off"); }
  EXPECT_TRUE(phases().empty());
  enable(true);
  { Scope s("b"); }
  { Scope s("a"); }
  { Scope s("b"); }
  enable(false);
  const auto p = phases();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].first, "b");
  EXPECT_EQ(p[1].first, "a");
  EXPECT_GE(p[0].second, 0.0);
  const std::string text = format();
  EXPECT_EQ(text.find("timing b "), 0u) << text;
  EXPECT_NE(text.find("\ntiming a "), std::string::npos) << text;
  // CPU seconds too, one per phase (the wall clock on a shared machine is mostly
  // the other jobs).
  const auto cpu = cpu_seconds();
  ASSERT_EQ(cpu.size(), 2u);
  EXPECT_GE(cpu[0], 0.0);
  EXPECT_NE(text.find(" cpu "), std::string::npos) << text;
  reset();
  EXPECT_TRUE(phases().empty());
}

}  // namespace
}  // namespace trnsim::compiler::timings
