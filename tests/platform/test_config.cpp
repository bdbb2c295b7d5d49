// Config: presets and their figures (against docs/hardware.md), every error
// class with file/line/key in the message, --set overrides, describe() and the
// schema table.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "platform/config.h"
#include "platform/config_schema.h"
#include "tests/platform/config_test_util.h"

using namespace trnsim::platform;
using namespace trnsim::platform::test;
namespace fs = std::filesystem;

namespace {

const char* const kFile = "cfg/tiny.yaml";  // name given to parse_config in error tests

// The tiny chip written out in full, every key and no base: (generated from the
// schema, so a new parameter row needs no edit here). The error tests edit it.
std::string tiny_text() {
  const platform_config c = load_config("tiny");
  std::string out;
  std::vector<std::string> open;  // the section path of the previous key
  for (const auto& k : schema::keys()) {
    std::vector<std::string> path;
    for (size_t b = 0, e; (e = k.key.find('.', b)) != std::string::npos; b = e + 1)
      path.push_back(k.key.substr(b, e - b));
    size_t same = 0;
    while (same < open.size() && same < path.size() && open[same] == path[same]) ++same;
    for (size_t i = same; i < path.size(); ++i) out += std::string(2 * i, ' ') + path[i] + ":\n";
    open = path;
    out += std::string(2 * path.size(), ' ') + k.key.substr(k.key.rfind('.') + 1) + ": " +
           schema::get_value(k, c) + "  # " + k.description + "\n";
  }
  return out;
}

// Replace the first occurrence; the test fails loudly if the anchor moved.
std::string replace_first(std::string text, const std::string& from, const std::string& to) {
  const size_t pos = text.find(from);
  if (pos == std::string::npos) throw std::logic_error("test anchor not found: " + from);
  return text.replace(pos, from.size(), to);
}

// 1-based line of the first occurrence of `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const size_t pos = text.find(needle);
  if (pos == std::string::npos) throw std::logic_error("test anchor not found: " + needle);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + pos, '\n'));
}

std::string parse_error(const std::string& text, const std::vector<std::string>& ov = {}) {
  return config_error([&] { parse_config(text, kFile, ov); });
}

// Peak dense matmul rate of one core: every PE does one multiply-add (2 FLOP) per
// cycle, so rows * cols * 2 * clock.
double peak_tflops(const platform_config& c) {
  return c.core.tensor.rows * c.core.tensor.cols * 2.0 * c.core.tensor.clock_hz / 1e12;
}

}  // namespace

// --- presets ---------------------------------------------------------------

TEST(ConfigPresets, AllLoad) {
  for (const std::string name : {"trn1", "trn2", "trn3", "tiny"}) {
    SCOPED_TRACE(name);
    platform_config c;
    ASSERT_NO_THROW(c = load_config(name));
    EXPECT_EQ(c.name, name);
    EXPECT_TRUE(c.source.ends_with("configs/" + name + ".yaml")) << c.source;
    // All presets keep the ISA's 128-partition semantics and 8 PSUM banks of 2 KiB.
    EXPECT_EQ(c.core.sbuf.partitions, 128u);
    EXPECT_EQ(c.core.psum.partitions, 128u);
    EXPECT_EQ(c.core.psum.partition_bytes, 16u * 1024);
    EXPECT_EQ(c.core.psum.partition_bytes / c.core.psum.bank_bytes, 8u);
    EXPECT_EQ(c.core.dma.engines, 16u);
    EXPECT_EQ(c.core.dma.queues_per_engine, 16u);
  }
}

TEST(ConfigPresets, Trn1MatchesHardwareMd) {
  const platform_config c = load_config("trn1");
  EXPECT_EQ(c.cores, 2u);
  EXPECT_EQ(c.hbm.size_bytes, 32ull << 30);
  EXPECT_DOUBLE_EQ(c.hbm.bandwidth_bps, 820e9);
  EXPECT_EQ(c.hbm.stacks, 2u);
  EXPECT_DOUBLE_EQ(c.core.tensor.clock_hz, 2.8e9);
  EXPECT_DOUBLE_EQ(c.core.vector.clock_hz, 1.12e9);
  EXPECT_DOUBLE_EQ(c.core.scalar.clock_hz, 1.4e9);
  EXPECT_DOUBLE_EQ(c.core.gpsimd.clock_hz, 1.4e9);
  EXPECT_FALSE(c.core.tensor.fp8_double_row);
  // SBUF 24 MiB = 128 partitions x 192 KiB.
  EXPECT_EQ(c.core.sbuf.partition_bytes, 192u * 1024);
  EXPECT_EQ(c.core.sbuf.partitions * c.core.sbuf.partition_bytes, 24ull << 20);
  EXPECT_DOUBLE_EQ(c.core.dma.bandwidth_bps, 17e9);  // 17 B/ns
  // 128 * 128 * 2 * 2.8e9 = 91.75e12; docs/hardware.md: 92 TFLOPS bf16, 23 fp32 (4x slower).
  EXPECT_NEAR(peak_tflops(c), 91.75, 0.01);
  EXPECT_NEAR(peak_tflops(c) / c.core.tensor.fp32_slowdown, 23, 0.1);  // 91.75 / 4 = 22.94
}

