#include "models/cosim/tlm_matmul.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "models/common/ap_extension.h"

namespace trnsim::cosim {
namespace {

using models::ap_extension;

ap_extension& ext_of(tlm::tlm_generic_payload& gp, const char* what) {
  ap_extension* e = gp.get_extension<ap_extension>();
  if (!e) throw std::invalid_argument(std::string(what) + " payload has no ap_extension");
  return *e;
}

}  // namespace

tlm_matmul_stats fold_matmul(const uint16_t* st, const uint16_t* mv, uint64_t K, uint64_t M,
                             uint64_t N, uint32_t R, uint32_t C, const tile_job_fn& job,
                             float* out) {
  tlm_matmul_stats stats;
  std::vector<uint16_t> w(size_t{R} * C), x(size_t{N} * R);
  fold_job t;
  for (uint64_t m0 = 0; m0 < M; m0 += C)
    for (uint64_t k0 = 0; k0 < K; k0 += R) {
      // Zero-padded tile: rows k0.. of the stationary columns m0.., and the moving
      // vectors' matching rows.
      std::fill(w.begin(), w.end(), 0);
      std::fill(x.begin(), x.end(), 0);
      for (uint64_t r = 0; r < R && k0 + r < K; ++r) {
        for (uint64_t c = 0; c < C && m0 + c < M; ++c) w[r * C + c] = st[(k0 + r) * M + m0 + c];
        for (uint64_t j = 0; j < N; ++j) x[j * R + r] = mv[(k0 + r) * N + j];
      }
      if (!job(w, x, static_cast<uint32_t>(N), t)) throw std::runtime_error(t.error);
      stats.rtl_cycles += t.cycles;
      stats.stall_cycles += t.stall_cycles;
      ++stats.tile_jobs;
      for (uint64_t c = 0; c < C && m0 + c < M; ++c)
        for (uint64_t j = 0; j < N; ++j) {
          float& o = out[(m0 + c) * N + j];
          const float v = std::bit_cast<float>(t.out[j * C + c]);
          o = k0 == 0 ? v : o + v;
        }
    }
  return stats;
}

tlm_matmul_stats rtl_matmul_transport(tile_adapter& rtl, tlm::tlm_generic_payload& stationary,
                                      tlm::tlm_generic_payload& moving,
                                      tlm::tlm_generic_payload& dst, sc_core::sc_time& delay,
                                      double clock_hz) {
  tlm_matmul_stats st;
  ap_extension* dext = dst.get_extension<ap_extension>();
  try {
    const ap_extension& se = ext_of(stationary, "stationary");
    const ap_extension& me = ext_of(moving, "moving");
    if (!dext) throw std::invalid_argument("dst payload has no ap_extension");
    if (se.ap.dtype != isa::DType::bf16 || me.ap.dtype != isa::DType::bf16 ||
        dext->ap.dtype != isa::DType::fp32)
      throw std::invalid_argument(
          "the RTL PE array takes bf16 stationary and moving operands "
          "and writes fp32, got " +
          std::string(isa::dtype_name(se.ap.dtype)) + " x " +
          std::string(isa::dtype_name(me.ap.dtype)) + " -> " +
          std::string(isa::dtype_name(dext->ap.dtype)));
    const uint64_t K = se.ap.partition_count, M = se.ap.free_elems(), N = me.ap.free_elems();
    if (me.ap.partition_count != K || dext->ap.partition_count != M || dext->ap.free_elems() != N)
      throw std::invalid_argument("matmul shapes disagree: stationary [" + std::to_string(K) + "," +
                                  std::to_string(M) + "], moving [" +
                                  std::to_string(me.ap.partition_count) + "," + std::to_string(N) +
                                  "], dst [" + std::to_string(dext->ap.partition_count) + "," +
                                  std::to_string(dext->ap.free_elems()) + "]");
    if (stationary.get_data_length() < K * M * 2 || moving.get_data_length() < K * N * 2 ||
        dst.get_data_length() < M * N * 4)
      throw std::invalid_argument("payload data shorter than its access pattern");
    if (N == 0 || N > UINT32_MAX) throw std::invalid_argument("moving free size out of range");
    // The payloads' data need not be aligned for uint16_t.
    std::vector<uint16_t> sv(K * M), mvv(K * N);
    std::memcpy(sv.data(), stationary.get_data_ptr(), sv.size() * 2);
    std::memcpy(mvv.data(), moving.get_data_ptr(), mvv.size() * 2);
    std::vector<float> out(M * N, 0.0f);
    const auto job = [&rtl](const std::vector<uint16_t>& w, const std::vector<uint16_t>& x,
                            uint32_t vectors, fold_job& j) {
      tile_run t = rtl.run_tile(w, x, vectors);
      j.out = std::move(t.out);
      j.cycles = t.cycles;
      j.stall_cycles = t.stall_cycles;
      j.error = std::move(t.error);
      return t.ok;
    };
    st = fold_matmul(sv.data(), mvv.data(), K, M, N, rtl.opts().rows, rtl.opts().cols, job,
                     out.data());
    std::memcpy(dst.get_data_ptr(), out.data(), out.size() * 4);
    delay += sc_core::sc_time(double(st.rtl_cycles) / clock_hz, sc_core::SC_SEC);
    dst.set_response_status(tlm::TLM_OK_RESPONSE);
  } catch (const std::exception& e) {
    if (dext) dext->error = std::string("rtl ") + rtl.block().name() + ": " + e.what();
    dst.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
  }
  return st;
}

}  // namespace trnsim::cosim
