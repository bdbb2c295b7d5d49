#include "compiler/timings.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace trnsim::compiler::timings {

namespace {
std::atomic<bool> g_on{false};
std::mutex g_mu;
std::vector<std::pair<std::string, double>>& table() {
  static std::vector<std::pair<std::string, double>> t;
  return t;
}
}  // namespace

void enable(bool on) {
  g_on.store(on, std::memory_order_relaxed);
}
bool enabled() {
  return g_on.load(std::memory_order_relaxed);
}

void reset() {
  std::lock_guard<std::mutex> lock(g_mu);
  table().clear();
}

Scope::Scope(std::string name) : on_(enabled()) {
  if (!on_) return;
  name_ = std::move(name);
  t0_ = std::chrono::steady_clock::now();
}

Scope::~Scope() {
  if (!on_) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& [n, v] : table())
    if (n == name_) {
      v += s;
      return;
    }
  table().emplace_back(name_, s);
}

std::vector<std::pair<std::string, double>> phases() {
  std::lock_guard<std::mutex> lock(g_mu);
  return table();
}

std::string format_line(const std::string& phase, double seconds) {
  char line[256];
  std::snprintf(line, sizeof line, "timing %-32s %9.3f\n", phase.c_str(), seconds);
  return line;
}

std::string format() {
  std::string out;
  for (const auto& [n, v] : phases()) out += format_line(n, v);
  return out;
}

}  // namespace trnsim::compiler::timings
