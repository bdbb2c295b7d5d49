// ONNX front end: reads a ModelProto (opsets 1-17 of the default domain, as
// torch.onnx.export and the ONNX test suite write them) into an ir::Graph in the
// canonical form of compiler/ir/ops.h.
//
// What the import does:
//   - initializers become constants (also when listed as graph inputs, as IR v3
//     models do); Constant nodes become constants;
//   - graph inputs need static shapes: a symbolic or missing dim is refused with
//     an error naming the input and dim, unless ImportOptions::input_shapes gives
//     the input's concrete shape;
//   - each node is converted per its opset (axes/split/pads/... inputs or
//     attributes -> canonical attributes, auto_pad -> explicit pads, opset < 13
//     Softmax -> Reshape + Softmax + Reshape, Dropout -> Identity, ...), typed by
//     static shape inference, and folded when its inputs are constant, so torch's
//     Shape -> Gather -> Concat -> Reshape chains resolve;
//   - sequence and optional values (SequenceConstruct/Insert/At/..., Optional,
//     Optional{Has,Get}Element, If/Loop carrying them) are resolved at import into
//     their tensors: positions, lengths and presence must be known at compile time
//     (a Loop carrying one is unrolled; an If making one needs a constant
//     condition). A sequence or optional graph output becomes one output per
//     tensor (sequence_item_name());
//   - nodes that feed no output are dropped; the graph is verified.
// Values keep their ONNX names, so graph inputs and outputs are found by name.
//
// Errors: ir::UnsupportedError when the model is valid but uses something not
// supported (op type, element type, attribute value, dynamic shape), e.g.
//   "model.onnx: node 'Foo_3' has unsupported op type 'LSTM'; supported: Abs, Add, ..."
// and ir::CompileError for unreadable or invalid models, e.g.
//   "model.onnx: node 'Conv_12' (op Conv): weights fp32[8,3,3,3] expect 3 input channels ..."
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace trnsim::frontend {

// The structure of a sequence or optional graph input (ImportOptions::
// sequence_inputs). The IR has static types, so sequences and optionals are
// resolved at import: a sequence is the list of its tensors, an optional holds a
// tensor, a sequence or nothing, all known at compile time. Each tensor in such an
// input becomes a graph input of its own, named by sequence_item_name().
struct SequenceInput {
  bool optional = false;              // an ONNX optional (else a sequence)
  bool present = true;                // optional: holds an element
  bool of_sequence = true;            // optional: its element is a sequence (else one tensor)
  std::vector<ir::TensorType> items;  // the tensors, in order
};

// IR name of item k of sequence/optional value `name` (a graph input or output):
// "name[k]" for a sequence's k-th tensor (also inside an optional), `name` itself
// for an optional's tensor (k = -1).
std::string sequence_item_name(const std::string& name, int64_t k);

struct ImportOptions {
  // Concrete shapes for graph inputs (by name). Needed for inputs with symbolic or
  // unknown dims; for others the shape must match the declared one.
  std::map<std::string, ir::Shape> input_shapes;
  // Graph inputs to specialise into constants (by name): for models that take a
  // shape-like parameter (Reshape shape, Slice starts, Clip bounds, ...) as an
  // input. The tensor must match the input's declared type.
  std::map<std::string, ir::Tensor> constant_inputs;
  // Sequence and optional graph inputs (by name): their structure (see
  // SequenceInput). Such an input with no entry here is refused.
  std::map<std::string, SequenceInput> sequence_inputs;
  // Data parallel (trnsim --dp D): every tensor graph input's dim 0 (its batch) is
  // divided by this, so each replica compiles for its slice of the batch. An input
  // of rank 0 or whose dim 0 D does not divide is refused.
  int64_t batch_split = 1;
};

// Refusal because a value the compiler needs at compile time (a shape, axes, a
// bound, the data of NonZero/Unique) is computed at run time. `value()` names the
// graph input it is computed from (the value itself when none), so a caller can
// specialise that graph input with ImportOptions::constant_inputs and retry.
class NeedsConstantError : public ir::UnsupportedError {
 public:
  NeedsConstantError(const std::string& msg, std::string value)
      : ir::UnsupportedError(msg), value_(std::move(value)) {}
  const std::string& value() const { return value_; }

 private:
  std::string value_;
};

// Nodes of this domain are user kernels in tile IR (op type: the kernel's name),
// imported as trn.TileKernel (compiler/ir/tile_kernel.h); other domains are refused.
inline constexpr const char* kTileKernelDomain = "trnsim.kernels";
// Nodes of this domain are collectives over the ranks of an SPMD launch: AllReduce
// (ints attribute `group`, one input, one output) is imported as trn.AllReduce.
inline constexpr const char* kCollectiveDomain = "trnsim.collective";

// Import a model file. `path` also labels error messages.
ir::Graph import_onnx_file(const std::string& path, const ImportOptions& opts = {});
// Import serialized ModelProto bytes; `label` prefixes error messages.
ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& label,
                            const ImportOptions& opts = {});
ir::Graph import_onnx_model(const onnx::ModelProto& model, const std::string& label,
                            const ImportOptions& opts = {});

// The ONNX op types the front end converts, sorted.
const std::vector<std::string>& supported_onnx_ops();

}  // namespace trnsim::frontend
