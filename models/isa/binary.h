// Compact binary program form (.tbin): little-endian, magic "TRNP", versioned.
// Loading checks every length, enum and count; corrupt input is a ProgramFormatError.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "models/isa/program.h"

namespace trnsim::isa {

class ProgramFormatError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr uint32_t kBinaryVersion = 1;
std::vector<uint8_t> encode_binary(const Program& p);
Program decode_binary(const std::vector<uint8_t>& bytes, const std::string& name = "<input>");

// Load a program from a path: .tasm (assembly) or .tbin (binary), by content.
Program load_program(const std::string& path);
void save_program(const Program& p, const std::string& path);  // by extension

}  // namespace trnsim::isa