TEST(ConfigPresets, Trn2MatchesHardwareMd) {
  const platform_config c = load_config("trn2");
  EXPECT_EQ(c.cores, 8u);
  EXPECT_EQ(c.hbm.size_bytes, 96ull << 30);
  EXPECT_DOUBLE_EQ(c.hbm.bandwidth_bps, 2.9e12);
  EXPECT_DOUBLE_EQ(c.core.tensor.clock_hz, 2.4e9);
  EXPECT_DOUBLE_EQ(c.core.vector.clock_hz, 0.96e9);
  EXPECT_DOUBLE_EQ(c.core.scalar.clock_hz, 1.2e9);
  EXPECT_DOUBLE_EQ(c.core.gpsimd.clock_hz, 1.2e9);
  EXPECT_TRUE(c.core.tensor.fp8_double_row);
  EXPECT_TRUE(c.core.vector.perf_modes);
  // SBUF 28 MiB = 128 x 224 KiB.
  EXPECT_EQ(c.core.sbuf.partitions * c.core.sbuf.partition_bytes, 28ull << 20);
  // 128 * 128 * 2 * 2.4e9 = 78.64e12; docs/hardware.md: 79 bf16, 158 fp8 (double-row), 20 fp32.
  EXPECT_NEAR(peak_tflops(c), 78.64, 0.01);
  EXPECT_NEAR(peak_tflops(c) * (c.core.tensor.fp8_double_row ? 2 : 1), 157.3, 0.1);
  EXPECT_NEAR(peak_tflops(c) / c.core.tensor.fp32_slowdown, 19.66, 0.01);
  // docs/hardware.md: DMA, 23 B/ns per engine (bandwidth table); 32 KiB ([4, 4096] bf16,
  // 4 descriptors) on one engine in 1416 ns: 32768 / 23 + 0 fixed + 4 x 1 ns = 1428.7 ns,
  // within 1 % (scripts/calibrate.py simulates it); a 2 KiB share of 8 x 256 B in 97 ns:
  // 2048 / 23 + 8 x 1 = 97.0 ns. The start latency, 600 ns (one hardware descriptor
  // generation), is apart from both.
  EXPECT_DOUBLE_EQ(c.core.dma.bandwidth_bps, 23e9);
  const auto t_ns = [&](double bytes, int desc) {
    return (bytes / c.core.dma.bandwidth_bps + c.core.dma.fixed_cost_s +
            desc * c.core.dma.descriptor_cost_s) *
           1e9;
  };
  EXPECT_NEAR(t_ns(32768, 4), 1428.7, 0.1);
  EXPECT_NEAR(t_ns(32768, 4) / 1416, 1.0, 0.01);
  EXPECT_NEAR(t_ns(2048, 8), 97.0, 0.1);
  EXPECT_DOUBLE_EQ(c.core.dma.start_latency_s, 600e-9);
}

TEST(ConfigPresets, Trn3MatchesHardwareMd) {
  const platform_config c = load_config("trn3");
  EXPECT_EQ(c.cores, 8u);
  EXPECT_EQ(c.hbm.size_bytes, 144ull << 30);
  EXPECT_DOUBLE_EQ(c.hbm.bandwidth_bps, 4.9e12);
  EXPECT_DOUBLE_EQ(c.core.tensor.clock_hz, 2.4e9);
  EXPECT_DOUBLE_EQ(c.core.vector.clock_hz, 1.2e9);
  EXPECT_DOUBLE_EQ(c.core.scalar.clock_hz, 1.2e9);
  // SBUF 32 MiB = 128 x 256 KiB.
  EXPECT_EQ(c.core.sbuf.partition_bytes, 256u * 1024);
  EXPECT_EQ(c.core.sbuf.partitions * c.core.sbuf.partition_bytes, 32ull << 20);
  EXPECT_DOUBLE_EQ(c.core.dma.bandwidth_bps, 33e9);  // 33 B/ns (bandwidth table)
  EXPECT_NEAR(peak_tflops(c), 78.64, 0.01);  // 128 * 128 * 2 * 2.4e9; docs/hardware.md: 79 bf16
}

TEST(ConfigPresets, TinyIsRoundNumbers) {
  const platform_config c = load_config("tiny");
  EXPECT_EQ(c.cores, 2u);
  EXPECT_EQ(c.hbm.size_bytes, 64ull << 20);
  EXPECT_DOUBLE_EQ(c.hbm.bandwidth_bps, 100e9);
  EXPECT_DOUBLE_EQ(c.hbm.latency_s, 100e-9);
  for (double clk : {c.core.tensor.clock_hz, c.core.vector.clock_hz, c.core.scalar.clock_hz,
                     c.core.gpsimd.clock_hz, c.core.sync.clock_hz})
    EXPECT_DOUBLE_EQ(clk, 1e9);
  EXPECT_EQ(c.core.sbuf.partition_bytes, 64u * 1024);
  EXPECT_EQ(c.core.psum.bank_bytes, 2u * 1024);
  EXPECT_EQ(c.core.tensor.rows, 128u);
  EXPECT_EQ(c.core.tensor.cols, 128u);
  EXPECT_EQ(c.core.tensor.max_moving_free, 512u);
  EXPECT_DOUBLE_EQ(c.core.dma.bandwidth_bps, 10e9);
  EXPECT_DOUBLE_EQ(c.core.dma.fixed_cost_s, 100e-9);
  // 4 KiB on one engine: 100 ns + 4096 B / 10 B/ns = 509.6 ns.
  EXPECT_NEAR((c.core.dma.fixed_cost_s + 4096 / c.core.dma.bandwidth_bps) * 1e9, 509.6, 1e-6);
}

