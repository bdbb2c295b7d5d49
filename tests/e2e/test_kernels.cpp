// Kernels built with the kernel-builder API (compiler/kernels/), compiled by the
// back end (compiler/passes/, compiler/codegen/), run on the simulated chip through
// the runtime and compared with plain C++ references; plus the sync checker (a
// happens-before analysis of the generated program's semaphores) and the simulated
// tensor-engine utilisation of a bf16 GEMM on trn2. SystemC elaborates once per
// process, so each test builds at most one Device (ctest runs each test alone).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/kernels/builder.h"
#include "compiler/kernels/library.h"
#include "compiler/target.h"
#include "compiler/tile/cost.h"
#include "compiler/tile/deps.h"
#include "models/isa/assembler.h"
#include "platform/config.h"
#include "runtime/device.h"
#include "runtime/target_from_config.h"
#include "tests/e2e/reference.h"

namespace trnsim::e2e {
namespace {

using isa::AluOp;
using isa::DType;
using isa::MemSpace;
using kernels::all;
using kernels::Builder;
using kernels::sl;
using runtime::HostTensor;

// The compiler's view of a platform, as the runtime fills it.
compiler::Target target_from(const platform::platform_config& c) {
  return runtime::target_from_config(c);
}

HostTensor random_tensor(const std::vector<int64_t>& shape, DType t, uint32_t seed, float lo,
                         float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return HostTensor::from_float(shape, t, v);
}

const HostTensor& output(const runtime::LaunchResult& l, const std::string& name) {
  auto it = l.outputs.find(name);
  if (it == l.outputs.end()) throw std::runtime_error("launch has no output '" + name + "'");
  return it->second;
}

// ---- the sync checker --------------------------------------------------------------
//
// Happens-before over the generated program: every semaphore must be signalled (at
// completion) from one queue only, so "s >= v" means the instruction of that queue
// whose increments bring s to v, and all before it on the queue, have completed.
// Vector clocks give, for each instruction, the last instruction of every queue
// known complete before it starts. Then every pair of ops that conflict (same
// memory, one writes; brute force over all pairs, independent of the compiler's own
// dependency analysis) must be ordered: same queue in list order, or the later
// one's clock covers the earlier one.
struct SyncCheck {
  size_t pairs = 0;                    // conflicting pairs checked
  size_t cross_pairs = 0;              // ... on different queues
  size_t waits = 0;                    // waits in the program
  std::vector<std::string> unordered;  // failures
};

SyncCheck check_sync(const codegen::CompileResult& r) {
  SyncCheck out;
  const isa::Program& p = r.program;
  const tile::Kernel& k = r.kernel;
  const size_t nq = p.queues.size();
  std::map<std::string, size_t> qidx;
  for (size_t i = 0; i < nq; ++i) qidx[p.queues[i].label()] = i;
  // Semaphore -> (queue, cumulative increments after each instruction).
  std::map<uint16_t, size_t> sig_queue;
  std::vector<std::map<uint16_t, std::vector<uint32_t>>> cum(nq);
  for (size_t q = 0; q < nq; ++q) {
    const auto& ins = p.queues[q].instrs;
    for (size_t i = 0; i < ins.size(); ++i)
      for (const isa::SemSignal& s : ins[i].signals) {
        EXPECT_EQ(s.when, isa::SignalWhen::done);
        auto [it, fresh] = sig_queue.emplace(s.sem, q);
        EXPECT_EQ(it->second, q) << "semaphore s" << s.sem << " signalled from two queues";
        auto& v = cum[q][s.sem];
        v.resize(ins.size(), 0);
      }
  }
  for (size_t q = 0; q < nq; ++q)
    for (auto& [sem, v] : cum[q]) {
      uint32_t total = 0;
      const auto& ins = p.queues[q].instrs;
      for (size_t i = 0; i < ins.size(); ++i) {
        for (const isa::SemSignal& s : ins[i].signals)
          if (s.sem == sem) total += s.inc;
        v[i] = total;
      }
    }
  // Clocks, computed in any order that respects the waits (fails on deadlock).
  std::vector<std::vector<std::vector<int>>> vc(nq);
  for (size_t q = 0; q < nq; ++q) vc[q].resize(p.queues[q].instrs.size());
  std::vector<size_t> next(nq, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t q = 0; q < nq; ++q) {
      const auto& ins = p.queues[q].instrs;
      while (next[q] < ins.size()) {
        const size_t i = next[q];
        std::vector<int> c = i ? vc[q][i - 1] : std::vector<int>(nq, -1);
        if (i) c[q] = static_cast<int>(i) - 1;
        bool blocked = false;
        for (const isa::SemWait& w : ins[i].waits) {
          ++out.waits;
          auto sq = sig_queue.find(w.sem);
          if (sq == sig_queue.end()) {
            out.unordered.push_back("wait on never-signalled s" + std::to_string(w.sem));
            return out;
          }
          const auto& v = cum[sq->second][w.sem];
          size_t j = 0;
          while (j < v.size() && v[j] < w.value) ++j;
          if (j == v.size()) {
            out.unordered.push_back("wait s" + std::to_string(w.sem) +
                                    ">=" + std::to_string(w.value) + " can never be met");
            return out;
          }
          if (j >= next[sq->second]) {
            blocked = true;
            break;
          }
          for (size_t r = 0; r < nq; ++r) c[r] = std::max(c[r], vc[sq->second][j][r]);
          c[sq->second] = std::max(c[sq->second], static_cast<int>(j));
        }
        if (blocked) {
          out.waits -= 0;
          break;
        }
        vc[q][i] = c;
        ++next[q];
        progress = true;
      }
    }
  }
  out.waits = 0;
  for (const isa::Queue& q : p.queues)
    for (const isa::Instruction& in : q.instrs) out.waits += in.waits.size();
  for (size_t q = 0; q < nq; ++q)
    if (next[q] < p.queues[q].instrs.size()) {
      out.unordered.push_back("deadlock at " + p.queues[q].label() + " instruction " +
                              std::to_string(next[q]));
      return out;
    }
  // Op -> (queue, position): codegen keeps each queue's ops in list order.
  std::vector<size_t> oq(k.ops.size()), opos(k.ops.size());
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < k.ops.size(); ++i) {
    oq[i] = qidx.at(tile::queue_of(k.ops[i]).label());
    opos[i] = seen[p.queues[oq[i]].label()]++;
  }
  for (size_t b = 0; b < k.ops.size(); ++b)
    for (size_t a = 0; a < b; ++a) {
      if (!tile::ops_conflict(k, k.ops[a], k.ops[b], tile::DepMode::physical)) continue;
      ++out.pairs;
      bool ok;
      if (oq[a] == oq[b]) {
        ok = opos[a] < opos[b];
      } else {
        ++out.cross_pairs;
        ok = vc[oq[b]][opos[b]][oq[a]] >= static_cast<int>(opos[a]);
      }
      if (!ok)
        out.unordered.push_back(tile::op_label(k, k.ops[a]) + " -> " + tile::op_label(k, k.ops[b]) +
                                " not ordered");
    }
  return out;
}

