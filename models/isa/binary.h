// Compact binary program form (.tbin): little-endian, magic "TRNP", versioned.
// Loading checks every length, enum and count; corrupt input is a ProgramFormatError.
#pragma once

#include <functional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/isa/program.h"

namespace trnsim::isa {

class ProgramFormatError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// 2: permute peers may hold kNoPeer (a rank that sends nothing).
inline constexpr uint32_t kBinaryVersion = 2;
std::vector<uint8_t> encode_binary(const Program& p);
// The same bytes written to `out` as they are encoded (the constants not copied into
// one buffer first); returns the size.
size_t write_binary(const Program& p, std::ostream& out);
Program decode_binary(const std::vector<uint8_t>& bytes, const std::string& name = "<input>");

// Which constants a loaded program keeps: asked once per constant of a binary
// program, after its tensors and queues are decoded; a constant it refuses is never
// copied (a run that reads no data, or a constant no instruction reads, needs none).
using ConstantFilter = std::function<bool(const Program& p, const TensorDecl& constant)>;

// Load a program from a path: .tasm (assembly) or .tbin (binary), by content. An
// empty `keep` keeps every constant; assembly keeps them all.
Program load_program(const std::string& path, const ConstantFilter& keep = {});
void save_program(const Program& p, const std::string& path);  // by extension

}  // namespace trnsim::isa