TEST(ConfigPresets, PresetsCiteTheirSources) {
  // Every row's default (the trn2 figure) cites docs/hardware.md or says why it was
  // chosen, and so does every value a real preset changes.
  for (const auto& k : schema::keys())
    EXPECT_TRUE(has(k.source, "docs/hardware.md") || has(k.source, "chosen"))
        << k.key << ": " << k.source;
  for (const std::string name : {"trn1", "trn3"}) {
    std::istringstream in(read_file(kConfigDir + "/" + name + ".yaml"));
    std::string line;
    int values = 0;
    while (std::getline(in, line)) {
      const size_t colon = line.find(':');
      if (line.empty() || line.find_first_not_of(' ') == line.find('#') ||
          colon == std::string::npos || line.starts_with("base:"))
        continue;
      const std::string after = line.substr(colon + 1, line.find('#') - colon - 1);
      if (after.find_first_not_of(' ') == std::string::npos) continue;  // a section header
      ++values;
      EXPECT_TRUE(has(line, "# docs/hardware.md:") || has(line, "chosen")) << name << ": " << line;
    }
    EXPECT_GT(values, 0) << name;
  }
  EXPECT_TRUE(has(read_file(kConfigDir + "/tiny.yaml"), "SYNTHETIC"));
}

TEST(ConfigPresets, Limits) {
  const trnsim::isa::Limits l = load_config("trn2").limits();
  EXPECT_EQ(l.partitions, 128u);
  EXPECT_EQ(l.sbuf_partition_bytes, 224u * 1024);
  EXPECT_EQ(l.psum_partition_bytes, 16u * 1024);
  EXPECT_EQ(l.psum_bank_bytes, 2u * 1024);
  EXPECT_EQ(l.matmul_max_k, 128u);
  EXPECT_EQ(l.matmul_max_m, 128u);
  EXPECT_EQ(l.matmul_max_n, 512u);
  EXPECT_EQ(l.hbm_bytes, 96ull << 30);
  EXPECT_EQ(l.dma_engines, 16u);
  EXPECT_EQ(l.dma_queues, 16u);
  EXPECT_EQ(l.max_semaphores, 256u);
}

// --- loading -----------------------------------------------------------------

TEST(ConfigLoad, PathAndName) {
  const platform_config c = load_config(kConfigDir + "/trn1.yaml");
  EXPECT_EQ(c.name, "trn1");
  EXPECT_EQ(c.source, kConfigDir + "/trn1.yaml");
  EXPECT_EQ(parse_config(tiny_text(), "some/dir/custom.yaml").name, "custom");
  EXPECT_EQ(parse_config(tiny_text(), "some/dir/custom.yaml").source, "some/dir/custom.yaml");
}

