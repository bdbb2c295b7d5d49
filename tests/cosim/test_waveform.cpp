// FST waveforms: off by default, on for a block built with TRACE, limited to a cycle
// window and a scope depth.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "cosim_test_util.h"
#include "models/cosim/lockstep.h"
#include "models/cosim/tile_adapter.h"
#include "trnsim_rtl_blocks.h"

namespace trnsim::cosim {
namespace {

namespace fs = std::filesystem;

fs::path temp_fst(const char* name) {
  return fs::path(TRNSIM_BINARY_DIR) / "tests" / (std::string(name) + ".fst");
}

uintmax_t traced_run(const fs::path& p, uint64_t from, uint64_t to, int depth) {
  fs::remove(p);
  {
    tile_adapter::options o;
    o.fst_path = p.string();
    o.fst_depth = depth;
    o.fst_from = from;
    o.fst_to = to;
    tile_adapter a(make_rtl_pe_array_8x8_trace(), o);
    lockstep ls(a);
    std::mt19937_64 rng(8);
    for (int i = 0; i < 4; ++i)
      EXPECT_TRUE(ls.step(test::random_bf16(rng, 64), test::random_bf16(rng, 64 * 8), 64))
          << *ls.first_mismatch();  // tracing changes nothing in the results
  }                                 // closes the file
  return fs::exists(p) ? fs::file_size(p) : 0;
}

TEST(Waveform, WindowAndDepthLimitTheDump) {
  const uintmax_t all = traced_run(temp_fst("wave_all"), 0, UINT64_MAX, 0);
  const uintmax_t window = traced_run(temp_fst("wave_window"), 100, 120, 0);
  const uintmax_t shallow = traced_run(temp_fst("wave_shallow"), 0, UINT64_MAX, 1);
  std::printf("FST sizes: all %ju B, 20-cycle window %ju B, depth 1 %ju B\n", all, window, shallow);
  EXPECT_GT(all, 0u);
  EXPECT_GT(window, 0u);
  EXPECT_LT(window, all);
  EXPECT_LT(shallow, all);
  for (const char* n : {"wave_all", "wave_window", "wave_shallow"}) fs::remove(temp_fst(n));
}

TEST(Waveform, UntracedBlockRefusesClearly) {
  tile_adapter::options o;
  o.fst_path = temp_fst("wave_none").string();
  try {
    tile_adapter a(make_rtl_pe_array_8x8(), o);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pe_array_8x8 cannot write"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace trnsim::cosim
