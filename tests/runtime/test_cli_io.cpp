// `trnsim run/validate MODEL.onnx` inputs and outputs: input names as the ONNX file
// spells them (or as the program tensors are named), missing and unknown inputs as
// errors listing the model's inputs (checked before compiling), outputs that no node
// computes, scalar outputs, outputs.json; write failures (a full disk) and the
// --core/--drop-sync range checks. Models and expected values come from
// /usr/bin/python3 with onnx and numpy.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/runtime/cli_harness.h"

namespace trnsim::test {
namespace {

bool has(const std::string& out, const std::string& s) {
  return out.find(s) != std::string::npos;
}

// y = (i0 + i1) * i2 - i3 and z = relu(i0 + i1) over [2,3], with inputs named as
// exporters name them; the outputs are named 'onnx::Sub_9' and '7'.
const char* kNamesModel = R"(names = ['0', 'input.1', 'onnx::MatMul_0', 'a-b']
vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3])
nodes = [helper.make_node('Add', ['0', 'input.1'], ['s']),
         helper.make_node('Mul', ['s', 'onnx::MatMul_0'], ['p']),
         helper.make_node('Sub', ['p', 'a-b'], ['onnx::Sub_9']),
         helper.make_node('Relu', ['s'], ['7'])]
g = helper.make_graph(nodes, 'names', [vi(n) for n in names], [vi('onnx::Sub_9'), vi('7')])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/names.onnx')
rng = np.random.default_rng(1)
for k in range(4):
    np.save(d + '/i%d.npy' % k, rng.standard_normal((2, 3)).astype(np.float32))
np.save(d + '/wrong.npy', np.zeros((3, 2), np.float32))
)";

// Checks DIR/outputs.json and the files it names against numpy: `expect` is Python
// defining `want` = {ONNX output name: array} (d is the test directory).
CmdResult check_outputs(const std::filesystem::path& dir, const std::string& out,
                        const std::string& expect) {
  const PyRun p =
      run_python(dir, "check_" + std::filesystem::path(out).filename().string(), expect + R"(
import json, os
out = )" + "'" + out + "'" + R"(
m = json.load(open(os.path.join(out, 'outputs.json')))
assert sorted(m) == sorted(want), (sorted(m), sorted(want))
for name, w in want.items():
    e = m[name]
    got = np.load(os.path.join(out, e['file']))
    w = np.asarray(w)
    assert got.shape == w.shape, (name, got.shape, w.shape)
    assert got.dtype == w.dtype, (name, got.dtype, w.dtype)
    assert list(got.shape) == e['shape'] and str(got.dtype) == e['dtype'], (name, e)
    if w.dtype == np.bool_ or w.dtype.kind == 'i':
        assert (got == w).all(), (name, got, w)
    else:
        assert np.allclose(got, w, rtol=1e-5, atol=1e-6), (name, got, w)
print('outputs ok:', ' '.join(sorted(m)))
)");
  return {p.code, p.out};
}

const char* kNamesExpect = R"(i = [np.load(d + '/i%d.npy' % k) for k in range(4)]
want = {'onnx::Sub_9': (i[0] + i[1]) * i[2] - i[3], '7': np.maximum(i[0] + i[1], 0)}
)";

