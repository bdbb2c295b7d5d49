#include "compiler/timings.h"

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace trnsim::compiler::timings {

namespace {
std::atomic<bool> g_on{false};
std::mutex g_mu;
std::vector<std::pair<std::string, double>>& table() {
  static std::vector<std::pair<std::string, double>> t;
  return t;
}
// CPU seconds by phase, parallel to table(): on a shared machine the wall clock
// mostly measures the other jobs.
std::vector<double>& cpu_table() {
  static std::vector<double> t;
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
  cpu_table().clear();
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Scope::Scope(std::string name) : on_(enabled()) {
  if (!on_) return;
  name_ = std::move(name);
  t0_ = std::chrono::steady_clock::now();
  cpu0_ = process_cpu_seconds();
}

Scope::~Scope() {
  if (!on_) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double c = process_cpu_seconds() - cpu0_;
  std::lock_guard<std::mutex> lock(g_mu);
  for (size_t i = 0; i < table().size(); ++i)
    if (table()[i].first == name_) {
      table()[i].second += s;
      cpu_table()[i] += c;
      return;
    }
  table().emplace_back(name_, s);
  cpu_table().push_back(c);
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

std::vector<double> cpu_seconds() {
  std::lock_guard<std::mutex> lock(g_mu);
  return cpu_table();
}

std::string format_line(const std::string& phase, double seconds, double cpu) {
  std::string line = format_line(phase, seconds);
  char tail[64];
  std::snprintf(tail, sizeof tail, "  cpu %9.3f\n", cpu);
  line.pop_back();  // the newline
  return line + tail;
}

std::string format() {
  std::string out;
  const auto p = phases();
  const auto c = cpu_seconds();
  for (size_t i = 0; i < p.size(); ++i)
    out += i < c.size() ? format_line(p[i].first, p[i].second, c[i])
                        : format_line(p[i].first, p[i].second);
  return out;
}

}  // namespace trnsim::compiler::timings
