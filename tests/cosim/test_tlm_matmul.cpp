// The platform side of contract v1: a matmul as TLM payloads with ap_extension,
// folded onto the 8x8 RTL tile; data against the systolic numerics per fold, cycles
// against the weight-stationary fold formula (models/engines/tensor_engine.h),
// errors as TLM error responses.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>

#include "cosim_test_util.h"
#include "models/common/ap_extension.h"
#include "models/cosim/systolic_reference.h"
#include "models/cosim/tlm_matmul.h"
#include "trnsim_rtl_blocks.h"

namespace trnsim::cosim {
namespace {

isa::AccessPattern pattern(isa::MemSpace sp, isa::DType t, uint32_t parts, uint32_t free) {
  isa::AccessPattern ap;
  ap.space = sp;
  ap.dtype = t;
  ap.partition_count = parts;
  ap.ndims = 1;
  ap.dims[0] = {1, free};
  return ap;
}

struct Operand {
  models::ap_payload p;
  std::vector<uint8_t> bytes;
  void set(const isa::AccessPattern& ap) {
    p.ext.ap = ap;
    bytes.assign(ap.bytes(), 0);
    p.gp.set_data_ptr(bytes.data());
    p.gp.set_data_length(static_cast<unsigned>(bytes.size()));
  }
};

class TlmMatmul : public ::testing::Test {
 protected:
  TlmMatmul() : rtl_(make_rtl_pe_array_8x8(), {}) {}
  // [K,M]^T @ [K,N] with random bf16; returns the response status.
  tlm::tlm_response_status run(uint32_t K, uint32_t M, uint32_t N, isa::DType st_type) {
    std::mt19937_64 rng(K * 1000 + M * 10 + N);
    w_ = test::random_bf16(rng, size_t{K} * M);
    x_ = test::random_bf16(rng, size_t{K} * N);
    st_.set(pattern(isa::MemSpace::sbuf, st_type, K, M));
    mv_.set(pattern(isa::MemSpace::sbuf, isa::DType::bf16, K, N));
    dst_.set(pattern(isa::MemSpace::psum, isa::DType::fp32, M, N));
    if (st_type == isa::DType::bf16) std::memcpy(st_.bytes.data(), w_.data(), w_.size() * 2);
    std::memcpy(mv_.bytes.data(), x_.data(), x_.size() * 2);
    delay_ = sc_core::SC_ZERO_TIME;
    stats_ = rtl_matmul_transport(rtl_, st_.p.gp, mv_.p.gp, dst_.p.gp, delay_, 1e9);
    return dst_.p.gp.get_response_status();
  }
  tile_adapter rtl_;
  std::vector<uint16_t> w_, x_;
  Operand st_, mv_, dst_;
  sc_core::sc_time delay_;
  tlm_matmul_stats stats_;
};

TEST_F(TlmMatmul, FoldsMatchReferenceAndFoldFormula) {
  const uint32_t K = 20, M = 11, N = 70;  // 3 K folds x 2 M folds on 8x8
  ASSERT_EQ(run(K, M, N, isa::DType::bf16), tlm::TLM_OK_RESPONSE) << dst_.p.ext.error;
  // ceil(20/8) * ceil(11/8) * (2*8 + 8 + 70 - 2) = 3 * 2 * 92 = 552 cycles, 552 ns at 1 GHz.
  EXPECT_EQ(stats_.rtl_cycles, 552u);
  EXPECT_EQ(stats_.tile_jobs, 6u);
  EXPECT_EQ(delay_, sc_core::sc_time(552, sc_core::SC_NS));
  // Reference: each fold through systolic_reference (zero-padded tiles), the folds
  // summed in order as fp32.
  for (uint32_t m0 = 0; m0 < M; m0 += 8) {
    std::vector<float> acc(8 * N, 0.0f);
    for (uint32_t k0 = 0; k0 < K; k0 += 8) {
      std::vector<uint16_t> w(64, 0), x(size_t{N} * 8, 0);
      for (uint32_t r = 0; r < 8 && k0 + r < K; ++r) {
        for (uint32_t c = 0; c < 8 && m0 + c < M; ++c) w[r * 8 + c] = w_[(k0 + r) * M + m0 + c];
        for (uint32_t j = 0; j < N; ++j) x[j * 8 + r] = x_[(k0 + r) * N + j];
      }
      const auto o = systolic_reference(w, 8, 8, x, N);
      for (size_t i = 0; i < acc.size(); ++i)
        acc[i] = k0 == 0 ? std::bit_cast<float>(o[i]) : acc[i] + std::bit_cast<float>(o[i]);
    }
    for (uint32_t c = 0; c < 8 && m0 + c < M; ++c)
      for (uint32_t j = 0; j < N; ++j) {
        float got;
        std::memcpy(&got, dst_.bytes.data() + ((m0 + c) * N + j) * 4, 4);
        ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(acc[j * 8 + c]))
            << "row " << m0 + c << " col " << j;
      }
  }
}

TEST_F(TlmMatmul, WrongDtypeIsATlmError) {
  EXPECT_EQ(run(8, 8, 4, isa::DType::fp32), tlm::TLM_GENERIC_ERROR_RESPONSE);
  EXPECT_NE(dst_.p.ext.error.find("rtl pe_array_8x8: the RTL PE array takes bf16"),
            std::string::npos)
      << dst_.p.ext.error;
}

}  // namespace
}  // namespace trnsim::cosim
