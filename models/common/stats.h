// Statistics tree: every module registers its statistics in a group with a name,
// unit and description; values are read through getters when the tree is dumped,
// so models just keep plain counters. Dumped as JSON (values as a nested tree of
// numbers, plus a "meta" map from dotted name to unit and description) and as text.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace trnsim::stats {

struct stat {
  std::string name;
  std::string unit;
  std::string desc;
  std::function<double()> get;
  bool integer = false;
};

class group {
 public:
  explicit group(std::string name, std::string desc = "");
  const std::string& name() const { return name_; }

  group& child(const std::string& name, const std::string& desc = "");  // create or get
  group* find_child(const std::string& name);
  void add(const std::string& name, const std::string& unit, const std::string& desc,
           std::function<double()> get, bool integer = false);
  void add_counter(const std::string& name, const std::string& unit, const std::string& desc,
                   const uint64_t* value);
  void add_value(const std::string& name, const std::string& unit, const std::string& desc,
                 const double* value);
  // A value known when the tree is built (the runtime's per-run figures).
  void add_fixed(const std::string& name, const std::string& unit, const std::string& desc,
                 double value, bool integer = false);
  // Groups whose predicate is false are left out of the dumps (unused DMA queues,
  // cores a run did not use); value() still finds their stats.
  void set_visible(std::function<bool()> visible) { visible_ = std::move(visible); }
  bool visible() const { return !visible_ || visible_(); }
  void clear();  // drop every stat and child group
  // Value of a stat by dotted path relative to this group; NaN when absent.
  double value(const std::string& dotted) const;

  std::string to_json() const;  // {"a": 1, "sub": {...}, "meta": {"a": {"unit":..}}}
  std::string to_text() const;  // "dotted.name  value  unit  # desc" lines

 private:
  void json_values(std::string& out, int indent) const;
  void json_meta(std::string& out, const std::string& prefix, bool& first) const;
  void text(std::string& out, const std::string& prefix) const;
  std::string name_, desc_;
  std::vector<stat> stats_;
  std::vector<std::unique_ptr<group>> children_;
  std::function<bool()> visible_;
};

std::string json_number(double v, bool integer);
std::string json_escape(const std::string& s);

}  // namespace trnsim::stats
