#include "models/isa/dtype.h"

#include <array>
#include <cmath>
#include <cstring>

namespace trnsim::isa {

namespace {
struct DTypeInfo {
  std::string_view name;
  size_t size;
  bool is_float;
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo{{
    {"fp32", 4, true},
    {"bf16", 2, true},
    {"fp16", 2, true},
    {"fp8e4m3", 1, true},
    {"fp8e5m2", 1, true},
    {"int32", 4, false},
    {"uint8", 1, false},
}};
}  // namespace

size_t dtype_size(DType t) {
  return kInfo[static_cast<size_t>(t)].size;
}
std::string_view dtype_name(DType t) {
  return kInfo[static_cast<size_t>(t)].name;
}
bool is_float(DType t) {
  return kInfo[static_cast<size_t>(t)].is_float;
}
bool is_fp8(DType t) {
  return t == DType::fp8e4m3 || t == DType::fp8e5m2;
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == s) return static_cast<DType>(i);
  return std::nullopt;
}

// Conversions below: see dtype.h for the rounding and overflow rules.
// Widening is exact and keeps NaN payloads (a signalling NaN stays signalling);
// narrowing keeps the top payload bits and sets the quiet bit, so NaN never
// becomes inf and a quiet NaN round-trips bit-exactly.

namespace {

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// A binary float format narrower than fp32: E exponent bits, M mantissa bits.
// `ieee`: the all-ones exponent encodes inf/NaN; otherwise (e4m3fn) only the
// all-ones pattern is NaN and overflow saturates to the largest finite value.
template <int E, int M, bool ieee>
struct Narrow {
  static constexpr int kBias = (1 << (E - 1)) - 1;
  static constexpr uint32_t kSign = 1u << (E + M);
  static constexpr uint32_t kMantMask = (1u << M) - 1;
  static constexpr uint32_t kExpOnes = ((1u << E) - 1) << M;
  static constexpr uint32_t kInf = kExpOnes;  // ieee only
  static constexpr uint32_t kNaN = ieee ? kExpOnes | (1u << (M - 1)) : kExpOnes | kMantMask;
  static constexpr uint32_t kMaxFinite = ieee ? kExpOnes - 1 : (kExpOnes | kMantMask) - 1;

  // rnd: null rounds to nearest even; else 64 random bits, and the magnitude rounds
  // up with probability (dropped bits) / 2^shift (stochastic rounding).
  static uint32_t from_fp32(float f, const uint64_t* rnd = nullptr) {
    const uint32_t u = bits_of(f);
    const uint32_t sign = (u >> 31) ? kSign : 0;
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) {  // NaN: quiet, keep the top payload bits
      if constexpr (ieee) return sign | kNaN | ((a & 0x7FFFFFu) >> (23 - M));
      return sign | kNaN;
    }
    if (a == 0x7F800000u) return sign | (ieee ? kInf : kMaxFinite);
    const int e32 = static_cast<int>(a >> 23);
    // fp32 subnormals are below half the smallest subnormal of every target.
    if (e32 == 0) return sign;
    const int te = e32 - 127 + kBias;  // biased target exponent
    const uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
    // Normal results keep M mantissa bits; subnormal ones lose 1-te more.
    const int shift = (23 - M) + (te >= 1 ? 0 : 1 - te);
    uint32_t r = 0;
    if (rnd) {
      if (shift >= 64) return sign;
      r = shift >= 32 ? 0 : sig >> shift;
      const uint64_t rem = uint64_t{sig} & ((uint64_t{1} << shift) - 1);
      if ((*rnd >> (64 - shift)) < rem) ++r;
    } else {
      if (shift > 25) return sign;  // < half the smallest subnormal
      r = sig >> shift;
      const uint32_t rem = sig & ((1u << shift) - 1);
      const uint32_t half = 1u << (shift - 1);
      if (rem > half || (rem == half && (r & 1))) ++r;
    }
    // r carries the implicit bit at position M; adding it to the exponent field
    // lets a round-up carry into the exponent (subnormal -> normal, or -> inf).
    uint32_t out = te >= 1 ? (static_cast<uint32_t>(te - 1) << M) + r : r;
    if (out > kMaxFinite) out = ieee ? kInf : kMaxFinite;
    return sign | out;
  }