codegen::CompileResult compile_for(tile::Kernel k, const platform::platform_config& cfg) {
  return codegen::compile(std::move(k), target_from(cfg));
}

void expect_synced(const codegen::CompileResult& r) {
  SyncCheck c = check_sync(r);
  EXPECT_TRUE(c.unordered.empty())
      << c.unordered.size() << " problems, first: " << (c.unordered.empty() ? "" : c.unordered[0]);
  EXPECT_GT(c.pairs, 0u);
}

// ---- matmul + bias + gelu ------------------------------------------------------------

TEST(KernelsMatmul, BiasGeluOnTiny) {
  const platform::platform_config cfg = platform::load_config("tiny");
  constexpr int M = 256, K = 384, N = 640;
  codegen::CompileResult r =
      compile_for(kernels::matmul_bias_act(M, K, N, isa::ActFunc::gelu), cfg);
  expect_synced(r);
  HostTensor a = random_tensor({M, K}, DType::bf16, 1, -1.0f, 1.0f);
  HostTensor w = random_tensor({K, N}, DType::bf16, 2, -0.1f, 0.1f);
  HostTensor b = random_tensor({1, N}, DType::fp32, 3, -0.5f, 0.5f);
  std::vector<double> want = ref_matmul_gelu(a.to_float(), w.to_float(), b.to_float(), M, K, N);
  runtime::Device dev(cfg);
  runtime::RunReport rep =
      dev.run({runtime::Launch{&r.program, {{"A", a}, {"W", w}, {"b", b}}, 0}});
  const HostTensor& c = output(rep.launches[0], "C");
  ASSERT_EQ(c.shape, (std::vector<int64_t>{M, N}));
  EXPECT_TRUE(all_close("C", c.to_float(), want, c.shape, 1e-3, 1e-3));
  std::printf("[kernels] matmul_bias_gelu on tiny: %.0f ns simulated, %zu instructions\n",
              rep.launches[0].simulated_ns, r.program.instruction_count());
}