TEST(CliInputs, OnnxAndTensorNamesBindAndOutputsJsonMapsTheFiles) {
  const auto dir = temp_dir("cli_io_names");
  TRNSIM_REQUIRE_PYTHON(run_python(dir, "make", kNamesModel));
  const std::string d = dir.string() + "/";
  const std::string run = trnsim_bin() + " run " + d + "names.onnx -c tiny --precision fp32";
  // The names as the ONNX file spells them.
  CmdResult r = expect_exit(run + " --input 0=" + d + "i0.npy --input input.1=" + d +
                                "i1.npy --input onnx::MatMul_0=" + d + "i2.npy --input a-b=" + d +
                                "i3.npy --output-dir " + d + "out",
                            0, "wrote " + d + "out/t_7.npy (output '7' [2,3] float32)");
  EXPECT_TRUE(has(r.out, "wrote " + d + "out/onnx__Sub_9.npy (output 'onnx::Sub_9' [2,3] float32)"))
      << r.out;
  EXPECT_TRUE(has(r.out, "wrote " + d + "out/outputs.json")) << r.out;
  r = check_outputs(dir, d + "out", kNamesExpect);
  EXPECT_EQ(r.code, 0) << r.out;
  // The program tensor names work as well.
  expect_exit(run + " --input t_0=" + d + "i0.npy --input input.1=" + d +
                  "i1.npy --input onnx__MatMul_0=" + d + "i2.npy --input a_b=" + d +
                  "i3.npy --output-dir " + d + "out2",
              0, "wrote " + d + "out2/outputs.json");
  r = check_outputs(dir, d + "out2", kNamesExpect);
  EXPECT_EQ(r.code, 0) << r.out;
  // validate binds the same names.
  expect_exit(trnsim_bin() + " validate " + d + "names.onnx -c tiny --precision fp32 --input 0=" +
                  d + "i0.npy --input input.1=" + d + "i1.npy --input onnx::MatMul_0=" + d +
                  "i2.npy --input a-b=" + d + "i3.npy",
              0, "validate: PASS (2 of 2 outputs");
}

// A misspelt, missing, doubly given or misshapen input fails before the compile (no
// IR dump) with the model's input names; --random-inputs fills the missing ones.
TEST(CliInputs, UnknownMissingAndMisshapenInputsFailBeforeCompiling) {
  const auto dir = temp_dir("cli_io_errors");
  TRNSIM_REQUIRE_PYTHON(run_python(dir, "make", kNamesModel));
  const std::string d = dir.string() + "/";
  const std::string list =
      "'0' (tensor t_0) fp32[2,3], 'input.1' fp32[2,3], 'onnx::MatMul_0' (tensor "
      "onnx__MatMul_0) fp32[2,3], 'a-b' (tensor a_b) fp32[2,3]";
  const std::string given = " --input 0=" + d + "i0.npy --input input.1=" + d +
                            "i1.npy --input onnx::MatMul_0=" + d + "i2.npy";
  for (const char* cmd : {" run ", " validate "}) {
    const std::string run =
        trnsim_bin() + cmd + d + "names.onnx -c tiny --print-after '*' --output-dir " + d + "o";
    CmdResult r = expect_exit(run + given + " --input onnx:MatMul_0=" + d + "i3.npy", 2,
                              "--input onnx:MatMul_0: " + d +
                                  "names.onnx has no input 'onnx:MatMul_0'; its inputs: " + list);
    EXPECT_FALSE(has(r.out, "# IR after")) << "compiled first:\n" << r.out;
    r = expect_exit(run + given, 2,
                    "missing input(s) of " + d +
                        "names.onnx: 'a-b' (tensor a_b) fp32[2,3]; give each as --input "
                        "NAME=FILE.npy, or --random-inputs[=SEED]");
    EXPECT_FALSE(has(r.out, "# IR after")) << "compiled first:\n" << r.out;
    r = expect_exit(run + given + " --input a-b=" + d + "i3.npy --input a_b=" + d + "i3.npy", 2,
                    "--input a_b: input 'a-b' given twice");
    r = expect_exit(run + given + " --input a-b=" + d + "wrong.npy", 1,
                    d + "wrong.npy: shape [3,2], but input 'a-b' is fp32[2,3]");
    EXPECT_FALSE(has(r.out, "# IR after")) << "compiled first:\n" << r.out;
    expect_exit(run + given + " --random-inputs=4", 0, "simulated time");
  }
  // A timing-only run reads no data: no inputs needed.
  expect_exit(trnsim_bin() + " run " + d + "names.onnx -c tiny --no-functional", 0,
              "simulated time");
}