  static float to_fp32(uint32_t b) {
    const uint32_t sign = (b & kSign) ? 0x80000000u : 0;
    const uint32_t e = (b >> M) & ((1u << E) - 1);
    uint32_t m = b & kMantMask;
    if (ieee && e == (1u << E) - 1) return float_of(sign | 0x7F800000u | (m << (23 - M)));
    if (!ieee && (b & ~kSign) == (kExpOnes | kMantMask)) return float_of(sign | 0x7FC00000u);
    if (e == 0) {
      if (m == 0) return float_of(sign);
      // Subnormal: normalise so the leading one becomes the implicit bit.
      int ue = 1 - kBias;
      while (!(m & (1u << M))) m <<= 1, --ue;
      return float_of(sign | (static_cast<uint32_t>(ue + 127) << 23) |
                      ((m & kMantMask) << (23 - M)));
    }
    return float_of(sign | ((e - kBias + 127) << 23) | (m << (23 - M)));
  }
};

using Half = Narrow<5, 10, true>;
using E4M3 = Narrow<4, 3, false>;
using E5M2 = Narrow<5, 2, true>;

// fp8 has 256 codes: widen through a table built once.
template <class Fmt>
const std::array<float, 256>& fp8_table() {
  static const std::array<float, 256> t = [] {
    std::array<float, 256> a{};
    for (uint32_t i = 0; i < 256; ++i) a[i] = Fmt::to_fp32(i);
    return a;
  }();
  return t;
}

inline uint16_t bf16_from(float f) {
  uint32_t u = bits_of(f);
  const uint16_t nan = static_cast<uint16_t>((u >> 16) | 0x40u);
  // Round to nearest even: add 0x7FFF plus the lowest kept bit, then truncate.
  u += 0x7FFFu + ((u >> 16) & 1u);
  const uint16_t rounded = static_cast<uint16_t>(u >> 16);
  return (bits_of(f) & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded;
}
// Stochastic: the 16 dropped bits plus 16 random ones carry into the kept bits with
// probability (dropped bits) / 2^16; an overflow carries into the exponent (-> inf).
inline uint16_t bf16_from_stochastic(float f, uint64_t rnd) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  if ((u & 0x7FFFFFFFu) == 0x7F800000u) return static_cast<uint16_t>(u >> 16);
  return static_cast<uint16_t>((u + static_cast<uint32_t>(rnd >> 48)) >> 16);
}
inline float bf16_widen(uint16_t h) {
  return float_of(static_cast<uint32_t>(h) << 16);
}

// fp16 widening, branch-free so bulk loops vectorise: rebias the shifted bits;
// inf/NaN get the all-ones exponent (payload kept); subnormals m*2^-24 come out
// exactly as 2^-14*(1 + m/1024) - 2^-14.
inline float half_widen(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = static_cast<uint32_t>(h & 0x7FFFu) << 13;  // exp+mant at fp32 position
  const uint32_t exp = em & 0x0F800000u;
  const uint32_t normal = em + (112u << 23);  // rebias 15 -> 127
  const uint32_t infnan = em | 0x7F800000u;
  const uint32_t sub = bits_of(float_of(em + (113u << 23)) - float_of(113u << 23));
  // Masks rather than ?: so GCC if-converts the loop.
  const uint32_t is_special = 0u - static_cast<uint32_t>(exp == 0x0F800000u);
  const uint32_t is_sub = 0u - static_cast<uint32_t>(exp == 0);
  const uint32_t out = (normal & ~(is_special | is_sub)) | (infnan & is_special) | (sub & is_sub);
  return float_of(out | sign);
}

inline int32_t int32_from(float f) {
  if (std::isnan(f)) return 0;
  if (f >= 2147483648.0f) return INT32_MAX;
  if (f <= -2147483648.0f) return INT32_MIN;
  return static_cast<int32_t>(std::nearbyint(f));
}
inline uint8_t uint8_from(float f) {
  if (!(f > 0.0f)) return 0;  // also NaN
  if (f >= 255.0f) return 255;
  return static_cast<uint8_t>(std::nearbyint(f));
}

template <class T>
inline T load(const void* p, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
inline void store(void* p, size_t i, T v) {
  std::memcpy(static_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

uint16_t fp32_to_bf16(float f) {
  return bf16_from(f);
}
float bf16_to_fp32(uint16_t h) {
  return bf16_widen(h);
}
uint16_t fp32_to_fp16(float f) {
  return static_cast<uint16_t>(Half::from_fp32(f));
}
float fp16_to_fp32(uint16_t h) {
  return half_widen(h);
}
uint8_t fp32_to_fp8e4m3(float f) {
  return static_cast<uint8_t>(E4M3::from_fp32(f));
}
float fp8e4m3_to_fp32(uint8_t b) {
  return fp8_table<E4M3>()[b];
}
uint8_t fp32_to_fp8e5m2(float f) {
  return static_cast<uint8_t>(E5M2::from_fp32(f));
}
float fp8e5m2_to_fp32(uint8_t b) {
  return fp8_table<E5M2>()[b];
}

float round_to(DType t, float f) {
  switch (t) {
    case DType::fp32:
      return f;
    case DType::bf16:
      return bf16_widen(bf16_from(f));
    case DType::fp16:
      return half_widen(fp32_to_fp16(f));
    case DType::fp8e4m3:
      return fp8e4m3_to_fp32(fp32_to_fp8e4m3(f));
    case DType::fp8e5m2:
      return fp8e5m2_to_fp32(fp32_to_fp8e5m2(f));
    case DType::int32:
      return static_cast<float>(int32_from(f));
    case DType::uint8:
      return static_cast<float>(uint8_from(f));
  }
  return f;
}

void to_fp32(DType t, const void* src, float* dst, size_t n) {
  switch (t) {
    case DType::fp32:
      if (n) std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::bf16: {
      // Blocks of a fixed 16 through local arrays: GCC's -O2 (cheap vectorisation
      // only) vectorises them. Widening is exact: the bits shifted into place.
      const auto* s = static_cast<const uint8_t*>(src);
      size_t i = 0;
      for (; i + 16 <= n; i += 16) {
        uint16_t h[16];
        uint32_t w[16];
        std::memcpy(h, s + 2 * i, sizeof h);
        for (size_t k = 0; k < 16; ++k) w[k] = static_cast<uint32_t>(h[k]) << 16;
        std::memcpy(dst + i, w, sizeof w);
      }
      for (; i < n; ++i) dst[i] = bf16_widen(load<uint16_t>(src, i));
      return;
    }
    case DType::fp16:
      for (size_t i = 0; i < n; ++i) dst[i] = half_widen(load<uint16_t>(src, i));
      return;
    case DType::fp8e4m3: {
      const auto& tab = fp8_table<E4M3>();
      for (size_t i = 0; i < n; ++i) dst[i] = tab[load<uint8_t>(src, i)];
      return;
    }
    case DType::fp8e5m2: {
      const auto& tab = fp8_table<E5M2>();
      for (size_t i = 0; i < n; ++i) dst[i] = tab[load<uint8_t>(src, i)];
      return;
    }
    case DType::int32:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<int32_t>(src, i));
      return;
    case DType::uint8:
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(load<uint8_t>(src, i));
      return;
  }
}

void from_fp32(DType t, const float* src, void* dst, size_t n) {
  switch (t) {
    case DType::fp32:
      if (n) std::memcpy(dst, src, n * sizeof(float));
      return;
    case DType::bf16: {
      // As to_fp32: blocks of a fixed 16 through local arrays, which GCC's -O2
      // vectorises (a model's weights, hundreds of millions, are rounded here); the
      // same bits as bf16_from, which the tail uses.
      auto* d = static_cast<uint8_t*>(dst);
      size_t i = 0;
      for (; i + 16 <= n; i += 16) {
        uint16_t h[16];
        for (size_t k = 0; k < 16; ++k) h[k] = bf16_from(src[i + k]);
        std::memcpy(d + 2 * i, h, sizeof h);
      }
      for (; i < n; ++i) store<uint16_t>(dst, i, bf16_from(src[i]));
      return;
    }
    case DType::fp16:
      for (size_t i = 0; i < n; ++i) store<uint16_t>(dst, i, fp32_to_fp16(src[i]));
      return;
    case DType::fp8e4m3:
      for (size_t i = 0; i < n; ++i) store<uint8_t>(dst, i, fp32_to_fp8e4m3(src[i]));
      return;
    case DType::fp8e5m2:
      for (size_t i = 0; i < n; ++i) store<uint8_t>(dst, i, fp32_to_fp8e5m2(src[i]));
      return;
    case DType::int32:
      for (size_t i = 0; i < n; ++i) store<int32_t>(dst, i, int32_from(src[i]));
      return;
    case DType::uint8:
      for (size_t i = 0; i < n; ++i) store<uint8_t>(dst, i, uint8_from(src[i]));
      return;
  }
}

uint64_t stochastic_bits(uint64_t stream, uint64_t i) {
  // splitmix64's finaliser over a Weyl sequence: a counter-based generator, so the
  // bits of element i depend on (stream, i) only, not on the order of the calls.
  uint64_t z = stream + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void from_fp32_stochastic(DType t, const float* src, void* dst, size_t n, uint64_t stream) {
  switch (t) {
    case DType::bf16:
      for (size_t i = 0; i < n; ++i)
        store<uint16_t>(dst, i, bf16_from_stochastic(src[i], stochastic_bits(stream, i)));
      return;
    case DType::fp16:
      for (size_t i = 0; i < n; ++i) {
        const uint64_t r = stochastic_bits(stream, i);
        store<uint16_t>(dst, i, static_cast<uint16_t>(Half::from_fp32(src[i], &r)));
      }
      return;
    case DType::fp8e4m3:
      for (size_t i = 0; i < n; ++i) {
        const uint64_t r = stochastic_bits(stream, i);
        store<uint8_t>(dst, i, static_cast<uint8_t>(E4M3::from_fp32(src[i], &r)));
      }
      return;
    case DType::fp8e5m2:
      for (size_t i = 0; i < n; ++i) {
        const uint64_t r = stochastic_bits(stream, i);
        store<uint8_t>(dst, i, static_cast<uint8_t>(E5M2::from_fp32(src[i], &r)));
      }
      return;
    default:
      from_fp32(t, src, dst, n);
      return;
  }
}

}  // namespace trnsim::isa
