#include "models/cosim/rtl_config.h"

#include <cmath>
#include <set>
#include <stdexcept>

namespace trnsim::cosim {
namespace {

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  throw std::runtime_error(key + ": " + what);
}

std::string scalar(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(key, "expected a scalar");
  return n.Scalar();
}

double number(const YAML::Node& n, const std::string& key) {
  const std::string s = scalar(n, key);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    fail(key, "expected a number, got '" + s + "'");
  }
  if (used != s.size() || !std::isfinite(v)) fail(key, "expected a number, got '" + s + "'");
  return v;
}

uint64_t count(const YAML::Node& n, const std::string& key) {
  const double v = number(n, key);
  if (v < 0 || v != std::floor(v) || v > 1e18)
    fail(key, "expected a whole number >= 0, got '" + n.Scalar() + "'");
  return static_cast<uint64_t>(v);
}

double frequency(const YAML::Node& n, const std::string& key) {
  std::string s = scalar(n, key);
  double scale = 1;
  for (auto [suffix, f] : {std::pair{"GHz", 1e9}, {"MHz", 1e6}, {"kHz", 1e3}, {"Hz", 1.0}})
    if (s.size() > std::string(suffix).size() && s.ends_with(suffix)) {
      s.resize(s.size() - std::string(suffix).size());
      scale = f;
      break;
    }
  const double v = number(YAML::Node(s), key) * scale;
  if (v <= 0) fail(key, "expected a positive frequency, got '" + n.Scalar() + "'");
  return v;
}

void only_keys(const YAML::Node& n, const std::string& where, const std::set<std::string>& keys) {
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (!keys.count(k)) fail(where + "." + k, "unknown key");
  }
}

}  // namespace

rtl_config parse_rtl_config(const YAML::Node& block, const std::string& where) {
  const YAML::Node impl = block["impl"];
  const std::string impl_s = impl ? scalar(impl, where + ".impl") : "cpp";
  if (impl_s != "cpp" && impl_s != "rtl")
    fail(where + ".impl", "expected cpp or rtl, got '" + impl_s + "'");
  const YAML::Node r = block["rtl"];
  if (!r) {
    if (impl_s == "rtl") fail(where + ".rtl", "required when impl is rtl");
    return rtl_config{};
  }
  rtl_config c = parse_rtl_section(r, where);
  c.rtl = impl_s == "rtl";
  return c;
}

rtl_config parse_rtl_section(const YAML::Node& r, const std::string& where) {
  rtl_config c;
  const std::string w = where + ".rtl";
  if (!r.IsMap()) fail(w, "expected a map");
  only_keys(r, w,
            {"block", "top", "sources", "parameters", "clock", "mode", "reset_cycles",
             "back_pressure", "seed", "waveform"});
  if (!r["block"]) fail(w + ".block", "required");
  c.block = scalar(r["block"], w + ".block");
  if (r["top"]) c.top = scalar(r["top"], w + ".top");
  if (const YAML::Node s = r["sources"]) {
    if (!s.IsSequence()) fail(w + ".sources", "expected a list of file names");
    for (size_t i = 0; i < s.size(); ++i)
      c.sources.push_back(scalar(s[i], w + ".sources[" + std::to_string(i) + "]"));
  }
  if (const YAML::Node p = r["parameters"]) {
    if (!p.IsMap()) fail(w + ".parameters", "expected a map NAME: VALUE");
    for (const auto& kv : p) {
      const std::string k = kv.first.as<std::string>();
      c.parameters[k] = scalar(kv.second, w + ".parameters." + k);
    }
  }
  if (r["clock"]) c.clock_hz = frequency(r["clock"], w + ".clock");
  if (r["mode"]) {
    const std::string m = scalar(r["mode"], w + ".mode");
    if (m != "decoupled" && m != "timed")
      fail(w + ".mode", "expected decoupled or timed, got '" + m + "'");
    c.timed = m == "timed";
  }
  if (r["reset_cycles"]) {
    c.reset_cycles = count(r["reset_cycles"], w + ".reset_cycles");
    if (c.reset_cycles == 0) fail(w + ".reset_cycles", "at least 1 (reset is synchronous)");
  }
  if (r["back_pressure"]) {
    c.back_pressure = number(r["back_pressure"], w + ".back_pressure");
    if (c.back_pressure < 0 || c.back_pressure > 0.95)
      fail(w + ".back_pressure", "expected a stall rate in [0, 0.95]");
  }
  if (r["seed"]) c.seed = count(r["seed"], w + ".seed");
  if (const YAML::Node wf = r["waveform"]) {
    const std::string ww = w + ".waveform";
    if (!wf.IsMap()) fail(ww, "expected a map");
    only_keys(wf, ww, {"path", "depth", "from", "to"});
    if (!wf["path"]) fail(ww + ".path", "required");
    c.waveform_path = scalar(wf["path"], ww + ".path");
    if (wf["depth"]) c.waveform_depth = static_cast<int>(count(wf["depth"], ww + ".depth"));
    if (wf["from"]) c.waveform_from = count(wf["from"], ww + ".from");
    if (wf["to"]) c.waveform_to = count(wf["to"], ww + ".to");
    if (c.waveform_to <= c.waveform_from) fail(ww + ".to", "must be after from");
  }
  return c;
}

