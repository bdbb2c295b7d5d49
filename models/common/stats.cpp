#include "models/common/stats.h"

#include <cmath>
#include <cstdio>

namespace trnsim::stats {

group::group(std::string name, std::string desc) : name_(std::move(name)), desc_(std::move(desc)) {}

group& group::child(const std::string& name, const std::string& desc) {
  if (group* g = find_child(name)) return *g;
  children_.push_back(std::make_unique<group>(name, desc));
  return *children_.back();
}

group* group::find_child(const std::string& name) {
  for (auto& c : children_)
    if (c->name_ == name) return c.get();
  return nullptr;
}

void group::add(const std::string& name, const std::string& unit, const std::string& desc,
                std::function<double()> get, bool integer) {
  stats_.push_back({name, unit, desc, std::move(get), integer});
}

void group::add_counter(const std::string& name, const std::string& unit, const std::string& desc,
                        const uint64_t* value) {
  add(
      name, unit, desc, [value] { return static_cast<double>(*value); }, true);
}

void group::add_value(const std::string& name, const std::string& unit, const std::string& desc,
                      const double* value) {
  add(name, unit, desc, [value] { return *value; });
}

void group::add_fixed(const std::string& name, const std::string& unit, const std::string& desc,
                      double value, bool integer) {
  add(
      name, unit, desc, [value] { return value; }, integer);
}

void group::clear() {
  stats_.clear();
  children_.clear();
  visible_ = nullptr;
}

double group::value(const std::string& dotted) const {
  auto dot = dotted.find('.');
  if (dot == std::string::npos) {
    for (auto& s : stats_)
      if (s.name == dotted) return s.get();
    return std::nan("");
  }
  std::string head = dotted.substr(0, dot);
  for (auto& c : children_)
    if (c->name_ == head) return c->value(dotted.substr(dot + 1));
  return std::nan("");
}

std::string json_number(double v, bool integer) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  if (integer)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

void group::json_values(std::string& out, int indent) const {
  std::string pad(indent + 2, ' ');
  out += "{";
  bool first = true;
  for (auto& s : stats_) {
    out += first ? "\n" : ",\n";
    first = false;
    out += pad + "\"" + json_escape(s.name) + "\": " + json_number(s.get(), s.integer);
  }
  for (auto& c : children_) {
    if (!c->visible()) continue;
    out += first ? "\n" : ",\n";
    first = false;
    out += pad + "\"" + json_escape(c->name_) + "\": ";
    c->json_values(out, indent + 2);
  }
  out += first ? "}" : "\n" + std::string(indent, ' ') + "}";
}

void group::json_meta(std::string& out, const std::string& prefix, bool& first) const {
  for (auto& s : stats_) {
    out += first ? "\n" : ",\n";
    first = false;
    out += "    \"" + json_escape(prefix + s.name) + "\": {\"unit\": \"" + json_escape(s.unit) +
           "\", \"desc\": \"" + json_escape(s.desc) + "\"}";
  }
  for (auto& c : children_)
    if (c->visible()) c->json_meta(out, prefix + c->name_ + ".", first);
}

std::string group::to_json() const {
  std::string out;
  json_values(out, 0);
  // Splice the meta map in as the last member of the top-level object.
  out.pop_back();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  out += out.back() == '{' ? "\n  \"meta\": {" : ",\n  \"meta\": {";
  bool first = true;
  json_meta(out, "", first);
  out += first ? "}\n}\n" : "\n  }\n}\n";
  return out;
}

void group::text(std::string& out, const std::string& prefix) const {
  for (auto& s : stats_) {
    char buf[64];
    double v = s.get();
    if (s.integer)
      std::snprintf(buf, sizeof buf, "%.0f", v);
    else
      std::snprintf(buf, sizeof buf, "%.6g", v);
    std::string name = prefix + s.name;
    if (name.size() < 48) name.resize(48, ' ');
    std::string val = buf;
    if (val.size() < 16) val.insert(0, 16 - val.size(), ' ');
    std::string unit = s.unit;
    if (unit.size() < 10) unit.resize(10, ' ');
    out += name + " " + val + " " + unit + " # " + s.desc + "\n";
  }
  for (auto& c : children_)
    if (c->visible()) c->text(out, prefix + c->name_ + ".");
}

std::string group::to_text() const {
  std::string out;
  text(out, "");
  return out;
}

}  // namespace trnsim::stats
