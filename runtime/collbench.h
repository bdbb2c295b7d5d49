// `trnsim collbench COLLECTIVE`: times a collective over the configured network for
// a range of message sizes and prints what the vendor's nccom-test prints: size,
// count, type, time, algorithm bandwidth (size / time) and bus bandwidth
// (nccl-tests: all_reduce algbw x 2(n-1)/n, all_gather and reduce_scatter
// algbw x (n-1)/n). --check also carries the data and compares the result with a
// float64 sum; --out writes the final per-rank buffers as .npy (for tests).
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::runtime {

// A bad command line (exit 2): the message names the option.
struct CollbenchUsage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

extern const char* kCollbenchHelp;

// Runs the command on `args` (after "collbench"); returns the exit status.
int collbench(const std::vector<std::string>& args, std::ostream& out);

// Input value i of rank r before rounding to the dtype: a deterministic pattern
// tests can rebuild ((r * 131 + i * 71) mod 1021 - 510) / 64.
double collbench_input(uint32_t rank, uint64_t i);

}  // namespace trnsim::runtime
