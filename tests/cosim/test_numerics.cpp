// How the systolic numerics (the RTL's) relate to the tensor engine's matmul
// (models/engines/alu.cpp, an fp32 sgemm): for one fold on normal bf16 data the two
// give the same bits, since bf16 products are exact in fp32 and both sum in K order
// from +0; over several folds they may differ in the last bits (summation order).
#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "cosim_test_util.h"
#include "models/cosim/systolic_reference.h"
#include "models/engines/alu.h"
#include "models/isa/dtype.h"

namespace trnsim::cosim {
namespace {

isa::AccessPattern shape(uint32_t parts, uint32_t free) {
  isa::AccessPattern ap;
  ap.partition_count = parts;
  ap.ndims = 1;
  ap.dims[0] = {1, free};
  return ap;
}

// The engine's matmul of st[K,M]^T @ mv[K,N], from bf16 bits.
std::vector<float> engine_matmul(const std::vector<uint16_t>& st, const std::vector<uint16_t>& mv,
                                 uint32_t K, uint32_t M, uint32_t N) {
  isa::Instruction in;
  in.op = isa::Opcode::matmul;
  in.src[0] = shape(K, M);
  in.src[1] = shape(K, N);
  in.nsrc = 2;
  in.dst = shape(M, N);
  models::ExecArgs a;
  a.src[0].resize(K, M);
  a.src[1].resize(K, N);
  for (size_t i = 0; i < st.size(); ++i) a.src[0].v[i] = isa::bf16_to_fp32(st[i]);
  for (size_t i = 0; i < mv.size(); ++i) a.src[1].v[i] = isa::bf16_to_fp32(mv[i]);
  models::ExecResult r;
  models::execute(in, a, r);
  return r.dst.v;
}

TEST(Numerics, OneFoldMatchesTheEngineMatmulBitForBit) {
  std::mt19937_64 rng(21);
  for (uint32_t n : {8u, 16u}) {
    const uint32_t S = 96;
    // The stationary [K=n, M=n] is the weight tile itself: w[r][c] = st[k=r][m=c].
    const auto w = test::random_bf16(rng, size_t{n} * n);
    const auto x = test::random_bf16(rng, size_t{S} * n);  // x[j][r]
    std::vector<uint16_t> mv(size_t{n} * S);               // mv[k][j] = x[j][k]
    for (uint32_t j = 0; j < S; ++j)
      for (uint32_t r = 0; r < n; ++r) mv[size_t{r} * S + j] = x[size_t{j} * n + r];
    const auto sys = systolic_reference(w, n, n, x, S);  // [j][c]
    const auto eng = engine_matmul(w, mv, n, n, S);      // [m=c][j]
    for (uint32_t j = 0; j < S; ++j)
      for (uint32_t c = 0; c < n; ++c)
        ASSERT_EQ(sys[size_t{j} * n + c], std::bit_cast<uint32_t>(eng[size_t{c} * S + j]))
            << n << "x" << n << " vector " << j << " column " << c;
  }
}

}  // namespace
}  // namespace trnsim::cosim
