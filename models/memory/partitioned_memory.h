// Common model of the on-chip partitioned memories (SBUF, PSUM): `partitions` rows
// of `partition_bytes`, a TLM-2.0 target taking access-pattern transactions
// (ap_extension). Timing: each access is charged its port time, free elements per
// partition at the per-partition lane rate, halved when the innermost stride
// exceeds 16 bytes (docs/hardware.md, Memories). Ports: every initiator (engine, DMA
// engine) has its own read port and write port unless the platform makes two share
// one (NC-v2: vector/GpSimd on SBUF, vector/scalar on PSUM; NC-v3: PSUM sharing only
// within a bank). A port is an analytic resource: an access waits for the port to be
// free, and the wait caused by another initiator is reported as a port stall.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <systemc>
#include <tlm>
#include <unordered_set>
#include <vector>

#include "models/common/ap_extension.h"
#include "models/common/stats.h"

namespace trnsim::models {

struct partitioned_memory_geometry {
  isa::MemSpace space;
  uint32_t partitions;
  uint64_t partition_bytes;
  double clock_hz;
  uint32_t port_elems_per_cycle;
};

class partitioned_memory : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<partitioned_memory> tgt_socket;

  partitioned_memory(const sc_core::sc_module_name& name, const partitioned_memory_geometry& g);

  // Direct access for loaders and tests (bypasses timing).
  uint8_t* row(uint32_t partition) { return mem() + size_t(partition) * geo_.partition_bytes; }
  uint64_t partition_bytes() const { return geo_.partition_bytes; }
  uint32_t partitions() const { return geo_.partitions; }
  void clear();
  void fill(uint8_t byte);  // every byte (poisoning: 0xff is NaN in every float dtype)

  void register_stats(stats::group& g);
  void reset_stats();  // zero the counters and the footprint (the runtime's stats are per run)
  // Address-space high-water mark: (highest byte offset touched in any partition + 1)
  // x partitions, what a program reserves when it owns that stripe of every partition.
  uint64_t high_water_bytes() const { return peak_byte_ * geo_.partitions; }
  // Distinct bytes accessed at least once since reset_stats(), summed over partitions:
  // what a program actually uses (a program on 64 partitions counts half).
  uint64_t touched_bytes() const;

  // Port time of one access of `ap` (no side effects).
  sc_core::sc_time port_time(const isa::AccessPattern& ap) const;

  // Initiator `b` (socket binding index) uses initiator `a`'s ports. With
  // `per_bank`, they collide only when both access the same bank of `bank_bytes`.
  void share_ports(int a, int b, bool per_bank = false, uint64_t bank_bytes = 0);

 protected:
  virtual void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  // Called for writes with ext.accumulate; default: error (only PSUM accumulates).
  virtual bool accumulate(const isa::AccessPattern& ap, const uint8_t* src, std::string& err);
  // Called before every access that moves data (and fill()): PSUM applies the writes
  // it holds back.
  virtual void before_data_access() {}
  // `end` (optional) receives ap.end_byte().
  bool check_bounds(const isa::AccessPattern& ap, std::string& err, int64_t* end = nullptr) const;
  void gather(const isa::AccessPattern& ap, uint8_t* dst) const;
  void scatter(const isa::AccessPattern& ap, const uint8_t* src);

  // The contents, allocated zeroed on first use: a core no program uses costs no
  // host memory (calloc'd pages are only backed once touched). Throws
  // std::runtime_error naming the memory when the host cannot hold it.
  uint8_t* mem() const { return data_ ? data_.get() : allocate(); }

  partitioned_memory_geometry geo_;
  uint64_t read_bytes_ = 0, write_bytes_ = 0, reads_ = 0, writes_ = 0;
  uint64_t peak_byte_ = 0;  // highest byte offset touched in any partition
  // One bit per byte per partition, allocated on first access; marked once per
  // distinct pattern (when it enters access_cache_, which reset_stats() empties).
  // touched_ is calloc'd: the host backs only the pages of rows a pattern reached
  // (a 32-core run would otherwise zero 3 MiB of bitmap per SBUF up front).
  struct bitmap_free {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint64_t[], bitmap_free> touched_;
  std::vector<uint64_t> touched_mask_;
  uint64_t touched_count_ = 0;  // set bits of touched_, kept as they are set
  // Patterns already marked: touched bits only grow, so a pattern evicted from
  // access_cache_ and seen again (DMA shares make more patterns than it holds) is
  // not marked again. Exact: full pattern equality.
  struct ap_hash {
    size_t operator()(const isa::AccessPattern& ap) const;
  };
  std::unordered_set<isa::AccessPattern, ap_hash> marked_;
  void mark_touched(const isa::AccessPattern& ap);

 private:
  struct port_state {
    sc_core::sc_time next_free = sc_core::SC_ZERO_TIME;
    int last_user = -1;
  };
  struct sharing {
    int owner = -1;  // initiator whose ports are used; -1: own ports
    bool per_bank = false;
    uint64_t bank_bytes = 0;
  };
  // Reserves the port for an access taking `duration` (its port time) offered at
  // `offer`; returns finish, sets stall.
  sc_core::sc_time reserve_port(int id, bool write, const isa::AccessPattern& ap,
                                const sc_core::sc_time& offer, const sc_core::sc_time& duration,
                                sc_core::sc_time& stall);
  // port_time() with ap's free elements and element size known.
  sc_core::sc_time port_time(const isa::AccessPattern& ap, uint64_t n, uint64_t es) const;
  struct port_cache_entry {
    uint64_t elems = 0;
    bool wide = false, valid = false;
    sc_core::sc_time time;
  };
  mutable std::array<port_cache_entry, 16> port_cache_{};  // port_time() results
  struct access_entry {
    isa::AccessPattern ap;
    bool valid = false;
    bool words = false;  // the port time is for a DMA (ap_extension::words)
    int64_t end = 0;     // ap's end byte (bounds checked)
    uint64_t bytes = 0;  // ap.bytes()
    sc_core::sc_time port;
  };
  std::array<access_entry, 32> access_cache_{};  // b_transport's checked patterns
  std::vector<sharing> sharing_;
  std::vector<port_state> ports_;  // indexed by key(owner, bank, write)
  sc_core::sc_time stall_total_ = sc_core::SC_ZERO_TIME;
  uint8_t* allocate() const;
  struct free_deleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  mutable std::unique_ptr<uint8_t[], free_deleter> data_;
};

}  // namespace trnsim::models
