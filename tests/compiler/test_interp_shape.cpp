// Reference interpreter: reductions and data-movement ops on hand-computed cases.
#include "tests/compiler/interp_test_util.h"

namespace trnsim::ir::testing {
namespace {

const Tensor k23 = F({2, 3}, {1, 2, 3, 4, 5, 6});

Tensor op1(const std::string& op, const std::string& attrs, const std::string& out,
           const Tensor& x = k23) {
  return run_y(
      "input %x: " + x.type().str() + "\n%y: " + out + " = " + op + "(%x) " + attrs + "\noutput %y",
      {{"x", x}});
}

TEST(InterpReduce, AllKinds) {
  // x = [[1,2,3],[4,5,6]].
  expect_floats(op1("ReduceSum", "{axes=[1]}", "fp32[2,1]"), {6, 15});
  expect_floats(op1("ReduceMean", "{axes=[0], keepdims=0}", "fp32[3]"), {2.5f, 3.5f, 4.5f});
  expect_floats(op1("ReduceMax", "", "fp32[1,1]"), {6});  // empty axes: everything
  expect_floats(op1("ReduceMin", "{keepdims=0}", "fp32[]"), {1});
  expect_floats(op1("ReduceProd", "{axes=[-1]}", "fp32[2,1]"), {6, 120});
  // sqrt(1+4+9) = 3.74165739, sqrt(16+25+36) = 8.77496439.
  expect_floats(op1("ReduceL2", "{axes=[1]}", "fp32[2,1]"), {3.74165739f, 8.77496439f});
  expect_floats(op1("ReduceL1", "{axes=[1]}", "fp32[2,1]", F({2, 3}, {-1, 2, -3, 4, -5, 6})),
                {6, 15});
  expect_floats(op1("ReduceSumSquare", "{axes=[1]}", "fp32[2,1]"), {14, 77});
  // log(6) = 1.79175947, log(15) = 2.70805020.
  expect_floats(op1("ReduceLogSum", "{axes=[1]}", "fp32[2,1]"), {1.79175947f, 2.70805020f});
  // log(e + e^2 + e^3) = 3 + log(1.503214724) = 3.40760596; the row [4,5,6] gives +3.
  expect_floats(op1("ReduceLogSumExp", "{axes=[1]}", "fp32[2,1]"), {3.40760596f, 6.40760596f});
  expect_ints(op1("ReduceSum", "", "int32[1]", I({3}, {1, 2, 3}, ElemType::int32)), {6});
  expect_ints(op1("ReduceMax", "{keepdims=0}", "int64[]", I({3}, {-5, 7, 2})), {7});
}

TEST(InterpReduce, ArgMaxArgMinAndCumSum) {
  Tensor x = F({2, 3}, {1, 3, 3, 5, 2, 5});
  expect_ints(op1("ArgMax", "{axis=1}", "int64[2,1]", x), {1, 0});  // first maximum
  expect_ints(op1("ArgMax", "{axis=1, select_last_index=1}", "int64[2,1]", x), {2, 2});
  // Column minima: [1,5] -> 0, [3,2] -> 1, [3,5] -> 0.
  expect_ints(op1("ArgMin", "{axis=0, keepdims=0}", "int64[3]", x), {0, 1, 0});
  Tensor c = F({4}, {1, 2, 3, 4});
  expect_floats(op1("CumSum", "{axis=0}", "fp32[4]", c), {1, 3, 6, 10});
  expect_floats(op1("CumSum", "{axis=0, exclusive=1}", "fp32[4]", c), {0, 1, 3, 6});
  expect_floats(op1("CumSum", "{axis=0, reverse=1}", "fp32[4]", c), {10, 9, 7, 4});
  expect_floats(op1("CumSum", "{axis=-1, reverse=1, exclusive=1}", "fp32[4]", c), {9, 7, 4, 0});
  // Along axis 0 of [[1,2,3],[4,5,6]]: [[1,2,3],[5,7,9]].
  expect_floats(op1("CumSum", "{axis=0}", "fp32[2,3]"), {1, 2, 3, 5, 7, 9});
}

TEST(InterpShape, ReshapeTransposeSqueeze) {
  expect_floats(op1("Reshape", "{shape=[3,2]}", "fp32[3,2]"), {1, 2, 3, 4, 5, 6});
  expect_floats(op1("Flatten", "{axis=0}", "fp32[1,6]"), {1, 2, 3, 4, 5, 6});
  expect_floats(op1("Unsqueeze", "{axes=[0,-1]}", "fp32[1,2,3,1]"), {1, 2, 3, 4, 5, 6});
  expect_floats(op1("Squeeze", "", "fp32[3]", F({1, 3, 1}, {1, 2, 3})), {1, 2, 3});
  // Transpose [2,3] -> [3,2]: y[j,i] = x[i,j].
  expect_floats(op1("Transpose", "", "fp32[3,2]"), {1, 4, 2, 5, 3, 6});
  // 3-D perm [2,0,1]: y[k,i,j] = x[i,j,k] for x[2,2,2] = 0..7 (x[i,j,k] = 4i+2j+k).
  expect_floats(
      op1("Transpose", "{perm=[2,0,1]}", "fp32[2,2,2]", F({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})),
      {0, 2, 4, 6, 1, 3, 5, 7});
}

TEST(InterpShape, ConcatSplitSlice) {
  Tensor y = run_y(
      "input %a: fp32[2,1]\ninput %b: fp32[2,2]\n%y: fp32[2,3] = Concat(%a, %b) {axis=1}\noutput "
      "%y",
      {{"a", F({2, 1}, {1, 2})}, {"b", F({2, 2}, {3, 4, 5, 6})}});
  expect_floats(y, {1, 3, 4, 2, 5, 6});
  auto parts = run_ir(
      "input %x: fp32[2,3]\n%p: fp32[2,1], %q: fp32[2,2] = Split(%x) {axis=1, split=[1,2]}\noutput "
      "%p, %q",
      {{"x", k23}});
  expect_floats(parts.at("p"), {1, 4});
  expect_floats(parts.at("q"), {2, 3, 5, 6});
  // x[2,4] = 0..7. Rows 0..1, columns from 3 down to (not including) 0 in steps of
  // 2: columns 3 and 1.
  Tensor x = F({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_floats(op1("Slice", "{starts=[0,3], ends=[2,0], steps=[1,-2]}", "fp32[2,2]", x),
                {3, 1, 7, 5});
  // Out-of-range starts/ends clamp: the whole dim.
  expect_floats(op1("Slice", "{starts=[-100], ends=[100], axes=[1]}", "fp32[2,4]", x),
                {0, 1, 2, 3, 4, 5, 6, 7});
  // Negative step to the very beginning (end clamps to -1): columns 3,2,1,0 of row 1.
  expect_floats(
      op1("Slice", "{starts=[1,-1], ends=[2,-9223372036854775807], steps=[1,-1]}", "fp32[1,4]", x),
      {7, 6, 5, 4});
  // An empty slice.
  expect_floats(op1("Slice", "{starts=[2], ends=[1], axes=[1]}", "fp32[2,0]", x), {});
}

TEST(InterpShape, GatherOps) {
  Tensor d = F({3, 2}, {1, 2, 3, 4, 5, 6});
  // Axis 0, indices [2, -3]: rows 2 and 0.
  Tensor y =
      run_y("input %d: fp32[3,2]\ninput %i: int64[2]\n%y: fp32[2,2] = Gather(%d, %i)\noutput %y",
            {{"d", d}, {"i", I({2}, {2, -3})}});
  expect_floats(y, {5, 6, 1, 2});
  // Axis 1 with [1,1] indices {1}: column 1 -> shape [3,1,1].
  y = run_y(
      "input %d: fp32[3,2]\nconst %i: int32[1,1] = [1]\n%y: fp32[3,1,1] = Gather(%d, %i) "
      "{axis=1}\noutput %y",
      {{"d", d}});
  expect_floats(y, {2, 4, 6});
  // Out-of-range index: a clear error naming the node.
  try {
    run_y(
        "input %d: fp32[3,2]\nconst %i: int64[1] = [3]\n%y: fp32[1,2] = Gather(%d, %i) "
        "@emb\noutput %y",
        {{"d", d}});
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "node 'emb' (op Gather): index 3 is out of range for a dim of size 3"),
              std::string::npos)
        << e.what();
  }
  // GatherElements along axis 1: y[i][j] = d[i][idx[i][j]].
  y = run_y(
      "input %d: fp32[2,2]\nconst %i: int64[2,2] = [0, 0, 1, 0]\n%y: fp32[2,2] = "
      "GatherElements(%d, %i) "
      "{axis=1}\noutput %y",
      {{"d", F({2, 2}, {1, 2, 3, 4})}});
  expect_floats(y, {1, 1, 4, 3});
}

TEST(InterpShape, ExpandTilePad) {
  // [3,1] expanded to [2,1,2] broadcasts to [2,3,2].
  expect_floats(op1("Expand", "{shape=[2,1,2]}", "fp32[2,3,2]", F({3, 1}, {1, 2, 3})),
                {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  expect_floats(op1("Tile", "{repeats=[2,2]}", "fp32[2,4]", F({1, 2}, {1, 2})),
                {1, 2, 1, 2, 1, 2, 1, 2});
  Tensor x = F({1, 3}, {1, 2, 3});
  // pads [0,2,0,1]: two before and one after along dim 1.
  expect_floats(op1("Pad", "{pads=[0,2,0,1], value=9.0}", "fp32[1,6]", x), {9, 9, 1, 2, 3, 9});
  expect_floats(op1("Pad", "{pads=[0,2,0,1], mode=\"reflect\"}", "fp32[1,6]", x),
                {3, 2, 1, 2, 3, 2});
  expect_floats(op1("Pad", "{pads=[0,2,0,1], mode=\"edge\"}", "fp32[1,6]", x), {1, 1, 1, 2, 3, 3});
  expect_floats(op1("Pad", "{pads=[0,-1,0,0]}", "fp32[1,2]", x), {2, 3});  // negative pads crop
  expect_ints(op1("Pad", "{pads=[1,0]}", "int64[3]", I({2}, {4, 5})), {0, 4, 5});
}

TEST(InterpShape, DepthSpaceAndTrilu) {
  Tensor x = F({1, 8, 1, 1}, {0, 1, 2, 3, 4, 5, 6, 7});
  // DCR: y[c, i, j] = x[(i*2 + j)*2 + c]; CRD: y[c, i, j] = x[c*4 + i*2 + j].
  expect_floats(op1("DepthToSpace", "{blocksize=2}", "fp32[1,2,2,2]", x), {0, 2, 4, 6, 1, 3, 5, 7});
  expect_floats(op1("DepthToSpace", "{blocksize=2, mode=\"CRD\"}", "fp32[1,2,2,2]", x),
                {0, 1, 2, 3, 4, 5, 6, 7});
  expect_floats(
      op1("SpaceToDepth", "{blocksize=2}", "fp32[1,4,1,1]", F({1, 1, 2, 2}, {1, 2, 3, 4})),
      {1, 2, 3, 4});
  Tensor m = F({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_floats(op1("Trilu", "", "fp32[3,3]", m), {1, 2, 3, 0, 5, 6, 0, 0, 9});
  expect_floats(op1("Trilu", "{upper=0, k=-1}", "fp32[3,3]", m), {0, 0, 0, 4, 0, 0, 7, 8, 0});
}

TEST(InterpShape, FoldOnlyOps) {
  auto out = run_ir(R"(input %x: fp32[2,3,4]
%s: int64[3] = Shape(%x)
%s1: int64[1] = Shape(%x) {start=-2, end=-1}
%n: int64[] = Size(%x)
const %dims: int64[2] = [2, 2]
%c: int64[2,2] = ConstantOfShape(%dims) {value=int64[1] [7]}
const %r0: int64[] = [1]
const %r1: int64[] = [10]
const %r2: int64[] = [3]
%r: int64[3] = Range(%r0, %r1, %r2)
output %s, %s1, %n, %c, %r)",
                    {{"x", Tensor(ElemType::fp32, {2, 3, 4})}});
  expect_ints(out.at("s"), {2, 3, 4});
  expect_ints(out.at("s1"), {3});
  expect_ints(out.at("n"), {24});
  expect_ints(out.at("c"), {7, 7, 7, 7});
  expect_ints(out.at("r"), {1, 4, 7});  // 1, 1+3, 1+6 (< 10)
}

}  // namespace
}  // namespace trnsim::ir::testing
