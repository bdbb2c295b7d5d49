// `impl: cpp | rtl` and the `rtl:` section: parsing, clear errors naming the key,
// checks against the blocks this build compiled, and the adapter it selects.
#include <gtest/gtest.h>

#include <random>

#include "cosim_test_util.h"
#include "models/cosim/rtl_config.h"
#include "models/cosim/systolic_reference.h"

namespace trnsim::cosim {
namespace {

rtl_config parse(const std::string& yaml) {
  return parse_rtl_config(YAML::Load(yaml), "core.tensor");
}

std::string error_of(const std::string& yaml) {
  try {
    const rtl_config c = parse(yaml);
    make_tile_adapter(c, 8, 8, "core.tensor");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(RtlConfig, DefaultsToCppAndParsesTheSection) {
  EXPECT_FALSE(parse("rows: 8").rtl);
  const rtl_config c = parse(R"(
impl: rtl
rtl:
  block: pe_array_8x8
  top: pe_array
  sources: [models/rtl/pe_array.sv, fp32_add_pkg.sv]
  parameters: {R: 8, C: 8}
  clock: 1.4GHz
  mode: decoupled
  reset_cycles: 3
  back_pressure: 0.3
  seed: 9
)");
  EXPECT_TRUE(c.rtl);
  EXPECT_EQ(c.block, "pe_array_8x8");
  EXPECT_DOUBLE_EQ(c.clock_hz, 1.4e9);
  EXPECT_EQ(c.reset_cycles, 3u);
  EXPECT_EQ(c.parameters.at("R"), "8");
  // The selected adapter runs the block with the section's back-pressure and seed.
  auto a = make_tile_adapter(c, 8, 8, "core.tensor");
  std::mt19937_64 rng(2);
  const auto w = test::random_bf16(rng, 64), x = test::random_bf16(rng, 8 * 40);
  const tile_run t = a->run_tile(w, x, 40);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.out, systolic_reference(w, 8, 8, x, 40));
  EXPECT_EQ(t.start_cycle, 3u);  // after the 3 reset cycles
  EXPECT_GT(t.stall_cycles, 0u);
}

TEST(RtlConfig, ErrorsNameTheKey) {
  EXPECT_EQ(error_of("impl: verilog"), "core.tensor.impl: expected cpp or rtl, got 'verilog'");
  EXPECT_EQ(error_of("impl: rtl"), "core.tensor.rtl: required when impl is rtl");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: x, colour: red}"),
            "core.tensor.rtl.colour: unknown key");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8, mode: fast}"),
            "core.tensor.rtl.mode: expected decoupled or timed, got 'fast'");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8, clock: fastGHz}"),
            "core.tensor.rtl.clock: expected a number, got 'fast'");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8, back_pressure: 1}"),
            "core.tensor.rtl.back_pressure: expected a stall rate in [0, 0.95]");
  EXPECT_NE(error_of("impl: rtl\nrtl: {block: pe_array_4x4}")
                .find("core.tensor.rtl.block: no RTL block 'pe_array_4x4' in this build (built: "
                      "pe_array_8x8, pe_array_16x16"),
            std::string::npos);
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8, parameters: {R: 16}}"),
            "core.tensor.rtl.parameters.R: block pe_array_8x8 was not built with R=16");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8, top: my_tile}"),
            "core.tensor.rtl.top: block pe_array_8x8 was built from top pe_array, not my_tile");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8, sources: [my.sv]}"),
            "core.tensor.rtl.sources[0]: block pe_array_8x8 was not built from my.sv");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8, mode: timed}"),
            "core.tensor.rtl.mode: block pe_array_8x8 is a --cc build; timed mode needs one built "
            "with SYSTEMC");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8, waveform: {path: a.fst}}"),
            "core.tensor.rtl.waveform: block pe_array_8x8 was built without TRACE");
  EXPECT_EQ(error_of("impl: rtl\nrtl: {block: pe_array_8x8_trace, waveform: {path: a.fst, "
                     "from: 5, to: 5}}"),
            "core.tensor.rtl.waveform.to: must be after from");
  // The engine's array must be the block's: a 16x16 block on an 8x8 config.
  EXPECT_NE(error_of("impl: rtl\nrtl: {block: pe_array_16x16}")
                .find("core.tensor.rtl.block: tile_adapter: block pe_array_16x16 has buses of"),
            std::string::npos);
}

}  // namespace
}  // namespace trnsim::cosim
