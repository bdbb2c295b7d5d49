// The tensor engine's implementation keys in the platform config
// (platform/config_schema.cpp: core.tensor.impl, core.tensor.numerics and the
// core.tensor.rtl section): optional with defaults, --set-able, printed by describe()
// when set, and every error naming the file and line (or --set) and the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "models/cosim/rtl_config.h"
#include "platform/config.h"
#include "platform/config_schema.h"
#include "tests/runtime/cli_harness.h"

namespace trnsim::platform {
namespace {

const std::string kTinyRtl = std::string(TRNSIM_SOURCE_DIR) + "/configs/tiny_rtl.yaml";

std::string error_of(const std::string& config, const std::vector<std::string>& sets) {
  try {
    load_config(config, sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// 1-based line of the first line of tiny_rtl.yaml that contains `text`.
int line_of(const std::string& text) {
  const std::string t = read(kTinyRtl);
  const size_t at = t.find(text);
  return at == std::string::npos
             ? -1
             : 1 + static_cast<int>(std::count(t.begin(), t.begin() + at, '\n'));
}

TEST(TensorImplConfig, DefaultsAndTheTinyRtlPreset) {
  const platform_config tiny = load_config("tiny");
  EXPECT_EQ(tiny.core.tensor_impl, TensorImpl::cpp);
  EXPECT_EQ(tiny.core.tensor_numerics, TensorNumerics::fast);
  EXPECT_FALSE(tiny.core.tensor_rtl);
  // Nothing about them in describe() while they have their defaults.
  EXPECT_EQ(describe(tiny).find("core.tensor.impl"), std::string::npos);

  const platform_config c = load_config(kTinyRtl);
  EXPECT_EQ(c.core.tensor_impl, TensorImpl::rtl);
  EXPECT_EQ(c.core.tensor_numerics, TensorNumerics::systolic);
  ASSERT_TRUE(c.core.tensor_rtl);
  EXPECT_TRUE(c.core.tensor_rtl->rtl);
  EXPECT_EQ(c.core.tensor_rtl->block, "pe_array_8x8");
  EXPECT_EQ(c.core.tensor.rows, 8u);
  const std::string d = describe(c);
  EXPECT_NE(d.find("\ncore.tensor.impl = rtl  # "), std::string::npos) << d;
  EXPECT_NE(d.find("\ncore.tensor.numerics = systolic  # "), std::string::npos) << d;
  EXPECT_NE(d.find("\ncore.tensor.rtl = {block: pe_array_8x8, top: pe_array, parameters: {C: 8, "
                   "R: 8}, mode: decoupled, reset_cycles: 4, back_pressure: 0, seed: 1}  # "),
            std::string::npos)
      << d;
}

TEST(TensorImplConfig, OverridesAndDescribeRoundTrip) {
  // Switching to the C++ model keeps the section (unused) and the numerics.
  const platform_config cpp = load_config(kTinyRtl, {"core.tensor.impl=cpp"});
  EXPECT_EQ(cpp.core.tensor_impl, TensorImpl::cpp);
  ASSERT_TRUE(cpp.core.tensor_rtl);
  EXPECT_FALSE(cpp.core.tensor_rtl->rtl);
  // Keys of the section one by one, a list as YAML, and the whole section.
  const platform_config s =
      load_config(kTinyRtl, {"core.tensor.rtl.seed=9", "core.tensor.rtl.back_pressure=0.5",
                             "core.tensor.rtl.sources=[pe_array.sv, fp32_add_pkg.sv]",
                             "core.tensor.rtl.clock=500MHz", "core.tensor.rtl.waveform.path=x.fst",
                             "core.tensor.rtl.block=pe_array_8x8_trace"});
  EXPECT_EQ(s.core.tensor_rtl->seed, 9u);
  EXPECT_DOUBLE_EQ(s.core.tensor_rtl->back_pressure, 0.5);
  EXPECT_EQ(s.core.tensor_rtl->sources.size(), 2u);
  EXPECT_DOUBLE_EQ(s.core.tensor_rtl->clock_hz, 5e8);
  EXPECT_EQ(s.core.tensor_rtl->waveform_path, "x.fst");
  // Every line describe() prints loads back as an override onto tiny, to the same
  // description (the rtl section as one YAML flow value).
  std::vector<std::string> sets;
  std::istringstream in(describe(s));
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find(" = "), hash = line.find("  # ");
    sets.push_back(line.substr(0, eq) + "=" + line.substr(eq + 3, hash - eq - 3));
  }
  EXPECT_EQ(describe(load_config("tiny", sets)), describe(s));
}

TEST(TensorImplConfig, ErrorsNameFileLineOrSetAndKey) {
  EXPECT_EQ(error_of(kTinyRtl, {"core.tensor.numerics=exact"}),
            "--set core.tensor.numerics: expected fast or systolic, got 'exact'");
  EXPECT_EQ(error_of(kTinyRtl, {"core.tensor.impl=verilog"}),
            "--set core.tensor.impl: expected cpp or rtl, got 'verilog'");
  EXPECT_NE(
      error_of(kTinyRtl, {"core.tensor.numeric=fast"})
          .find("--set core.tensor.numeric: unknown key (did you mean core.tensor.numerics?)"),
      std::string::npos);
  EXPECT_EQ(error_of("tiny", {"core.tensor.impl=rtl"}),
            "--set core.tensor.impl: rtl needs a core.tensor.rtl section naming the block (e.g. "
            "rtl: {block: pe_array_8x8}; docs/rtl-cosim.md)");
  // What the RTL lacks, against the key that asks for it.
  EXPECT_EQ(error_of(kTinyRtl, {"core.tensor.background_load=true", "core.tensor.throttle=true",
                                "core.tensor.tile_size=4"}),
            "--set core.tensor.background_load: must be false with core.tensor.impl: rtl (the "
            "RTL PE array has no background weight load)\n"
            "--set core.tensor.throttle: must be false with core.tensor.impl: rtl (the RTL PE "
            "array has no throttle)\n"
            "--set core.tensor.tile_size: must be min(core.tensor.rows, core.tensor.cols) = 8 "
            "with core.tensor.impl: rtl (the RTL PE array has no array tiling)");
  // The block against the engine's array (reported where the block was chosen), and
  // against the build.
  EXPECT_NE(error_of(kTinyRtl, {"core.tensor.rows=16", "core.tensor.cols=16"})
                .find("configs/tiny_rtl.yaml:" + std::to_string(line_of("block: pe_array_8x8")) +
                      ": core.tensor.rtl.block: block pe_array_8x8 was built for an array of 8 "
                      "rows and 8 columns (R=8, C=8), but core.tensor.rows x cols is 16 x 16"),
            std::string::npos);
  EXPECT_EQ(error_of(kTinyRtl, {"core.tensor.rtl={block: pe_array_16x16}"}),
            "--set core.tensor.rtl.block: block pe_array_16x16 was built for an array of 16 rows "
            "and 16 columns (R=16, C=16), but core.tensor.rows x cols is 8 x 8");
  EXPECT_EQ(error_of(kTinyRtl, {"core.tensor.rtl.mode=timed"}),
            "--set core.tensor.rtl.mode: block pe_array_8x8 is a --cc build; timed mode needs "
            "one built with SYSTEMC");
  EXPECT_EQ(error_of(kTinyRtl, {"core.tensor.rtl.colour=red"}),
            "--set core.tensor.rtl.colour: unknown key");
  EXPECT_EQ(error_of(kTinyRtl, {"core.tensor.rtl.sources=[a.sv"})
                .rfind("--set core.tensor.rtl.sources: not a YAML value", 0),
            0u);
  // With impl: cpp the section is parsed but not checked against the build.
  EXPECT_EQ(error_of(kTinyRtl, {"core.tensor.impl=cpp", "core.tensor.rtl.block=none"}), "");

  // In a file: the line of the key.
  const auto dir = test::temp_dir("tensor_impl_config");
  std::string text = read(kTinyRtl);
  const size_t at = text.find("mode: decoupled");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, "mode: fast     ");
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
  const std::string path = test::write_text(dir / "bad.yaml", text);
  EXPECT_EQ(error_of(path, {}), path + ":" + std::to_string(line) +
                                    ": core.tensor.rtl.mode: expected decoupled or timed, got "
                                    "'fast'");
}

}  // namespace
}  // namespace trnsim::platform
