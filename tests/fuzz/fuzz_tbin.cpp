// libFuzzer target: the .tbin binary program decoder. Corrupt bytes must be a
// ProgramFormatError; a program that decodes must re-encode to bytes that decode to
// the same program.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/isa/binary.h"
#include "tests/fuzz/fuzz_common.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  isa::Program p;
  try {
    p = isa::decode_binary(bytes, "fuzz.tbin");
  } catch (const isa::ProgramFormatError&) {
    return 0;
  }
  std::vector<uint8_t> encoded;
  try {
    encoded = isa::encode_binary(p);
  } catch (const isa::ProgramFormatError& e) {
    fuzz::fail(std::string("a decoded program does not encode: ") + e.what());
  }
  isa::Program again;
  try {
    again = isa::decode_binary(encoded, "roundtrip.tbin");
  } catch (const isa::ProgramFormatError& e) {
    fuzz::fail(std::string("re-encoded program does not decode: ") + e.what());
  }
  if (!(again == p)) fuzz::fail("decode(encode(decode(bytes))) != decode(bytes)");
  return 0;
}
