// Host fallback, compiler side: a graph whose nodes do not all lower to the chip is
// cut into segments in node order, each a self-contained graph. Device segments are
// compiled to programs; host segments run in the reference interpreter (the runtime
// charges the host<->device transfers, runtime/fallback.h). A node runs on the host
// when the lowering refuses it (ir::UnsupportedError); the reason is kept for the
// report. Errors that are not refusals (bad models, kernels that do not fit) still
// throw.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"

namespace trnsim::compiler {

struct FallbackNode {
  std::string node;    // node name, else its first output's name
  std::string op;      // op type (after the graph passes: may be a fused trn.* op)
  std::string reason;  // the lowering's refusal
  // The imported (ONNX) nodes it computes, (op type, node name): ir::Node::origin.
  std::vector<std::pair<std::string, std::string>> onnx;
};

struct PartitionedModel;

// One branch of an If the host decides (Segment::branches): its own partitioned
// model, and the names its graph gives the If's captured inputs (If inputs 1..)
// and its outputs (the If's outputs), in order.
struct Branch {
  std::string name;  // "then_branch" / "else_branch"
  std::vector<std::string> inputs, outputs;
  std::shared_ptr<const PartitionedModel> model;
};

struct Segment {
  bool on_device = true;
  ir::Graph graph;       // inputs: model inputs or values of earlier segments
  isa::Program program;  // device segments only
  // A host decision: `graph` is one If node whose condition is a run-time value.
  // The host reads the condition and runs the chosen branch's model (its device
  // segments on the device). on_device is false: code that knows no branches runs
  // the If in the interpreter.
  std::vector<Branch> branches;
  // The whole graph on the device (one segment): FLOPs, bytes, instruction origins.
  std::shared_ptr<const ProgramRoofline> roofline;
};

struct PartitionedModel {
  ir::Graph graph;  // the whole graph after the graph pipeline
  std::vector<Segment> segments;
  std::vector<FallbackNode> fallback;  // nodes that run on the host, in node order
  // If nodes decided on the host (Segment::branches); not in `fallback`: their
  // branches' nodes run on the device unless listed there (reason "in <branch> of If").
  std::vector<FallbackNode> decisions;
  std::map<std::string, double> stats;  // tile pass figures, summed over device segments
  std::string dump_text;
};

// Runs the graph pipeline, then compiles the whole graph as one device segment when
// it lowers; otherwise (and only when `allow_fallback`) partitions it. Without
// fallback, a refusal throws ir::UnsupportedError as compile_graph does, except for
// If nodes with a run-time condition: those are still host decisions when every
// other node, and every node of their branches, lowers (nothing computes on the
// host; the host only reads the condition).
PartitionedModel compile_partitioned(ir::Graph g, const CompileOnnxOptions& o, bool allow_fallback);

// The nodes [begin, end) of `g` (in node order) as a graph of their own: values
// read from outside become inputs (constants with data stay constants), values
// read after `end` or that are outputs of `g` become outputs.
ir::Graph extract_segment(const ir::Graph& g, size_t begin, size_t end);

// extract_segment without a copy of the constants' data: each constant the segment
// reads moves from `g` into it and moves back when this is destroyed (a large
// model's pieces are lowered one at a time without holding their weights twice).
// Meanwhile those constants of `g` hold empty tensors; `g` must outlive this.
class LentSegment {
 public:
  LentSegment(ir::Graph& g, size_t begin, size_t end);
  ~LentSegment();
  LentSegment(const LentSegment&) = delete;
  LentSegment& operator=(const LentSegment&) = delete;
  const ir::Graph& graph() const { return graph_; }

 private:
  std::vector<std::pair<ir::Value*, ir::Value*>> lent_;  // (g's value, the segment's)
  ir::Graph graph_;
};

}  // namespace trnsim::compiler
