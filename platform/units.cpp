#include "platform/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <vector>

namespace trnsim::platform {
namespace {

// A unit: value = number * 10^p10 * 2^p2 base units.
struct Unit {
  std::string_view name;
  int p10;
  int p2;
};

constexpr Unit kFrequencyUnits[] = {
    {"Hz", 0, 0}, {"kHz", 3, 0}, {"MHz", 6, 0}, {"GHz", 9, 0}, {"THz", 12, 0}};
constexpr Unit kBandwidthUnits[] = {{"B/s", 0, 0},    {"kB/s", 3, 0},   {"KB/s", 3, 0},
                                    {"MB/s", 6, 0},   {"GB/s", 9, 0},   {"TB/s", 12, 0},
                                    {"KiB/s", 0, 10}, {"MiB/s", 0, 20}, {"GiB/s", 0, 30},
                                    {"TiB/s", 0, 40}, {"B/ns", 9, 0}};
constexpr Unit kSizeUnits[] = {{"B", 0, 0},    {"kB", 3, 0},  {"KB", 3, 0},   {"MB", 6, 0},
                               {"GB", 9, 0},   {"TB", 12, 0}, {"KiB", 0, 10}, {"MiB", 0, 20},
                               {"GiB", 0, 30}, {"TiB", 0, 40}};
constexpr Unit kTimeUnits[] = {{"s", 0, 0},          {"ms", -3, 0}, {"us", -6, 0},
                               {"\xC2\xB5s", -6, 0}, {"ns", -9, 0}, {"ps", -12, 0}};

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// "a frequency in Hz, kHz, MHz, GHz, THz (e.g. 2.8GHz)"
std::string expectation(ValueType t) {
  switch (t) {
    case ValueType::count:
      return "a plain integer (e.g. 128)";
    case ValueType::cycles:
      return "a plain integer number of cycles (e.g. 64)";
    case ValueType::boolean:
      return "true or false";
    case ValueType::ratio:
      return "a ratio: a plain number (0.5) or a percentage (50%)";
    default:
      return "a " + std::string(value_type_name(t)) + " in " + std::string(accepted_units(t)) +
             " (e.g. " + std::string(example_value(t)) + ")";
  }
}

// A decimal number split from its unit: value = digits * 10^exp10.
struct Number {
  std::string digits;  // integer and fraction digits, no leading zeros ("0" for zero)
  int exp10 = 0;
  bool has_point = false;
  bool has_exponent = false;
  std::string_view unit;
};

Number split_number(std::string_view text, ValueType t) {
  const std::string_view s = trim(text);
  if (s.empty()) throw UnitError("empty value: expected " + expectation(t));
  size_t i = 0;
  if (s[0] == '-') throw UnitError("negative value " + quoted(s) + ": expected " + expectation(t));
  if (s[0] == '+') ++i;
  Number n;
  size_t ndigits = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++ndigits)
    n.digits += s[i];
  if (i < s.size() && s[i] == '.') {
    n.has_point = true;
    for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++ndigits) {
      n.digits += s[i];
      --n.exp10;
    }
  }
  if (ndigits == 0) throw UnitError(quoted(s) + " is not a number: expected " + expectation(t));
  // An exponent only when 'e' is followed by digits (no unit starts with 'e').
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    bool neg = false;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) neg = s[j++] == '-';
    if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
      int e = 0;
      for (; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j)
        if (e < 100000) e = e * 10 + (s[j] - '0');
      n.exp10 += neg ? -e : e;
      n.has_exponent = true;
      i = j;
    }
  }
  n.unit = trim(s.substr(i));
  // Normalise: no leading zeros, no trailing zeros (folded into the exponent).
  const size_t first = n.digits.find_first_not_of('0');
  if (first == std::string::npos) {
    n.digits = "0";
    n.exp10 = 0;
  } else {
    n.digits.erase(0, first);
    while (n.digits.size() > 1 && n.digits.back() == '0') {
      n.digits.pop_back();
      ++n.exp10;
    }
  }
  return n;
}

const Unit& find_unit(const Number& n, std::span<const Unit> units, std::string_view text,
                      ValueType t) {
  if (n.unit.empty())
    throw UnitError("missing unit in " + quoted(trim(text)) + ": expected " + expectation(t));
  for (const Unit& u : units)
    if (u.name == n.unit) return u;
  throw UnitError("unknown unit " + quoted(n.unit) + " in " + quoted(trim(text)) + ": expected " +
                  expectation(t));
}

