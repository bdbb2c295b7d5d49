// Platform side of contract v1 for the tensor engine's PE array: a matmul arrives
// as the payloads the C++ data path handles, TLM-2.0 generic payloads each carrying
// an ap_extension (models/common/ap_extension.h): the stationary [K, M] and moving
// [K, N] SBUF reads (bf16, data packed in iteration order) and the PSUM write
// [M, N] (fp32) to fill. The RTL runs it as ceil(K/R) x ceil(M/C) tile jobs (K on
// the array rows, M on its columns, N streamed); K folds are summed in fold order in
// fp32 (IEEE, as PSUM accumulates); the PSUM write keeps its own accumulate flag.
// The elapsed RTL cycles, ceil(K/R) ceil(M/C) (2R + C + N - 2) without back-pressure
// (issue 3's fold formula), are added to `delay` at `clock_hz`. Errors (dtype,
// shape, watchdog, protocol) become TLM_GENERIC_ERROR_RESPONSE on `dst` with the
// message in its ap_extension::error, as a C++ target reports them.
#pragma once

#include <cstdint>
#include <tlm>

#include "models/cosim/tile_adapter.h"

namespace trnsim::cosim {

struct tlm_matmul_stats {
  uint64_t rtl_cycles = 0;  // of this matmul
  uint64_t tile_jobs = 0;
};

tlm_matmul_stats rtl_matmul_transport(tile_adapter& rtl, tlm::tlm_generic_payload& stationary,
                                      tlm::tlm_generic_payload& moving,
                                      tlm::tlm_generic_payload& dst, sc_core::sc_time& delay,
                                      double clock_hz);

}  // namespace trnsim::cosim
