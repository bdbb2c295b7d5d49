// The config schema: one row per dotted key with its type, unit, description,
// value check and the platform_config field it fills. Used by the loader
// (config.cpp), describe()/schema_table() and the tests.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "platform/config.h"
#include "platform/units.h"

namespace trnsim::platform::schema {

// Per-value check. Bounds are inclusive unless `min_exclusive` (used for "> 0").
struct Check {
  double min = 0;
  bool min_exclusive = false;
  double max = std::numeric_limits<double>::infinity();
  uint64_t multiple_of = 0;  // 0: no constraint
  bool power_of_two = false;

  bool passes(double v) const;
  // "> 0", "32..128, multiple of 32", "power of two"; bounds in the unit of `t`
  // ("1kHz..1THz").
  std::string text(ValueType t = ValueType::count) const;
};

// Where a key's value lives; a plain function pointer per field.
template <class T>
using FieldRef = T& (*)(platform_config&);
using Field =
    std::variant<FieldRef<double>, FieldRef<uint64_t>, FieldRef<uint32_t>, FieldRef<bool>>;

struct KeyDef {
  std::string key;  // dotted, e.g. "core.tensor.clock"
  ValueType type;
  std::string unit;  // base unit (Hz, B/s, B, s, cycles) or what a count counts
  std::string description;
  Check check;
  Field field;
};

// All keys in file order (chip, hbm, core.*).
const std::vector<KeyDef>& keys();
const KeyDef* find_key(std::string_view key);
// True when `prefix` names a section ("core", "core.tensor"), not a key.
bool is_section(std::string_view prefix);

// Keys whose value is one word of a fixed list, and which a config may leave out
// (the first word is the default): the tensor engine's implementation selection.
// They are kept out of keys(), which lists the keys every preset must give; configs
// that do not swap an implementation do not mention them. describe() prints them
// when they differ from their default.
struct ChoiceKeyDef {
  std::string key;
  std::vector<std::string> choices;  // choices[0] is the default
  std::string description;
  uint32_t (*get)(const platform_config&);  // index into choices
  void (*set)(platform_config&, uint32_t);
};
const std::vector<ChoiceKeyDef>& choice_keys();
const ChoiceKeyDef* find_choice_key(std::string_view key);
// The index of `text` in k.choices; throws std::range_error listing the choices.
uint32_t parse_choice(const ChoiceKeyDef& k, std::string_view text);

// The one free-form section: the RTL block of the tensor engine (a YAML map parsed
// by cosim::parse_rtl_section, docs/rtl-cosim.md). Its keys may also be --set as
// core.tensor.rtl.KEY=VALUE (a YAML value: `[a.sv, b.sv]` for a list).
inline constexpr std::string_view kTensorRtlSection = "core.tensor.rtl";

// Parse `text` as the key's type, check it and store it into `cfg`. Throws
// UnitError (bad syntax or unit) or std::range_error (fails the check); the
// message does not name the key.
void set_value(const KeyDef& k, std::string_view text, platform_config& cfg);
// The key's current value in `cfg`, formatted with its unit.
std::string get_value(const KeyDef& k, const platform_config& cfg);

// Checks that involve several keys (PSUM banks divide the partition, the matmul
// limits fit the memories, ...). Each error names the key it is reported against.
struct CrossError {
  std::string key;
  std::string message;
};
std::vector<CrossError> cross_check(const platform_config& cfg);

}  // namespace trnsim::platform::schema