const rtl_block_info& check_rtl_build(const rtl_config& c,
                                      const std::vector<rtl_block_info>& blocks,
                                      const std::string& where) {
  const std::string w = where + ".rtl";
  const rtl_block_info* built = nullptr;
  for (const auto& b : blocks)
    if (b.name == c.block) built = &b;
  if (!built && blocks.empty())
    fail(w + ".block",
         "this build has no RTL blocks (it was configured without Verilator, "
         "or with -DTRNSIM_WITH_VERILATOR=OFF)");
  if (!built) {
    std::string names;
    for (const auto& b : blocks) names += (names.empty() ? "" : ", ") + b.name;
    fail(w + ".block", "no RTL block '" + c.block +
                           "' in this build (built: " + (names.empty() ? "none" : names) +
                           "); add it with trnsim_add_rtl_block in models/rtl/CMakeLists.txt");
  }
  if (!c.top.empty() && c.top != built->top)
    fail(w + ".top",
         "block " + built->name + " was built from top " + built->top + ", not " + c.top);
  for (size_t i = 0; i < c.sources.size(); ++i) {
    std::string f = c.sources[i];
    if (const size_t slash = f.find_last_of('/'); slash != std::string::npos)
      f = f.substr(slash + 1);
    bool found = false;
    for (const auto& s : built->sources) found = found || s == f;
    if (!found)
      fail(w + ".sources[" + std::to_string(i) + "]",
           "block " + built->name + " was not built from " + c.sources[i]);
  }
  for (const auto& [k, v] : c.parameters) {
    bool found = false;
    for (const auto& p : built->parameters) found = found || p == k + "=" + v;
    if (!found)
      fail(w + ".parameters." + k, "block " + built->name + " was not built with " + k + "=" + v);
  }
  if (c.timed && !built->systemc)
    fail(w + ".mode", "block " + built->name +
                          " is a --cc build; timed mode needs one built with "
                          "SYSTEMC");
  if (!c.timed && built->systemc)
    fail(w + ".mode", "block " + built->name + " is a --sc build; use mode: timed");
  if (!c.waveform_path.empty() && !built->trace)
    fail(w + ".waveform", "block " + built->name + " was built without TRACE");
  return *built;
}

std::string to_flow(const rtl_config& c) {
  YAML::Emitter e;
  e << YAML::Flow << YAML::BeginMap << YAML::Key << "block" << YAML::Value << c.block;
  if (!c.top.empty()) e << YAML::Key << "top" << YAML::Value << c.top;
  if (!c.sources.empty()) e << YAML::Key << "sources" << YAML::Value << c.sources;
  if (!c.parameters.empty()) e << YAML::Key << "parameters" << YAML::Value << c.parameters;
  if (c.clock_hz > 0) e << YAML::Key << "clock" << YAML::Value << c.clock_hz;
  e << YAML::Key << "mode" << YAML::Value << (c.timed ? "timed" : "decoupled");
  e << YAML::Key << "reset_cycles" << YAML::Value << c.reset_cycles;
  e << YAML::Key << "back_pressure" << YAML::Value << c.back_pressure;
  e << YAML::Key << "seed" << YAML::Value << c.seed;
  if (!c.waveform_path.empty()) {
    e << YAML::Key << "waveform" << YAML::Value << YAML::BeginMap << YAML::Key << "path"
      << YAML::Value << c.waveform_path << YAML::Key << "depth" << YAML::Value << c.waveform_depth
      << YAML::Key << "from" << YAML::Value << c.waveform_from;
    if (c.waveform_to != UINT64_MAX) e << YAML::Key << "to" << YAML::Value << c.waveform_to;
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  return e.c_str();
}

}  // namespace trnsim::cosim