TEST(ConfigLoad, EnvDirFirstThenSourceTree) {
  const fs::path dir = fs::temp_directory_path() / ("trnsim_cfg_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "mychip.yaml") << replace_first(tiny_text(), "cores: 2", "cores: 1");
  std::ofstream(dir / "tiny.yaml") << replace_first(tiny_text(), "cores: 2", "cores: 3");
  ASSERT_EQ(setenv("TRNSIM_CONFIG_DIR", dir.c_str(), 1), 0);
  const platform_config mine = load_config("mychip");
  EXPECT_EQ(mine.name, "mychip");
  EXPECT_EQ(mine.cores, 1u);
  EXPECT_EQ(load_config("tiny").cores, 3u);  // the env dir shadows the source tree
  EXPECT_EQ(load_config("trn2").cores, 8u);  // falls back to the source tree
  const std::string msg = config_error([] { load_config("nope"); });
  EXPECT_TRUE(has(msg, "mychip")) << msg;
  unsetenv("TRNSIM_CONFIG_DIR");
  fs::remove_all(dir);
}

TEST(ConfigLoad, UnknownPresetListsAvailable) {
  const std::string msg = config_error([] { load_config("trn9"); });
  EXPECT_TRUE(has(msg, "unknown preset 'trn9'")) << msg;
  for (const char* p : {"tiny", "trn1", "trn2", "trn3"}) EXPECT_TRUE(has(msg, p)) << msg;
}

TEST(ConfigLoad, MissingFile) {
  const std::string msg = config_error([] { load_config("/nonexistent/x.yaml"); });
  EXPECT_TRUE(has(msg, "/nonexistent/x.yaml: cannot open")) << msg;
}

// --- errors ------------------------------------------------------------------

TEST(ConfigErrors, MissingKey) {
  const std::string text = tiny_text();
  // Drop the tensor engine's min_ii line (the first min_ii in the file).
  const size_t at = text.find("    min_ii: 64");
  const std::string cut = text.substr(0, at) + text.substr(text.find('\n', at) + 1);
  const std::string msg = parse_error(cut);
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml: core.tensor.min_ii: missing key")) << msg;
  EXPECT_FALSE(has(msg, "core.vector.min_ii")) << msg;
}

TEST(ConfigErrors, MissingSectionListsEveryKey) {
  const std::string text = tiny_text();
  const std::string cut = text.substr(0, text.find("  dma:"));
  const std::string msg = parse_error(cut);
  for (const char* k : {"core.dma.engines", "core.dma.queues_per_engine", "core.dma.bandwidth",
                        "core.dma.fixed_cost", "core.dma.descriptor_cost"})
    EXPECT_TRUE(has(msg, std::string("cfg/tiny.yaml: ") + k + ": missing key")) << msg;
}

TEST(ConfigErrors, UnknownKeyWithSuggestion) {
  const std::string text = replace_first(tiny_text(), "  tensor:\n", "  tensor:\n    clk: 2GHz\n");
  const std::string expect = "cfg/tiny.yaml:" + std::to_string(line_of(text, "clk: 2GHz")) +
                             ": core.tensor.clk: unknown key (did you mean core.tensor.clock?)";
  const std::string msg = parse_error(text);
  EXPECT_TRUE(has(msg, expect)) << msg;
}

TEST(ConfigErrors, UnknownSectionWithSuggestion) {
  const std::string text = replace_first(tiny_text(), "  tensor:", "  tensr:");
  const std::string msg = parse_error(text);
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml:" + std::to_string(line_of(text, "tensr:")) +
                           ": core.tensr: unknown key (did you mean core.tensor?)"))
      << msg;
}

TEST(ConfigErrors, KeyAtWrongLevelAndFarOffKey) {
  std::string text = replace_first(tiny_text(), "chip:\n", "chip:\n  semaphores: 8\n");
  text += "frobnicate: 3\n";
  const std::string msg = parse_error(text);
  EXPECT_TRUE(has(msg, ":" + std::to_string(line_of(text, "  semaphores: 8")) +
                           ": chip.semaphores: unknown key (did you mean core.semaphores?)"))
      << msg;
  EXPECT_TRUE(
      has(msg, ":" + std::to_string(line_of(text, "frobnicate")) + ": frobnicate: unknown key\n") ||
      msg.ends_with("frobnicate: unknown key"))
      << msg;
}

TEST(ConfigErrors, WrongOrMissingUnit) {
  std::string text = replace_first(tiny_text(), "bandwidth: 100GB/s", "bandwidth: 100GB");
  text = replace_first(text, "partition_size: 64KiB", "partition_size: 65536");
  const std::string msg = parse_error(text);
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml:" + std::to_string(line_of(text, "bandwidth: 100GB")) +
                           ": hbm.bandwidth: unknown unit 'GB' in '100GB'"))
      << msg;
  EXPECT_TRUE(has(msg, "GB/s")) << msg;
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml:" + std::to_string(line_of(text, "partition_size: 65536")) +
                           ": core.sbuf.partition_size: missing unit in '65536'"))
      << msg;
  EXPECT_TRUE(has(msg, "KiB")) << msg;
}

TEST(ConfigErrors, ImpossibleValues) {
  struct Case {
    std::string from, to, key, message;
  };
  const Case cases[] = {
      {"clock: 1GHz", "clock: 0GHz", "core.tensor.clock", "must be 1kHz..1THz (got '0GHz')"},
      {"min_ii: 64", "min_ii: 0", "core.tensor.min_ii", "must be 1..1000000 (got '0')"},
      {"partitions: 128  # SBUF partitions\n    partition_size: 64KiB",
       "partitions: 256\n    partition_size: 64KiB", "core.sbuf.partitions",
       "must be 32..128, multiple of 32 (got '256')"},
      {"partitions: 128  # SBUF partitions\n    partition_size: 64KiB",
       "partitions: 48\n    partition_size: 64KiB", "core.sbuf.partitions",
       "must be 32..128, multiple of 32 (got '48')"},
      {"bank_size: 2KiB", "bank_size: 3KiB", "core.psum.bank_size", "power of two (got '3KiB')"},
      {"semaphores: 256", "semaphores: 70000", "core.semaphores", "1..65536 (got '70000')"},
      {"fp8_double_row: true", "fp8_double_row: maybe", "core.tensor.fp8_double_row",
       "expected true or false, got 'maybe'"},
      {"cores: 2", "cores: 5000000000", "chip.cores", "1..1024 (got '5000000000')"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to);
    const std::string text = replace_first(tiny_text(), c.from, c.to);
    const std::string want =
        "cfg/tiny.yaml:" + std::to_string(line_of(text, c.to)) + ": " + c.key + ": ";
    const std::string msg = parse_error(text);
    EXPECT_TRUE(has(msg, want)) << msg;
    EXPECT_TRUE(has(msg, c.message)) << msg;
  }
}

