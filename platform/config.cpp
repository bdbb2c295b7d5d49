#include "platform/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "models/common/stats.h"
#include "models/cosim/rtl_config.h"
#include "models/cosim/rtl_registry.h"
#include "models/isa/file_io.h"
#include "platform/config_schema.h"

#ifndef TRNSIM_SOURCE_CONFIG_DIR
#define TRNSIM_SOURCE_CONFIG_DIR ""
#endif

namespace trnsim::platform {
namespace {

namespace fs = std::filesystem;

// Where a key's text came from: a file line, or a --set override.
struct Setting {
  std::string text;
  std::string origin;  // "FILE:LINE" or "--set"
  int line = 0;        // 1-based; 0 for overrides
  std::string error;   // set when the YAML value is not a single scalar
  int layer = 0;       // 0: the file given; 1, 2, ...: its base, the base's base

  // "FILE:LINE: KEY" or "--set KEY": the start of an error message about this key.
  std::string about(const std::string& key) const {
    return origin == "--set" ? origin + " " + key : origin + ": " + key;
  }
};

std::string where(const std::string& file, const YAML::Mark& m) {
  return m.is_null() || m.line < 0 ? file : file + ":" + std::to_string(m.line + 1);
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// " (did you mean core.tensor.clock?)" for a near miss, else "".
std::string suggestion(std::string_view unknown) {
  std::vector<std::string> names;
  for (const auto& k : schema::keys()) names.push_back(k.key);
  for (const auto& k : schema::choice_keys()) names.push_back(k.key);
  names.emplace_back(schema::kTensorRtlSection);
  std::vector<std::string> candidates;
  for (const auto& key : names) {
    candidates.push_back(key);
    // Sections too, so a misspelt section ("core.tensr") gets a hint.
    for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
      candidates.push_back(key.substr(0, dot));
  }
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    if (c == unknown) continue;
    const size_t d = edit_distance(unknown, c);
    if (d < best_d) best_d = d, best = c;
  }
  if (best_d <= std::max<size_t>(2, unknown.size() / 5)) return " (did you mean " + best + "?)";
  // A key written at the wrong level ("tensor.clock" for "core.tensor.clock").
  for (const auto& k : schema::keys())
    if (k.key.size() > unknown.size() && k.key.ends_with(unknown) &&
        k.key[k.key.size() - unknown.size() - 1] == '.')
      return " (did you mean " + k.key + "?)";
  return "";
}

// Without leading and trailing blanks.
std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t") + 1);
  return s;
}

// A path under `core_types.NAME.` as the `core.` path the schema knows, with NAME;
// {"", ""} for other paths, {"", NAME} for `core_types.NAME` itself.
struct CoreTypePath {
  std::string name;
  std::string schema_path;
};
std::optional<CoreTypePath> core_type_path(const std::string& path) {
  const std::string head = std::string(schema::kCoreTypesSection) + ".";
  if (!path.starts_with(head)) return std::nullopt;
  const std::string rest = path.substr(head.size());
  const size_t dot = rest.find('.');
  if (dot == std::string::npos) return CoreTypePath{rest, ""};
  return CoreTypePath{rest.substr(0, dot), "core." + rest.substr(dot + 1)};
}

std::string find_preset(const std::string& name);

// The layers of a preset: its own file, then its base, the base's base...
constexpr int kMaxBaseDepth = 16;

std::string first_key_in(const std::string& section) {
  for (const auto& k : schema::keys())
    if (k.key.starts_with(section + ".")) return k.key;
  return section;
}

// "frequency in Hz: Tensor Engine clock", "cycles, a plain integer: ..."
std::string type_hint(const schema::KeyDef& k) {
  std::string s = std::string(value_type_name(k.type));
  switch (k.type) {
    case ValueType::count:
    case ValueType::cycles:
      s += ", a plain integer";
      break;
    case ValueType::boolean:
      s += ", true or false";
      break;
    case ValueType::ratio:
      s += ", a fraction or percentage";
      break;
    default:
      s += " in " + k.unit;
      break;
  }
  return s + ": " + k.description;
}

class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  // `text` is the YAML of the file given; its base chain is read first.
  void read_yaml(const std::string& text) {
    const std::string given = file_;
    std::error_code ec;
    const std::string canon = fs::weakly_canonical(given, ec).string();
    chain_.insert(ec ? given : canon);
    read_root(text, given, 0);
    file_ = given;
    layer_ = 0;
  }

