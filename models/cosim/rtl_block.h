// A verilated block with the contract-v1 pins (docs/rtl-cosim.md), seen from C++:
// plain fields for every pin and an eval() that moves them through the model. The
// adapters and the protocol checker work on this class only, so they do not depend
// on any particular Verilator-generated class (verilated_block.h binds one).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trnsim::cosim {

// Pin values of one cycle. Wide data buses are 32-bit words, least significant first.
struct pins_in {
  bool clk = false, rst_n = false;
  bool st_valid = false, st_last = false;
  bool mv_valid = false, mv_last = false;
  bool res_ready = false;
  std::vector<uint32_t> st_data, mv_data;
};
struct pins_out {
  bool st_ready = false, mv_ready = false;
  bool res_valid = false, res_last = false;
  bool err = false;
  std::vector<uint32_t> res_data;
};

class rtl_block {
 public:
  rtl_block(std::string name, unsigned st_bits, unsigned mv_bits, unsigned res_bits);
  virtual ~rtl_block();
  rtl_block(const rtl_block&) = delete;
  rtl_block& operator=(const rtl_block&) = delete;

  const std::string& name() const { return name_; }
  unsigned st_bits() const { return st_bits_; }
  unsigned mv_bits() const { return mv_bits_; }
  unsigned res_bits() const { return res_bits_; }

  // Copies `in` to the model's input ports, evaluates it, copies its outputs to `out`.
  virtual void eval() = 0;
  // FST waveform of the whole model to `path` (scope depth `levels`, 0 = all); false
  // when the block was built without trace support.
  virtual bool open_trace(const std::string& path, int levels) { return false; }
  virtual void close_trace() {}
  // Dumps the current values at time `t` (in clock half-periods) when tracing.
  virtual void dump_trace(uint64_t t) {}

  pins_in in;
  pins_out out;

 private:
  std::string name_;
  unsigned st_bits_, mv_bits_, res_bits_;
};

// Words a bus of `bits` bits takes.
inline size_t bus_words(unsigned bits) {
  return (bits + 31) / 32;
}

}  // namespace trnsim::cosim
