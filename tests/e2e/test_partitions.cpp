// Chips with fewer partitions: the schema allows core.sbuf.partitions of 32, 64 and
// 96 (PSUM and the PE array follow), and the compiler must tile for them (its
// Target). A model with a matmul, a conv (several channel tiles), a depthwise conv,
// a softmax, a layer norm, a reduction, a tensor-engine transpose and an
// elementwise add is run through `trnsim run` for each count and compared with numpy
// written from the ONNX spec.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/runtime/cli_harness.h"

namespace trnsim::e2e {
namespace {

const char* kMake = R"(
import sys
try:
  import numpy as np, onnx
  from onnx import helper, TensorProto as TP, numpy_helper
except ImportError:
  sys.exit(3)
d = sys.argv[1]
rng = np.random.default_rng(3)
def r(*s): return rng.uniform(-1, 1, size=s).astype(np.float32)
A, B = r(70, 100), r(100, 90)
X, W = r(1, 40, 9, 9), r(50, 40, 3, 3) * 0.2
DW = r(40, 1, 3, 3)
S, L, T = r(100, 37) * 4, r(70, 48), r(96, 200)
g_ = r(48)
inits = [numpy_helper.from_array(W, 'W'), numpy_helper.from_array(DW, 'DW'),
         numpy_helper.from_array(g_, 'G'), numpy_helper.from_array(B, 'B')]
nodes = [
  helper.make_node('MatMul', ['A', 'B'], ['mm']),
  helper.make_node('Conv', ['X', 'W'], ['conv'], pads=[1, 1, 1, 1]),
  helper.make_node('Conv', ['X', 'DW'], ['dw'], pads=[1, 1, 1, 1], group=40),
  helper.make_node('Softmax', ['S'], ['sm'], axis=-1),
  helper.make_node('LayerNormalization', ['L', 'G'], ['ln'], axis=-1, epsilon=1e-5),
  helper.make_node('ReduceSum', ['S'], ['rs'], keepdims=0),
  helper.make_node('Transpose', ['T'], ['tr'], perm=[1, 0]),
  helper.make_node('Add', ['S', 'S'], ['add']),
]
ins = [helper.make_tensor_value_info(n, TP.FLOAT, list(v.shape))
       for n, v in (('A', A), ('X', X), ('S', S), ('L', L), ('T', T))]
outs = [helper.make_tensor_value_info(n, TP.FLOAT, None)
        for n in ('mm', 'conv', 'dw', 'sm', 'ln', 'rs', 'tr', 'add')]
m = helper.make_model(helper.make_graph(nodes, 'g', ins, outs, inits),
                      opset_imports=[helper.make_opsetid('', 17)])
onnx.save(m, d + '/m.onnx')
for n, v in (('A', A), ('X', X), ('S', S), ('L', L), ('T', T)):
  np.save(d + '/' + n + '.npy', v)
def conv(x, w, group):
  n, c, h, wd = x.shape
  m_, cg, kh, kw = w.shape
  xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
  y = np.zeros((n, m_, h, wd))
  mg = m_ // group
  for o in range(m_):
    gi = o // mg
    for i in range(kh):
      for j in range(kw):
        y[:, o] += np.einsum('nchw,c->nhw', xp[:, gi * cg:(gi + 1) * cg, i:i + h, j:j + wd],
                             w[o, :, i, j])
  return y
e = np.exp(S.astype(np.float64) - S.max(-1, keepdims=True))
mu, var = L.astype(np.float64).mean(-1, keepdims=True), L.astype(np.float64).var(-1, keepdims=True)
want = {'mm': A.astype(np.float64) @ B, 'conv': conv(X, W, 1), 'dw': conv(X, DW, 40),
        'sm': e / e.sum(-1, keepdims=True), 'ln': (L - mu) / np.sqrt(var + 1e-5) * g_,
        'rs': S.astype(np.float64).sum(), 'tr': T.T, 'add': S.astype(np.float64) * 2}
np.savez(d + '/want.npz', **want)
)";

const char* kCheck = R"(
import sys, numpy as np
d, out = sys.argv[1], sys.argv[2]
want = np.load(d + '/want.npz')
bad = 0
for n in want.files:
  got = np.load(out + '/' + n + '.npy').astype(np.float64)
  w = want[n]
  if got.shape != w.shape and got.size == w.size: got = got.reshape(w.shape)
  err = np.abs(got - w) - (1e-4 + 1e-4 * np.abs(w))
  if got.shape != w.shape or not np.all(err <= 0):
    bad += 1
    print('MISMATCH', n, got.shape, w.shape, float(np.max(np.abs(got - w))) if got.shape == w.shape else '')
print('checked', len(want.files), 'outputs,', bad, 'bad')
sys.exit(1 if bad else 0)
)";

TEST(SmallPartitions, ModelsMatchNumpyAt32And64And96Partitions) {
  const auto dir = test::temp_dir("partitions");
  const std::string make = test::write_text(dir / "make.py", kMake);
  const std::string check = test::write_text(dir / "check.py", kCheck);
  const test::CmdResult mk = test::run_cmd("/usr/bin/python3 " + make + " " + dir.string());
  if (mk.code == 3) {
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << "numpy/onnx missing for /usr/bin/python3";
    GTEST_SKIP() << "python numpy/onnx not available";
  }
  ASSERT_EQ(mk.code, 0) << mk.out;
  for (int p : {32, 64, 96, 128}) {
    SCOPED_TRACE("partitions " + std::to_string(p));
    const std::string out = (dir / ("out" + std::to_string(p))).string();
    std::string cmd = test::trnsim_bin() + " run " + (dir / "m.onnx").string() +
                      " -c tiny --precision fp32 --no-fallback --output-dir " + out;
    for (const char* key : {"core.sbuf.partitions", "core.psum.partitions", "core.tensor.rows",
                            "core.tensor.cols", "core.tensor.tile_size"})
      cmd += std::string(" --set ") + key + "=" + std::to_string(p);
    for (const char* in : {"A", "X", "S", "L", "T"})
      cmd += std::string(" --input ") + in + "=" + (dir / (std::string(in) + ".npy")).string();
    const test::CmdResult r = test::run_cmd(cmd);
    ASSERT_EQ(r.code, 0) << cmd << "\n" << r.out;
    const test::CmdResult ck =
        test::run_cmd("/usr/bin/python3 " + check + " " + dir.string() + " " + out);
    EXPECT_EQ(ck.code, 0) << ck.out;
    EXPECT_NE(ck.out.find("checked 8 outputs, 0 bad"), std::string::npos) << ck.out;
  }
}

}  // namespace
}  // namespace trnsim::e2e