 private:
  void read_root(const std::string& text, const std::string& file, int layer) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(where(file_, e.mark) + ": YAML syntax error: " + e.msg);
    }
    if (!root.IsMap()) {
      const YAML::Mark m = root.IsNull() ? YAML::Mark() : root.Mark();
      throw ConfigError((m.is_null() || m.line < 0 ? file + ":1" : where(file, m)) +
                        ": expected a mapping of config keys (base:, chip:, hbm:, core:), got " +
                        (root.IsNull() ? "an empty document" : "a single value or list"));
    }
    // `base:` first, so that this file's keys replace the base's.
    if (const YAML::Node b = root["base"]) read_base(b, file, layer);
    file_ = file;
    layer_ = layer;
    walk(root, "");
  }

  // `base: NAME` (a preset), `base: PATH.yaml` (relative to this file) or
  // `base: defaults` (every key its row's default: the trn2 figures).
  void read_base(const YAML::Node& b, const std::string& file, int layer) {
    const std::string at = where(file, b.Mark());
    if (!b.IsScalar() || b.Scalar().empty())
      throw ConfigError(at + ": base: expected a preset name, a .yaml path or 'defaults'");
    const std::string name = b.Scalar();
    if (layer + 1 > kMaxBaseDepth)
      throw ConfigError(at + ": base: more than " + std::to_string(kMaxBaseDepth) +
                        " levels of base (a cycle?)");
    if (name == "defaults") {
      defaults_ = true;
      return;
    }
    std::string path;
    const bool is_path =
        name.find('/') != std::string::npos || name.ends_with(".yaml") || name.ends_with(".yml");
    try {
      path = is_path ? (fs::path(file).parent_path() / name).lexically_normal().string()
                     : find_preset(name);
    } catch (const ConfigError& e) {
      throw ConfigError(at + ": base: " + e.what());
    }
    std::error_code ec;
    const std::string canon = fs::weakly_canonical(path, ec).string();
    if (!chain_.insert(ec ? path : canon).second)
      throw ConfigError(at + ": base: '" + name + "' is already in this config's base chain (" +
                        path + ")");
    std::string text;
    // A base is a file: a device or pipe (/dev/zero) could be read forever.
    if (fs::exists(path, ec) && !fs::is_regular_file(path, ec))
      throw ConfigError(at + ": base: " + path + " is not a regular file");
    if (const std::string why = isa::read_file(path, text); !why.empty())
      throw ConfigError(at + ": base: cannot open " + path + ": " + why);
    read_root(text, path, layer + 1);
  }

 public:
  void apply_override(const std::string& ov) {
    const size_t eq = ov.find('=');
    if (eq == std::string::npos || eq == 0) {
      errors_.push_back("--set '" + ov + "': expected KEY=VALUE (e.g. core.tensor.clock=2GHz)");
      return;
    }
    const std::string key = trim(ov.substr(0, eq));
    const std::string value = trim(ov.substr(eq + 1));
    if (key == schema::kTensorRtlSection ||
        key.starts_with(std::string(schema::kTensorRtlSection) + ".")) {
      rtl_overrides_.emplace_back(key, value);
      return;
    }
    const auto ct = core_type_path(key);
    const std::string lookup = ct ? ct->schema_path : key;
    if (key == schema::kLayoutKey || schema::find_choice_key(lookup)) {
      values_[key] = Setting{value, "--set", 0, "", -1};
      return;
    }
    const schema::KeyDef* def = schema::find_key(lookup);
    if (!def || (ct && !def->per_core)) {
      if (ct && ct->schema_path.empty())
        errors_.push_back("--set " + key + ": is a core type, not a key (give a full key such as " +
                          key + ".tensor.rows)");
      else if (schema::is_section(lookup))
        errors_.push_back("--set " + key + ": is a section, not a key (give a full key such as " +
                          first_key_in(key) + ")");
      else
        errors_.push_back("--set " + key + ": unknown key" + suggestion(lookup));
      return;
    }
    values_[key] = Setting{value, "--set", 0, "", -1};
  }

  platform_config finish() {
    platform_config cfg;
    for (const auto& k : schema::keys()) {
      const auto it = values_.find(k.key);
      if (it == values_.end()) {
        if (is_broken(k.key) || defaults_) continue;  // reported where written / the row's
        errors_.push_back(file_ + ": " + k.key + ": missing key (" + type_hint(k) +
                          "; or start the file with `base: trn2`)");
        continue;
      }
      set(k, it->second, cfg, 0);
    }
    for (const auto& k : schema::choice_keys()) {
      if (k.set_platform) {
        set_platform_choice(k, cfg);
        continue;
      }
      set_choice(k, k.key, cfg.core);
    }
    tensor_rtl(cfg);
    core_types(cfg);
    layout(cfg);
    throw_if_errors();
    // Cross-key checks only make sense once every value parsed.
    for (const auto& e : schema::cross_check(cfg)) {
      const auto it = values_.find(e.key);
      const std::string about =
          it != values_.end() ? it->second.about(e.key) : file_ + ": " + e.key;
      errors_.push_back(about + ": " + e.message);
    }
    throw_if_errors();
    return cfg;
  }

 private:
  void set(const schema::KeyDef& k, const Setting& s, platform_config& cfg, size_t type,
           const std::string& key = "") {
    const std::string& name = key.empty() ? k.key : key;
    if (!s.error.empty()) {
      errors_.push_back(s.about(name) + ": " + s.error);
      return;
    }
    try {
      schema::set_value(k, s.text, cfg, type);
    } catch (const UnitError& e) {
      errors_.push_back(s.about(name) + ": " + e.what());
    } catch (const std::range_error& e) {
      errors_.push_back(s.about(name) + ": " + e.what() + " (got '" + s.text + "')");
    }
  }

  void set_choice(const schema::ChoiceKeyDef& k, const std::string& key, core_config& core) {
    const auto it = values_.find(key);
    if (it == values_.end()) return;  // the default core type's value, or choices[0]
    const Setting& s = it->second;
    try {
      if (!s.error.empty()) throw std::range_error(s.error);
      k.set(core, schema::parse_choice(k, s.text));
    } catch (const std::range_error& e) {
      errors_.push_back(s.about(key) + ": " + e.what());
    }
  }

  void set_platform_choice(const schema::ChoiceKeyDef& k, platform_config& cfg) {
    const auto it = values_.find(k.key);
    if (it == values_.end()) return;  // choices[0]
    const Setting& s = it->second;
    try {
      if (!s.error.empty()) throw std::range_error(s.error);
      k.set_platform(cfg, schema::parse_choice(k, s.text));
    } catch (const std::range_error& e) {
      errors_.push_back(s.about(k.key) + ": " + e.what());
    }
  }

  // `core_types.NAME.*`: each type is the `core` type with these keys changed.
  void core_types(platform_config& cfg) {
    for (const auto& [key, setting] : values_) {
      const auto ct = core_type_path(key);
      if (!ct || ct->schema_path.empty()) continue;
      const size_t t = cfg.find_core_type(ct->name);
      if (t == cfg.core_types()) cfg.other_core_types.emplace_back(ct->name, cfg.core);
      if (const schema::KeyDef* k = schema::find_key(ct->schema_path))
        set(*k, setting, cfg, t, key);
      else if (const schema::ChoiceKeyDef* c = schema::find_choice_key(ct->schema_path))
        set_choice(*c, key, cfg.core_type(t));
    }
  }

  // `chip.layout`: "core*6, small*2" or a list of names, one per core.
  void layout(platform_config& cfg) {
    const auto it = values_.find(std::string(schema::kLayoutKey));
    if (it == values_.end()) {
      if (!cfg.other_core_types.empty())
        errors_.push_back(file_ + ": " + std::string(schema::kLayoutKey) +
                          ": missing: core_types defines " + cfg.core_type_name(1) +
                          " but no core uses it (give chip.layout, e.g. core*6, " +
                          cfg.core_type_name(1) + "*2)");
      return;
    }
    const Setting& s = it->second;
    const std::string about = s.about(std::string(schema::kLayoutKey)) + ": ";
    if (!s.error.empty()) {
      errors_.push_back(about + s.error);
      return;
    }
    std::vector<uint32_t> per_core;
    std::vector<bool> used(cfg.core_types(), false);
    std::string_view rest = s.text;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string item(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
      item = trim(item);
      uint64_t count = 1;
      if (const size_t star = item.find('*'); star != std::string::npos) {
        try {
          count = parse_count(item.substr(star + 1));
        } catch (const UnitError& e) {
          errors_.push_back(about + "'" + item + "': " + e.what());
          return;
        }
        item = trim(item.substr(0, star));
      }
      const size_t t = cfg.find_core_type(item);
      if (t == cfg.core_types()) {
        errors_.push_back(about + "unknown core type '" + item +
                          "' (known: " + cfg.core_type_names() + ")");
        return;
      }
      if (per_core.size() + count > cfg.cores) {
        errors_.push_back(about + "names more cores than chip.cores (" + std::to_string(cfg.cores) +
                          ")");
        return;
      }
      used[t] = true;
      per_core.insert(per_core.end(), count, static_cast<uint32_t>(t));
    }
    if (per_core.size() != cfg.cores) {
      errors_.push_back(about + "names " + std::to_string(per_core.size()) +
                        " cores, but chip.cores is " + std::to_string(cfg.cores));
      return;
    }
    for (size_t t = 1; t < cfg.core_types(); ++t)
      if (!used[t])
        errors_.push_back(about + "core type " + cfg.core_type_name(t) +
                          " is defined in core_types but no core uses it");
    cfg.layout = std::move(per_core);
  }

 private:
  void walk(const YAML::Node& map, const std::string& prefix) {
    for (const auto& kv : map) {
      // Copies: Nodes are handles, and the iterator's pair is a temporary.
      const YAML::Node kn = kv.first;
      const YAML::Node vn = kv.second;
      const std::string at = where(file_, kn.Mark());
      if (!kn.IsScalar()) {
        errors_.push_back(at + ": " + (prefix.empty() ? "<top level>" : prefix) +
                          ": keys must be plain names");
        continue;
      }
      const std::string path = prefix.empty() ? kn.Scalar() : prefix + "." + kn.Scalar();
      if (path == "base") continue;  // read_root took it
      if (path == schema::kLayoutKey) {
        Setting setting{"", at, kn.Mark().line + 1, "", layer_};
        if (vn.IsScalar()) {
          setting.text = vn.Scalar();
        } else if (vn.IsSequence()) {
          for (const auto& e : vn)
            setting.text += (setting.text.empty() ? "" : ",") + (e.IsScalar() ? e.Scalar() : "?");
        } else {
          setting.error = "expected a list of core type names or 'NAME*COUNT, ...'";
        }
        record(path, std::move(setting), at);
        continue;
      }
      const auto ct = core_type_path(path);
      if (path == schema::kCoreTypesSection || (ct && ct->schema_path.empty())) {
        if (ct && (ct->name == kDefaultCoreType || ct->name.empty() ||
                   ct->name.find_first_of(" *,") != std::string::npos)) {
          errors_.push_back(at + ": " + path + ": a core type needs its own name (not '" +
                            ct->name + "'; the `core:` section is the default type)");
          continue;
        }
        if (vn.IsMap()) {
          walk(vn, path);
        } else {
          errors_.push_back(at + ": " + path + ": is a section: expected a mapping of " +
                            (ct ? "core keys (tensor:, sbuf:, ...)" : "core types"));
        }
        continue;
      }
      if (ct && ct->schema_path.starts_with(std::string(schema::kTensorRtlSection))) {
        errors_.push_back(at + ": " + path +
                          ": the RTL block is configured in the core: section only");
        continue;
      }
      const std::string lookup = ct ? ct->schema_path : path;
      if (path == schema::kTensorRtlSection) {
        if (has_rtl_node_ && rtl_layer_ == layer_) {
          errors_.push_back(at + ": " + path + ": duplicate section");
        } else {  // the first, or this file's replacing its base's
          has_rtl_node_ = true;
          rtl_layer_ = layer_;
          rtl_node_ = vn;
          rtl_origins_.clear();
          rtl_origins_[path] = at;
          record_origins(vn, path);
        }
        continue;
      }
      const schema::KeyDef* def = schema::find_key(lookup);
      if (ct && def && !def->per_core) def = nullptr;
      const schema::ChoiceKeyDef* choice = def ? nullptr : schema::find_choice_key(lookup);
      const bool section =
          !def && !choice && schema::is_section(lookup) && (!ct || lookup.starts_with("core."));
      if (!def && !choice && !section) {
        errors_.push_back(at + ": " + path + ": unknown key" + suggestion(lookup));
        continue;
      }
      if (section) {
        if (vn.IsMap()) {
          walk(vn, path);
          continue;
        }
        broken_.insert(path);
        errors_.push_back(at + ": " + path + ": is a section: expected a mapping of its keys (" +
                          path + ".*)");
        continue;
      }
      Setting setting{vn.IsScalar() ? vn.Scalar() : "", at, kn.Mark().line + 1, "", layer_};
      if (!vn.IsScalar())  // reported in finish() unless an override replaces it
        setting.error =
            std::string(vn.IsNull() ? "missing value" : "expected a single value") + " (" +
            (choice ? "one of " + choice_list(*choice) + ": " + choice->description
                    : type_hint(*def) + "; e.g. " + std::string(example_value(def->type))) +
            ")";
      record(path, std::move(setting), at);
    }
  }

  // A key's setting from the file being read: it replaces its base's; twice in one
  // file is an error.
  void record(const std::string& path, Setting setting, const std::string& at) {
    const auto [prev, fresh] = values_.emplace(path, setting);
    if (!fresh && prev->second.layer > layer_)
      prev->second = std::move(setting);
    else if (!fresh)
      errors_.push_back(at + ": " + path + ": duplicate key (first set at line " +
                        std::to_string(prev->second.line) + ")");
  }

  // Where each key of the rtl section was written, for messages.
  void record_origins(const YAML::Node& map, const std::string& prefix) {
    if (!map.IsMap()) return;
    for (const auto& kv : map) {
      const YAML::Node kn = kv.first;
      if (!kn.IsScalar()) continue;
      const std::string path = prefix + "." + kn.Scalar();
      rtl_origins_[path] = where(file_, kn.Mark());
      record_origins(kv.second, path);
    }
  }

  // "FILE:LINE: " or "--set " for the message of cosim::parse_rtl_section or
  // check_rtl_build, which starts with the key it is about ("core.tensor.rtl.mode: "):
  // where that key was written, else where a key below it was (the waveform map from
  // its path), else where the nearest section above it was.
  std::string rtl_origin(const std::string& message) const {
    const std::string key = message.substr(0, message.find(": "));
    const std::string* origin = nullptr;
    size_t best = 0;
    for (const auto& [k, o] : rtl_origins_) {
      if (k == key) {
        origin = &o;
        break;
      }
      if (k.starts_with(key + ".") || k.starts_with(key + "[")) {
        origin = &o;
        best = SIZE_MAX;
      } else if (key.starts_with(k) && k.size() > best &&
                 std::string_view(".[").find(key[k.size()]) != std::string_view::npos) {
        origin = &o;
        best = k.size();
      }
    }
    if (!origin) return file_ + ": ";
    return *origin == "--set" ? "--set " : *origin + ": ";
  }

  // The core.tensor.rtl section, file and overrides merged, parsed; with impl: rtl,
  // checked against the blocks this build compiled and the engine's array.
  void tensor_rtl(platform_config& cfg) {
    YAML::Node node;
    bool have = has_rtl_node_;
    if (have) node = YAML::Clone(rtl_node_);
    for (const auto& [key, value] : rtl_overrides_) {
      YAML::Node v;
      try {
        v = YAML::Load(value);
      } catch (const YAML::Exception& e) {
        errors_.push_back("--set " + key + ": not a YAML value: " + e.msg);
        continue;
      }
      if (key == schema::kTensorRtlSection) {
        const std::string& k = key;  // clang 14 cannot capture a structured binding
        std::erase_if(rtl_origins_, [&](const auto& o) { return o.first.starts_with(k); });
        rtl_origins_[key] = "--set";
        node = v;
        have = true;
        continue;
      }
      rtl_origins_[key] = "--set";
      if (!have || !node.IsMap()) node = YAML::Node(YAML::NodeType::Map);
      have = true;
      std::vector<std::string> parts;
      std::string_view rest = std::string_view(key).substr(schema::kTensorRtlSection.size() + 1);
      for (size_t dot; (dot = rest.find('.')) != std::string_view::npos;
           rest.remove_prefix(dot + 1))
        parts.emplace_back(rest.substr(0, dot));
      parts.emplace_back(rest);
      set_path(node, parts, 0, v);
    }
    const std::string where = "core.tensor";
    const bool rtl = cfg.core.tensor_impl == TensorImpl::rtl;
    if (!have) {
      if (rtl) {
        const auto it = values_.find("core.tensor.impl");
        errors_.push_back(it->second.about("core.tensor.impl") +
                          ": rtl needs a core.tensor.rtl section naming the block (e.g. rtl: "
                          "{block: pe_array_8x8}; docs/rtl-cosim.md)");
      }
      return;
    }
    try {
      auto c = std::make_shared<cosim::rtl_config>(cosim::parse_rtl_section(node, where));
      c->rtl = rtl;
      if (rtl) {
        const cosim::rtl_block_info& b = cosim::check_rtl_build(*c, cosim::rtl_blocks(), where);
        check_array(b, cfg.core.tensor);
      }
      cfg.core.tensor_rtl = std::move(c);
    } catch (const std::runtime_error& e) {
      errors_.push_back(rtl_origin(e.what()) + e.what());
    }
  }

  // A PE array block built with R and C must be the engine's array.
  static void check_array(const cosim::rtl_block_info& b, const models::tensor_engine_params& t) {
    std::string r, c;
    for (const auto& p : b.parameters) {
      if (p.starts_with("R=")) r = p.substr(2);
      if (p.starts_with("C=")) c = p.substr(2);
    }
    if (r.empty() || c.empty() || (r == std::to_string(t.rows) && c == std::to_string(t.cols)))
      return;
    throw std::runtime_error(
        "core.tensor.rtl.block: block " + b.name + " was built for an array of " + r +
        " rows and " + c + " columns (R=" + r + ", C=" + c + "), but core.tensor.rows x cols is " +
        std::to_string(t.rows) + " x " + std::to_string(t.cols));
  }

  static void set_path(YAML::Node node, const std::vector<std::string>& parts, size_t i,
                       const YAML::Node& v) {
    if (i + 1 == parts.size()) {
      node[parts[i]] = v;
      return;
    }
    if (!node[parts[i]].IsMap()) node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    set_path(node[parts[i]], parts, i + 1, v);
  }

  static std::string choice_list(const schema::ChoiceKeyDef& k) {
    std::string s;
    for (size_t i = 0; i < k.choices.size(); ++i)
      s += (i == 0 ? "" : i + 1 == k.choices.size() ? " or " : ", ") + k.choices[i];
    return s;
  }

  bool is_broken(const std::string& key) const {
    for (const auto& b : broken_)
      if (key == b || key.starts_with(b + ".")) return true;
    return false;
  }

  void throw_if_errors() {
    if (errors_.empty()) return;
    std::string msg;
    for (const auto& e : errors_) msg += (msg.empty() ? "" : "\n") + e;
    throw ConfigError(msg);
  }

  std::string file_;
  std::map<std::string, Setting> values_;
  std::vector<std::string> errors_;
  std::set<std::string> broken_;  // sections written as a single value
  bool defaults_ = false;         // `base: defaults`: missing keys take their rows' defaults
  int layer_ = 0;                 // the layer walk() is reading
  std::set<std::string> chain_;   // files of the base chain, for cycles
  bool has_rtl_node_ = false;
  int rtl_layer_ = 0;                               // the layer its section came from
  YAML::Node rtl_node_;                             // the core.tensor.rtl section as written
  std::map<std::string, std::string> rtl_origins_;  // its keys: "FILE:LINE" or "--set"
  std::vector<std::pair<std::string, std::string>> rtl_overrides_;  // --set core.tensor.rtl.*
};

