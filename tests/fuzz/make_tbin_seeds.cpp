// Seed generator for fuzz_tbin: assembles each .tasm given and writes its .tbin
// into the output folder, so the binary seeds follow the current format version.
// Usage: make_tbin_seeds OUT_DIR IN.tasm...
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "models/isa/assembler.h"
#include "models/isa/binary.h"

namespace fs = std::filesystem;
using namespace trnsim;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_tbin_seeds OUT_DIR IN.tasm...\n");
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  for (int i = 2; i < argc; ++i) {
    try {
      const fs::path in = argv[i];
      isa::save_program(isa::assemble_file(in.string()), (out / in.stem()).string() + ".tbin");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "make_tbin_seeds: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}