// The same for graphs that run partly or wholly on the host (Shrink does not lower).
TEST(CliInputs, MissingInputIsAnErrorWithHostFallback) {
  const auto dir = temp_dir("cli_io_fallback");
  TRNSIM_REQUIRE_PYTHON(run_python(dir, "make", R"(
w = nh.from_array(np.full((6, 4), 0.25, dtype=np.float32), 'w')
vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
part = helper.make_graph([helper.make_node('MatMul', ['x', 'w'], ['h']),
                          helper.make_node('Shrink', ['h'], ['y'])], 'part',
                         [vi('x', [3, 6])], [vi('y', [3, 4])], [w])
host = helper.make_graph([helper.make_node('Shrink', ['x'], ['y'])], 'host',
                         [vi('x', [3, 6])], [vi('y', [3, 6])])
for g in (part, host):
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]),
              d + '/' + g.name + '.onnx')
)"));
  const std::string d = dir.string() + "/";
  for (const char* m : {"part", "host"}) {
    const std::string run = trnsim_bin() + " run " + d + m + ".onnx -c tiny";
    expect_exit(run, 2,
                "missing input(s) of " + d + m +
                    ".onnx: 'x' fp32[3,6]; give each as --input NAME=FILE.npy, or "
                    "--random-inputs[=SEED]");
    expect_exit(run + " --input X=" + d + "x.npy", 2,
                "--input X: " + d + m + ".onnx has no input 'X'; its inputs: 'x' fp32[3,6]");
    CmdResult r = expect_exit(run + " --random-inputs", 0, "host fallback: 1 node(s) on the host");
    expect_exit(run + " --no-functional", 0, "simulated time");
  }
}

// Graph outputs that no node computes (a graph input, an initializer, a Constant
// node, a folded value, Dropout's mask) are written, and scalars as 0-d arrays, on
// the device alone and with host fallback (consts_host also has a Shrink).
TEST(CliOutputs, InputsConstantsFoldedMaskAndScalarsAreWritten) {
  const auto dir = temp_dir("cli_io_outputs");
  TRNSIM_REQUIRE_PYTHON(run_python(dir, "make", R"(
F, B = TensorProto.FLOAT, TensorProto.BOOL
vi = lambda n, s, t=F: helper.make_tensor_value_info(n, t, s)
w = nh.from_array(np.array([1, 2, 3], dtype=np.float32), 'w')
k = helper.make_tensor('kv', F, [2, 2], [1, 2, 3, 4])
c0 = helper.make_tensor('c0v', F, [], [2.5])
nodes = [helper.make_node('Constant', [], ['k'], value=k),
         helper.make_node('Constant', [], ['c0'], value=c0),
         helper.make_node('Add', ['w', 'w'], ['f']),
         helper.make_node('Dropout', ['x'], ['dx', 'm']),
         helper.make_node('Relu', ['x'], ['y']),
         helper.make_node('ReduceSum', ['x'], ['s'], keepdims=0)]
outs = [vi('x', [2, 3]), vi('w', [3]), vi('k', [2, 2]), vi('c0', []), vi('f', [3]),
        vi('dx', [2, 3]), vi('m', [2, 3], B), vi('y', [2, 3]), vi('s', [])]
g = helper.make_graph(nodes, 'consts', [vi('x', [2, 3])], outs, [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), d + '/consts.onnx')
g = helper.make_graph(nodes + [helper.make_node('Shrink', ['x'], ['cs'])], 'consts_host',
                      [vi('x', [2, 3])], outs + [vi('cs', [2, 3])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]),
          d + '/consts_host.onnx')
np.save(d + '/x.npy', np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.float32))
)"));
  const std::string d = dir.string() + "/";
  const std::string expect = R"(x = np.load(d + '/x.npy')
