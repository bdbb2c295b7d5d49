#include "runtime/target_from_config.h"

namespace trnsim::runtime {

compiler::Target target_from_config(const platform::platform_config& c, size_t core_type) {
  return compiler::Target(c.name, c.core_type(core_type), c.hbm);
}

}  // namespace trnsim::runtime