// ---- softmax (row tails) --------------------------------------------------------------

void softmax_case(int rows, int cols, uint32_t seed) {
  const platform::platform_config cfg = platform::load_config("tiny");
  codegen::CompileResult r = compile_for(kernels::softmax(rows, cols), cfg);
  expect_synced(r);
  // Row offsets of -60..120 make a missing max subtraction overflow exp.
  HostTensor x0 = random_tensor({rows, cols}, DType::fp32, seed, -10.0f, 10.0f);
  std::vector<float> xv = x0.to_float();
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) xv[size_t(i) * cols + j] += (i % 4) * 60.0f - 60.0f;
  HostTensor x = HostTensor::from_float({rows, cols}, DType::fp32, xv);
  runtime::Device dev(cfg);
  runtime::RunReport rep = dev.run({runtime::Launch{&r.program, {{"X", x}}, 0}});
  const HostTensor& y = output(rep.launches[0], "Y");
  ASSERT_EQ(y.shape, (std::vector<int64_t>{rows, cols}));
  EXPECT_TRUE(all_close("Y", y.to_float(), ref_softmax(xv, rows, cols), y.shape, 1e-5, 1e-4));
}

TEST(KernelsSoftmax, Rows128x1000) {
  softmax_case(128, 1000, 42);
}

// 300 rows = 128 + 128 + 44: the last tile uses 44 partitions.
TEST(KernelsSoftmax, Rows300x77PartitionTail) {
  softmax_case(300, 77, 43);
}

// ---- an elementwise chain: engines chosen by the compiler ----------------------------

// Y = bf16(sigmoid(1.5 x + z) * x - max(z, 0)) over [256, 512] fp32 in two row tiles:
// per tile 6 ops for assign_engines (tensor_scalar, tensor_tensor x3, tensor_scalar,
// tensor_copy) and one activation.
tile::Kernel elementwise_chain() {
  Builder b("chain");
  auto X = b.input("X", {256, 512}, DType::fp32);
  auto Z = b.input("Z", {256, 512}, DType::fp32);
  auto Y = b.output("Y", {256, 512}, DType::bf16);
  auto in = b.pool("in", MemSpace::sbuf, 4);
  auto tmp = b.pool("tmp", MemSpace::sbuf, 4);
  auto out = b.pool("out", MemSpace::sbuf, 2);
  for (int t = 0; t < 2; ++t) {
    auto x = b.tile(in, {128, 512}, DType::fp32);
    auto z = b.tile(in, {128, 512}, DType::fp32);
    b.dma(x, X({sl(t * 128, t * 128 + 128), all()}));
    b.dma(z, Z({sl(t * 128, t * 128 + 128), all()}));
    auto u = b.tile(tmp, {128, 512}, DType::fp32);
    b.tensor_scalar(u, x, AluOp::mul, 1.5f);
    b.tensor_tensor(u, u, z, AluOp::add);
    auto s = b.tile(tmp, {128, 512}, DType::fp32);
    b.activation(s, u, isa::ActFunc::sigmoid);
    b.tensor_tensor(s, s, x, AluOp::mul);
    auto r = b.tile(tmp, {128, 512}, DType::fp32);
    b.tensor_scalar(r, z, AluOp::max, 0.0f);
    b.tensor_tensor(s, s, r, AluOp::sub);
    auto y = b.tile(out, {128, 512}, DType::bf16);
    b.tensor_copy(y, s);
    b.dma(Y({sl(t * 128, t * 128 + 128), all()}), y);
  }
  return b.finish();
}