want = {'x': x, 'w': np.array([1, 2, 3], np.float32),
        'k': np.array([[1, 2], [3, 4]], np.float32), 'c0': np.array(2.5, np.float32),
        'f': np.array([2, 4, 6], np.float32), 'dx': x, 'm': np.ones((2, 3), np.bool_),
        'y': np.maximum(x, 0), 's': np.array(x.sum(), np.float32)}
)";
  struct Case {
    std::string model, flags, out;
  };
  for (const Case& c : {Case{"consts", " --no-fallback", "dev"}, Case{"consts_host", "", "host"}}) {
    const std::string out = d + c.out, in = " --input x=" + d + "x.npy" + c.flags;
    CmdResult r = expect_exit(
        trnsim_bin() + " run " + d + c.model + ".onnx -c tiny" + in + " --output-dir " + out, 0,
        "wrote " + out + "/s.npy (output 's' [] float32)");
    EXPECT_TRUE(has(r.out, "wrote " + out + "/m.npy (output 'm' [2,3] bool)")) << r.out;
    EXPECT_EQ(has(r.out, "host fallback: 1 node(s) on the host"), c.flags.empty()) << r.out;
    r = check_outputs(
        dir, out,
        expect + (c.flags.empty() ? "want['cs'] = np.where(abs(x) > 0.5, x, 0).astype(np.float32)\n"
                                  : ""));
    EXPECT_EQ(r.code, 0) << c.model << "\n" << r.out;
    expect_exit(trnsim_bin() + " validate " + d + c.model + ".onnx -c tiny" + in, 0,
                c.flags.empty() ? "validate: PASS (10 of 10 outputs" : "validate: PASS (9 of 9");
  }
}

// A graph that folds completely (every output a constant, no input) runs and writes them.
TEST(CliOutputs, FullyFoldedGraphRunsAndWritesItsOutputs) {
  const auto dir = temp_dir("cli_io_folded");
  TRNSIM_REQUIRE_PYTHON(run_python(dir, "make", R"(
vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 2])
a = helper.make_tensor('av', TensorProto.FLOAT, [2, 2], [1, 2, 3, 4])
b = nh.from_array(np.array([[0.5, -1], [2, 0.25]], dtype=np.float32), 'b')
nodes = [helper.make_node('Constant', [], ['a'], value=a),
         helper.make_node('Add', ['a', 'b'], ['sum']),
         helper.make_node('Mul', ['sum', 'a'], ['prod'])]
g = helper.make_graph(nodes, 'folded', [], [vi('sum'), vi('prod'), vi('a')], [b])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/folded.onnx')
)"));
  const std::string d = dir.string() + "/";
  const std::string expect = R"(a = np.array([[1, 2], [3, 4]], np.float32)
b = np.array([[0.5, -1], [2, 0.25]], np.float32)
want = {'sum': a + b, 'prod': (a + b) * a, 'a': a}
)";
  for (const char* flags : {"", " --no-fallback"}) {
    const std::string out = d + (*flags ? "nofb" : "fb");
    expect_exit(trnsim_bin() + " run " + d + "folded.onnx -c tiny" + flags + " --output-dir " + out,
                0, "wrote " + out + "/prod.npy (output 'prod' [2,2] float32)");
    CmdResult r = check_outputs(dir, out, expect);
    EXPECT_EQ(r.code, 0) << flags << "\n" << r.out;
  }
  expect_exit(trnsim_bin() + " validate " + d + "folded.onnx -c tiny", 0,
              "validate: PASS (3 of 3 outputs");
}

