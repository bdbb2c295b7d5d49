#include "models/cosim/tensor_datapath.h"

#include <bit>
#include <cstring>
#include <stdexcept>

#include "models/common/ap_extension.h"
#include "models/cosim/systolic_reference.h"

namespace trnsim::cosim {
namespace {

// The bf16 bits of a tile the engine read from bf16 data: the fp32 image of a bf16
// value has zero low 16 bits, so the conversion back is exact.
void to_bf16(const models::Tile& t, std::vector<uint16_t>& out) {
  out.resize(t.v.size());
  for (size_t i = 0; i < t.v.size(); ++i)
    out[i] = static_cast<uint16_t>(std::bit_cast<uint32_t>(t.v[i]) >> 16);
}

void check_dtypes(const isa::Instruction& in, const char* who) {
  const isa::DType s = in.src[0].dtype, m = in.src[1].dtype;
  if (s != isa::DType::bf16 || m != isa::DType::bf16 || in.dst.dtype != isa::DType::fp32)
    throw std::runtime_error(std::string(who) + " takes bf16 stationary and moving operands " +
                             "and writes fp32, got " + std::string(isa::dtype_name(s)) + " x " +
                             std::string(isa::dtype_name(m)) + " -> " +
                             std::string(isa::dtype_name(in.dst.dtype)));
}

}  // namespace

uint64_t systolic_datapath::matmul(const isa::Instruction& in, const models::Tile& stationary,
                                   const models::Tile& moving, models::Tile& dst) {
  check_dtypes(in, "numerics: systolic (the PE array's numerics)");
  const uint64_t K = stationary.parts, M = stationary.cols, N = moving.cols;
  to_bf16(stationary, st_);
  to_bf16(moving, mv_);
  dst.parts = static_cast<uint32_t>(M);
  dst.cols = N;
  dst.v.resize(M * N);
  const auto job = [](const std::vector<uint16_t>& w, const std::vector<uint16_t>& x,
                      uint32_t vectors, fold_job& j) {
    const uint32_t R = static_cast<uint32_t>(x.size() / vectors);
    j.out = systolic_reference(w, R, static_cast<uint32_t>(w.size() / R), x, vectors);
    return true;
  };
  fold_matmul(st_.data(), mv_.data(), K, M, N, rows_, cols_, job, dst.v.data());
  return 0;
}

rtl_datapath::rtl_datapath(std::unique_ptr<tile_adapter> rtl, double clock_hz, bool timed)
    : rtl_(std::move(rtl)), clock_hz_(clock_hz), timed_(timed) {}

uint64_t rtl_datapath::matmul(const isa::Instruction& in, const models::Tile& stationary,
                              const models::Tile& moving, models::Tile& dst) {
  const auto t0 = std::chrono::steady_clock::now();
  // The platform face of contract v1: the three payloads, as an SBUF/PSUM target
  // would see them, to rtl_matmul_transport().
  models::ap_payload sp, mp, dp;
  const auto set = [](models::ap_payload& p, const isa::AccessPattern& ap, uint8_t* data,
                      size_t bytes) {
    p.ext.ap = ap;
    p.gp.set_data_ptr(data);
    p.gp.set_data_length(static_cast<unsigned>(bytes));
  };
  std::vector<uint16_t> bits;
  to_bf16(stationary, bits);
  st_.resize(bits.size() * 2);
  std::memcpy(st_.data(), bits.data(), st_.size());
  to_bf16(moving, bits);
  mv_.resize(bits.size() * 2);
  std::memcpy(mv_.data(), bits.data(), mv_.size());
  const uint64_t M = stationary.cols, N = moving.cols;
  out_.assign(M * N, 0.0f);
  set(sp, in.src[0], st_.data(), st_.size());
  set(mp, in.src[1], mv_.data(), mv_.size());
  set(dp, in.dst, reinterpret_cast<uint8_t*>(out_.data()), out_.size() * 4);
  dp.ext.accumulate = in.accumulate;
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  const tlm_matmul_stats s = rtl_matmul_transport(*rtl_, sp.gp, mp.gp, dp.gp, delay, clock_hz_);
  host_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!dp.gp.is_response_ok()) throw std::runtime_error(dp.ext.error);
  cycles_ += s.rtl_cycles;
  jobs_ += s.tile_jobs;
  stalls_ += s.stall_cycles;
  dst.parts = static_cast<uint32_t>(M);
  dst.cols = N;
  dst.v = out_;
  return s.rtl_cycles;
}

void rtl_datapath::register_stats(stats::group& g) {
  g.add_counter("rtl_cycles", "cycles",
                "RTL clock cycles of the matmuls the block ran (first weight handshake to last "
                "result, per tile job, summed)",
                &cycles_);
  g.add_counter("tile_jobs", "jobs", "tile jobs (one stationary tile, one stream of vectors)",
                &jobs_);
  g.add_counter("stall_cycles", "cycles", "cycles a valid result was refused (back-pressure)",
                &stalls_);
  g.add_value("host_seconds", "s", "host time spent in the RTL (adapter, pins and model)",
              &host_s_);
  g.add("rtl_cycles_per_host_second", "cycles/s", "RTL simulation speed: rtl_cycles / host_seconds",
        [this] { return host_s_ > 0 ? double(cycles_) / host_s_ : 0.0; });
  g.add_fixed("clock_hz", "Hz", "the block's clock, at which its cycles become time", clock_hz_);
}

}  // namespace trnsim::cosim