// Values whose simulated time cannot be represented (a 1e-7 Hz clock has a 116-day
// period, 1e-30 GB/s takes 3e13 years a byte) or that are absurd as costs are
// refused where they are written, with the key's range in its unit; they used to
// load and wrap the simulated time round 2^64 ticks.
TEST(ConfigErrors, TimesOutOfTheSimulatedRangeNameTheKeyAndItsRange) {
  const std::pair<std::string, std::string> cases[] = {
      {"core.tensor.clock=1e-7Hz", "must be 1kHz..1THz (got '1e-7Hz')"},
      {"core.vector.clock=999Hz", "must be 1kHz..1THz (got '999Hz')"},
      {"core.sbuf.clock=10THz", "must be 1kHz..1THz (got '10THz')"},
      {"core.psum.clock=1e-3Hz", "must be 1kHz..1THz"},
      {"core.dma.bandwidth=1e-30GB/s", "must be >= 1kB/s (got '1e-30GB/s')"},
      {"hbm.bandwidth=999B/s", "must be >= 1kB/s (got '999B/s')"},
      {"host.link_bandwidth=1e-30GB/s", "must be >= 1kB/s"},
      {"core.vector.overhead=4000000000", "must be 0..1000000 (got '4000000000')"},
      {"core.tensor.min_ii=1000001", "must be 1..1000000 (got '1000001')"},
      {"core.sync.sem_latency=4000000000", "must be 0..1000000"},
      {"core.scalar.func_switch_cost=4000000000", "must be 0..1000000"},
      {"core.gpsimd.start_cost=4000000000", "must be 0..1000000"},
      {"core.dma.fixed_cost=1e10s", "must be 0..1s (got '1e10s')"},
      {"core.dma.descriptor_cost=2s", "must be 0..1s (got '2s')"},
      {"hbm.latency=1e12s", "must be 0..1s"},
      {"host.link_latency=1e12s", "must be 0..1s"},
      {"core.tensor.throttle_ramp=5s", "must be 0..1s"},
      {"core.tensor.throttle_idle=5s", "must be > 0, <= 1s (got '5s')"},
      {"core.tensor.fp32_slowdown=4000000000", "must be 1..1024"},
      {"core.tensor.fast_load_speedup=2000", "must be 1..1024"},
      {"core.vector.reciprocal_slowdown=4000000000", "must be 1..1024"},
  };
  for (const auto& [set, want] : cases) {
    SCOPED_TRACE(set);
    const std::string msg = config_error([&] { load_config("tiny", {set}); });
    EXPECT_TRUE(has(msg, "--set " + set.substr(0, set.find('=')) + ": " + want)) << msg;
  }
  // The ends of the ranges load.
  EXPECT_NO_THROW(load_config(
      "tiny", {"core.tensor.clock=1kHz", "core.vector.clock=1THz", "core.dma.bandwidth=1kB/s",
               "core.vector.overhead=1000000", "core.dma.fixed_cost=1s", "hbm.latency=0ns"}));
}

// Sizes and counts past what the model can hold are refused naming the key and
// its range: they used to end in std::bad_alloc (an eager 2^64-byte SBUF, 2^40 HBM
// channels, 65536 DMA engines' threads) or in minutes of elaboration.
TEST(ConfigErrors, SizesAndCountsPastWhatTheModelHoldsNameTheKeyAndItsRange) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"hbm.size=2048TiB"}, "hbm.size: must be > 0, <= 1024TiB (got '2048TiB')"},
      {{"hbm.size=18446744073709551615B"}, "hbm.size: must be > 0, <= 1024TiB"},
      {{"core.sbuf.partition_size=1TiB"},
       "core.sbuf.partition_size: must be > 0, <= 4MiB, multiple of 4 (got '1TiB')"},
      {{"core.psum.partition_size=18446744073709551612B"},
       "core.psum.partition_size: must be > 0, <= 4MiB, multiple of 4"},
      {{"hbm.stacks=4000000000"}, "hbm.stacks: must be 1..128 (got '4000000000')"},
      {{"hbm.interleave=4GiB"}, "hbm.interleave: must be 1B..1GiB, power of two (got '4GiB')"},
      {{"core.dma.engines=65536"}, "core.dma.engines: must be 1..1024 (got '65536')"},
      {{"chip.cores=1024", "core.dma.engines=17"},
       "core.dma.engines: 17 x chip.cores (1024) = 17408 DMA engines on the chip; the model "
       "holds at most 16384"},
  };
  for (const auto& [sets, want] : cases) {
    SCOPED_TRACE(sets.back());
    const std::string msg = config_error([&] { load_config("tiny", sets); });
    EXPECT_TRUE(has(msg, "--set " + want)) << msg;
  }
  // What the model holds loads: storage and queues cost only when used.
  EXPECT_NO_THROW(load_config(
      "tiny", {"hbm.size=1024TiB", "core.sbuf.partition_size=4MiB",
               "core.dma.queues_per_engine=65536", "chip.cores=1024", "core.dma.engines=16",
               "hbm.stacks=128", "hbm.channels_per_stack=1024", "hbm.interleave=1GiB"}));
}

