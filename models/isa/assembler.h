// Assembly text <-> Program. Syntax in docs/isa.md. Errors carry line and column.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "models/isa/program.h"

namespace trnsim::isa {

class AsmError : public std::runtime_error {
 public:
  AsmError(std::string file, uint32_t line, uint32_t col, const std::string& msg);
  std::string file;
  uint32_t line, col;
};

// `file` only names the source in error messages ("<file>:<line>:<col>: error: ...").
Program assemble(std::string_view text, const std::string& file = "<input>");
Program assemble_file(const std::string& path);

// Text that assemble() turns back into an equal Program.
std::string disassemble(const Program& p);
std::string disassemble(const Instruction& in, const Program* p = nullptr);

}  // namespace trnsim::isa
