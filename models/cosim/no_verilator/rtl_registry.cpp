// The registry of a build without Verilator (TRNSIM_WITH_VERILATOR=OFF): no blocks.
// With Verilator, trnsim_rtl_blocks_header (cmake/TrnsimRtl.cmake) generates it.
#include "models/cosim/rtl_registry.h"

namespace trnsim::cosim {

const std::vector<rtl_block_info>& rtl_blocks() {
  static const std::vector<rtl_block_info> none;
  return none;
}
const rtl_block_info* find_rtl_block(std::string_view) {
  return nullptr;
}
std::unique_ptr<rtl_block> make_rtl_block(std::string_view) {
  return nullptr;
}
std::unique_ptr<rtl_block> make_rtl_block_sc(std::string_view, const char*, double, bool) {
  return nullptr;
}

}  // namespace trnsim::cosim
