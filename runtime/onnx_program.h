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

// One input or output of a model: its name as the ONNX file spells it ("0",
// "input.1", "onnx::MatMul_0"), the program tensor that holds it on the device
// (lower::io_tensor_names: letters, digits, '_' and '.' only, e.g. "t_0",
// "onnx__MatMul_0") and its ONNX type and shape.
struct ModelIo {
  std::string name;
  std::string tensor;
  ir::TensorType type;
  // An output that is also a graph input: no program tensor of its own (the
  // run hands the input back).
  bool is_input = false;
  // The shape the device holds it in ([1] for an ONNX scalar).
  std::vector<int64_t> device_shape() const;
};

// The inputs of an imported graph, in ONNX order, before compiling: the names
// `--input` may use are checked against these.
std::vector<ModelIo> model_inputs(const ir::Graph& imported);

// The input `given` names: the ONNX name exactly, else the program tensor name;
// nullptr when it is neither.
const ModelIo* find_input(const std::vector<ModelIo>& inputs, const std::string& given);

// "'x' [64,96] fp32, '0' (tensor t_0) [] int64": the names a command line may give.
std::string describe_inputs(const std::vector<ModelIo>& inputs);

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
  std::vector<ModelIo> inputs, outputs;         // in ONNX order
  // One device program: what the report's roofline needs (compiler/roofline.h).
  std::shared_ptr<const compiler::ProgramRoofline> roofline;
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
// The same for a graph imported from `path` already (frontend::import_onnx_file).
OnnxModel compile_onnx_graph(ir::Graph imported, const std::string& path,
                             const platform::platform_config& cfg, const std::string& precision,
                             const std::vector<std::string>& print_after, std::ostream& dumps,
                             bool allow_fallback = true, bool keep_on_chip = true);
isa::Program compile_model(const std::string& path, const platform::platform_config& cfg,
                           const std::string& precision,
                           const std::vector<std::string>& print_after, std::ostream& dumps,
                           bool keep_on_chip = true);

// One line on what keep_on_chip did ("keep_on_chip: 12 loads forwarded ..."), or ""
// when it found nothing to forward.
std::string keep_on_chip_summary(const std::map<std::string, double>& compile_stats);
// "repeated blocks: N identical blocks of M nodes (of T); ...", or "" (compiler/repeat.h).
std::string repeated_blocks_summary(const std::map<std::string, double>& compile_stats);

// The device tensor for model input `in` (one of model_inputs(), so this runs
// before compiling) from an .npy file: float inputs as read_npy reads them;
// integer and bool inputs (fp32 on the device) from an int64/int32/uint8/bool/
// float32/float64 .npy. NpyError naming the file when it is none of those, holds
// an integer beyond 2^24 that fp32 cannot hold exactly, or its shape is not the
// input's (for a scalar, which the device holds as [1], a 0-d or a [1] array).
HostTensor read_model_input(const ModelIo& in, const std::string& path);

// Random values for a non-float input (integers uniform in [0, 10), bools 0/1),
// as the device's fp32; nullopt for float inputs.
std::optional<HostTensor> random_model_input(const OnnxModel& m, const isa::TensorDecl& d,
                                             std::mt19937_64& rng);

// Writes model output `out` as .npy in its ONNX type and shape (a scalar as a 0-d
// array); returns the numpy dtype written ("float32", "int64", "bool", ...).
std::string write_model_output(const ModelIo& out, const std::string& path, const HostTensor& t);

// The value of each model output after a run, in ONNX order, as the device holds
// it: from the launch's outputs, or the bound input for an output that is a graph
// input. Throws naming the output when the run did not produce it.
std::vector<HostTensor> model_output_values(const OnnxModel& m,
                                            const std::map<std::string, HostTensor>& inputs,
                                            const std::map<std::string, HostTensor>& outputs);

}  // namespace trnsim::runtime
