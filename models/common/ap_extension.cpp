#include "models/common/ap_extension.h"

#include <stdexcept>

namespace trnsim::models {

void check_response(tlm::tlm_generic_payload& gp, const ap_extension& ext, const char* what) {
  if (gp.is_response_ok()) return;
  std::string msg = std::string(what) + " of " + isa::to_string(ext.ap) + " failed: ";
  msg += ext.error.empty() ? gp.get_response_string() : ext.error;
  throw std::runtime_error(msg);
}

}  // namespace trnsim::models