TEST(KernelsElementwise, ChainOnBalancedEngines) {
  const platform::platform_config cfg = platform::load_config("tiny");
  codegen::CompileResult r = compile_for(elementwise_chain(), cfg);
  expect_synced(r);
  // The compiler spread the 12 auto ops over more than one engine, each one that can
  // run it, and kept the activations on scalar.
  std::map<isa::Engine, int> per;
  for (const tile::Op& op : r.kernel.ops)
    if (op.engine != isa::Engine::dma) ++per[op.engine];
  EXPECT_EQ(r.stats.at("assign_engines.assigned"), 12);  // 6 per row tile
  EXPECT_GE(per[isa::Engine::scalar], 2);
  int engines = 0;
  for (const auto& [e, n] : per) engines += n > 0;
  EXPECT_GE(engines, 2) << "the auto ops should not all land on one engine";
  for (const tile::Op& op : r.kernel.ops) {
    EXPECT_TRUE(tile::engine_can_run(op, op.engine)) << tile::op_label(r.kernel, op);
    if (op.ins.op == isa::Opcode::activation) {
      EXPECT_EQ(op.engine, isa::Engine::scalar);
    }
  }
  HostTensor x = random_tensor({256, 512}, DType::fp32, 5, -3.0f, 3.0f);
  HostTensor z = random_tensor({256, 512}, DType::fp32, 6, -3.0f, 3.0f);
  std::vector<float> xv = x.to_float(), zv = z.to_float();
  std::vector<double> want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-(1.5 * xv[i] + zv[i])));
    want[i] = s * xv[i] - std::max<double>(zv[i], 0.0);
  }
  runtime::Device dev(cfg);
  runtime::RunReport rep = dev.run({runtime::Launch{&r.program, {{"X", x}, {"Z", z}}, 0}});
  const HostTensor& y = output(rep.launches[0], "Y");
  EXPECT_EQ(y.dtype, DType::bf16);
  // bf16 output: 8 bits of mantissa, relative rounding error <= 2^-9.
  EXPECT_TRUE(all_close("Y", y.to_float(), want, y.shape, 1e-5, 1.0 / 256));
}

// ---- layer norm -------------------------------------------------------------------------

TEST(KernelsLayerNorm, Rows200x768) {
  // 200 rows = 128 + 72 (a 72-partition tail); 768 columns = 2 bn_stats chunks.
  const platform::platform_config cfg = platform::load_config("tiny");
  constexpr int R = 200, C = 768;
  codegen::CompileResult r = compile_for(kernels::layernorm(R, C, 1e-5f), cfg);
  expect_synced(r);
  HostTensor x0 = random_tensor({R, C}, DType::fp32, 7, -1.0f, 1.0f);
  std::vector<float> xv = x0.to_float();
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < C; ++c)
      xv[size_t(i) * C + c] = xv[size_t(i) * C + c] * (0.5f + i / 64.0f) + (i - 100) * 0.05f;
  HostTensor x = HostTensor::from_float({R, C}, DType::fp32, xv);
  HostTensor gamma = random_tensor({C}, DType::fp32, 8, 0.5f, 1.5f);
  HostTensor beta = random_tensor({C}, DType::fp32, 9, -0.5f, 0.5f);
  std::vector<double> want = ref_layernorm(xv, gamma.to_float(), beta.to_float(), R, C, 1e-5);
  runtime::Device dev(cfg);
  runtime::RunReport rep =
      dev.run({runtime::Launch{&r.program, {{"X", x}, {"gamma", gamma}, {"beta", beta}}, 0}});
  const HostTensor& y = output(rep.launches[0], "Y");
  EXPECT_TRUE(all_close("Y", y.to_float(), want, y.shape, 1e-4, 1e-4));
}

// ---- GEMM correctness on tiny (both A layouts) ----------------------------------------

