#include "models/cosim/systolic_reference.h"

#include <bit>
#include <cmath>
#include <stdexcept>

namespace trnsim::cosim {
namespace {

bool is_nan32(uint32_t u) {
  return (u & 0x7FFFFFFFu) > 0x7F800000u;
}

// Denormals count as zero of their sign.
uint32_t flush_in32(uint32_t u) {
  return (u & 0x7F800000u) == 0 ? u & 0x80000000u : u;
}

// Host IEEE result -> the array's: canonical NaN, denormal -> signed zero.
uint32_t finish(float r) {
  const uint32_t u = std::bit_cast<uint32_t>(r);
  if (is_nan32(u)) return kCanonicalNan;
  return flush_in32(u);
}

}  // namespace

uint32_t pe_mul(uint16_t a, uint16_t b) {
  // Widened bf16 is an fp32 with the same exponent; the host product is exact when
  // normal (16 significant bits) and rounds only far below the flush threshold.
  const float fa = std::bit_cast<float>(flush_in32(uint32_t{a} << 16));
  const float fb = std::bit_cast<float>(flush_in32(uint32_t{b} << 16));
  return finish(fa * fb);
}

uint32_t pe_add(uint32_t a, uint32_t b) {
  if (is_nan32(a) || is_nan32(b)) return kCanonicalNan;
  const float fa = std::bit_cast<float>(flush_in32(a));
  const float fb = std::bit_cast<float>(flush_in32(b));
  return finish(fa + fb);
}

std::vector<uint32_t> systolic_reference(const std::vector<uint16_t>& w, uint32_t rows,
                                         uint32_t cols, const std::vector<uint16_t>& x,
                                         uint32_t vectors) {
  if (w.size() != size_t{rows} * cols || x.size() != size_t{vectors} * rows)
    throw std::invalid_argument(
        "systolic_reference: weights must be rows x cols and moving "
        "data vectors x rows");
  std::vector<uint32_t> out(size_t{vectors} * cols);
  for (uint32_t j = 0; j < vectors; ++j)
    for (uint32_t c = 0; c < cols; ++c) {
      uint32_t acc = 0;  // +0 enters the top of every column
      for (uint32_t r = 0; r < rows; ++r)
        acc = pe_add(acc, pe_mul(w[size_t{r} * cols + c], x[size_t{j} * rows + r]));
      out[size_t{j} * cols + c] = acc;
    }
  return out;
}

}  // namespace trnsim::cosim
