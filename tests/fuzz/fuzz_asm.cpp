// libFuzzer target: the .tasm assembler. Bad text must be an AsmError; text that
// assembles must survive disassemble -> assemble and encode -> decode unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "models/isa/assembler.h"
#include "models/isa/binary.h"
#include "tests/fuzz/fuzz_common.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  isa::Program p;
  try {
    p = isa::assemble(text, "fuzz.tasm");
  } catch (const isa::AsmError&) {
    return 0;
  }
  const std::string dis = isa::disassemble(p);
  isa::Program again;
  try {
    again = isa::assemble(dis, "disassembled.tasm");
  } catch (const isa::AsmError& e) {
    fuzz::fail(std::string("disassembly does not assemble: ") + e.what() + "\n" + dis);
  }
  if (!(again == p)) fuzz::fail("assemble(disassemble(p)) != p\n" + dis);
  const isa::Program decoded = isa::decode_binary(isa::encode_binary(p), "roundtrip.tbin");
  if (!(decoded == p)) fuzz::fail("decode_binary(encode_binary(p)) != p\n" + dis);
  return 0;
}