void gemm_case(bool lhs_transposed) {
  const platform::platform_config cfg = platform::load_config("tiny");
  constexpr int M = 256, K = 384, N = 1024;
  kernels::GemmOptions o;
  o.lhs_transposed = lhs_transposed;
  o.out = DType::fp32;
  codegen::CompileResult r = compile_for(kernels::gemm(M, K, N, o), cfg);
  expect_synced(r);
  HostTensor a = random_tensor({M, K}, DType::bf16, 11, -1.0f, 1.0f);
  HostTensor b = random_tensor({K, N}, DType::bf16, 12, -1.0f, 1.0f);
  std::vector<float> av = a.to_float(), bv = b.to_float();
  std::vector<double> want(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j)
        want[size_t(i) * N + j] += double(av[size_t(i) * K + k]) * bv[size_t(k) * N + j];
  std::map<std::string, HostTensor> in{{"B", b}};
  if (lhs_transposed) {
    std::vector<float> at(size_t(K) * M);
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < K; ++k) at[size_t(k) * M + i] = av[size_t(i) * K + k];
    in["AT"] = HostTensor::from_float({K, M}, DType::bf16, at);
  } else {
    in["A"] = a;
  }
  runtime::Device dev(cfg);
  runtime::RunReport rep = dev.run({runtime::Launch{&r.program, in, 0}});
  const HostTensor& c = output(rep.launches[0], "C");
  // bf16 products are exact in fp32; 384-term fp32 sums of values ~N(0, 6.6^2).
  EXPECT_TRUE(all_close("C", c.to_float(), want, c.shape, 1e-3, 1e-4));
}

TEST(KernelsGemm, TransposedLhsOnTiny) {
  gemm_case(true);
}

TEST(KernelsGemm, RowMajorLhsTransposedOnTensorEngine) {
  gemm_case(false);
}

// ---- memory: a kernel larger than SBUF ------------------------------------------------

TEST(KernelsMemory, LargerThanSbufIsRejectedClearly) {
  // tiny has 64 KiB per partition; four 32 KiB rotating buffers need 128 KiB.
  const platform::platform_config cfg = platform::load_config("tiny");
  Builder b("too_big");
  auto X = b.input("X", {128, 8192}, DType::fp32);
  auto Y = b.output("Y", {128, 8192}, DType::fp32);
  auto p = b.pool("big", MemSpace::sbuf, 4);
  auto t = b.tile(p, {128, 8192}, DType::fp32);
  b.dma(t, X);
  b.dma(Y, t);
  try {
    compile_for(b.finish(), cfg);
    FAIL() << "expected an SBUF overflow error";
  } catch (const tile::KernelError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("kernel 'too_big' needs 131072 bytes per partition of sbuf but the target "
                     "(tiny) has 65536"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("big 4 x 32768 B"), std::string::npos) << m;
    EXPECT_NE(m.find("use fewer buffers, smaller tiles"), std::string::npos) << m;
  }
}

// ---- sync: every dependency ordered, fewer waits than naive ----------------------------

TEST(KernelsSync, EveryDependencyOrderedWithFewWaits) {
  const compiler::Target t = target_from(platform::load_config("tiny"));
  kernels::GemmOptions g;
  g.lhs_transposed = false;
  std::vector<std::pair<std::string, tile::Kernel>> ks;
  ks.emplace_back("matmul", kernels::matmul_bias_act(256, 384, 640, isa::ActFunc::gelu));
  ks.emplace_back("softmax", kernels::softmax(300, 77));
  ks.emplace_back("layernorm", kernels::layernorm(256, 768, 1e-5f));
  ks.emplace_back("chain", elementwise_chain());
  ks.emplace_back("gemm", kernels::gemm(512, 512, 1024, g));
  for (auto& [name, k] : ks) {
    SCOPED_TRACE(name);
    codegen::CompileResult r = codegen::compile(std::move(k), t);
    SyncCheck c = check_sync(r);
    EXPECT_TRUE(c.unordered.empty())
        << c.unordered.size()
        << " unordered, first: " << (c.unordered.empty() ? "" : c.unordered[0]);
    // Naive: one wait per pair of conflicting ops on different queues.
    EXPECT_LT(c.waits, c.cross_pairs);
    EXPECT_EQ(double(c.waits), r.stats.at("insert_sync.waits"));
    EXPECT_LT(r.stats.at("insert_sync.waits"), r.stats.at("insert_sync.naive_waits"));
    std::printf(
        "[kernels] %s: %zu instructions, %zu conflicting pairs (%zu across queues), "
        "%zu waits (one per cross-queue dependency edge: %.0f), %.0f semaphores\n",
        name.c_str(), r.program.instruction_count(), c.pairs, c.cross_pairs, c.waits,
        r.stats.at("insert_sync.naive_waits"), r.stats.at("insert_sync.semaphores"));
    // The checker catches a missing wait: drop every wait of the first instruction
    // that has any, and some dependency must come out unordered.
    for (isa::Queue& q : r.program.queues) {
      auto it = std::find_if(q.instrs.begin(), q.instrs.end(),
                             [](const isa::Instruction& in) { return !in.waits.empty(); });
      if (it == q.instrs.end()) continue;
      it->waits.clear();
      break;
    }
    EXPECT_FALSE(check_sync(r).unordered.empty()) << "the checker missed a dropped wait";
  }
}

