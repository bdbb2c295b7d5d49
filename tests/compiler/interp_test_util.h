// Helpers for the interpreter tests: run a graph written in the IR text form.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "compiler/ir/text.h"

namespace trnsim::ir::testing {

inline Tensor F(Shape s, std::vector<float> v) {
  return Tensor::from_floats(std::move(s), std::move(v));
}
inline Tensor I(Shape s, std::vector<int64_t> v, ElemType t = ElemType::int64) {
  return Tensor::from_ints(std::move(s), std::move(v), t);
}
inline Tensor B(Shape s, std::vector<int64_t> v) {
  return Tensor::from_ints(std::move(s), std::move(v), ElemType::boolean);
}

// Runs `graph t { <body> }` and returns its outputs.
inline interp::TensorMap run_ir(const std::string& body, const interp::TensorMap& in = {}) {
  Graph g = parse_graph("graph t {\n" + body + "\n}\n", "test.tir");
  return interp::run(g, in);
}

// Runs a graph with one output named `y`.
inline Tensor run_y(const std::string& body, const interp::TensorMap& in = {}) {
  return run_ir(body, in).at("y");
}

inline void expect_floats(const Tensor& got, const std::vector<float>& want, double tol = 1e-6) {
  ASSERT_TRUE(got.holds_floats()) << got.str();
  ASSERT_EQ(got.floats().size(), want.size()) << got.str();
  for (size_t k = 0; k < want.size(); ++k) {
    if (std::isnan(want[k])) {
      EXPECT_TRUE(std::isnan(got.floats()[k])) << "element " << k << " of " << got.str();
    } else if (std::isinf(want[k])) {
      EXPECT_EQ(got.floats()[k], want[k]) << "element " << k << " of " << got.str();
    } else {
      EXPECT_NEAR(got.floats()[k], want[k],
                  tol * std::max(1.0, std::fabs(static_cast<double>(want[k]))))
          << "element " << k << " of " << got.str();
    }
  }
}

inline void expect_ints(const Tensor& got, const std::vector<int64_t>& want) {
  ASSERT_FALSE(got.holds_floats()) << got.str();
  EXPECT_EQ(got.ints(), want) << got.str();
}

}  // namespace trnsim::ir::testing
