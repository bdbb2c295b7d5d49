// Shared helpers of the co-simulation tests: seeded random bf16 data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace trnsim::cosim::test {

// Random normal bf16 values, exponents within +-spread of 1.0, random sign and
// mantissa: sums then cancel, round and carry often.
inline std::vector<uint16_t> random_bf16(std::mt19937_64& rng, size_t n, int spread = 12) {
  std::vector<uint16_t> v(n);
  std::uniform_int_distribution<int> e(127 - spread, 127 + spread);
  for (auto& h : v)
    h = static_cast<uint16_t>((rng() & 1) << 15 | uint32_t(e(rng)) << 7 | (rng() & 0x7F));
  return v;
}

}  // namespace trnsim::cosim::test