// ---- GEMM tensor-engine utilisation on trn2 --------------------------------------------

// bf16 [1024,1024] @ [1024,1024] built with the builder, timing only on trn2. Ideal
// tensor time: 8 m-tiles x 2 n-chunks x 8 k-tiles = 128 matmuls of max(N=512, 64)
// cycles = 65536 cycles at 2.4 GHz = 27307 ns, i.e. 2 x 1024^3 FLOP at the 78.6
// TFLOPS bf16 peak. Utilisation = ideal / simulated time.
double gemm_utilisation(bool lhs_transposed) {
  const platform::platform_config cfg = platform::load_config("trn2");
  constexpr int S = 1024;
  kernels::GemmOptions o;
  o.lhs_transposed = lhs_transposed;
  codegen::CompileResult r = codegen::compile(kernels::gemm(S, S, S, o), target_from(cfg));
  runtime::Device dev(cfg, runtime::DeviceOptions{false});
  runtime::RunReport rep = dev.run({runtime::Launch{&r.program, {}, 0}});
  const double ideal_ns = 128.0 * 512 / (cfg.core.tensor.clock_hz / 1e9);
  EXPECT_NEAR(ideal_ns, 27306.7, 0.1);
  const runtime::LaunchResult& l = rep.launches[0];
  const double util = ideal_ns / l.simulated_ns;
  double tensor_busy = 0;
  for (const runtime::EngineStats& e : l.engines)
    if (e.name == "tensor") tensor_busy = e.busy_ns;
  std::printf(
      "[kernels] gemm bf16 1024^3 on trn2 (%s): %zu instructions, %.0f ns simulated "
      "(scheduler estimate %.0f ns), tensor engine busy %.0f ns; utilisation %.1f %% of "
      "peak\n",
      lhs_transposed ? "A given transposed, as NKI kernels take it"
                     : "A row-major, transposed on the tensor engine",
      r.program.instruction_count(), l.simulated_ns, r.stats.at("schedule.makespan_ns"),
      tensor_busy, 100 * util);
  return util;
}

TEST(KernelsGemm, Trn2TensorUtilisation) {
  EXPECT_GE(gemm_utilisation(true), 0.80);
}

// The in-kernel transposes are 64 more 128-column passes (1/8 of the matmul time).
TEST(KernelsGemm, Trn2TensorUtilisationRowMajorA) {
  EXPECT_GE(gemm_utilisation(false), 0.70);
}

// The size the back end is designed for: [4096,8192] @ [8192,8192] bf16 (the vendor's
// hand-tuned kernel reaches 85.2 % of peak on trn1 hardware). 32 m-tiles x 16
// n-chunks x 64 k-tiles = 32768 matmuls of 512 cycles = 6.99 ms at 2.4 GHz; startup
// and tail are a few microseconds of that.
TEST(KernelsGemm, Trn2LargeGemmUtilisation) {
  const platform::platform_config cfg = platform::load_config("trn2");
  codegen::CompileResult r = codegen::compile(kernels::gemm(4096, 8192, 8192), target_from(cfg));
  runtime::Device dev(cfg, runtime::DeviceOptions{false});
  runtime::RunReport rep = dev.run({runtime::Launch{&r.program, {}, 0}});
  const double ideal_ns = 32768.0 * 512 / (cfg.core.tensor.clock_hz / 1e9);
  const double util = ideal_ns / rep.launches[0].simulated_ns;
  std::printf(
      "[kernels] gemm bf16 [4096,8192]@[8192,8192] on trn2: %zu instructions, %.3f ms "
      "simulated, utilisation %.1f %% of peak; %.0f waits for %.0f cross-queue "
      "dependency edges\n",
      r.program.instruction_count(), rep.launches[0].simulated_ns * 1e-6, 100 * util,
      r.stats.at("insert_sync.waits"), r.stats.at("insert_sync.naive_waits"));
  EXPECT_GE(util, 0.90);
}