TEST(ConfigErrors, SizesThatDoNotFit) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> edits;
    std::string key, message;
  };
  const Case cases[] = {
      // 12 KiB partitions, 8 KiB banks: 12 % 8 != 0.
      {{{"partition_size: 16KiB", "partition_size: 12KiB"}, {"bank_size: 2KiB", "bank_size: 8KiB"}},
       "core.psum.bank_size",
       "8KiB does not divide core.psum.partition_size (12KiB)"},
      {{{"bank_size: 2KiB", "bank_size: 32KiB"}},
       "core.psum.bank_size",
       "32KiB is larger than core.psum.partition_size (16KiB)"},
      // 1024 fp32 results = 4 KiB > one 2 KiB bank.
      {{{"max_moving_free: 512", "max_moving_free: 1024"}},
       "core.tensor.max_moving_free",
       "1024 fp32 results (4KiB) do not fit one PSUM bank"},
      {{{"partitions: 128  # PSUM partitions\n    partition_size: 16KiB",
         "partitions: 96\n    partition_size: 16KiB"}},
       "core.psum.partitions",
       "96 must equal core.sbuf.partitions (128)"},
  };
  for (const Case& c : cases) {
    std::string text = tiny_text();
    for (const auto& [from, to] : c.edits) text = replace_first(text, from, to);
    const std::string key_line = c.key.substr(c.key.rfind('.') + 1) + ": ";
    // The error points at the line that sets the key it names (psum section).
    const size_t psum = text.find("  psum:");
    const std::string after = c.key.starts_with("core.psum") ? text.substr(psum) : text;
    const int line = (c.key.starts_with("core.psum") ? line_of(text, "  psum:") - 1 : 0) +
                     line_of(after, "    " + key_line);
    const std::string msg = parse_error(text);
    SCOPED_TRACE(c.key);
    EXPECT_TRUE(has(msg, "cfg/tiny.yaml:" + std::to_string(line) + ": " + c.key + ": " + c.message))
        << msg;
  }
}

TEST(ConfigErrors, YamlSyntax) {
  // Unterminated flow sequence: yaml-cpp notices on the next line (3).
  std::string msg = parse_error("chip:\n  cores: [1, 2\nhbm:\n  size: 1GiB\n");
  EXPECT_TRUE(std::regex_search(msg, std::regex("^cfg/tiny\\.yaml:[0-9]+: YAML syntax error: ")))
      << msg;
  // A key indented by one space under a scalar: an illegal map value on line 3.
  msg = parse_error("chip:\n  cores: 2\n bad: 3\n");
  EXPECT_TRUE(std::regex_search(msg, std::regex("^cfg/tiny\\.yaml:3: YAML syntax error: "))) << msg;
}

TEST(ConfigErrors, WrongShapes) {
  std::string msg = parse_error("");
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml:1: expected a mapping of config keys")) << msg;
  msg = parse_error("just text\n");
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml:1: expected a mapping of config keys")) << msg;

  std::string text = replace_first(tiny_text(), "cores: 2", "cores: [2]");
  msg = parse_error(text);
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml:" + std::to_string(line_of(text, "cores: [2]")) +
                           ": chip.cores: expected a single value"))
      << msg;

  text = replace_first(tiny_text(), "cores: 2 ", "cores:   ");
  msg = parse_error(text);
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml:" + std::to_string(line_of(text, "cores:   ")) +
                           ": chip.cores: missing value (count, a plain integer"))
      << msg;
  EXPECT_FALSE(has(msg, "chip.cores: missing key")) << msg;  // reported once, where written

  text = replace_first(tiny_text(), "core:\n", "core: 5\nunused:\n");
  msg = parse_error(text);
  EXPECT_TRUE(has(
      msg, "cfg/tiny.yaml:" + std::to_string(line_of(text, "core: 5")) + ": core: is a section"))
      << msg;
  EXPECT_FALSE(has(msg, "core.tensor.clock: missing key")) << msg;
}

TEST(ConfigErrors, DuplicateKey) {
  const std::string text = replace_first(tiny_text(), "  cores: 2", "  cores: 2\n  cores: 3");
  const std::string msg = parse_error(text);
  EXPECT_TRUE(has(msg, "cfg/tiny.yaml:" + std::to_string(line_of(text, "cores: 3")) +
                           ": chip.cores: duplicate key (first set at line " +
                           std::to_string(line_of(text, "cores: 2")) + ")"))
      << msg;
}

TEST(ConfigErrors, SeveralErrorsReportedTogether) {
  std::string text = replace_first(tiny_text(), "clock: 1GHz", "clock: 1");
  text = replace_first(text, "stacks: 1", "stacks: 0");
  const std::string msg = parse_error(text);
  EXPECT_TRUE(has(msg, "core.tensor.clock: missing unit")) << msg;
  EXPECT_TRUE(has(msg, "hbm.stacks: must be 1..128 (got '0')")) << msg;
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 1) << msg;  // two lines
}

