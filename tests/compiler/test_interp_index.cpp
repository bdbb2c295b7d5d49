// Resampling and index ops of the reference interpreter (Resize/Upsample, TopK,
// Einsum, GridSample, RoiAlign, LRN, Shrink, EyeLike, Det, BitShift) against
// interp_index/gen_cases.py: numpy written from the ONNX operator descriptions
// ("spec") and eager PyTorch / torchvision ("torch", with one exported model). The
// modes the packaged ONNX node tests leave out are the point: N-D and non-spatial
// Resize, rounding ties of every nearest_mode, crops with extrapolation, integer
// inputs, opset 10 Resize and Upsample, TopK ties, Einsum ellipsis/diagonals, every
// GridSample mode x padding x align_corners, adaptive RoiAlign sampling.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "compiler/interp/interpreter.h"
#include "tests/common/python_env.h"
#include "tests/compiler/onnx_conformance.h"

namespace trnsim::conformance {
namespace {

// Generates the `kind` cases into a fresh folder and checks every one of them.
void check_cases(const std::string& kind, std::initializer_list<const char*> modules,
                 size_t min_cases) {
  const fs::path out = fs::path(TRNSIM_BINARY_DIR) / "interp_index_cases" / kind;
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path script = out / "gen.py";
  {
    std::ifstream src(std::string(TRNSIM_SOURCE_DIR) + "/tests/compiler/interp_index/gen_cases.py");
    std::string body((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(body.empty());
    std::ofstream(script) << test::python_require(modules) << body;
  }
  TRNSIM_REQUIRE_PYTHON(test::run_python(script.string() + " " + out.string() + " " + kind));
  const std::vector<fs::path> cases = case_dirs(out);
  ASSERT_GE(cases.size(), min_cases);
  for (const fs::path& c : cases) check_generated_case(c, interpreter());
}

TEST(InterpIndex, SpecCases) {
  check_cases("spec", {"numpy", "onnx"}, 70);
}

TEST(InterpIndex, TorchCases) {
  check_cases("torch", {"numpy", "onnx", "torch", "torchvision"}, 29);
}

}  // namespace
}  // namespace trnsim::conformance
