// Shared helpers for the SystemC model tests: access-pattern and instruction
// builders, a TLM driver module, semaphore probes and byte/float helpers.
//
// SystemC elaborates once per process: every TEST builds its harness modules once
// and calls sc_start; ctest runs each test in its own process. Never run these
// binaries without a --gtest_filter naming a single test.
#pragma once

#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "models/common/ap_extension.h"
#include "models/common/semaphores.h"
#include "models/isa/access_pattern.h"
#include "models/isa/dtype.h"
#include "models/isa/instruction.h"

namespace trnsim::test {

// Keeps SystemC's banner out of the test output; runs before any test builds a module.
class quiet_systemc_env : public ::testing::Environment {
 public:
  void SetUp() override { setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1); }
};
inline ::testing::Environment* const kQuietSystemc =
    ::testing::AddGlobalTestEnvironment(new quiet_systemc_env);

inline sc_core::sc_time ns(double v) {
  return sc_core::sc_time(v, sc_core::SC_NS);
}
inline sc_core::sc_time now() {
  return sc_core::sc_time_stamp();
}

// ---- Access patterns ----

inline isa::AccessPattern pattern(isa::MemSpace s, isa::DType t, uint32_t pstart, uint32_t parts,
                                  int64_t pstride, uint64_t offset,
                                  std::initializer_list<isa::Dim> dims) {
  isa::AccessPattern ap;
  ap.space = s;
  ap.dtype = t;
  ap.partition_start = pstart;
  ap.partition_count = parts;
  ap.partition_stride = pstride;
  ap.offset = offset;
  ap.ndims = static_cast<uint8_t>(dims.size());
  int i = 0;
  for (const auto& d : dims) ap.dims[i++] = d;
  return ap;
}
// sbuf[pstart:pstart+parts, offset, t, dims...]
inline isa::AccessPattern sb(uint32_t pstart, uint32_t parts, uint64_t offset, isa::DType t,
                             std::initializer_list<isa::Dim> dims = {}) {
  return pattern(isa::MemSpace::sbuf, t, pstart, parts, 0, offset, dims);
}
// psum[pstart:pstart+parts, offset, t, dims...]
inline isa::AccessPattern ps(uint32_t pstart, uint32_t parts, uint64_t offset, isa::DType t,
                             std::initializer_list<isa::Dim> dims = {}) {
  return pattern(isa::MemSpace::psum, t, pstart, parts, 0, offset, dims);
}
// hbm[rows x pstride, offset, t, dims...]
inline isa::AccessPattern hb(uint32_t rows, int64_t pstride, uint64_t offset, isa::DType t,
                             std::initializer_list<isa::Dim> dims = {}) {
  return pattern(isa::MemSpace::hbm, t, 0, rows, pstride, offset, dims);
}

// ---- Instructions ----

inline isa::Instruction instr(isa::Opcode op, const isa::AccessPattern& dst,
                              std::initializer_list<isa::AccessPattern> srcs = {}) {
  isa::Instruction in;
  in.op = op;
  in.dst = dst;
  for (const auto& s : srcs) in.src[in.nsrc++] = s;
  return in;
}
inline isa::Instruction nop() {
  return isa::Instruction{};
}
inline isa::Instruction dma_copy(const isa::AccessPattern& dst, const isa::AccessPattern& src) {
  return instr(isa::Opcode::dma_copy, dst, {src});
}
inline isa::Instruction with_wait(isa::Instruction in, uint16_t sem, uint32_t value) {
  in.waits.push_back({sem, value});
  return in;
}
inline isa::Instruction with_signal(isa::Instruction in, uint16_t sem, uint32_t inc = 1,
                                    isa::SignalWhen when = isa::SignalWhen::done) {
  in.signals.push_back({sem, inc, when});
  return in;
}
inline isa::ScalarOperand imm(float v) {
  isa::ScalarOperand s;
  s.imm = v;
  return s;
}
inline isa::ScalarOperand per_partition(const isa::AccessPattern& ap) {
  isa::ScalarOperand s;
  s.is_ap = true;
  s.ap = ap;
  return s;
}

// ---- Bytes ----

inline float f32_at(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void put_f32(uint8_t* p, float v) {
  std::memcpy(p, &v, 4);
}
inline uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
inline std::vector<float> bytes_f32(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

// ---- A TLM initiator that runs a test body in its own SC_THREAD ----

class driver : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<driver> socket;
  std::function<void()> body;  // runs at time 0 in this module's thread

  explicit driver(const sc_core::sc_module_name& name) : sc_module(name), socket("socket") {
    SC_HAS_PROCESS(driver);
    SC_THREAD(run);
  }

  // One access-pattern transaction; returns the delay the target annotated on top
  // of `delay_in`. Throws std::runtime_error on an error response.
  sc_core::sc_time read(const isa::AccessPattern& ap, void* data,
                        sc_core::sc_time delay_in = sc_core::SC_ZERO_TIME) {
    models::ap_transport(socket, tlm::TLM_READ_COMMAND, ap, static_cast<uint8_t*>(data), delay_in);
    return delay_in;
  }
  sc_core::sc_time write(const isa::AccessPattern& ap, const void* data, bool accumulate = false,
                         sc_core::sc_time delay_in = sc_core::SC_ZERO_TIME) {
    models::ap_transport(socket, tlm::TLM_WRITE_COMMAND, ap,
                         static_cast<uint8_t*>(const_cast<void*>(data)), delay_in, accumulate);
    return delay_in;
  }
  sc_core::sc_time timing_only(tlm::tlm_command cmd, const isa::AccessPattern& ap) {
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    models::ap_transport(socket, cmd, ap, nullptr, d, false, true);
    return d;
  }
  // The message of the std::runtime_error `f` throws; "" when it does not throw.
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

 private:
  void run() {
    if (body) body();
  }
};

// ---- Semaphore probes ----

// Spawns a thread that records the simulated time at which semaphore `id` first
// reaches 1, 2, ..., n. Call during elaboration (before sc_start).
inline void record_semaphore(models::semaphores& sems, uint16_t id, uint32_t n,
                             std::vector<sc_core::sc_time>* out) {
  sc_core::sc_spawn(
      [&sems, id, n, out] {
        for (uint32_t v = 1; v <= n; ++v) {
          sems.wait_ge(id, v);
          out->push_back(sc_core::sc_time_stamp());
        }
      },
      sc_core::sc_gen_unique_name("sem_probe"));
}

// Spawns a thread that increments semaphore `id` by `inc` at simulated time `at`.
inline void increment_at(models::semaphores& sems, uint16_t id, uint32_t inc, sc_core::sc_time at) {
  sc_core::sc_spawn(
      [&sems, id, inc, at] {
        sc_core::wait(at);
        sems.increment(id, inc);
      },
      sc_core::sc_gen_unique_name("sem_source"));
}

inline std::vector<sc_core::sc_time> times_ns(std::initializer_list<double> v) {
  std::vector<sc_core::sc_time> out;
  for (double x : v) out.push_back(ns(x));
  return out;
}

}  // namespace trnsim::test