double to_double(const Number& n, int p10, int p2, std::string_view text, ValueType t) {
  const std::string s = n.digits + "e" + std::to_string(n.exp10 + p10);
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  v = std::ldexp(v, p2);
  if (r.ec != std::errc() || !std::isfinite(v))
    throw UnitError("value " + quoted(trim(text)) + " is out of range for " +
                    std::string(value_type_name(t)));
  return v;
}

// Exact: digits * 10^(exp10+p10) * 2^p2 must be a whole number that fits 64 bits.
uint64_t to_integer(const Number& n, int p10, int p2, std::string_view text,
                    std::string_view what) {
  using u128 = unsigned __int128;
  const auto too_large = [&] { return UnitError("value " + quoted(trim(text)) + " is too large"); };
  if (n.digits.size() > 20) throw too_large();
  u128 m = 0;
  for (char c : n.digits) m = m * 10 + static_cast<unsigned>(c - '0');
  if (m == 0) return 0;
  m <<= p2;  // p2 <= 40 and m < 10^20: fits
  const u128 max64 = std::numeric_limits<uint64_t>::max();
  int e = n.exp10 + p10;
  for (; e > 0; --e) {
    m *= 10;
    if (m > max64) throw too_large();
  }
  for (; e < 0; ++e) {
    if (m % 10 != 0)
      throw UnitError("value " + quoted(trim(text)) + " is not a whole number of " +
                      std::string(what));
    m /= 10;
  }
  if (m > max64) throw too_large();
  return static_cast<uint64_t>(m);
}

std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

// Display units, largest first: pick the first one the value reaches.
struct DisplayUnit {
  std::string_view name;
  double scale;
};

std::string format_scaled(double x, std::span<const DisplayUnit> units) {
  if (x == 0 || !std::isfinite(x)) return number(x) + std::string(units.back().name);
  for (const DisplayUnit& u : units)
    if (x >= u.scale) return number(x / u.scale) + std::string(u.name);
  return number(x / units.back().scale) + std::string(units.back().name);
}

}  // namespace

std::vector<std::pair<std::string, double>> unit_table(ValueType t) {
  std::span<const Unit> units;
  switch (t) {
    case ValueType::frequency:
      units = kFrequencyUnits;
      break;
    case ValueType::bandwidth:
      units = kBandwidthUnits;
      break;
    case ValueType::size:
      units = kSizeUnits;
      break;
    case ValueType::time:
      units = kTimeUnits;
      break;
    default:
      return {};
  }
  std::vector<std::pair<std::string, double>> out;
  for (const Unit& u : units)
    out.emplace_back(std::string(u.name), std::pow(10.0, u.p10) * std::ldexp(1.0, u.p2));
  return out;
}

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::frequency:
      return "frequency";
    case ValueType::bandwidth:
      return "bandwidth";
    case ValueType::size:
      return "size";
    case ValueType::time:
      return "time";
    case ValueType::count:
      return "count";
    case ValueType::cycles:
      return "cycles";
    case ValueType::boolean:
      return "bool";
    case ValueType::ratio:
      return "ratio";
  }
  return "?";
}

std::string_view accepted_units(ValueType t) {
  switch (t) {
    case ValueType::frequency:
      return "Hz, kHz, MHz, GHz, THz";
    case ValueType::bandwidth:
      return "B/s, kB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, B/ns";
    case ValueType::size:
      return "B, KiB, MiB, GiB, TiB (1024^n), kB, MB, GB, TB (1000^n)";
    case ValueType::time:
      return "s, ms, us, ns, ps";
    case ValueType::count:
      return "none (plain integer)";
    case ValueType::cycles:
      return "none (plain integer)";
    case ValueType::boolean:
      return "none (true/false)";
    case ValueType::ratio:
      return "% or none";
  }
  return "?";
}

