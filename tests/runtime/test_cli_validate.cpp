// `trnsim validate` and host fallback on the command line, with an ONNX model written
// by Debian's python3-onnx (skipped when it is missing, outside CI): X @ W1 -> Shrink -> Relu
// -> @ W2. Shrink does not lower, so it runs on the host between two device segments.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/common/python_env.h"
#include "tests/runtime/cli_harness.h"

#include <yaml-cpp/yaml.h>

namespace trnsim::test {
namespace {

// Runs `body` (Python; `d` is `dir`, numpy as np, onnx, helper, TensorProto and
// numpy_helper as nh imported) to write DIR/NAME.onnx and whatever else it needs;
// for TRNSIM_REQUIRE_PYTHON (missing numpy or onnx is kMissingPackageExit).
PyRun write_model(const std::filesystem::path& dir, const std::string& name,
                  const std::string& body, std::string* path) {
  *path = (dir / (name + ".onnx")).string();
  const std::string py =
      write_text(dir / ("make_" + name + ".py"), python_require({"numpy", "onnx"}) + R"(import sys
import numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper as nh
d = sys.argv[1]
)" + body);
  return run_python(py + " " + dir.string());
}

PyRun write_shrink_model(const std::filesystem::path& dir, std::string* path) {
  return write_model(dir, "shrink", R"(rng = np.random.default_rng(0)
inits = [nh.from_array((rng.standard_normal((96, 80)) * 0.1).astype(np.float32), 'W1'),
         nh.from_array((rng.standard_normal((80, 40)) * 0.1).astype(np.float32), 'W2')]
nodes = [helper.make_node('MatMul', ['x', 'W1'], ['h']),
         helper.make_node('Shrink', ['h'], ['c'], name='shrink'),
         helper.make_node('Relu', ['c'], ['r']), helper.make_node('MatMul', ['r', 'W2'], ['y'])]
g = helper.make_graph(nodes, 'shrink_mlp',
                      [helper.make_tensor_value_info('x', TensorProto.FLOAT, [64, 96])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [64, 40])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/shrink.onnx')
)",
                     path);
}

TEST(CliFallback, RunsShrinkOnTheHostAndReportsIt) {
  const auto dir = temp_dir("cli_fallback");
  std::string model;
  TRNSIM_REQUIRE_PYTHON(write_shrink_model(dir, &model));
  const std::string stats = (dir / "stats.json").string();
  CmdResult r =
      run_cmd(trnsim_bin() + " run " + model + " -c tiny --random-inputs --stats " + stats);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("host fallback: 1 node(s) on the host, 3 segments"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fell back: Shrink 'shrink'"), std::string::npos) << r.out;
  std::stringstream js;
  js << std::ifstream(stats).rdbuf();
  EXPECT_NE(js.str().find("\"op\": \"Shrink\""), std::string::npos);
  const YAML::Node tree = YAML::Load(js.str());
  EXPECT_EQ(tree["host"]["link"]["bytes"].as<double>(), 40960);  // 2 x 64x80 fp32
  // The tree of a device run: the DMA figures the text report prints are there.
  EXPECT_TRUE(tree["dma"]["active_pct"].IsScalar()) << js.str();
  EXPECT_TRUE(tree["chip"]["core0"].IsMap()) << js.str();
  // --stats-text writes that tree as text, as for a device run.
  const std::string text_path = (dir / "stats.txt").string();
  r = run_cmd(trnsim_bin() + " run " + model + " -c tiny --random-inputs --stats-text " +
              text_path);
  ASSERT_EQ(r.code, 0) << r.out;
  std::stringstream ts;
  ts << std::ifstream(text_path).rdbuf();
  EXPECT_NE(ts.str().find("host.link.time_ns"), std::string::npos) << ts.str();
  EXPECT_NE(ts.str().find("engines.tensor.active_pct"), std::string::npos) << ts.str();

  // --no-fallback: the lowering's clear refusal, exit 1.
  r = run_cmd(trnsim_bin() + " run " + model + " -c tiny --random-inputs --no-fallback");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("op type 'Shrink' cannot be lowered"), std::string::npos) << r.out;
}

// keep_on_chip on the command line: X @ W1 -> Relu -> @ W2 all on the device. The
// hidden activation goes SBUF to SBUF; --no-keep-on-chip makes it round-trip through
// HBM (more transfers, same output bytes).
TEST(CliKeepOnChip, SummaryFlagAndIdenticalOutputs) {
  const auto dir = temp_dir("cli_keep_on_chip");
  std::string model;
  TRNSIM_REQUIRE_PYTHON(write_model(dir, "mlp", R"(rng = np.random.default_rng(0)
inits = [nh.from_array((rng.standard_normal((96, 200)) * 0.1).astype(np.float32), 'W1'),
         nh.from_array((rng.standard_normal((200, 40)) * 0.1).astype(np.float32), 'W2')]
nodes = [helper.make_node('MatMul', ['x', 'W1'], ['h']), helper.make_node('Relu', ['h'], ['r']),
         helper.make_node('MatMul', ['r', 'W2'], ['y'])]
g = helper.make_graph(nodes, 'mlp', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [64, 96])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [64, 40])], inits)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/mlp.onnx')
)",
                                    &model));
  const std::string on = (dir / "on").string(), off = (dir / "off").string();
  CmdResult r =
      run_cmd(trnsim_bin() + " run " + model + " -c tiny --random-inputs --output-dir " + on);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("keep_on_chip: 1 loads forwarded through SBUF"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 spilled to HBM"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " run " + model +
              " -c tiny --random-inputs --no-keep-on-chip --output-dir " + off);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("keep_on_chip:"), std::string::npos) << r.out;
  std::stringstream a, b;
  a << std::ifstream(dir / "on" / "y.npy", std::ios::binary).rdbuf();
  b << std::ifstream(dir / "off" / "y.npy", std::ios::binary).rdbuf();
  EXPECT_FALSE(a.str().empty());
  EXPECT_EQ(a.str(), b.str());
  // compile prints the same summary; the flag is known to compile too.
  r = run_cmd(trnsim_bin() + " compile " + model + " -c tiny -o " + (dir / "p.tasm").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("keep_on_chip: 1 loads forwarded"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " compile " + model + " -c tiny --no-keep-on-chip -o " +
              (dir / "q.tasm").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("keep_on_chip:"), std::string::npos) << r.out;
}

