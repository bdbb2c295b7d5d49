// Binds a `verilator --sc` contract-v1 model (SystemC module V) to rtl_block for the
// timed adapter mode: a clock signal drives the model's clk, and eval() follows it
// in SystemC time, so it must be called from an SC_THREAD. With in.clk low, eval()
// writes the inputs and returns at the falling edge with the settled outputs; with
// in.clk high it returns at the next rising edge. The protocol engine, which calls
// eval() twice per cycle, then moves one clock period of SystemC time per cycle.
// The clock is either
// - free-running: a real sc_clock, for pin-level neighbours; the simulation then
//   never runs out of events (stop it with sc_stop), or
// - gated: eval() drives the clock signal itself, half a period per call, so it
//   toggles only while a job runs and a platform's sc_start() still returns when the
//   work is done. Same edges, same SystemC time per cycle.
// Header-only, instantiated by trnsim_add_rtl_block(... SYSTEMC).
#pragma once

#include <systemc>
using sc_core::sc_time_stamp;  // verilated.h after <systemc> expects it unqualified

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "models/cosim/rtl_block.h"
#include "verilated.h"

namespace trnsim::cosim {

namespace detail {

// Value type of a Verilator SystemC port (sc_in<T>& / sc_out<T>&).
template <class P>
using sc_port_value = typename std::remove_cvref_t<P>::data_type;

template <class T>
constexpr unsigned sc_words() {
  if constexpr (std::is_same_v<T, bool>)
    return 1;
  else if constexpr (std::is_integral_v<T>)
    return (sizeof(T) + 3) / 4;
  else
    return (T().length() + 31) / 32;
}

template <class T>
T to_sc(const std::vector<uint32_t>& w) {
  if constexpr (std::is_integral_v<T>) {
    uint64_t v = w[0];
    if (w.size() > 1) v |= uint64_t{w[1]} << 32;
    return static_cast<T>(v);
  } else {
    T v;
    for (size_t i = 0; i < w.size(); ++i) v.set_word(static_cast<int>(i), w[i]);
    return v;
  }
}

template <class T>
void from_sc(const T& v, std::vector<uint32_t>& w) {
  if constexpr (std::is_integral_v<T>) {
    const uint64_t u = v;
    w[0] = static_cast<uint32_t>(u);
    if (w.size() > 1) w[1] = static_cast<uint32_t>(u >> 32);
  } else {
    for (size_t i = 0; i < w.size(); ++i) w[i] = v.get_word(static_cast<int>(i));
  }
}

}  // namespace detail

template <class V>
class timed_block final : public rtl_block, public sc_core::sc_module {
  using st_t = detail::sc_port_value<decltype(V::st_data)>;
  using mv_t = detail::sc_port_value<decltype(V::mv_data)>;
  using res_t = detail::sc_port_value<decltype(V::res_data)>;

 public:
  timed_block(const sc_core::sc_module_name& name, double clock_hz, bool gated_clock = false)
      : rtl_block(std::string(static_cast<const char*>(name)), 32 * detail::sc_words<st_t>(),
                  32 * detail::sc_words<mv_t>(), 32 * detail::sc_words<res_t>()),
        sc_core::sc_module(name),
        half_(sc_core::sc_time(0.5 / clock_hz, sc_core::SC_SEC)),
        model_("rtl") {
    if (gated_clock) {
      model_.clk(gated_clk_);
    } else {
      clk_ = std::make_unique<sc_core::sc_clock>("clk", half_ * 2.0);
      model_.clk(*clk_);
    }
    model_.rst_n(rst_n_);
    model_.st_valid(st_valid_);
    model_.st_ready(st_ready_);
    model_.st_data(st_data_);
    model_.st_last(st_last_);
    model_.mv_valid(mv_valid_);
    model_.mv_ready(mv_ready_);
    model_.mv_data(mv_data_);
    model_.mv_last(mv_last_);
    model_.res_valid(res_valid_);
    model_.res_ready(res_ready_);
    model_.res_data(res_data_);
    model_.res_last(res_last_);
    model_.err(err_);
  }
  ~timed_block() override { model_.final(); }

  void eval() override {
    if (in.clk) {
      if (clk_) {
        wait(clk_->posedge_event());
      } else {
        gated_clk_.write(true);
        wait(half_);
      }
      return;
    }
    rst_n_.write(in.rst_n);
    st_valid_.write(in.st_valid);
    st_last_.write(in.st_last);
    st_data_.write(detail::to_sc<st_t>(in.st_data));
    mv_valid_.write(in.mv_valid);
    mv_last_.write(in.mv_last);
    mv_data_.write(detail::to_sc<mv_t>(in.mv_data));
    res_ready_.write(in.res_ready);
    // Half a period: the combinational outputs settle.
    if (clk_) {
      wait(clk_->negedge_event());
    } else {
      gated_clk_.write(false);
      wait(half_);
    }
    out.st_ready = st_ready_.read();
    out.mv_ready = mv_ready_.read();
    out.res_valid = res_valid_.read();
    out.res_last = res_last_.read();
    out.err = err_.read();
    detail::from_sc(res_data_.read(), out.res_data);
  }

 private:
  sc_core::sc_time half_;                       // half a clock period
  std::unique_ptr<sc_core::sc_clock> clk_;      // free-running, or
  sc_core::sc_signal<bool> gated_clk_{"gclk"};  // driven by eval()
  sc_core::sc_signal<bool> rst_n_{"rst_n"}, st_valid_{"st_valid"}, st_ready_{"st_ready"},
      st_last_{"st_last"}, mv_valid_{"mv_valid"}, mv_ready_{"mv_ready"}, mv_last_{"mv_last"},
      res_valid_{"res_valid"}, res_ready_{"res_ready"}, res_last_{"res_last"}, err_{"err"};
  sc_core::sc_signal<st_t> st_data_{"st_data"};
  sc_core::sc_signal<mv_t> mv_data_{"mv_data"};
  sc_core::sc_signal<res_t> res_data_{"res_data"};
  V model_;
};

}  // namespace trnsim::cosim
