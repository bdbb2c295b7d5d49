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
#include "compiler/tile/deps.h"
#include "models/isa/assembler.h"
#include "platform/config.h"
#include "runtime/device.h"
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

// The compiler's view of a platform: what the runtime will fill in later.
compiler::Target target_from(const platform::platform_config& c) {
  compiler::Target t;
  t.name = c.name;
  const isa::Limits l = c.limits();
  t.partitions = l.partitions;
  t.sbuf_partition_bytes = l.sbuf_partition_bytes;
  t.psum_partition_bytes = l.psum_partition_bytes;
  t.psum_bank_bytes = l.psum_bank_bytes;
  t.matmul_max_k = l.matmul_max_k;
  t.matmul_max_m = l.matmul_max_m;
  t.matmul_max_n = l.matmul_max_n;
  t.semaphores = l.max_semaphores;
  t.dma_engines = c.core.dma.engines;
  t.dma_queues_per_engine = c.core.dma.queues_per_engine;
  t.dma_bandwidth_bytes_per_ns = c.core.dma.bandwidth_bps / 1e9;
  t.dma_fixed_ns = c.core.dma.fixed_cost_s * 1e9;
  t.dma_descriptor_ns = c.core.dma.descriptor_cost_s * 1e9;
  t.hbm_bandwidth_bytes_per_ns = c.hbm.bandwidth_bps / 1e9;
  auto eng = [](const models::engine_params& p) {
    return compiler::EngineCost{p.clock_hz, p.min_ii_cycles, p.overhead_cycles};
  };
  t.tensor = eng(c.core.tensor);
  t.vector = eng(c.core.vector);
  t.scalar = eng(c.core.scalar);
  t.gpsimd = eng(c.core.gpsimd);
  t.sync = eng(c.core.sync);
  t.matmul_fp32_slowdown = c.core.tensor.fp32_slowdown;
  t.vector_divide_slowdown = c.core.vector.reciprocal_slowdown;
  t.vector_perf_modes = c.core.vector.perf_modes;
  t.scalar_func_switch_cycles = c.core.scalar.func_switch_cycles;
  t.gpsimd_start_cycles = c.core.gpsimd.start_cycles;
  return t;
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
  size_t pairs = 0;          // conflicting pairs checked
  size_t cross_pairs = 0;    // ... on different queues
  size_t waits = 0;          // waits in the program
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
            out.unordered.push_back("wait s" + std::to_string(w.sem) + ">=" +
                                    std::to_string(w.value) + " can never be met");
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
        out.unordered.push_back(tile::op_label(k, k.ops[a]) + " -> " +
                                tile::op_label(k, k.ops[b]) + " not ordered");
    }
  return out;
}

codegen::CompileResult compile_for(tile::Kernel k, const platform::platform_config& cfg) {
  return codegen::compile(std::move(k), target_from(cfg));
}

void expect_synced(const codegen::CompileResult& r) {
  SyncCheck c = check_sync(r);
  EXPECT_TRUE(c.unordered.empty()) << c.unordered.size() << " problems, first: "
                                   << (c.unordered.empty() ? "" : c.unordered[0]);
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
  runtime::RunReport rep = dev.run({runtime::Launch{&r.program, {{"A", a}, {"W", w}, {"b", b}}, 0}});
  const HostTensor& c = output(rep.launches[0], "C");
  ASSERT_EQ(c.shape, (std::vector<int64_t>{M, N}));
  EXPECT_TRUE(all_close("C", c.to_float(), want, c.shape, 1e-3, 1e-3));
  std::printf("[kernels] matmul_bias_gelu on tiny: %.0f ns simulated, %zu instructions\n",
              rep.launches[0].simulated_ns, r.program.instruction_count());
}

}  // namespace
}  // namespace trnsim::e2e
namespace trnsim::e2e {
TEST(KernelsDebug, Dump) {
  const platform::platform_config cfg = platform::load_config("tiny");
  codegen::CompileResult r = codegen::compile(kernels::matmul_bias_act(256, 384, 640, isa::ActFunc::gelu), target_from(cfg));
  std::printf("%s\n", tile::to_text(r.kernel, {true}).c_str());
  std::printf("%s\n", isa::disassemble(r.program).c_str());
  for (auto& [k, v] : r.stats) std::printf("%s = %g\n", k.c_str(), v);
  isa::Program hp = isa::assemble_file(std::string(TRNSIM_SOURCE_DIR) + "/tests/e2e/programs/matmul_gelu.tasm");
  runtime::Device dev(cfg, runtime::DeviceOptions{false});
  auto rep = dev.run({runtime::Launch{&r.program, {}, 0}, runtime::Launch{&hp, {}, 1}});
  std::printf("compiled %.0f ns, hand %.0f ns\n", rep.launches[0].simulated_ns, rep.launches[1].simulated_ns);
}
}
namespace trnsim::e2e {
TEST(KernelsDebug, Gemm) {
  const platform::platform_config cfg = platform::load_config("trn2");
  for (bool tr : {getenv("NOTR") == nullptr}) {
  kernels::GemmOptions o; o.lhs_transposed = tr;
  codegen::CompileResult r = codegen::compile(kernels::gemm(1024, 1024, 1024, o), target_from(cfg));
  if (getenv("DUMP")) std::printf("%s\n", tile::to_text(r.kernel, {true}).c_str());
  for (auto& [k, v] : r.stats) std::printf("%s = %g\n", k.c_str(), v);
  runtime::Device dev(cfg, runtime::DeviceOptions{false});
  auto rep = dev.run({runtime::Launch{&r.program, {}, 0}});
  double ideal = 8.0 * 2 * 8 * 512 / 2.4;
  std::printf("lhsT=%d simulated %.0f ns, ideal %.0f, util %.3f\n", tr, rep.launches[0].simulated_ns, ideal, ideal / rep.launches[0].simulated_ns);
  for (auto& e : rep.launches[0].engines) std::printf("  %s busy %.0f wait %.0f n=%lu\n", e.name.c_str(), e.busy_ns, e.sem_wait_ns, e.instructions);
  }
}
}
