// Binds a Verilator-generated contract-v1 model (class V, from `verilator --cc`) to
// rtl_block. Header-only: trnsim_add_rtl_block (cmake/TrnsimRtl.cmake) instantiates
// it in a generated source next to the model, so nothing else includes V's header.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "models/cosim/rtl_block.h"
#include "verilated.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
#endif

namespace trnsim::cosim {

namespace detail {

// Words of a Verilator port type: CData/SData/IData/QData or VlWide<N>.
template <class T>
constexpr unsigned port_words_of() {
  return std::is_integral_v<T> ? (sizeof(T) + 3) / 4 : sizeof(T) / 4;
}
// Verilator 5 declares ports as references into the model's storage.
template <class T>
constexpr unsigned port_words() {
  return port_words_of<std::remove_cvref_t<T>>();
}

template <class T>
inline void put(T& port, const std::vector<uint32_t>& w) {
  if constexpr (std::is_integral_v<T>) {
    uint64_t v = w[0];
    if (w.size() > 1) v |= uint64_t{w[1]} << 32;
    port = static_cast<T>(v);
  } else {
    std::memcpy(port.data(), w.data(), sizeof(T));
  }
}

template <class T>
inline void get(const T& port, std::vector<uint32_t>& w) {
  if constexpr (std::is_integral_v<T>) {
    const uint64_t v = port;
    w[0] = static_cast<uint32_t>(v);
    if (w.size() > 1) w[1] = static_cast<uint32_t>(v >> 32);
  } else {
    std::memcpy(w.data(), port.data(), sizeof(T));
  }
}

}  // namespace detail

template <class V>
class verilated_block final : public rtl_block {
 public:
  explicit verilated_block(std::string name)
      : rtl_block(std::move(name), 32 * detail::port_words<decltype(V::st_data)>(),
                  32 * detail::port_words<decltype(V::mv_data)>(),
                  32 * detail::port_words<decltype(V::res_data)>()),
        ctx_(std::make_unique<VerilatedContext>()) {
    ctx_->traceEverOn(true);
    model_ = std::make_unique<V>(ctx_.get(), "top");
  }
  ~verilated_block() override {
    close_trace();
    model_->final();
  }

  void eval() override {
    V& m = *model_;
    m.clk = in.clk;
    m.rst_n = in.rst_n;
    m.st_valid = in.st_valid;
    m.st_last = in.st_last;
    detail::put(m.st_data, in.st_data);
    m.mv_valid = in.mv_valid;
    m.mv_last = in.mv_last;
    detail::put(m.mv_data, in.mv_data);
    m.res_ready = in.res_ready;
    m.eval();
    out.st_ready = m.st_ready;
    out.mv_ready = m.mv_ready;
    out.res_valid = m.res_valid;
    out.res_last = m.res_last;
    out.err = m.err;
    detail::get(m.res_data, out.res_data);
  }

#if VM_TRACE_FST
  bool open_trace(const std::string& path, int levels) override {
    if constexpr (requires(V & v, VerilatedFstC * t) { v.trace(t, 0); }) {
      close_trace();
      trace_ = std::make_unique<VerilatedFstC>();
      // Scope depth as $dumpvars counts it, below the model's root "top" (trace()'s
      // level argument is ignored by Verilator 5; an empty root crashes 5.006's FST).
      if (levels > 0) trace_->dumpvars(levels, "top");
      model_->trace(trace_.get(), 99);
      trace_->open(path.c_str());
      return trace_->isOpen();
    }
    return false;
  }
  void close_trace() override {
    if (trace_) trace_->close();
    trace_.reset();
  }
  void dump_trace(uint64_t t) override {
    if (trace_) trace_->dump(t);
  }

 private:
  std::unique_ptr<VerilatedFstC> trace_;
#endif

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<V> model_;
};

}  // namespace trnsim::cosim