std::vector<fs::path> preset_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("TRNSIM_CONFIG_DIR")) {
    std::string_view s = env;
    while (!s.empty()) {
      const size_t colon = s.find(':');
      const std::string_view d = s.substr(0, colon);
      if (!d.empty()) dirs.emplace_back(std::string(d));
      if (colon == std::string_view::npos) break;
      s.remove_prefix(colon + 1);
    }
  }
  if (std::strlen(TRNSIM_SOURCE_CONFIG_DIR) != 0) dirs.emplace_back(TRNSIM_SOURCE_CONFIG_DIR);
  return dirs;
}

std::string find_preset(const std::string& name) {
  const auto dirs = preset_dirs();
  std::set<std::string> available;
  std::string searched;
  for (const auto& d : dirs) {
    std::error_code ec;
    const fs::path p = d / (name + ".yaml");
    if (fs::is_regular_file(p, ec)) return p.string();
    searched += (searched.empty() ? "" : ", ") + d.string();
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".yaml") available.insert(e.path().stem().string());
  }
  std::string list;
  for (const auto& a : available) list += (list.empty() ? "" : ", ") + a;
  throw ConfigError("unknown preset '" + name + "'; available: " + (list.empty() ? "none" : list) +
                    " (searched " + (searched.empty() ? "no directories" : searched) +
                    "; set TRNSIM_CONFIG_DIR or give a .yaml path)");
}

}  // namespace

