// Element types of the ISA and their conversions to and from fp32.
// Every narrowing conversion rounds to nearest, ties to even. fp8 e4m3 is the
// "fn" variant (no infinities, max 448, NaN = S.1111.111); values beyond its range
// saturate to +-448 (the Neuron engines' behaviour on cast); e5m2 follows IEEE
// (overflow -> inf). No SystemC here: the compiler uses this too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace trnsim::isa {

enum class DType : uint8_t { fp32, bf16, fp16, fp8e4m3, fp8e5m2, int32, uint8 };
inline constexpr int kNumDTypes = 7;

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view s);
bool is_float(DType t);
bool is_fp8(DType t);

// Scalar conversions (bit patterns in the integer types).
uint16_t fp32_to_bf16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float fp16_to_fp32(uint16_t h);
uint8_t fp32_to_fp8e4m3(float f);
float fp8e4m3_to_fp32(uint8_t b);
uint8_t fp32_to_fp8e5m2(float f);
float fp8e5m2_to_fp32(uint8_t b);

// Round a value through a dtype and back (what a store then a load gives).
float round_to(DType t, float f);

// Bulk conversions: `n` elements packed contiguously in `src`/`dst`.
void to_fp32(DType t, const void* src, float* dst, size_t n);
void from_fp32(DType t, const float* src, void* dst, size_t n);

// Stochastic rounding (the engines' core.rounding.stochastic): bf16, fp16 and fp8
// round the magnitude up with probability equal to the dropped fraction of a unit in
// the last place, so the expected result is the fp32 value (NaN, inf and overflow as
// from_fp32).
// Element i's random bits are stochastic_bits(stream, i): equal streams give equal
// results. fp32 and integer types convert as from_fp32.
uint64_t stochastic_bits(uint64_t stream, uint64_t i);
void from_fp32_stochastic(DType t, const float* src, void* dst, size_t n, uint64_t stream);

}  // namespace trnsim::isa
