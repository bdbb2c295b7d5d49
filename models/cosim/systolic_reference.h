// The PE array's numerics in C++ (the "systolic" numerics mode), bit-exact with
// models/rtl/pe_array.sv: bf16 x bf16 products exact in fp32, fp32 sums rounded to
// nearest even, accumulated down each column from +0, array row 0 first. Special
// values (docs/rtl-cosim.md, "Numerics"): denormal inputs count as zero of their
// sign, results below 2^-126 flush to zero (sign kept), NaN is always 0x7FC00000.
//
// How it relates to the tensor engine's matmul (models/engines/alu.cpp): that one
// is an fp32 sgemm of the converted inputs. bf16 products are exact in fp32, so a
// fused multiply-add gives the same bits as this multiply-then-add; the results can
// differ only in summation order (the sgemm's blocking, vs. K order here), in
// denormals (the sgemm keeps them) and in NaN bits. For one fold (K <= R) summed
// in K order the two agree on normal data; tests/cosim checks that.
#pragma once

#include <cstdint>
#include <vector>

namespace trnsim::cosim {

inline constexpr uint32_t kCanonicalNan = 0x7FC00000u;

// One PE multiply: bf16 bits x bf16 bits -> fp32 bits.
uint32_t pe_mul(uint16_t a, uint16_t b);
// One PE accumulate: fp32 bits + fp32 bits -> fp32 bits.
uint32_t pe_add(uint32_t a, uint32_t b);

// A job on an R x C tile: weights w[r * C + c] (bf16 bits), S moving vectors
// x[j * R + r] (bf16 bits). Returns S x C fp32 bits, out[j * C + c] =
// (((+0 + w[0][c] x[j][0]) + w[1][c] x[j][1]) + ...) + w[R-1][c] x[j][R-1].
std::vector<uint32_t> systolic_reference(const std::vector<uint16_t>& w, uint32_t rows,
                                         uint32_t cols, const std::vector<uint16_t>& x,
                                         uint32_t vectors);

}  // namespace trnsim::cosim
