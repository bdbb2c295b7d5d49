// Wall-clock and CPU seconds per compiler phase (import, each graph and tile pass, lowering,
// codegen, ...), for `trnsim compile --timings` and scripts/bench_models.py. Off by
// default: a Scope then costs one flag test. Phases accumulate by name (a pass run on
// several partition segments adds up) and are listed in the order first seen.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::compiler::timings {

void enable(bool on);
bool enabled();
void reset();

// Adds the seconds from construction to destruction to phase `name`.
class Scope {
 public:
  explicit Scope(std::string name);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  std::string name_;
  std::chrono::steady_clock::time_point t0_;
  double cpu0_ = 0;
  bool on_;
};

// (phase, seconds) in first-seen order.
std::vector<std::pair<std::string, double>> phases();
// One "timing PHASE SECONDS" line per phase (seconds with 3 decimals).
std::string format();
std::string format_line(const std::string& phase, double seconds);
// CPU seconds (the whole process's) per phase, parallel to phases(); format() adds
// them to each line: "timing PHASE SECONDS  cpu CPU_SECONDS".
std::vector<double> cpu_seconds();
std::string format_line(const std::string& phase, double seconds, double cpu);
double process_cpu_seconds();

}  // namespace trnsim::compiler::timings
