// The programs of an SPMD run's ranks (--rank-program R=FILE), each distinct one
// loaded once: ranks whose files hold the same bytes (a program written out per
// rank, or one file named for several ranks) share one decoded instruction stream,
// so loading, validation and host memory grow with the distinct programs, not
// with the ranks.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "models/isa/program.h"

namespace trnsim::runtime {

class RankPrograms {
 public:
  // The program in `path`: an earlier one when a file with the same bytes was
  // loaded (or offered with share()), else loaded now. The pointer lives as long
  // as this object.
  const isa::Program* load(const std::string& path);
  // Lets later load()s of a file with `path`'s bytes share `p` (held by the caller).
  void share(const std::string& path, const isa::Program* p);
  size_t loaded() const { return held_.size(); }  // distinct programs loaded here

 private:
  struct file_key {
    std::string path;
    uint64_t size = 0, hash = 0;
    const isa::Program* program = nullptr;
  };
  std::deque<isa::Program> held_;  // stable addresses
  std::vector<file_key> files_;
};

// Whether files `a` and `b` hold the same bytes (false when either cannot be read).
bool same_file_bytes(const std::string& a, const std::string& b);

}  // namespace trnsim::runtime