std::string_view example_value(ValueType t) {
  switch (t) {
    case ValueType::frequency:
      return "2.8GHz";
    case ValueType::bandwidth:
      return "820GB/s";
    case ValueType::size:
      return "24MiB";
    case ValueType::time:
      return "600ns";
    case ValueType::count:
      return "128";
    case ValueType::cycles:
      return "64";
    case ValueType::boolean:
      return "true";
    case ValueType::ratio:
      return "50%";
  }
  return "?";
}

double parse_frequency(std::string_view text) {
  const Number n = split_number(text, ValueType::frequency);
  const Unit& u = find_unit(n, kFrequencyUnits, text, ValueType::frequency);
  return to_double(n, u.p10, u.p2, text, ValueType::frequency);
}

double parse_bandwidth(std::string_view text) {
  const Number n = split_number(text, ValueType::bandwidth);
  const Unit& u = find_unit(n, kBandwidthUnits, text, ValueType::bandwidth);
  return to_double(n, u.p10, u.p2, text, ValueType::bandwidth);
}

uint64_t parse_size(std::string_view text) {
  const Number n = split_number(text, ValueType::size);
  const Unit& u = find_unit(n, kSizeUnits, text, ValueType::size);
  return to_integer(n, u.p10, u.p2, text, "bytes");
}

double parse_time(std::string_view text) {
  const Number n = split_number(text, ValueType::time);
  const Unit& u = find_unit(n, kTimeUnits, text, ValueType::time);
  return to_double(n, u.p10, u.p2, text, ValueType::time);
}

uint64_t parse_count(std::string_view text) {
  const Number n = split_number(text, ValueType::count);
  if (!n.unit.empty() || n.has_point || n.has_exponent)
    throw UnitError("expected a plain integer (e.g. 128), got " + quoted(trim(text)));
  return to_integer(n, 0, 0, text, "units");
}

bool parse_bool(std::string_view text) {
  const std::string_view s = trim(text);
  std::string lower(s);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true") return true;
  if (lower == "false") return false;
  throw UnitError("expected true or false, got " + quoted(s));
}

double parse_ratio(std::string_view text) {
  const Number n = split_number(text, ValueType::ratio);
  if (n.unit.empty()) return to_double(n, 0, 0, text, ValueType::ratio);
  if (n.unit == "%") return to_double(n, -2, 0, text, ValueType::ratio);
  throw UnitError("unknown unit " + quoted(n.unit) + " in " + quoted(trim(text)) + ": expected " +
                  expectation(ValueType::ratio));
}

std::string format_frequency(double hz) {
  static constexpr DisplayUnit units[] = {
      {"THz", 1e12}, {"GHz", 1e9}, {"MHz", 1e6}, {"kHz", 1e3}, {"Hz", 1}};
  return format_scaled(hz, units);
}

std::string format_bandwidth(double bytes_ps) {
  static constexpr DisplayUnit units[] = {
      {"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"kB/s", 1e3}, {"B/s", 1}};
  return format_scaled(bytes_ps, units);
}

std::string format_time(double seconds) {
  static constexpr DisplayUnit units[] = {
      {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12}};
  if (seconds == 0) return "0ns";
  return format_scaled(seconds, units);
}

std::string format_size(uint64_t bytes) {
  if (bytes == 0) return "0B";
  static constexpr std::pair<std::string_view, uint64_t> binary[] = {
      {"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20}, {"KiB", 1ull << 10}};
  static constexpr std::pair<std::string_view, uint64_t> decimal[] = {
      {"TB", 1000000000000ull}, {"GB", 1000000000ull}, {"MB", 1000000ull}, {"kB", 1000ull}};
  for (const auto& [name, unit] : binary)
    if (bytes % unit == 0) return std::to_string(bytes / unit) + std::string(name);
  for (const auto& [name, unit] : decimal)
    if (bytes % unit == 0) return std::to_string(bytes / unit) + std::string(name);
  // "1.5KiB": a binary unit with at most three exact decimals.
  for (const auto& [name, unit] : binary)
    if (bytes >= unit && (static_cast<unsigned __int128>(bytes) * 1000) % unit == 0)
      return number(static_cast<double>(bytes) / static_cast<double>(unit)) + std::string(name);
  return std::to_string(bytes) + "B";
}

std::string format_ratio(double ratio) {
  return number(ratio * 100) + "%";
}

std::string format_bool(bool b) {
  return b ? "true" : "false";
}

}  // namespace trnsim::platform