TEST(ConfigErrors, BadSetKey) {
  const std::string msg = config_error([] { load_config("tiny", {"core.tensr.clock=2GHz"}); });
  EXPECT_TRUE(has(msg, "--set core.tensr.clock: unknown key (did you mean core.tensor.clock?)"))
      << msg;
  const std::string sec = config_error([] { load_config("tiny", {"core.tensor=2GHz"}); });
  EXPECT_TRUE(has(sec,
                  "--set core.tensor: is a section, not a key (give a full key such as "
                  "core.tensor.clock)"))
      << sec;
  const std::string syntax = config_error([] { load_config("tiny", {"core.tensor.clock"}); });
  EXPECT_TRUE(has(syntax, "--set 'core.tensor.clock': expected KEY=VALUE")) << syntax;
}

TEST(ConfigErrors, BadSetValue) {
  std::string msg = config_error([] { load_config("tiny", {"core.tensor.clock=2GB"}); });
  EXPECT_TRUE(has(msg, "--set core.tensor.clock: unknown unit 'GB' in '2GB'")) << msg;
  msg = config_error([] { load_config("tiny", {"core.tensor.min_ii=0"}); });
  EXPECT_TRUE(has(msg, "--set core.tensor.min_ii: must be 1..1000000 (got '0')")) << msg;
  msg = config_error([] { load_config("tiny", {"core.tensor.max_moving_free=1024"}); });
  EXPECT_TRUE(has(msg, "--set core.tensor.max_moving_free: 1024 fp32 results")) << msg;
}

// --- overrides ---------------------------------------------------------------

TEST(ConfigOverrides, ChangeTypedFields) {
  const platform_config base = load_config("trn2");
  const platform_config c =
      load_config("trn2", {"core.tensor.clock=2GHz", "hbm.size=1GiB",
                           "core.vector.perf_modes=false", "core.dma.fixed_cost=1.3us",
                           " core.sbuf.partition_size = 192KiB", "chip.cores=4", "chip.cores=6"});
  EXPECT_DOUBLE_EQ(c.core.tensor.clock_hz, 2e9);
  EXPECT_EQ(c.hbm.size_bytes, 1ull << 30);
  EXPECT_FALSE(c.core.vector.perf_modes);
  EXPECT_DOUBLE_EQ(c.core.dma.fixed_cost_s, 1.3e-6);
  EXPECT_EQ(c.core.sbuf.partition_bytes, 192u * 1024);
  EXPECT_EQ(c.cores, 6u);  // the last override wins
  EXPECT_EQ(c.limits().hbm_bytes, 1ull << 30);
  EXPECT_DOUBLE_EQ(c.core.vector.clock_hz, base.core.vector.clock_hz);  // untouched
  EXPECT_EQ(c.name, "trn2");
}

TEST(ConfigOverrides, ApplyAfterTheFile) {
  // A bad or missing value in the file is fine when an override replaces it.
  std::string text = replace_first(tiny_text(), "clock: 1GHz", "clock: 0GHz");
  const size_t at = text.find("  stacks: 1");
  text = text.substr(0, at) + text.substr(text.find('\n', at) + 1);
  text = replace_first(text, "cores: 2 ", "cores:   ");  // no value
  const platform_config c =
      parse_config(text, kFile, {"core.tensor.clock=1.5GHz", "hbm.stacks=2", "chip.cores=1"});
  EXPECT_DOUBLE_EQ(c.core.tensor.clock_hz, 1.5e9);
  EXPECT_EQ(c.hbm.stacks, 2u);
  EXPECT_EQ(c.cores, 1u);
}

TEST(ConfigOverrides, LimitsFollow) {
  const trnsim::isa::Limits l =
      load_config("tiny",
                  {"core.semaphores=64", "core.tensor.max_moving_free=256", "core.dma.engines=4"})
          .limits();
  EXPECT_EQ(l.max_semaphores, 64u);
  EXPECT_EQ(l.matmul_max_n, 256u);
  EXPECT_EQ(l.dma_engines, 4u);
}

// --- describe and schema -----------------------------------------------------

TEST(ConfigDescribe, MentionsEveryKey) {
  const std::string d = describe(load_config("trn2"));
  for (const auto& k : schema::keys()) EXPECT_TRUE(has("\n" + d, "\n" + k.key + " = ")) << k.key;
  EXPECT_EQ(std::count(d.begin(), d.end(), '\n'), static_cast<long>(schema::keys().size()));
  for (const char* line :
       {"core.tensor.clock = 2.4GHz  # Tensor Engine clock\n", "hbm.size = 96GiB  # ",
        "hbm.bandwidth = 2.9TB/s  # ", "core.vector.clock = 960MHz  # ",
        "core.dma.bandwidth = 23GB/s  # ", "core.dma.start_latency = 600ns  # ",
        "core.tensor.fp8_double_row = true  # ", "core.sbuf.partition_size = 224KiB  # ",
        "core.tensor.min_ii = 64  # "})
    EXPECT_TRUE(has(d, line)) << line << "\n" << d;
}

