#include "platform/neuron_core.h"

#include <stdexcept>

namespace trnsim::platform {

neuron_core::neuron_core(const sc_core::sc_module_name& name, const core_config& cfg,
                         models::sim_context& ctx)
    : sc_module(name),
      sems("sems", cfg.semaphores),
      sbuf("sbuf", cfg.sbuf),
      psum("psum", cfg.psum),
      tensor("tensor", cfg.tensor, sems, ctx),
      vector("vector", cfg.vector, sems, ctx),
      scalar("scalar", cfg.scalar, sems, ctx),
      gpsimd("gpsimd", cfg.gpsimd, sems, ctx),
      sync("sync", cfg.sync, sems, ctx) {
  for (isa::Engine e : {isa::Engine::tensor, isa::Engine::vector, isa::Engine::scalar,
                        isa::Engine::gpsimd, isa::Engine::sync}) {
    models::engine& en = engine_for(e);
    en.sbuf_socket.bind(sbuf.tgt_socket);
    en.psum_socket.bind(psum.tgt_socket);
    en.set_rounding(cfg.rounding);
  }
  // Socket binding indices follow the order above: tensor 0, vector 1, scalar 2,
  // gpsimd 3, sync 4 (then the DMA engines on SBUF).
  constexpr int kVector = 1, kScalar = 2, kGpsimd = 3;
  if (cfg.sbuf.vector_gpsimd_shared_port) sbuf.share_ports(kVector, kGpsimd);
  if (cfg.psum.vector_scalar_shared_port)
    psum.share_ports(kVector, kScalar, cfg.psum.shared_port_per_bank, cfg.psum.bank_bytes);
  for (uint32_t i = 0; i < cfg.dma.engines; ++i) {
    auto d = std::make_unique<models::dma_engine>(("dma" + std::to_string(i)).c_str(), cfg.dma,
                                                  sems, ctx);
    d->sbuf_socket.bind(sbuf.tgt_socket);
    d->set_rounding(cfg.rounding);
    dma.push_back(std::move(d));
  }
  // The config loader has checked the block against the build and the array.
  if (cfg.tensor_impl == TensorImpl::rtl) {
    if (!cfg.tensor_rtl)
      throw std::invalid_argument("core.tensor.impl: rtl needs a core.tensor.rtl section");
    tensor_rtl = cosim::make_rtl_datapath(*cfg.tensor_rtl, cfg.tensor.rows, cfg.tensor.cols,
                                          cfg.tensor.clock_hz, "tensor_rtl", "core.tensor");
    tensor.set_matmul_datapath(tensor_rtl.get());
  } else if (cfg.tensor_numerics == TensorNumerics::systolic) {
    tensor_systolic = std::make_unique<cosim::systolic_datapath>(cfg.tensor.rows, cfg.tensor.cols);
    tensor.set_matmul_datapath(tensor_systolic.get());
  }
}

models::engine& neuron_core::engine_for(isa::Engine e) {
  switch (e) {
    case isa::Engine::tensor:
      return tensor;
    case isa::Engine::vector:
      return vector;
    case isa::Engine::scalar:
      return scalar;
    case isa::Engine::gpsimd:
      return gpsimd;
    case isa::Engine::sync:
      return sync;
    default:
      throw std::logic_error("engine_for: DMA queues are not compute engines");
  }
}

void neuron_core::reset_stats() {
  for (isa::Engine e : {isa::Engine::tensor, isa::Engine::vector, isa::Engine::scalar,
                        isa::Engine::gpsimd, isa::Engine::sync})
    engine_for(e).reset_stats();
  tensor.reset_datapath_stats();
  if (tensor_rtl) tensor_rtl->reset_stats();
  sbuf.reset_stats();
  psum.reset_stats();
  for (auto& d : dma) d->reset_stats();
}

void neuron_core::register_stats(stats::group& g) {
  auto& engines = g.child("engines", "compute engines");
  for (isa::Engine e : {isa::Engine::tensor, isa::Engine::vector, isa::Engine::scalar,
                        isa::Engine::gpsimd, isa::Engine::sync})
    engine_for(e).register_stats(engines.child(std::string(isa::engine_name(e))));
  if (tensor_rtl) {
    // The RTL next to the cost model it replaces, for the same matmuls.
    auto& a = tensor_rtl->adapter();
    auto& r = engines.child("tensor").child(
        "rtl", "RTL block " + a.block().name() + " (" + std::to_string(a.opts().rows) + " x " +
                   std::to_string(a.opts().cols) + ", " +
                   (tensor_rtl->timed() ? "timed" : "decoupled") +
                   ") computing the matmuls in place of the C++ model");
    r.add(
        "matmuls", "instructions", "matmuls the RTL block computed",
        [this] { return double(tensor.datapath_matmuls()); }, true);
    r.add(
        "model_cycles", "cycles",
        "the cost model's cycles for the same matmuls (fold formula at the engine clock, "
        "max(N, min_ii) streamed), which rtl_cycles replace",
        [this] { return double(tensor.datapath_model_cycles()); }, true);
    tensor_rtl->register_stats(r);
  }
  sbuf.register_stats(g.child("sbuf", "state buffer"));
  psum.register_stats(g.child("psum", "partial-sum buffer"));
  auto& dg = g.child("dma", "DMA engines");
  for (size_t i = 0; i < dma.size(); ++i)
    dma[i]->register_stats(dg.child("engine" + std::to_string(i)));
}

}  // namespace trnsim::platform
