// ONNX models on the command line: `trnsim compile` and `trnsim run MODEL.onnx`
// compile with the platform's target (runtime/target_from_config.h).
//
// Integer and bool values live on the device as fp32 (bools 0/1, integers exact up
// to 2^24). The program boundary converts: .npy inputs of the model's integer or
// bool inputs are read as such (int64, int32, uint8, bool or float .npy) and given
// to the device as fp32; integer and bool outputs are written back in their ONNX
// type (int64/int32 values rounded to the nearest integer, bools as `!= 0`).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/types.h"
#include "compiler/partition.h"
#include "models/isa/program.h"
#include "platform/config.h"
#include "runtime/tensor.h"

namespace trnsim::runtime {

// True for a path ending in ".onnx" (any case).
bool is_onnx_path(const std::string& path);

// A compiled model and the ONNX element types of its inputs and outputs, by
// program tensor name.
struct OnnxModel {
  // One device program; with host fallback (`partitioned` set), a program that only
  // declares the model's inputs and outputs.
  isa::Program program;
  std::shared_ptr<compiler::PartitionedModel> partitioned;
  std::shared_ptr<const ir::Graph> graph;  // after the graph pipeline (what was lowered)
  std::map<std::string, ir::ElemType> io_types;
  std::map<std::string, double> compile_stats;  // tile pass figures (compiler/partition.h)
  // The ONNX type of a program input/output (fp32 when unknown).
  ir::ElemType type_of(const std::string& tensor) const;
};

// Compiles the model for `cfg` at `precision` ("bf16", "fp32", "fp8"; anything
// else throws std::invalid_argument naming the option). IR dumps asked for by
// `print_after` (graph or tile pass names, or "*") go to `dumps`. Nodes the chip
// cannot run fall back to the host (compiler/partition.h) when `allow_fallback`;
// otherwise they are the clear error. compile_model never falls back.
// `keep_on_chip`: see compiler::CompileOnnxOptions.
OnnxModel compile_onnx_model(const std::string& path, const platform::platform_config& cfg,
                             const std::string& precision,
                             const std::vector<std::string>& print_after, std::ostream& dumps,
                             bool allow_fallback = true, bool keep_on_chip = true,
                             const frontend::ImportOptions& import = {});
isa::Program compile_model(const std::string& path, const platform::platform_config& cfg,
                           const std::string& precision,
                           const std::vector<std::string>& print_after, std::ostream& dumps,
                           bool keep_on_chip = true);

// One line on what keep_on_chip did ("keep_on_chip: 12 loads forwarded ..."), or ""
// when it found nothing to forward.
std::string keep_on_chip_summary(const std::map<std::string, double>& compile_stats);

// The device tensor (fp32) for input `tensor` from an .npy file: float inputs as
// read_npy reads them; integer and bool inputs from an int64/int32/uint8/bool/
// float32/float64 .npy (NpyError naming the file when it is none of those, or an
// integer beyond 2^24 that fp32 cannot hold exactly).
HostTensor read_model_input(const OnnxModel& m, const std::string& tensor, const std::string& path);

// Random values for a non-float input (integers uniform in [0, 10), bools 0/1),
// as the device's fp32; nullopt for float inputs.
std::optional<HostTensor> random_model_input(const OnnxModel& m, const isa::TensorDecl& d,
                                             std::mt19937_64& rng);

// Writes output `tensor` as .npy in its ONNX type (see the header comment).
void write_model_output(const OnnxModel& m, const std::string& tensor, const std::string& path,
                        const HostTensor& t);

}  // namespace trnsim::runtime