isa::Limits core_config::limits(uint64_t hbm_bytes) const {
  isa::Limits l;
  l.partitions = sbuf.partitions;
  l.sbuf_partition_bytes = sbuf.partition_bytes;
  l.psum_partition_bytes = psum.partition_bytes;
  l.psum_bank_bytes = psum.bank_bytes;
  // A matmul's K lies on the SBUF partitions and its M becomes the PSUM partitions;
  // a smaller PE array folds the matmul into passes (tensor_engine.h).
  l.matmul_max_k = sbuf.partitions;
  l.matmul_max_m = psum.partitions;
  l.matmul_max_n = tensor.max_moving_free;
  l.matmul_double_row = tensor.fp8_double_row;
  l.hbm_bytes = hbm_bytes;
  l.dma_engines = dma.engines;
  l.dma_queues = dma.queues_per_engine;
  l.max_semaphores = semaphores.count;
  return l;
}

const core_config& platform_config::core_type(size_t t) const {
  return t == 0 ? core : other_core_types.at(t - 1).second;
}
core_config& platform_config::core_type(size_t t) {
  return t == 0 ? core : other_core_types.at(t - 1).second;
}
std::string platform_config::core_type_name(size_t t) const {
  return t == 0 ? std::string(kDefaultCoreType) : other_core_types.at(t - 1).first;
}
size_t platform_config::find_core_type(std::string_view name) const {
  size_t t = 0;
  while (t < core_types() && core_type_name(t) != name) ++t;
  return t;
}
std::string platform_config::core_type_names() const {
  std::string s;
  for (size_t t = 0; t < core_types(); ++t) s += (t ? ", " : "") + core_type_name(t);
  return s;
}
const core_config& platform_config::core_of(uint32_t i) const {
  return layout.empty() ? core : core_type(layout.at(i));
}
isa::Limits platform_config::limits() const {
  return core.limits(hbm.size_bytes);
}

