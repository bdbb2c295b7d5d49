// Platform side of contract v1 for the tensor engine's PE array: a matmul arrives
// as the payloads the C++ data path handles, TLM-2.0 generic payloads each carrying
// an ap_extension (models/common/ap_extension.h): the stationary [K, M] and moving
// [K, N] SBUF reads (bf16, data packed in iteration order) and the PSUM write
// [M, N] (fp32) to fill. The RTL runs it as ceil(K/R) x ceil(M/C) tile jobs (K on
// the array rows, M on its columns, N streamed); K folds are summed in fold order in
// fp32 (IEEE, as PSUM accumulates); the PSUM write keeps its own accumulate flag.
// The elapsed RTL cycles, ceil(K/R) ceil(M/C) (2R + C + N - 2) without back-pressure
// (the weight-stationary fold formula, models/engines/tensor_engine.h), are added
// to `delay` at `clock_hz`. Errors (dtype, shape, watchdog, protocol) become
// TLM_GENERIC_ERROR_RESPONSE on `dst` with the message in its ap_extension::error,
// as a C++ target reports them.
#pragma once

#include <cstdint>
#include <functional>
#include <tlm>
#include <vector>

#include "models/cosim/tile_adapter.h"

namespace trnsim::cosim {

struct tlm_matmul_stats {
  uint64_t rtl_cycles = 0;  // of this matmul
  uint64_t tile_jobs = 0;
  uint64_t stall_cycles = 0;  // cycles a valid result was refused (back-pressure)
};

tlm_matmul_stats rtl_matmul_transport(tile_adapter& rtl, tlm::tlm_generic_payload& stationary,
                                      tlm::tlm_generic_payload& moving,
                                      tlm::tlm_generic_payload& dst, sc_core::sc_time& delay,
                                      double clock_hz);

// One tile job: weights w[r * C + c] and S vectors x[j * R + r] (bf16 bits) ->
// out[j * C + c] (fp32 bits). Returns false with `error` set when it fails.
struct fold_job {
  std::vector<uint32_t> out;
  uint64_t cycles = 0, stall_cycles = 0;
  std::string error;
};
using tile_job_fn =
    std::function<bool(const std::vector<uint16_t>& w, const std::vector<uint16_t>& x,
                       uint32_t vectors, fold_job& job)>;

// The folding both the RTL path and the C++ systolic numerics use, so that they
// agree bit for bit: stationary st[k * M + m] and moving mv[k * N + n] (bf16 bits)
// on an R x C tile, ceil(K/R) x ceil(M/C) zero-padded jobs; out[m * N + n] (fp32)
// is the first fold's result plus each further fold's, in fold order (host fp32
// adds). Throws std::runtime_error with a job's error.
tlm_matmul_stats fold_matmul(const uint16_t* st, const uint16_t* mv, uint64_t K, uint64_t M,
                             uint64_t N, uint32_t R, uint32_t C, const tile_job_fn& job,
                             float* out);

}  // namespace trnsim::cosim