TEST(CliValidate, PassesAndFailsByTolerance) {
  const auto dir = temp_dir("cli_validate");
  std::string model;
  TRNSIM_REQUIRE_PYTHON(write_shrink_model(dir, &model));
  CmdResult r =
      run_cmd(trnsim_bin() + " validate " + model + " -c tiny --random-inputs --precision fp32");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("PASS: 1 output(s)"), std::string::npos) << r.out;
  // bf16 against its own emulating reference passes at the default tolerance ...
  r = run_cmd(trnsim_bin() + " validate " + model + " -c tiny --random-inputs --precision bf16");
  EXPECT_EQ(r.code, 0) << r.out;
  // ... and fails against the plain fp32 model at fp32's tolerance: rounding the
  // operands (weights 0.1 * N(0,1), inputs U[-1,1)) to bf16's 8 bits moves outputs by
  // ~1e-3 relative, far beyond 1e-4 and beyond any summation-order difference (~1e-6),
  // so the verdict does not depend on the host's BLAS.
  r = run_cmd(trnsim_bin() + " validate " + model +
              " -c tiny --random-inputs --precision bf16 --reference fp32 --rtol 1e-4 --atol 1e-5");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reference: the interpreter on the model as imported, fp32"),
            std::string::npos)
      << r.out;
  r = run_cmd(trnsim_bin() + " validate " + model + " --reference bf16");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--reference: 'bf16' is not emulated or fp32"), std::string::npos) << r.out;
  // Usage errors: not an ONNX model, a bad tolerance.
  r = run_cmd(trnsim_bin() + " validate " + source_path("tests/e2e/programs/matmul_gelu.tasm"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("is not an ONNX model"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " validate " + model + " --rtol abc");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--rtol: 'abc'"), std::string::npos) << r.out;
}

// validate with the access checks turned off says they were not checked; --drop-sync
// is refused for a model that runs partly on the host.
TEST(CliValidate, UncheckedChecksAndDropSyncWithFallback) {
  const auto dir = temp_dir("cli_validate_unchecked");
  std::string model;
  TRNSIM_REQUIRE_PYTHON(write_shrink_model(dir, &model));
  // Without the suite's TRNSIM_CHECK, which turns the checks on whatever the flags.
  CmdResult r = run_cmd("env -u TRNSIM_CHECK " + trnsim_bin() + " validate " + model +
                        " -c tiny --random-inputs --precision fp32 --no-check-races --no-poison");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("validate: PASS (1 of 1 outputs within tolerance; unchecked races; "
                       "unchecked poisoned reads)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("checks:"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " run " + model + " -c tiny --random-inputs --drop-sync 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--drop-sync: the model runs partly on the host; add --no-fallback"),
            std::string::npos)
      << r.out;
}

// An ONNX scalar input (shape []) is [1] on the device; a 0-d .npy binds to it.
TEST(CliValidate, ZeroDimNpyBindsAScalarInput) {
  const auto dir = temp_dir("cli_scalar_input");
  std::string model;
  TRNSIM_REQUIRE_PYTHON(
      write_model(dir, "scale",
                  R"(g = helper.make_graph([helper.make_node('Mul', ['x', 's'], ['y'])], 'scale',
                      [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4, 8]),
                       helper.make_tensor_value_info('s', TensorProto.FLOAT, [])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4, 8])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/scale.onnx')
np.save(d + '/s.npy', np.array(2.5, dtype=np.float32))
np.save(d + '/x.npy', np.arange(32, dtype=np.float32).reshape(4, 8))
)",
                  &model));
  const std::string in =
      " --input s=" + (dir / "s.npy").string() + " --input x=" + (dir / "x.npy").string();
  CmdResult r = run_cmd(trnsim_bin() + " validate " + model + " -c tiny --precision fp32" + in);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("validate: PASS (1 of 1 outputs within tolerance"), std::string::npos)
      << r.out;
}