// Every file the CLI writes reports a full disk (/dev/full: writes fail with ENOSPC)
// with the file's name and exit 1; the early path checks accept /dev/full.
TEST(CliWrites, FullDiskIsAnErrorNamingTheFile) {
  const auto dir = temp_dir("cli_io_full");
  const std::string d = dir.string() + "/";
  const std::string prog = write_text(dir / "scale2.tasm", kScale);
  const std::string full = "/dev/full: write failed: No space left on device";
  const std::string run = trnsim_bin() + " run " + prog + " -c tiny --random-inputs ";
  for (const char* opt : {"--trace", "--vcd", "--stats", "--stats-text"})
    expect_exit(run + opt + " /dev/full", 1, full);
  expect_exit(trnsim_bin() + " disasm " + prog + " -o /dev/full", 1, full);
  expect_exit(trnsim_bin() + " asm " + prog + " -o /dev/full", 1, full);
  // What goes to standard output: disasm's program, run's report.
  const std::string out_full = "trnsim: error: standard output: write failed";
  expect_exit("(" + trnsim_bin() + " disasm " + prog + " >/dev/full)", 1, out_full);
  expect_exit("(" + run + ">/dev/full)", 1, out_full);
  // Output files: y.npy, then outputs.json, links to /dev/full.
  std::filesystem::create_directories(dir / "out");
  std::filesystem::create_symlink("/dev/full", dir / "out" / "y.npy");
  expect_exit(run + "--output-dir " + d + "out", 1,
              d + "out/y.npy: write failed: No space left on device");
  std::filesystem::remove(dir / "out" / "y.npy");
  std::filesystem::create_symlink("/dev/full", dir / "out" / "outputs.json");
  expect_exit(run + "--output-dir " + d + "out", 1,
              d + "out/outputs.json: write failed: No space left on device");
}

// An ONNX bool output (written by the model boundary's own .npy writer) and
// `trnsim compile -o` on a full disk.
TEST(CliWrites, FullDiskOnnxOutputsAndCompile) {
  const auto dir = temp_dir("cli_io_full_onnx");
  TRNSIM_REQUIRE_PYTHON(run_python(dir, "make", R"(
vi = lambda n, t: helper.make_tensor_value_info(n, t, [2, 3])
g = helper.make_graph([helper.make_node('Cast', ['x'], ['b'], to=TensorProto.BOOL)], 'cast',
                      [vi('x', TensorProto.FLOAT)], [vi('b', TensorProto.BOOL)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), d + '/cast.onnx')
)"));
  const std::string d = dir.string() + "/";
  std::filesystem::create_directories(dir / "out");
  std::filesystem::create_symlink("/dev/full", dir / "out" / "b.npy");
  expect_exit(
      trnsim_bin() + " run " + d + "cast.onnx -c tiny --random-inputs --output-dir " + d + "out", 1,
      d + "out/b.npy: write failed: No space left on device");
  expect_exit(trnsim_bin() + " compile " + d + "cast.onnx -c tiny -o /dev/full", 1,
              "/dev/full: write failed: No space left on device");
}

TEST(CliRanges, CoreAndDropSyncOutOfRange) {
  const auto dir = temp_dir("cli_io_ranges");
  const std::string prog = write_text(dir / "scale2.tasm", kScale);
  const std::string run = trnsim_bin() + " run " + prog + " -c tiny --random-inputs ";
  expect_exit(run + "--core -1", 2, "--core: '-1' is not an index (0, 1, ...)");
  expect_exit(run + "--core 2", 2, "--core 2: platform 'tiny' has 2 core(s) (0..1)");
  // 2^32 once wrapped to core 0 and ran there.
  expect_exit(run + "--core 4294967296", 2, "--core 4294967296: platform 'tiny' has 2 core(s)");
  expect_exit(run + "--core 1", 0, "simulated time");
  CmdResult r = expect_exit(run + "--drop-sync 2", 2,
                            "--drop-sync 2: program 'scale2' has 2 semaphore waits (0..1)");
  EXPECT_FALSE(has(r.out, "removed")) << r.out;
  const std::string nowait = write_text(dir / "copy.tasm", R"(.program copy
.semaphores 1
.tensor a [2,3] fp32 input @0
.tensor b [2,3] fp32 output @64
.queue dma 0 0
dma_copy dst=hbm[2x3, @b, fp32, [1,3]] src=hbm[2x3, @a, fp32, [1,3]]
)");
  expect_exit(trnsim_bin() + " run " + nowait + " -c tiny --random-inputs --drop-sync 0", 2,
              "--drop-sync 0: program 'copy' has no semaphore waits");
}

}  // namespace
}  // namespace trnsim::test