// ---- the rest of the builder's ops, run --------------------------------------------------

// A causal mask (iota + affine_select), a cross-partition sum and broadcast, select,
// a constant tensor and an HBM -> HBM copy, on one [64, 64] fp32 tile:
//   M[p, j]  = X[p, j] if j <= p else -1       (affine_select: p - j >= 0)
//   I[p, j]  = 1000 p + j                      (iota)
//   S[j]     = sum_p M[p, j], broadcast back to every partition
//   Y[p, j]  = (I[p, j] > 30000 ? S[j] : M[p, j]) + W[j], W[j] = j / 8 (constant)
//   Z        = X (HBM -> HBM)
TEST(KernelsBuilder, MasksCrossPartitionSelectCopyRun) {
  const platform::platform_config cfg = platform::load_config("tiny");
  constexpr int P = 64, F = 64;
  Builder b("misc");
  auto X = b.input("X", {P, F}, DType::fp32);
  auto Y = b.output("Y", {P, F}, DType::fp32);
  auto Z = b.output("Z", {P, F}, DType::fp32);
  std::vector<float> wv(F);
  for (int j = 0; j < F; ++j) wv[j] = j / 8.0f;
  auto W = b.constant("W", {F}, DType::fp32, wv);
  auto sb = b.pool("sb", MemSpace::sbuf, 7);
  auto x = b.tile(sb, {P, F}, DType::fp32);
  b.dma(x, X);
  auto m = b.tile(sb, {P, F}, DType::fp32);
  b.affine_select(m, x, AluOp::ge, 0.0f, 1, {-1}, -1.0f);
  auto io = b.tile(sb, {P, F}, DType::fp32);
  b.iota(io, 0.0f, 1000, {1});
  auto s1 = b.tile(sb, {1, F}, DType::fp32);
  b.partition_reduce(s1, m, AluOp::add);
  auto sp = b.tile(sb, {P, F}, DType::fp32);
  b.partition_broadcast(sp, s1);
  auto pred = b.tile(sb, {P, F}, DType::fp32);
  b.tensor_scalar(pred, io, AluOp::gt, 30000.0f);
  b.select(io, pred, sp, m);
  auto w = b.tile(sb, {P, F}, DType::fp32);
  b.dma(w, W.broadcast(0, P));
  b.tensor_tensor(io, io, w, AluOp::add);
  b.dma(Y, io);
  b.dma(Z, X);
  codegen::CompileResult r = compile_for(b.finish(), cfg);
  expect_synced(r);
  ASSERT_EQ(r.program.constants.count("W"), 1u);
  EXPECT_EQ(r.program.find_tensor("W")->role, isa::TensorRole::constant);
  HostTensor xt = random_tensor({P, F}, DType::fp32, 21, -1.0f, 1.0f);
  std::vector<float> xv = xt.to_float();
  std::vector<double> mv(P * F), sum(F, 0.0), want(P * F);
  for (int p = 0; p < P; ++p)
    for (int j = 0; j < F; ++j) {
      mv[p * F + j] = j <= p ? xv[p * F + j] : -1.0;
      sum[j] += mv[p * F + j];
    }
  for (int p = 0; p < P; ++p)
    for (int j = 0; j < F; ++j)
      want[p * F + j] = (1000.0 * p + j > 30000 ? sum[j] : mv[p * F + j]) + j / 8.0;
  runtime::Device dev(cfg);
  runtime::RunReport rep = dev.run({runtime::Launch{&r.program, {{"X", xt}}, 0}});
  const HostTensor& y = output(rep.launches[0], "Y");
  EXPECT_TRUE(all_close("Y", y.to_float(), want, y.shape, 1e-5, 1e-5));
  EXPECT_EQ(output(rep.launches[0], "Z").data, xt.data);
}

}  // namespace
}  // namespace trnsim::e2e
