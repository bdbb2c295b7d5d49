// Config layers: presets that inherit (`base:`), the parameter rows' defaults and
// metadata, and core types (`core_types.NAME`, `chip.layout`).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "platform/chip.h"
#include "platform/config.h"
#include "platform/config_schema.h"
#include "tests/platform/config_test_util.h"

using namespace trnsim::platform;
using namespace trnsim::platform::test;

namespace {

namespace fs = std::filesystem;

std::string error_of(const std::string& text, const std::string& file = "dir/my.yaml") {
  return config_error([&] { parse_config(text, file); });
}

std::map<std::string, std::string> values(const platform_config& c) {
  std::map<std::string, std::string> v;
  for (const auto& k : schema::keys()) v[k.key] = schema::get_value(k, c);
  return v;
}

// A scratch directory with files, removed at the end of the test.
struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("trnsim-layers-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

}  // namespace

// --- base: ------------------------------------------------------------------

TEST(ConfigBase, DefaultsAreTheRowsAndTrn2IsTheDefaults) {
  const platform_config trn2 = load_config("trn2");
  const platform_config defaults;  // every struct's fields from their rows
  EXPECT_EQ(values(trn2), values(defaults));
  for (const auto& k : schema::keys())
    EXPECT_EQ(schema::default_value(k), schema::get_value(k, trn2)) << k.key;
  // The params structs carry the same defaults: 2.4 GHz is the trn2 tensor clock.
  EXPECT_DOUBLE_EQ(trnsim::models::tensor_engine_params{}.clock_hz, 2.4e9);
  EXPECT_DOUBLE_EQ(trnsim::models::sbuf_params{}.clock_hz, trn2.core.sbuf.clock_hz);
}

TEST(ConfigBase, PresetsListOnlyDifferences) {
  // A key a preset writes must differ from its base: a restated value would hide
  // which figures make the chip what it is.
  for (const auto& [name, base] : std::vector<std::pair<std::string, std::string>>{
           {"trn1", "trn2"}, {"trn3", "trn2"}, {"tiny", "trn2"}, {"tiny_rtl", "tiny"}}) {
    SCOPED_TRACE(name);
    const std::string text = read_file(kConfigDir + "/" + name + ".yaml");
    EXPECT_TRUE(has(text, "\nbase: " + base + "\n")) << text;
    const auto mine = values(load_config(name));
    const auto theirs = values(load_config(base));
    int written = 0;
    for (const auto& k : schema::keys())
      if (mine.at(k.key) != theirs.at(k.key)) ++written;
    // Every line with a value (not a section, comment or the rtl block) is one
    // differing key.
    std::istringstream lines(text);
    std::string line;
    int value_lines = 0;
    bool in_rtl = false;
    while (std::getline(lines, line)) {
      const size_t first = line.find_first_not_of(' ');
      if (first == std::string::npos || line[first] == '#') continue;
      if (in_rtl && first > 4) continue;  // the rtl block's own keys
      in_rtl = line.substr(first).starts_with("rtl:");
      const size_t colon = line.find(':');
      const std::string after = line.substr(colon + 1, line.find('#', colon) - colon - 1);
      if (after.find_first_not_of(' ') == std::string::npos || line.starts_with("base:")) continue;
      if (line.substr(first).starts_with("impl:") || line.substr(first).starts_with("numerics:"))
        continue;  // choice keys, not in schema::keys()
      ++value_lines;
    }
    EXPECT_EQ(value_lines, written);
    EXPECT_GT(written, 0);
  }
}

TEST(ConfigBase, FileReplacesItsBaseAndOverridesReplaceBoth) {
  TempDir t;
  const std::string mid = t.write("mid.yaml", "base: tiny\nhbm:\n  latency: 300ns\n");
  const std::string top =
      t.write("top.yaml", "base: mid.yaml\ncore:\n  dma:\n    engines: 4\n");  // relative path
  const platform_config c = load_config(top);
  const platform_config tiny = load_config("tiny");
  EXPECT_EQ(c.name, "top");
  EXPECT_DOUBLE_EQ(c.hbm.latency_s, 300e-9);
  EXPECT_EQ(c.core.dma.engines, 4u);
  EXPECT_EQ(c.core.sbuf.partition_bytes, tiny.core.sbuf.partition_bytes);
  EXPECT_EQ(load_config(top, {"core.dma.engines=2"}).core.dma.engines, 2u);
  (void)mid;
}

TEST(ConfigBase, BaseDefaultsFillsEveryMissingKey) {
  const platform_config c = parse_config("base: defaults\ncore:\n  semaphores: 64\n", "x.yaml");
  EXPECT_EQ(c.core.semaphores.count, 64u);
  EXPECT_EQ(c.core.tensor.rows, 128u);
  // Without a base every key is still required, and the message says how to inherit.
  const std::string e = error_of("chip:\n  cores: 2\n");
  EXPECT_TRUE(has(e, "dir/my.yaml: hbm.size: missing key")) << e;
  EXPECT_TRUE(has(e, "base: trn2")) << e;
}

TEST(ConfigBase, BadBasesNameTheFileAndLine) {
  TempDir t;
  EXPECT_TRUE(has(error_of("chip:\n  cores: 2\nbase: trn9\n"),
                  "dir/my.yaml:3: base: unknown preset 'trn9'"))
      << error_of("chip:\n  cores: 2\nbase: trn9\n");
  EXPECT_TRUE(has(error_of("base: [trn2]\n"), "dir/my.yaml:1: base: expected a preset name"));
  const std::string a = t.write("a.yaml", "base: b.yaml\n");
  t.write("b.yaml", "base: a.yaml\n");
  const std::string cyc = config_error([&] { load_config(a); });
  EXPECT_TRUE(has(cyc, "b.yaml:1: base: 'a.yaml' is already in this config's base chain")) << cyc;
  const std::string missing = t.write("c.yaml", "base: nothere.yaml\n");
  const std::string open = config_error([&] { load_config(missing); });
  EXPECT_TRUE(has(open, "c.yaml:1: base: cannot open")) << open;
  EXPECT_TRUE(
      has(error_of("base: /dev/zero\n"), "dir/my.yaml:1: base: /dev/zero is not a regular file"))
      << error_of("base: /dev/zero\n");
  // A file's section replaces its base's whole (the RTL block of tiny_rtl).
  const platform_config rtl = parse_config(
      "base: tiny_rtl\ncore:\n  tensor:\n    rtl: {block: pe_array_8x8, seed: 7}\n"
      "    impl: cpp\n",
      "x.yaml");
  ASSERT_TRUE(rtl.core.tensor_rtl);
  EXPECT_EQ(rtl.core.tensor_rtl->seed, 7u);
  // A key repeated within one file is still a duplicate, with a base or not.
  EXPECT_TRUE(has(error_of("base: tiny\nhbm:\n  latency: 1ns\n  latency: 2ns\n"), "duplicate key"));
}

// --- rows -------------------------------------------------------------------

TEST(ConfigRows, EveryRowHasItsMetadata) {
  for (const auto& k : schema::keys()) {
    SCOPED_TRACE(k.key);
    EXPECT_FALSE(k.description.empty());
    EXPECT_FALSE(k.source.empty());
    EXPECT_FALSE(schema::default_value(k).empty());
    EXPECT_EQ(k.per_core, k.key.starts_with("core."));
  }
  const std::string j = schema_json();
  EXPECT_TRUE(has(j, "\"key\": \"core.dma.engines\"")) << j;
  EXPECT_TRUE(has(j, "\"readers\": \"sim+compiler\"")) << j;
  EXPECT_TRUE(has(j, "\"GHz\": 1000000000")) << j;
  EXPECT_TRUE(has(j, "\"KiB\": 1024")) << j;
}

// --- core types --------------------------------------------------------------

TEST(ConfigCoreTypes, ATypeIsCorePlusDifferences) {
  const std::string text =
      "base: tiny\n"
      "core_types:\n"
      "  small:\n"
      "    tensor: {rows: 64, cols: 64, tile_size: 64}\n"
      "    dma: {engines: 4}\n"
      "chip:\n"
      "  layout: [core, small]\n";
  const platform_config c = parse_config(text, "het.yaml");
  ASSERT_EQ(c.core_types(), 2u);
  EXPECT_EQ(c.core_type_name(1), "small");
  EXPECT_EQ(c.core_of(0).tensor.rows, 128u);
  EXPECT_EQ(c.core_of(1).tensor.rows, 64u);
  EXPECT_EQ(c.core_of(1).dma.engines, 4u);
  EXPECT_EQ(c.core_of(1).sbuf.partition_bytes, c.core.sbuf.partition_bytes);  // inherited
  const std::string d = describe(c);
  EXPECT_TRUE(has(d, "core_types.small.tensor.rows = 64")) << d;
  EXPECT_TRUE(has(d, "chip.layout = core*1,small*1")) << d;
  EXPECT_FALSE(has(d, "core_types.small.sbuf")) << d;
  // The same through --set, and the described config reads back.
  const platform_config o =
      load_config("tiny", {"core_types.small.tensor.rows=64", "core_types.small.tensor.cols=64",
                           "core_types.small.tensor.tile_size=64", "core_types.small.dma.engines=4",
                           "chip.layout=core,small*1"});
  EXPECT_EQ(describe(o).substr(describe(o).find('\n')), d.substr(d.find('\n')));
  // The chip elaborates each core from its type.
  trnsim::models::sim_context ctx;
  chip ch("chip_het", c, ctx);
  ASSERT_EQ(ch.cores.size(), 2u);
  EXPECT_EQ(ch.cores[0]->dma.size(), c.core.dma.engines);
  EXPECT_EQ(ch.cores[1]->dma.size(), 4u);
}

TEST(ConfigCoreTypes, ErrorsNameTheKey) {
  const std::string two = "base: tiny\ncore_types:\n  small:\n    tensor: {rows: 64}\n";
  EXPECT_TRUE(has(error_of(two), "chip.layout: missing: core_types defines small"))
      << error_of(two);
  EXPECT_TRUE(has(error_of(two + "chip: {layout: [core, big]}\n"), "unknown core type 'big'"));
  EXPECT_TRUE(has(error_of(two + "chip: {layout: small*3}\n"), "names more cores than chip.cores"));
  EXPECT_TRUE(has(error_of(two + "chip: {layout: small}\n"), "names 1 cores, but chip.cores is 2"));
  EXPECT_TRUE(has(error_of(two + "chip: {layout: small*2, layout: core*2}\n"),
                  "chip.layout: duplicate key"));
  EXPECT_TRUE(has(error_of(two + "chip: {layout: core*2}\n"),
                  "core type small is defined in core_types but no core uses it"));
  // Cross-key checks run per type and name the type's key.
  const std::string tile =
      "base: tiny\ncore_types:\n  odd:\n    tensor: {rows: 48, cols: 48}\n"
      "chip: {layout: [core, odd]}\n";
  EXPECT_TRUE(has(error_of(tile), "core_types.odd.tensor.tile_size")) << error_of(tile);
  EXPECT_TRUE(has(error_of("base: tiny\ncore_types:\n  s:\n    tensr: {rows: 64}\n"),
                  "core_types.s.tensr: unknown key (did you mean core.tensor?)"))
      << error_of("base: tiny\ncore_types:\n  s:\n    tensr: {rows: 64}\n");
  EXPECT_TRUE(has(error_of("base: tiny\ncore_types:\n  s:\n    cores: 3\n"), "unknown key"));
  EXPECT_TRUE(has(error_of("base: tiny\ncore_types:\n  core:\n    tensor: {rows: 64}\n"),
                  "a core type needs its own name"));
  EXPECT_TRUE(has(error_of("base: tiny\ncore_types:\n  s:\n    tensor:\n      rtl: {block: x}\n"),
                  "the RTL block is configured in the core: section only"));
}
