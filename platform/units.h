// Quantities with units as written in platform configs ("2.8GHz", "820GB/s",
// "24MiB", "1.3us", "64", "true", "50%"): parsing to SI base values and formatting
// back. Parsers throw UnitError with a message that says which units are expected;
// the config loader adds file, line and key.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/common/params.h"

namespace trnsim::platform {

// The value types of config keys (models/common/params.h).
using ValueType = models::ValueType;

std::string_view value_type_name(ValueType t);  // "frequency", ...
// The units accepted for a type, for messages and docs ("Hz, kHz, MHz, GHz, THz").
std::string_view accepted_units(ValueType t);
// The unit suffixes of a type and their multipliers into the base unit ("GHz", 1e9);
// empty for types without units. The one table: `trnsim info --keys --json` exports
// it for the sweep.
std::vector<std::pair<std::string, double>> unit_table(ValueType t);
// An example of a well-formed value ("2.8GHz").
std::string_view example_value(ValueType t);

class UnitError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Leading/trailing blanks are ignored, and blanks between number and unit allowed.
// Negative values are rejected (no config quantity can be negative).
double parse_frequency(std::string_view text);  // Hz, kHz, MHz, GHz, THz -> Hz
// B/s with SI (kB/s or KB/s, MB/s, GB/s, TB/s) or binary (KiB/s ...) prefixes, and
// B/ns (the unit docs/hardware.md quotes DMA rates in) -> bytes per second.
double parse_bandwidth(std::string_view text);
// B, KiB, MiB, GiB, TiB (1024^n) and kB/KB, MB, GB, TB (1000^n) -> bytes; exact,
// so "1.5KiB" is 1536 but "0.5B" is an error.
uint64_t parse_size(std::string_view text);
double parse_time(std::string_view text);     // s, ms, us (or µs), ns, ps -> seconds
uint64_t parse_count(std::string_view text);  // plain decimal integer, no unit
bool parse_bool(std::string_view text);       // true / false
double parse_ratio(std::string_view text);    // "50%" or "0.5" -> 0.5

// Formatting picks the largest prefix that keeps the number >= 1 (sizes: the
// largest binary unit that divides exactly), so values read back unchanged.
std::string format_frequency(double hz);        // 2.4e9 -> "2.4GHz"
std::string format_bandwidth(double bytes_ps);  // 2.9e12 -> "2.9TB/s"
std::string format_size(uint64_t bytes);        // 24 << 20 -> "24MiB"
std::string format_time(double seconds);        // 1.3e-6 -> "1.3us"
std::string format_ratio(double ratio);         // 0.5 -> "50%"
std::string format_bool(bool b);                // "true" / "false"

}  // namespace trnsim::platform
