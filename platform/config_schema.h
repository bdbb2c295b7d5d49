// The config schema: one row per dotted key, built from the parameter rows the
// params structs are declared with (models/common/params.h): type, unit, default,
// range, description, source, readers, and the field it fills. Used by the loader
// (config.cpp), describe()/schema_table()/schema_json() and the tests.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "platform/config.h"
#include "platform/units.h"

namespace trnsim::platform::schema {

using Check = models::Check;
using Readers = models::Readers;

// "> 0", "32..128, multiple of 32", "power of two"; bounds in the unit of `t`
// ("1kHz..1THz").
std::string check_text(const Check& c, ValueType t = ValueType::count);
std::string_view readers_name(Readers r);  // "sim", "compiler", "sim+compiler"

// Where a key's value lives: a plain function of the config and the core type (core
// keys: 0 is `core`, i is other_core_types[i - 1]; ignored by chip-level keys).
template <class T>
using FieldRef = T& (*)(platform_config&, size_t core_type);
using Field =
    std::variant<FieldRef<double>, FieldRef<uint64_t>, FieldRef<uint32_t>, FieldRef<bool>>;

struct KeyDef {
  std::string key;  // dotted, e.g. "core.tensor.clock"
  ValueType type;
  std::string unit;  // base unit (Hz, B/s, B, s, cycles) or what a count counts
  std::string description;
  std::string source;  // where the default comes from (docs/hardware.md, or why chosen)
  Check check;
  Readers readers;
  bool per_core;  // under `core.`, and each core type has its own value
  Field field;

  bool read_by_compiler() const {
    return (static_cast<uint8_t>(readers) & static_cast<uint8_t>(Readers::compiler)) != 0;
  }
};

// All keys in file order (chip, host, hbm, core.*).
const std::vector<KeyDef>& keys();
const KeyDef* find_key(std::string_view key);
// True when `prefix` names a section ("core", "core.tensor"), not a key.
bool is_section(std::string_view prefix);

// Keys whose value is one word of a fixed list, and which a config may leave out
// (the first word is the default): the tensor engine's implementation selection.
// Per core type. describe() prints them when they differ from their default.
struct ChoiceKeyDef {
  std::string key;
  std::vector<std::string> choices;  // choices[0] is the default
  std::string description;
  Readers readers;
  uint32_t (*get)(const core_config&);  // index into choices
  void (*set)(core_config&, uint32_t);
  // A key of the whole platform (not per core type): these instead of get/set.
  uint32_t (*get_platform)(const platform_config&) = nullptr;
  void (*set_platform)(platform_config&, uint32_t) = nullptr;
};
const std::vector<ChoiceKeyDef>& choice_keys();
const ChoiceKeyDef* find_choice_key(std::string_view key);
// The index of `text` in k.choices; throws std::range_error listing the choices.
uint32_t parse_choice(const ChoiceKeyDef& k, std::string_view text);

// The one free-form section: the RTL block of the tensor engine (a YAML map parsed
// by cosim::parse_rtl_section, docs/rtl-cosim.md). Its keys may also be --set as
// core.tensor.rtl.KEY=VALUE (a YAML value: `[a.sv, b.sv]` for a list).
inline constexpr std::string_view kTensorRtlSection = "core.tensor.rtl";

// Other core types: `core_types.NAME.<key under core.>`; `chip.layout` says which
// core has which type.
inline constexpr std::string_view kCoreTypesSection = "core_types";
inline constexpr std::string_view kLayoutKey = "chip.layout";

// Parse `text` as the key's type, check it and store it into `cfg` (core type
// `core_type` for core keys). Throws UnitError (bad syntax or unit) or
// std::range_error (fails the check); the message does not name the key.
void set_value(const KeyDef& k, std::string_view text, platform_config& cfg, size_t core_type = 0);
// The key's current value in `cfg`, formatted with its unit.
std::string get_value(const KeyDef& k, const platform_config& cfg, size_t core_type = 0);
// The key's default (the value its row declares), formatted with its unit.
std::string default_value(const KeyDef& k);
// A value of the key's type formatted with its unit ("2.4GHz", "24MiB", "50%").
std::string format_value(ValueType t, double v);

// Checks that involve several keys (PSUM banks divide the partition, the matmul
// limits fit the memories, ...). Each error names the key it is reported against
// (core keys as `core.KEY` or `core_types.NAME.KEY`).
struct CrossError {
  std::string key;
  std::string message;
};
std::vector<CrossError> cross_check(const platform_config& cfg);

}  // namespace trnsim::platform::schema
