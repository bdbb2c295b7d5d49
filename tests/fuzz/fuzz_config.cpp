// libFuzzer target: the platform config loader on YAML text (no overrides). Bad
// text must be a ConfigError. A config that loads must load again, unchanged, when
// every key is overridden with the text get_value prints for it (value -> text ->
// value round-trip of the schema's units).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "platform/config.h"
#include "platform/config_schema.h"
#include "tests/fuzz/fuzz_common.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  platform::platform_config cfg;
  try {
    cfg = platform::parse_config(text, "fuzz.yaml");
  } catch (const platform::ConfigError&) {
    return 0;
  }
  std::vector<std::string> overrides;
  for (const auto& k : platform::schema::keys())
    overrides.push_back(k.key + "=" + platform::schema::get_value(k, cfg));
  platform::platform_config again;
  try {
    again = platform::parse_config(text, "fuzz.yaml", overrides);
  } catch (const platform::ConfigError& e) {
    fuzz::fail(std::string("printed values do not load back: ") + e.what());
  }
  const std::string a = platform::describe(cfg), b = platform::describe(again);
  if (a != b) fuzz::fail("describe differs after the value round-trip:\n" + a + "\n---\n" + b);
  return 0;
}