// A model exported with a symbolic batch dim runs once --input-shape fixes it; without
// it, or with a wrong name or dims, the error says what to give.
TEST(CliInputShape, SymbolicDimsTakeAConcreteShape) {
  const auto dir = temp_dir("cli_input_shape");
  std::string model;
  TRNSIM_REQUIRE_PYTHON(
      write_model(dir, "dyn",
                  R"(w = nh.from_array(np.full((16, 8), 0.5, dtype=np.float32), 'w')
g = helper.make_graph([helper.make_node('MatMul', ['x', 'w'], ['y'])], 'dyn',
                      [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['batch', 16])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['batch', 8])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/dyn.onnx')
)",
                  &model));
  const std::string run = trnsim_bin() + " run " + model + " -c tiny";
  CmdResult r = expect_exit(run, 1, "input 'x' has dynamic dim 0 ('batch') in [batch,16]");
  EXPECT_NE(r.out.find("--input-shape NAME=D0xD1..."), std::string::npos) << r.out;
  expect_exit(
      trnsim_bin() + " validate " + model + " -c tiny --random-inputs --input-shape x=32x16", 0,
      "validate: PASS (1 of 1 outputs");
  expect_exit(trnsim_bin() + " compile " + model + " -c tiny --input-shape x=4,16 -o " +
                  (dir / "dyn.tasm").string(),
              0, "program:");
  std::stringstream tasm;
  tasm << std::ifstream(dir / "dyn.tasm").rdbuf();
  EXPECT_NE(tasm.str().find(".tensor x [4,16] fp32 input"), std::string::npos) << tasm.str();
  expect_exit(run + " --input-shape X=32x16", 1,
              "a shape is given for input 'X', but the graph's inputs are 'x'");
  expect_exit(run + " --input-shape x=32x0", 2, "'0' is not a positive dimension");
  expect_exit(
      trnsim_bin() + " run " + (dir / "dyn.tasm").string() + " -c tiny --input-shape x=4x16", 2,
      "is a program, not an ONNX model");
  expect_exit(run + " --input-shape x=32x17", 1,
              "the given shape [32,17] does not match the declared shape [batch,16]");
}

