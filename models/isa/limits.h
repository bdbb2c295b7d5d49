// Sizes past which the simulator refuses a program or a config, shared by the
// assembler, the validator and the config schema.
#pragma once

#include <cstdint>

namespace trnsim::isa {

// The largest HBM the simulator models (1 PiB, the config's hbm.size limit): no
// tensor may end past it, so HBM offsets and their sums stay far from 2^64.
inline constexpr uint64_t kMaxHbmBytes = uint64_t{1} << 50;

}  // namespace trnsim::isa

namespace trnsim::isa {

// The most ranks one collective's group may list (network.nodes x chips x cores
// stays far below it in any preset); bounds what a program file can make us allocate.
inline constexpr uint32_t kMaxGroup = 65536;

}  // namespace trnsim::isa
