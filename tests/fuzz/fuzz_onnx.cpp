// libFuzzer target: the ONNX front end on ModelProto bytes. Bytes protobuf rejects
// are skipped (protobuf's parser is not ours); a parsed model the importer cannot
// take must be an ir::CompileError (UnsupportedError and NeedsConstantError derive
// from it).
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/error.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    frontend::import_onnx_model(m, "fuzz.onnx");
  } catch (const ir::CompileError&) {
  }
  return 0;
}
