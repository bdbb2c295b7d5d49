#include "platform/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

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

  void read_yaml(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(where(file_, e.mark) + ": YAML syntax error: " + e.msg);
    }
    if (!root.IsMap()) {
      const YAML::Mark m = root.IsNull() ? YAML::Mark() : root.Mark();
      throw ConfigError((m.is_null() || m.line < 0 ? file_ + ":1" : where(file_, m)) +
                        ": expected a mapping of config keys (chip:, hbm:, core:), got " +
                        (root.IsNull() ? "an empty document" : "a single value or list"));
    }
    walk(root, "");
  }

  void apply_override(const std::string& ov) {
    const size_t eq = ov.find('=');
    if (eq == std::string::npos || eq == 0) {
      errors_.push_back("--set '" + ov + "': expected KEY=VALUE (e.g. core.tensor.clock=2GHz)");
      return;
    }
    const auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t"));
      s.erase(s.find_last_not_of(" \t") + 1);
      return s;
    };
    const std::string key = trim(ov.substr(0, eq));
    const std::string value = trim(ov.substr(eq + 1));
    if (key == schema::kTensorRtlSection ||
        key.starts_with(std::string(schema::kTensorRtlSection) + ".")) {
      rtl_overrides_.emplace_back(key, value);
      return;
    }
    if (schema::find_choice_key(key)) {
      values_[key] = Setting{value, "--set", 0, ""};
      return;
    }
    if (!schema::find_key(key)) {
      if (schema::is_section(key))
        errors_.push_back("--set " + key + ": is a section, not a key (give a full key such as " +
                          first_key_in(key) + ")");
      else
        errors_.push_back("--set " + key + ": unknown key" + suggestion(key));
      return;
    }
    values_[key] = Setting{value, "--set", 0, ""};
  }

  platform_config finish() {
    platform_config cfg;
    for (const auto& k : schema::keys()) {
      const auto it = values_.find(k.key);
      if (it == values_.end()) {
        if (is_broken(k.key)) continue;  // already reported where it was written
        errors_.push_back(file_ + ": " + k.key + ": missing key (" + type_hint(k) + ")");
        continue;
      }
      const Setting& s = it->second;
      if (!s.error.empty()) {
        errors_.push_back(s.about(k.key) + ": " + s.error);
        continue;
      }
      try {
        schema::set_value(k, s.text, cfg);
      } catch (const UnitError& e) {
        errors_.push_back(s.about(k.key) + ": " + e.what());
      } catch (const std::range_error& e) {
        errors_.push_back(s.about(k.key) + ": " + e.what() + " (got '" + s.text + "')");
      }
    }
    for (const auto& k : schema::choice_keys()) {
      const auto it = values_.find(k.key);
      if (it == values_.end()) {
        k.set(cfg, 0);
        continue;
      }
      const Setting& s = it->second;
      try {
        if (!s.error.empty()) throw std::range_error(s.error);
        k.set(cfg, schema::parse_choice(k, s.text));
      } catch (const std::range_error& e) {
        errors_.push_back(s.about(k.key) + ": " + e.what());
      }
    }
    tensor_rtl(cfg);
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
      if (path == schema::kTensorRtlSection) {
        if (has_rtl_node_) {
          errors_.push_back(at + ": " + path + ": duplicate section");
        } else {
          has_rtl_node_ = true;
          rtl_node_ = vn;
          rtl_origins_[path] = at;
          record_origins(vn, path);
        }
        continue;
      }
      const schema::KeyDef* def = schema::find_key(path);
      const schema::ChoiceKeyDef* choice = def ? nullptr : schema::find_choice_key(path);
      const bool section = !def && !choice && schema::is_section(path);
      if (!def && !choice && !section) {
        errors_.push_back(at + ": " + path + ": unknown key" + suggestion(path));
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
      Setting setting{vn.IsScalar() ? vn.Scalar() : "", at, kn.Mark().line + 1, ""};
      if (!vn.IsScalar())  // reported in finish() unless an override replaces it
        setting.error =
            std::string(vn.IsNull() ? "missing value" : "expected a single value") + " (" +
            (choice ? "one of " + choice_list(*choice) + ": " + choice->description
                    : type_hint(*def) + "; e.g. " + std::string(example_value(def->type))) +
            ")";
      const auto [prev, fresh] = values_.emplace(path, std::move(setting));
      if (!fresh)
        errors_.push_back(at + ": " + path + ": duplicate key (first set at line " +
                          std::to_string(prev->second.line) + ")");
    }
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
  bool has_rtl_node_ = false;
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

isa::Limits platform_config::limits() const {
  isa::Limits l;
  l.partitions = core.sbuf.partitions;
  l.sbuf_partition_bytes = core.sbuf.partition_bytes;
  l.psum_partition_bytes = core.psum.partition_bytes;
  l.psum_bank_bytes = core.psum.bank_bytes;
  // A matmul's K lies on the SBUF partitions and its M becomes the PSUM partitions;
  // a smaller PE array folds the matmul into passes (tensor_engine.h).
  l.matmul_max_k = core.sbuf.partitions;
  l.matmul_max_m = core.psum.partitions;
  l.matmul_max_n = core.tensor.max_moving_free;
  l.matmul_double_row = core.tensor.fp8_double_row;
  l.hbm_bytes = hbm.size_bytes;
  l.dma_engines = core.dma.engines;
  l.dma_queues = core.dma.queues_per_engine;
  l.max_semaphores = core.semaphores;
  return l;
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
    if (const uint32_t v = k.get(cfg); v != 0)
      out += k.key + " = " + k.choices[v] + "  # " + k.description + "\n";
  if (cfg.core.tensor_rtl)
    out += std::string(schema::kTensorRtlSection) + " = " + cosim::to_flow(*cfg.core.tensor_rtl) +
           "  # the RTL block of the Tensor Engine (docs/rtl-cosim.md)\n";
  return out;
}

std::string schema_table() {
  const auto& keys = schema::keys();
  size_t wk = 3, wt = 4, wu = 4, wc = 5;
  for (const auto& k : keys) {
    wk = std::max(wk, k.key.size());
    wt = std::max(wt, value_type_name(k.type).size());
    wu = std::max(wu, k.unit.size());
    wc = std::max(wc, k.check.text(k.type).size());
  }
  const auto pad = [](std::string s, size_t w) {
    s.resize(std::max(w, s.size()), ' ');
    return s;
  };
  std::string out = pad("key", wk) + "  " + pad("type", wt) + "  " + pad("unit", wu) + "  " +
                    pad("check", wc) + "  description\n";
  for (const auto& k : keys) {
    const std::string check = k.check.text(k.type);
    out += pad(k.key, wk) + "  " + pad(std::string(value_type_name(k.type)), wt) + "  " +
           pad(k.unit.empty() ? "-" : k.unit, wu) + "  " +
           pad(k.type == ValueType::boolean ? "-" : check, wc) + "  " + k.description + "\n";
  }
  // Optional keys: a word of a fixed list (the first is the default), and the RTL section.
  for (const auto& k : schema::choice_keys()) {
    std::string words;
    for (const auto& c : k.choices) words += (words.empty() ? "" : "|") + c;
    out += pad(k.key, wk) + "  " + pad("choice", wt) + "  " + pad("-", wu) + "  " + pad(words, wc) +
           "  " + k.description + " (optional, default " + k.choices[0] + ")\n";
  }
  out += pad(std::string(schema::kTensorRtlSection), wk) + "  " + pad("section", wt) + "  " +
         pad("-", wu) + "  " + pad("-", wc) +
         "  RTL block of the tensor engine, used with impl: rtl (optional; docs/rtl-cosim.md)\n";
  return out;
}

}  // namespace trnsim::platform