platform_config parse_config(const std::string& yaml_text, const std::string& file_name,
                             const std::vector<std::string>& overrides) {
  Loader loader(file_name);
  loader.read_yaml(yaml_text);
  for (const auto& ov : overrides) loader.apply_override(ov);
  platform_config cfg = loader.finish();
  cfg.name = fs::path(file_name).stem().string();
  cfg.source = file_name;
  return cfg;
}

platform_config load_config(const std::string& name_or_path,
                            const std::vector<std::string>& overrides) {
  if (name_or_path.empty()) throw ConfigError("empty config name: give a preset or a .yaml path");
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       name_or_path.ends_with(".yaml") || name_or_path.ends_with(".yml");
  const std::string path = is_path ? name_or_path : find_preset(name_or_path);
  std::string text;
  if (const std::string why = isa::read_file(path, text); !why.empty())
    throw ConfigError(path + ": cannot open config file: " + why);
  return parse_config(text, path, overrides);
}

std::string describe(const platform_config& cfg) {
  std::string out;
  for (const auto& k : schema::keys())
    out += k.key + " = " + schema::get_value(k, cfg) + "  # " + k.description + "\n";
  for (const auto& k : schema::choice_keys())
    if (const uint32_t v = k.get_platform ? k.get_platform(cfg) : k.get(cfg.core); v != 0)
      out += k.key + " = " + k.choices[v] + "  # " + k.description + "\n";
  if (cfg.core.tensor_rtl)
    out += std::string(schema::kTensorRtlSection) + " = " + cosim::to_flow(*cfg.core.tensor_rtl) +
           "  # the RTL block of the Tensor Engine (docs/rtl-cosim.md)\n";
  // Other core types: the keys where they differ from `core`.
  for (size_t t = 1; t < cfg.core_types(); ++t) {
    const std::string p = std::string(schema::kCoreTypesSection) + "." + cfg.core_type_name(t);
    for (const auto& k : schema::keys()) {
      if (!k.per_core) continue;
      const std::string v = schema::get_value(k, cfg, t);
      if (v != schema::get_value(k, cfg, 0))
        out += p + k.key.substr(4) + " = " + v + "  # " + k.description + "\n";
    }
    for (const auto& k : schema::choice_keys())
      if (const uint32_t v = k.get(cfg.core_type(t)); v != k.get(cfg.core))
        out += p + k.key.substr(4) + " = " + k.choices[v] + "  # " + k.description + "\n";
  }
  if (!cfg.layout.empty()) {
    std::string l;
    for (size_t i = 0; i < cfg.layout.size();) {
      size_t n = 1;
      while (i + n < cfg.layout.size() && cfg.layout[i + n] == cfg.layout[i]) ++n;
      l += (l.empty() ? "" : ",") + cfg.core_type_name(cfg.layout[i]) + "*" + std::to_string(n);
      i += n;
    }
    out += std::string(schema::kLayoutKey) + " = " + l + "  # the core type of each core\n";
  }
  return out;
}

