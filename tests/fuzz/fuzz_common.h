// Shared by the libFuzzer targets: a failed round-trip is a finding, reported the
// way libFuzzer reports a crash (abort after printing what differed).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace trnsim::fuzz {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace trnsim::fuzz
