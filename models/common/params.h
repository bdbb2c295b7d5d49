// Parameter rows: what each hardware parameter is, declared once, next to the
// params struct of the block that owns it (gem5's Param, VCML's property). A
// struct's fields come from its row list (an X-macro), so the field, its default,
// unit, valid range, description, source and readers cannot drift apart:
//
//   #define TRNSIM_DMA_PARAMS(X)
//     X(engines, uint32_t, 16, "engines", count, "engines", range(1, 1024), both,
//       "DMA engines per core", "docs/hardware.md: NeuronCore generations, DMA engines")
//   struct dma_params { TRNSIM_DMA_PARAMS(TRNSIM_PARAM_FIELD) };
//
// Row: X(field, C++ type, default, key, value type, unit, check, readers,
// description, source). The key is relative to the struct's config section
// (platform/config_schema.cpp maps sections to structs); the unit is the base unit
// of the value type, or what a count counts. Defaults are the trn2 (NC-v3) figures,
// so the trn2 preset is the defaults themselves. Readers say whose output depends
// on the value: the simulator's timing, the compiler's program, or both (the sweep's
// compile cache keys on the compiler-read ones).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace trnsim::models {

// The value types of parameters. Base units: Hz, bytes/s, bytes, seconds; count
// and cycles are plain integers; ratio is a fraction (0.5 == 50%).
enum class ValueType : uint8_t { frequency, bandwidth, size, time, count, cycles, boolean, ratio };

// Whose output depends on a parameter.
enum class Readers : uint8_t { sim = 1, compiler = 2, both = 3 };

// Valid range of a value. Bounds are inclusive unless `min_exclusive` ("> 0").
struct Check {
  double min = 0;
  bool min_exclusive = false;
  double max = std::numeric_limits<double>::infinity();
  uint64_t multiple_of = 0;  // 0: no constraint
  bool power_of_two = false;

  bool passes(double v) const {
    if (min_exclusive ? !(v > min) : !(v >= min)) return false;
    if (v > max) return false;
    if (multiple_of != 0 && std::fmod(v, static_cast<double>(multiple_of)) != 0) return false;
    if (power_of_two) {
      if (v != std::floor(v) || v < 1) return false;
      const auto u = static_cast<uint64_t>(v);
      if ((u & (u - 1)) != 0) return false;
    }
    return true;
  }
};

// The ranges rows use. They keep every value the models turn into simulated time
// (a clock period, a per-byte time, a fixed cost) representable, and every
// structure the models allocate within what a host holds.
namespace checks {
inline constexpr Check any() {
  return Check{};
}
inline constexpr Check at_least(double n) {
  return Check{.min = n};
}
inline constexpr Check positive() {
  return Check{.min = 0, .min_exclusive = true};
}
inline constexpr Check positive_at_most(double hi) {
  return Check{.min = 0, .min_exclusive = true, .max = hi};
}
inline constexpr Check range(double lo, double hi, uint64_t multiple_of = 0) {
  return Check{.min = lo, .max = hi, .multiple_of = multiple_of};
}
// Clocks: a period of at most 1 ms and at least the 1 ps time resolution.
inline constexpr Check clock() {
  return Check{.min = 1e3, .max = 1e12};
}
// Bandwidths: at most 1 ms per byte.
inline constexpr Check bandwidth() {
  return Check{.min = 1e3};
}
// Fixed costs and latencies.
inline constexpr Check duration() {
  return Check{.max = 1};
}
// Cycle counts of a static cost: with clock(), at most 1000 s each.
inline constexpr Check cycles(double min = 0) {
  return Check{.min = min, .max = 1e6};
}
// Slowdowns and speedups (x).
inline constexpr Check factor() {
  return Check{.min = 1, .max = 1024};
}
// A non-empty partition range that respects the 32-partition quadrants of the
// partition-start rule.
inline constexpr Check partitions() {
  return range(32, 128, 32);
}
// A partition of SBUF or PSUM: at most 4 MiB (512 MiB per core; the real ones are
// 192 KiB and 16 KiB); a core's memories are allocated when a program first uses it.
inline constexpr Check partition_size() {
  return Check{.min = 0, .min_exclusive = true, .max = 4 << 20, .multiple_of = 4};
}
inline constexpr Check power_of_two(double lo, double hi) {
  return Check{.min = lo, .max = hi, .power_of_two = true};
}
}  // namespace checks

}  // namespace trnsim::models

// Expands a row into the struct field with its default.
#define TRNSIM_PARAM_FIELD(field, type, dflt, ...) type field = dflt;
// Expands a row into an assignment of its default (rows of a base struct's fields,
// which a derived struct's constructor sets).
#define TRNSIM_PARAM_DEFAULT(field, type, dflt, ...) field = dflt;
