// Benchmark, not a test: speed of the decoupled tile adapter in RTL cycles per host
// second (the figure depends on the host and its load). Run: scripts/bench_rtl.sh.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "models/cosim/tile_adapter.h"
#include "tests/cosim/cosim_test_util.h"
#include "trnsim_rtl_blocks.h"

namespace trnsim::cosim {
namespace {

void bench(const char* name, std::unique_ptr<rtl_block> b, uint32_t n, double stall,
           const std::string& fst = "") {
  tile_adapter::options o;
  o.fst_path = fst;
  o.rows = o.cols = n;
  o.stall_rate = stall;
  tile_adapter a(std::move(b), o);
  std::mt19937_64 rng(1);
  const uint32_t S = 512;
  const auto w = test::random_bf16(rng, n * n);
  const auto x = test::random_bf16(rng, size_t{S} * n);
  const uint64_t c0 = a.rtl_cycles();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t jobs = 0;
  do {
    if (!a.run_tile(w, x, S).ok) {
      std::fprintf(stderr, "bench %s: a tile job failed\n", name);
      std::exit(1);
    }
    ++jobs;
  } while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(700));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cycles = double(a.rtl_cycles() - c0);
  std::printf("bench %-16s stall %2.0f%%: %8.0f RTL cycles/s (%llu jobs of S=%u, %.2f s)\n", name,
              stall * 100, cycles / s, static_cast<unsigned long long>(jobs), S, s);
}

}  // namespace
}  // namespace trnsim::cosim

int main() {
  using namespace trnsim::cosim;
  bench("pe_array_8x8", make_rtl_pe_array_8x8(), 8, 0);
  bench("pe_array_8x8", make_rtl_pe_array_8x8(), 8, 0.3);  // as Timed.* prints
  bench("pe_array_8x8", make_rtl_pe_array_8x8(), 8, 0.5);
  bench("pe_array_16x16", make_rtl_pe_array_16x16(), 16, 0);
  // The TRACE build with no waveform open, then dumping every cycle.
  bench("8x8_trace (off)", make_rtl_pe_array_8x8_trace(), 8, 0);
  const std::string fst =
      (std::filesystem::temp_directory_path() / "trnsim_bench_rtl.fst").string();
  bench("8x8_trace (FST)", make_rtl_pe_array_8x8_trace(), 8, 0, fst);
  std::printf("bench FST file: %ju bytes\n", std::filesystem::file_size(fst));
  std::filesystem::remove(fst);
  return 0;
}