TEST(ConfigDescribe, RoundTripsThroughOverrides) {
  // Every value describe() prints parses back to the same config: load tiny, then
  // override every key with trn1's printed value.
  const platform_config trn1 = load_config("trn1");
  std::vector<std::string> overrides;
  std::istringstream in(describe(trn1));
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find(" = "), hash = line.find("  # ");
    overrides.push_back(line.substr(0, eq) + "=" + line.substr(eq + 3, hash - eq - 3));
  }
  const platform_config c = load_config("tiny", overrides);
  EXPECT_EQ(describe(c), describe(trn1));
  EXPECT_DOUBLE_EQ(c.core.vector.clock_hz, 1.12e9);
  EXPECT_EQ(c.core.sbuf.partition_bytes, 192u * 1024);
}

TEST(ConfigDescribe, SchemaTable) {
  const std::string t = schema_table();
  EXPECT_TRUE(
      std::regex_search(t, std::regex("^key +type +unit +default +check +readers +description\n")));
  // Header, every required key, the optional choice keys, the RTL section, core_types,
  // chip.layout.
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'),
            static_cast<long>(1 + schema::keys().size() + schema::choice_keys().size() + 3));
  for (const auto& k : schema::choice_keys()) EXPECT_TRUE(has(t, "\n" + k.key + " ")) << k.key;
  EXPECT_TRUE(
      std::regex_search(t, std::regex("\ncore\\.tensor\\.impl +choice +- +cpp +cpp\\|rtl ")))
      << t;
  EXPECT_TRUE(has(t, "\ncore.tensor.rtl ")) << t;
  EXPECT_TRUE(has(t, "\ncore_types ")) << t;
  for (const auto& k : schema::keys()) EXPECT_TRUE(has(t, "\n" + k.key + " ")) << k.key;
  // Default (the trn2 figure), range, readers, description and source.
  EXPECT_TRUE(std::regex_search(
      t, std::regex("\ncore\\.tensor\\.clock +frequency +Hz +2\\.4GHz +1kHz\\.\\.1THz +"
                    "sim\\+compiler +Tensor Engine clock \\[source: docs/hardware\\.md: ")))
      << t;
  EXPECT_TRUE(std::regex_search(t, std::regex("\ncore\\.sbuf\\.partitions +count +partitions +128 "
                                              "+32\\.\\.128, multiple of 32 +sim\\+compiler ")))
      << t;
  EXPECT_TRUE(std::regex_search(t, std::regex("\nhbm\\.latency +time +s +100ns +0\\.\\.1s +sim ")))
      << t;
}

TEST(ConfigSchema, FieldTypesMatchValueTypes) {
  for (const auto& k : schema::keys()) {
    SCOPED_TRACE(k.key);
    switch (k.type) {
      case ValueType::frequency:
      case ValueType::bandwidth:
      case ValueType::time:
      case ValueType::ratio:
        EXPECT_TRUE(std::holds_alternative<schema::FieldRef<double>>(k.field));
        break;
      case ValueType::size:
        EXPECT_TRUE(std::holds_alternative<schema::FieldRef<uint64_t>>(k.field));
        break;
      case ValueType::count:
      case ValueType::cycles:
        EXPECT_TRUE(std::holds_alternative<schema::FieldRef<uint32_t>>(k.field));
        break;
      case ValueType::boolean:
        EXPECT_TRUE(std::holds_alternative<schema::FieldRef<bool>>(k.field));
        break;
    }
    EXPECT_FALSE(k.description.empty());
  }
}

TEST(ConfigSchema, EveryKeyOwnsOneField) {
  // Every row is a key of its own (no count kept here: adding a row must not touch
  // this file), and every field a row names is distinct: see the loop below.
  const auto& keys = schema::keys();
  EXPECT_GE(keys.size(), 64u);
  std::set<std::string> names;
  for (const auto& k : keys) EXPECT_TRUE(names.insert(k.key).second) << "duplicate " << k.key;

  // Setting one key changes exactly its own value: no two keys share a field.
  const platform_config base = load_config("tiny");
  for (const auto& k : keys) {
    SCOPED_TRACE(k.key);
    platform_config c = base;
    const char* alt = "";
    switch (k.type) {
      case ValueType::frequency:
        alt = "1.5GHz";
        break;
      case ValueType::bandwidth:
        alt = "1.5GB/s";
        break;
      case ValueType::size: {  // a value other than the base's (4 KiB for network.tlm_packet)
        platform_config four = base;
        schema::set_value(k, "4KiB", four);
        alt = schema::get_value(k, four) == schema::get_value(k, base) ? "8KiB" : "4KiB";
        break;
      }
      case ValueType::time:
        alt = "7ns";
        break;
      case ValueType::count:
        alt = "96";
        break;
      case ValueType::cycles:
        alt = "7";
        break;
      case ValueType::ratio:
        alt = "30%";
        break;
      case ValueType::boolean:
        alt = schema::get_value(k, base) == "true" ? "false" : "true";
        break;
    }
    ASSERT_NO_THROW(schema::set_value(k, alt, c));
    for (const auto& other : keys) {
      const bool changed = schema::get_value(other, c) != schema::get_value(other, base);
      EXPECT_EQ(changed, &other == &k) << other.key;
    }
  }
}