namespace {

std::string json_string(std::string_view s) {
  return "\"" + stats::json_escape(std::string(s)) + "\"";
}

// The config's optional parts that are not parameter rows: the RTL section, other
// core types and the layout (schema_table and schema_json both list them).
struct OptionalPart {
  std::string key, type, dflt, readers, description;
};
std::vector<OptionalPart> optional_parts() {
  return {{std::string(schema::kTensorRtlSection), "section", "-", "sim",
           "RTL block of the tensor engine, used with impl: rtl (optional; docs/rtl-cosim.md)"},
          {std::string(schema::kCoreTypesSection), "section", "-", "as its core.* key",
           "other core types: core_types.NAME.<any core.* key> (optional; NAME is `core` plus "
           "these differences)"},
          {std::string(schema::kLayoutKey), "layout", "core*<chip.cores>", "sim",
           "the core type of each core: NAME*COUNT, ... or a list of names (optional)"}};
}

}  // namespace

std::string schema_table() {
  const auto& keys = schema::keys();
  struct Row {
    std::string key, type, unit, dflt, check, readers, description;
  };
  std::vector<Row> rows;
  for (const auto& k : keys)
    rows.push_back({k.key, std::string(value_type_name(k.type)), k.unit.empty() ? "-" : k.unit,
                    schema::default_value(k),
                    k.type == ValueType::boolean ? "-" : schema::check_text(k.check, k.type),
                    std::string(schema::readers_name(k.readers)),
                    k.description + " [source: " + k.source + "]"});
  // Optional keys: a word of a fixed list (the first is the default), and the sections.
  for (const auto& k : schema::choice_keys()) {
    std::string words;
    for (const auto& c : k.choices) words += (words.empty() ? "" : "|") + c;
    rows.push_back({k.key, "choice", "-", k.choices[0], words,
                    std::string(schema::readers_name(k.readers)), k.description + " (optional)"});
  }
  for (const OptionalPart& o : optional_parts())
    rows.push_back({o.key, o.type, "-", o.dflt, "-", o.readers, o.description});
  rows.insert(rows.begin(),
              Row{"key", "type", "unit", "default", "check", "readers", "description"});
  size_t w[6] = {};
  const auto fields = [](const Row& r) {
    return std::array<const std::string*, 6>{&r.key,  &r.type,  &r.unit,
                                             &r.dflt, &r.check, &r.readers};
  };
  for (const Row& r : rows)
    for (int i = 0; i < 6; ++i) w[i] = std::max(w[i], fields(r)[i]->size());
  const auto line = [&](const Row& r) {
    std::string out;
    for (int i = 0; i < 6; ++i) {
      std::string c = *fields(r)[i];
      c.resize(std::max(w[i], c.size()), ' ');
      out += c + "  ";
    }
    return out + r.description + "\n";
  };
  std::string out;
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string schema_json() {
  std::string out = "{\"keys\": [";
  bool first = true;
  const auto sep = [&]() -> std::string {
    const bool f = first;
    first = false;
    return f ? "\n  " : ",\n  ";
  };
  for (const auto& k : schema::keys()) {
    out += sep() + "{\"key\": " + json_string(k.key) +
           ", \"type\": " + json_string(value_type_name(k.type)) +
           ", \"unit\": " + json_string(k.unit) +
           ", \"default\": " + json_string(schema::default_value(k)) + ", \"check\": " +
           json_string(k.type == ValueType::boolean ? "" : schema::check_text(k.check, k.type)) +
           ", \"min\": " + stats::json_number(k.check.min, false) +
           ", \"min_exclusive\": " + (k.check.min_exclusive ? "true" : "false") +
           ", \"max\": " + stats::json_number(k.check.max, false) +
           ", \"multiple_of\": " + std::to_string(k.check.multiple_of) +
           ", \"power_of_two\": " + (k.check.power_of_two ? "true" : "false") +
           ", \"readers\": " + json_string(schema::readers_name(k.readers)) +
           ", \"per_core\": " + (k.per_core ? "true" : "false") +
           ", \"description\": " + json_string(k.description) +
           ", \"source\": " + json_string(k.source) + "}";
  }
  for (const auto& k : schema::choice_keys()) {
    std::string words;
    for (const auto& c : k.choices) words += (words.empty() ? "" : ", ") + json_string(c);
    out += sep() + "{\"key\": " + json_string(k.key) +
           ", \"type\": \"choice\", \"unit\": \"\", \"default\": " + json_string(k.choices[0]) +
           ", \"choices\": [" + words +
           "], \"readers\": " + json_string(schema::readers_name(k.readers)) +
           ", \"per_core\": true, \"description\": " + json_string(k.description) +
           ", \"source\": \"\"}";
  }
  for (const OptionalPart& o : optional_parts())
    out += sep() + "{\"key\": " + json_string(o.key) + ", \"type\": " + json_string(o.type) +
           ", \"default\": " + json_string(o.dflt) + ", \"readers\": " + json_string(o.readers) +
           ", \"description\": " + json_string(o.description) + "}";
  out += "\n],\n\"units\": {";
  bool first_type = true;
  for (const ValueType t :
       {ValueType::frequency, ValueType::bandwidth, ValueType::size, ValueType::time}) {
    out += std::string(first_type ? "\n  " : ",\n  ") + json_string(value_type_name(t)) + ": {";
    first_type = false;
    bool first_unit = true;
    for (const auto& [name, mult] : unit_table(t)) {
      out += std::string(first_unit ? "" : ", ") + json_string(name) + ": " +
             stats::json_number(mult, false);
      first_unit = false;
    }
    out += "}";
  }
  return out + "\n}}\n";
}

}  // namespace trnsim::platform
