// Helpers shared by the platform config tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "platform/config.h"

namespace trnsim::platform::test {

inline const std::string kConfigDir = std::string(TRNSIM_SOURCE_DIR) + "/configs";

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The ConfigError message `f` throws, or "<no error>".
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace trnsim::platform::test