// Integer inputs of an ONNX model are read as numbers (not device floats): a header
// whose shape overflows is an error naming the file, not undefined behaviour.
TEST(CliErrors, IntegerInputNpyWithAnOverflowingShape) {
  const auto dir = temp_dir("cli_int_npy");
  std::string model;
  TRNSIM_REQUIRE_PYTHON(write_model(dir, "gather",
                                    R"(g = helper.make_graph(
    [helper.make_node('Gather', ['data', 'idx'], ['y'], axis=0)], 'gather',
    [helper.make_tensor_value_info('data', TensorProto.FLOAT, [10, 3]),
     helper.make_tensor_value_info('idx', TensorProto.INT64, [4])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4, 3])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/gather.onnx')
np.save(d + '/idx.npy', np.array([1, 2, 3, 9], dtype=np.int64))
def bad(name, shape):
    h = "{'descr': '<i8', 'fortran_order': False, 'shape': %s, }" % shape
    h += ' ' * (118 - len(h)) + chr(10)
    open(d + '/' + name, 'wb').write(b'\x93NUMPY\x01\x00' + len(h).to_bytes(2, 'little') +
                                     h.encode() + bytes(32))
bad('wrap.npy', '(1000000000000, 1000000000000)')  # 10^24 elements: past int64
bad('long.npy', '(99999999999999999999999,)')
)",
                                    &model));
  const std::string run = trnsim_bin() + " run " + model + " -c tiny --random-inputs --input idx=";
  expect_exit(run + (dir / "idx.npy").string(), 0, "simulated time");
  expect_exit(run + (dir / "wrap.npy").string(), 1,
              "wrap.npy: shape [1000000000000,1000000000000] has more elements than fit in "
              "memory");
  expect_exit(run + (dir / "long.npy").string(), 1,
              "long.npy: shape (99999999999999999999999,) has a dimension too large");
}

// A model whose input alone is larger than the config's HBM is refused by the compiler
// with the file, the tensor and both sizes, before any instruction is generated (it
// used to lower 2^62 elements tile by tile).
TEST(CliErrors, TensorLargerThanHbmNamesFileAndTensor) {
  const auto dir = temp_dir("cli_huge_tensor");
  std::string model;
  TRNSIM_REQUIRE_PYTHON(write_model(dir, "huge",
                                    R"(shape = [65536, 1 << 20]
g = helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], 'huge',
                      [helper.make_tensor_value_info('x', TensorProto.FLOAT, shape)],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, shape)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/huge.onnx')
)",
                                    &model));
  CmdResult r = run_cmd(trnsim_bin() + " run " + model + " -c trn2 --random-inputs");
  EXPECT_EQ(r.code, 1) << r.out;
  // 65536 * 2^20 * 4 B = 2^38 B = 274877906944 B; trn2 has 96 GiB = 103079215104 B.
  EXPECT_NE(r.out.find(model + ": kernel 'huge': tensor 'x' [65536,1048576] fp32 needs "
                               "274877906944 bytes, more than the target's 103079215104 "
                               "bytes of HBM"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace trnsim::test
