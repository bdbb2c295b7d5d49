// Reference interpreter: elementwise ops on small hand-computed cases.
#include <cmath>
#include <limits>

#include "tests/compiler/interp_test_util.h"

namespace trnsim::ir::testing {
namespace {

const Tensor kX = F({5}, {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f});

Tensor unary(const std::string& op, const std::string& attrs = "", const Tensor& x = kX) {
  std::string t = x.type().str();
  return run_y("input %x: " + t + "\n%y: " + t + " = " + op + "(%x) " + attrs + "\noutput %y",
               {{"x", x}});
}

TEST(InterpUnary, Activations) {
  expect_floats(unary("Relu"), {0, 0, 0, 0.5f, 2});
  expect_floats(unary("LeakyRelu", "{alpha=0.1}"), {-0.2f, -0.05f, 0, 0.5f, 2});
  // Elu: x < 0 -> e^x - 1: e^-2 - 1 = -0.864664717, e^-0.5 - 1 = -0.393469340.
  expect_floats(unary("Elu"), {-0.864664717f, -0.393469340f, 0, 0.5f, 2});
  // Selu: gamma*x for x > 0 (1.0507010 * 0.5 = 0.52535051); gamma*alpha*(e^x - 1)
  // otherwise (1.7580993 * -0.864664717 = -1.52016647).
  expect_floats(unary("Selu"), {-1.52016647f, -0.691758043f, 0, 0.525350511f, 2.10140204f}, 1e-6);
  // Sigmoid: 1/(1+e^2) = 0.119202922, 1/(1+e^0.5) = 0.377540669.
  expect_floats(unary("Sigmoid"), {0.119202922f, 0.377540669f, 0.5f, 0.622459331f, 0.880797078f});
  // HardSigmoid: clamp(0.2x + 0.5, 0, 1).
  expect_floats(unary("HardSigmoid"), {0.1f, 0.4f, 0.5f, 0.6f, 0.9f});
  expect_floats(unary("HardSigmoid", "{alpha=1.0, beta=0.0}"), {0, 0, 0, 0.5f, 1});
  // HardSwish: x * clamp(x/6 + 0.5, 0, 1): -2 * 1/6, -0.5 * 5/12, 0.5 * 7/12, 2 * 5/6.
  expect_floats(unary("HardSwish"), {-1.0f / 3, -0.5f * 5 / 12, 0, 0.5f * 7 / 12, 2.0f * 5 / 6});
  // Softplus: ln(1 + e^x): ln(1 + e^-2) = 0.126928011, ln 2 = 0.693147181.
  expect_floats(unary("Softplus"),
                {0.126928011f, 0.474076984f, 0.693147181f, 0.974076984f, 2.126928011f});
  // Softsign: x / (1 + |x|).
  expect_floats(unary("Softsign"), {-2.0f / 3, -1.0f / 3, 0, 1.0f / 3, 2.0f / 3});
  expect_floats(unary("Tanh"), {-0.964027580f, -0.462117157f, 0, 0.462117157f, 0.964027580f});
  expect_floats(unary("Erf"), {-0.995322265f, -0.520499878f, 0, 0.520499878f, 0.995322265f});
  expect_floats(unary("ThresholdedRelu", "{alpha=0.5}"),
                {0, 0, 0, 0, 2});  // strictly greater than alpha
  // Celu(alpha=2): max(0,x) + min(0, 2*(e^(x/2) - 1)): 2*(e^-1 - 1) = -1.26424112.
  expect_floats(unary("Celu", "{alpha=2.0}"), {-1.26424112f, -0.442398433f, 0, 0.5f, 2});
}

TEST(InterpUnary, Arithmetic) {
  expect_floats(unary("Neg"), {2, 0.5f, 0, -0.5f, -2});
  expect_floats(unary("Abs"), {2, 0.5f, 0, 0.5f, 2});
  expect_floats(unary("Sign"), {-1, -1, 0, 1, 1});
  expect_floats(unary("Clip", "{min=-1.0, max=1.0}"), {-1, -0.5f, 0, 0.5f, 1});
  expect_floats(unary("Clip", "{max=0.0}"), {-2, -0.5f, 0, 0, 0});  // min defaults to -inf
  // min > max: min(max(x, lo), hi) is hi everywhere (numpy, torch).
  expect_floats(unary("Clip", "{min=1.0, max=-1.0}"), {-1, -1, -1, -1, -1});
  Tensor p = F({2}, {1.0f, 4.0f});
  expect_floats(unary("Exp", "", p), {2.71828183f, 54.5981500f});
  expect_floats(unary("Log", "", p), {0.0f, 1.38629436f});
  expect_floats(unary("Sqrt", "", p), {1, 2});
  expect_floats(unary("Reciprocal", "", p), {1, 0.25f});
  // Round is half to even: -2.5 -> -2, 0.5 -> 0, 1.5 -> 2, 2.5 -> 2.
  expect_floats(unary("Round", "", F({5}, {-2.5f, -0.4f, 0.5f, 1.5f, 2.5f})), {-2, 0, 0, 2, 2});
  expect_floats(unary("Floor", "", F({2}, {-1.5f, 1.5f})), {-2, 1});
  expect_floats(unary("Ceil", "", F({2}, {-1.5f, 1.5f})), {-1, 2});
  // Integer versions.
  Tensor i = I({3}, {-3, 0, 5}, ElemType::int32);
  expect_ints(unary("Relu", "", i), {0, 0, 5});
  expect_ints(unary("Abs", "", i), {3, 0, 5});
  expect_ints(unary("Neg", "", i), {3, 0, -5});
  expect_ints(unary("Sign", "", i), {-1, 0, 1});
  expect_ints(unary("Clip", "{min=-1.0, max=2.0}", i), {-1, 0, 2});
  expect_ints(unary("Clip", "{min=3.0, max=-2.0}", i), {-2, -2, -2});
  // NaN/inf tests give bool.
  Tensor s = F({3}, {NAN, INFINITY, -INFINITY});
  expect_ints(run_y("input %x: fp32[3]\n%y: bool[3] = IsNaN(%x)\noutput %y", {{"x", s}}),
              {1, 0, 0});
  expect_ints(run_y("input %x: fp32[3]\n%y: bool[3] = IsInf(%x) {detect_negative=0}\noutput %y",
                    {{"x", s}}),
              {0, 1, 0});
}

Tensor binary(const std::string& op, const Tensor& a, const Tensor& b, const std::string& out,
              const std::string& attrs = "") {
  return run_y("input %a: " + a.type().str() + "\ninput %b: " + b.type().str() + "\n%y: " + out +
                   " = " + op + "(%a, %b) " + attrs + "\noutput %y",
               {{"a", a}, {"b", b}});
}

TEST(InterpBinary, BroadcastingArithmetic) {
  // a [2,1,3] + b [4,1] -> [2,4,3]: y[i,j,k] = a[i,0,k] + b[j,0].
  Tensor a = F({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = F({4, 1}, {10, 20, 30, 40});
  expect_floats(binary("Add", a, b, "fp32[2,4,3]"),
                {11, 12, 13, 21, 22, 23, 31, 32, 33, 41, 42, 43,
                 14, 15, 16, 24, 25, 26, 34, 35, 36, 44, 45, 46});
  // Scalar broadcast: a - 1, a * 2, a / 4.
  Tensor one = F({}, {1});
  expect_floats(binary("Sub", a, one, "fp32[2,1,3]"), {0, 1, 2, 3, 4, 5});
  expect_floats(binary("Mul", a, F({3}, {2, 0, -1}), "fp32[2,1,3]"), {2, 0, -3, 8, 0, -6});
  expect_floats(binary("Div", a, F({1}, {4}), "fp32[2,1,3]"), {0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f});
  // Pow: 2^3 = 8, 4^0.5 = 2; float base with integer exponent; integer power.
  expect_floats(binary("Pow", F({2}, {2, 4}), F({2}, {3, 0.5f}), "fp32[2]"), {8, 2});
  expect_floats(binary("Pow", F({2}, {2, -3}), I({1}, {3}), "fp32[2]"), {8, -27});
  expect_ints(binary("Pow", I({2}, {2, -3}), I({2}, {10, 3}), "int64[2]"), {1024, -27});
  // PRelu: the [2] slope broadcasts along the last dim: -1 * 0.5, -3 * 0.5.
  expect_floats(binary("PRelu", F({2, 2}, {-1, 2, -3, 4}), F({2}, {0.5f, 0.25f}), "fp32[2,2]"),
                {-0.5f, 2, -1.5f, 4});
}

TEST(InterpBinary, IntegerDivisionAndModulo) {
  // Integer Div truncates toward zero; x/0 gives 0 (documented, instead of a trap).
  expect_ints(binary("Div", I({4}, {-7, 7, 7, 5}), I({4}, {2, -2, 0, 5}), "int64[4]"),
              {-3, -3, 0, 1});
  // Mod fmod=0 takes the divisor's sign (Python %): -7%3=2, 7%-3=-2, -7%-3=-1, 7%3=1.
  expect_ints(binary("Mod", I({4}, {-7, 7, -7, 7}), I({4}, {3, -3, -3, 3}), "int64[4]"),
              {2, -2, -1, 1});
  // fmod=1 takes the dividend's sign (C fmod): -1, 1, -1, 1; 5.5 fmod 2 = 1.5.
  expect_floats(
      binary("Mod", F({5}, {-7, 7, -7, 7, 5.5f}), F({5}, {3, -3, -3, 3, 2}), "fp32[5]", "{fmod=1}"),
      {-1, 1, -1, 1, 1.5f});
  // int32 arithmetic wraps: 2147483647 + 1 = -2147483648.
  expect_ints(binary("Add", I({1}, {2147483647}, ElemType::int32), I({1}, {1}, ElemType::int32),
                     "int32[1]"),
              {-2147483648LL});
  // uint8: 250 + 10 = 260 -> 4.
  expect_ints(
      binary("Add", I({1}, {250}, ElemType::uint8), I({1}, {10}, ElemType::uint8), "uint8[1]"),
      {4});
}

TEST(InterpBinary, VariadicOps) {
  const std::string body = R"(input %a: fp32[3]
input %b: fp32[2,1]
%mx: fp32[2,3] = Max(%a, %b)
%mn: fp32[2,3] = Min(%a, %b)
%s: fp32[2,3] = Sum(%a, %b)
%m: fp32[2,3] = Mean(%a, %b)
%one: fp32[3] = Max(%a)
output %mx, %mn, %s, %m, %one)";
  // a = [1,5,3] against b = [[2],[4]].
  auto out = run_ir(body, {{"a", F({3}, {1, 5, 3})}, {"b", F({2, 1}, {2, 4})}});
  expect_floats(out.at("mx"), {2, 5, 3, 4, 5, 4});
  expect_floats(out.at("mn"), {1, 2, 2, 1, 4, 3});
  expect_floats(out.at("s"), {3, 7, 5, 5, 9, 7});
  expect_floats(out.at("m"), {1.5f, 3.5f, 2.5f, 2.5f, 4.5f, 3.5f});
  expect_floats(out.at("one"), {1, 5, 3});
  // NaN propagates through Max/Min like numpy's maximum/minimum.
  expect_floats(binary("Max", F({2}, {NAN, 1}), F({2}, {0, NAN}), "fp32[2]"), {NAN, NAN});
}

TEST(InterpBinary, ComparisonsLogicAndWhere) {
  expect_ints(binary("Less", F({3}, {1, 2, 3}), F({1}, {2}), "bool[3]"), {1, 0, 0});
  expect_ints(binary("GreaterOrEqual", F({3}, {1, 2, 3}), F({1}, {2}), "bool[3]"), {0, 1, 1});
  expect_ints(binary("Equal", I({3}, {1, 2, 3}), I({3}, {1, 0, 3}), "bool[3]"), {1, 0, 1});
  Tensor p = B({4}, {1, 1, 0, 0}), q = B({4}, {1, 0, 1, 0});
  expect_ints(binary("And", p, q, "bool[4]"), {1, 0, 0, 0});
  expect_ints(binary("Or", p, q, "bool[4]"), {1, 1, 1, 0});
  expect_ints(binary("Xor", p, q, "bool[4]"), {0, 1, 1, 0});
  expect_ints(unary("Not", "", p), {0, 0, 1, 1});
  // Where(cond [2,1], X [3], Y scalar): row 0 takes X, row 1 takes Y.
  Tensor y = run_y(
      "input %c: bool[2,1]\ninput %x: fp32[3]\ninput %v: fp32[]\n%y: fp32[2,3] = Where(%c, %x, "
      "%v)\noutput %y",
      {{"c", B({2, 1}, {1, 0})}, {"x", F({3}, {1, 2, 3})}, {"v", F({}, {-1})}});
  expect_floats(y, {1, 2, 3, -1, -1, -1});
}

TEST(InterpCast, Conversions) {
  auto cast = [](const Tensor& x, const std::string& to, const std::string& out) {
    return run_y("input %x: " + x.type().str() + "\n%y: " + out + " = Cast(%x) {to=\"" + to +
                     "\"}\noutput %y",
                 {{"x", x}});
  };
  Tensor f = F({3}, {-1.7f, 1.7f, 300.4f});
  expect_ints(cast(f, "int32", "int32[3]"), {-1, 1, 300});  // truncation toward zero
  expect_ints(cast(f, "uint8", "uint8[3]"), {255, 1, 44});  // -1 and 300 wrap modulo 256
  expect_ints(cast(f, "bool", "bool[3]"), {1, 1, 1});
  // fp16 keeps 11 significant bits: 0.1 -> 0.0999755859375.
  expect_floats(cast(F({1}, {0.1f}), "fp16", "fp16[1]"), {0.0999755859375f}, 0);
  expect_floats(cast(B({2}, {1, 0}), "fp32", "fp32[2]"), {1, 0});
  expect_ints(cast(I({2}, {0, 5}, ElemType::int32), "bool", "bool[2]"), {0, 1});
}

TEST(InterpErrors, BadInputsAreReported) {
  Graph g = parse_graph("graph t {\n input %x: fp32[2]\n %y: fp32[2] = Relu(%x)\n output %y\n}\n");
  try {
    interp::run(g, {{"x", F({3}, {1, 2, 3})}});
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' is fp32[3], the graph expects fp32[2]"),
              std::string::npos);
  }
  EXPECT_THROW(interp::run(g, {}), CompileError);  // missing input
  EXPECT_THROW(interp::run(g, {{"x", F({2}, {1, 2})}, {"z", F({1}, {0})}}),
               CompileError);  // unknown input
}

}  // namespace
}  // namespace trnsim::ir::testing
