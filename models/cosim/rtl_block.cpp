#include "models/cosim/rtl_block.h"

namespace trnsim::cosim {

rtl_block::rtl_block(std::string name, unsigned st_bits, unsigned mv_bits, unsigned res_bits)
    : name_(std::move(name)), st_bits_(st_bits), mv_bits_(mv_bits), res_bits_(res_bits) {
  in.st_data.assign(bus_words(st_bits), 0);
  in.mv_data.assign(bus_words(mv_bits), 0);
  out.res_data.assign(bus_words(res_bits), 0);
}

rtl_block::~rtl_block() = default;

}  // namespace trnsim::cosim
