#include "compiler/roofline.h"

#include <set>

#include "compiler/ir/trn_ops.h"

namespace trnsim::compiler {

namespace {

using isa::DType;

bool is_alias(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity";
}
bool is_data_movement(const std::string& op) {
  static const std::set<std::string> s = {
      "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose",
      "Concat",  "Split",   "Slice",   "Pad",       "Expand",   "Tile",
      "Gather",  "Cast",    "Shape",   "Size",      "Dropout",  "trn.TileKernel"};
  return s.count(op) != 0;
}
// Tensor-engine ops: a fused node's principal origin.
bool is_tensor_op(const std::string& op) {
  return op == "MatMul" || op == "Gemm" || op == "Conv" || op == "ConvTranspose" ||
         op == "Einsum" || op == "MatMulInteger" || op == "ConvInteger";
}

double numel(const ir::Value* v) {
  return v ? double(ir::num_elements(v->shape())) : 0.0;
}

DType mm_dtype(const ir::Node& n) {
  std::optional<ir::ElemType> e = ir::compute_dtype(n);
  if (!e && n.input(0)) e = n.input(0)->elem();
  switch (e.value_or(ir::ElemType::fp32)) {
    case ir::ElemType::bf16:
      return DType::bf16;
    case ir::ElemType::fp16:
      return DType::fp16;
    case ir::ElemType::fp8e4m3:
      return DType::fp8e4m3;
    case ir::ElemType::fp8e5m2:
      return DType::fp8e5m2;
    default:
      return DType::fp32;
  }
}

double prod_from(const ir::Shape& s, size_t from) {
  double p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= double(s[i]);
  return p;
}

// Bytes of a value as the program stores it in HBM.
uint64_t hbm_bytes(const ir::Value* v) {
  const ir::ElemType e = v->elem();
  const uint64_t size = (e == ir::ElemType::bf16 || e == ir::ElemType::fp16) ? 2 : 4;
  const int64_t n = ir::num_elements(v->shape());
  return size * uint64_t(n > 0 ? n : 1);
}

// Bytes the program reads of node input `i`, `v`: a constant fp32 weight of a
// tensor-engine op with a narrower compute_dtype is read as the copy lowering casts
// once at compile time (compiler/lower/matmul.cpp, conv.cpp), the fp32 original not
// at all; everything else as stored.
uint64_t read_bytes(const ir::Node& n, size_t i, const ir::Value* v) {
  const bool weight = i == 1 && (ir::is_matmul_anchor(n.op) || n.op == "trn.MatMulEpilogue");
  if (!weight || !v->has_data() || v->elem() != ir::ElemType::fp32) return hbm_bytes(v);
  const uint64_t size = isa::dtype_size(mm_dtype(n));
  if (size >= 4) return hbm_bytes(v);
  const int64_t e = ir::num_elements(v->shape());
  return size * uint64_t(e > 0 ? e : 1);
}

}  // namespace

double RooflineKind::total_flops() const {
  double f = 0;
  for (double x : flops) f += x;
  return f;
}
double ProgramRoofline::total_flops() const {
  double f = 0;
  for (double x : flops) f += x;
  return f;
}

void node_flops(const ir::Node& n, FlopsByDtype& out) {
  const std::string& op = n.op;
  const ir::Value* y = n.outputs.empty() ? nullptr : n.outputs[0];
  auto fp32 = [&](double f) { out[size_t(DType::fp32)] += f; };
  if (op == "trn.MatMulEpilogue" || op == "trn.Elementwise") {
    // Shapes only: the weights are not copied into the body.
    const ir::Graph body = ir::fused_body(n, /*inline_constants=*/false);
    for (const auto& s : body.nodes()) node_flops(*s, out);
    return;
  }
  if (op == "MatMul") {
    const ir::Value* a = n.input(0);
    const double k = a && !a->shape().empty() ? double(a->shape().back()) : 1.0;
    out[size_t(mm_dtype(n))] += 2.0 * numel(y) * k;
  } else if (op == "Gemm") {
    const ir::Value* a = n.input(0);
    const bool ta = n.attr_int("transA", 0) != 0;
    const double k = a && a->shape().size() == 2 ? double(a->shape()[ta ? 0 : 1]) : 1.0;
    out[size_t(mm_dtype(n))] += 2.0 * numel(y) * k;
    if (n.input(2)) fp32(numel(y));
  } else if (op == "Conv") {
    const ir::Value* w = n.input(1);
    out[size_t(mm_dtype(n))] += 2.0 * numel(y) * (w ? prod_from(w->shape(), 1) : 1.0);
    if (n.input(2)) fp32(numel(y));
  } else if (op == "ConvTranspose") {
    const ir::Value* w = n.input(1);
    out[size_t(mm_dtype(n))] += 2.0 * numel(n.input(0)) * (w ? prod_from(w->shape(), 1) : 1.0);
    if (n.input(2)) fp32(numel(y));
  } else if (op == "trn.Attention") {
    // The two matmuls over every (query, key) pair, as written before fusion (causal
    // pairs skipped on the chip still count); the scale, mask and softmax in fp32.
    const ir::Value* q = n.input(0);
    const double d = q && !q->shape().empty() ? double(q->shape().back()) : 1.0;
    double skv = 0;  // keys of every (K, V) pair
    const bool rotary = n.attr_int("rotary", 0) != 0;
    const size_t seq_from_end = n.attr_int("seq_first", 0) ? 3 : 2;  // the sequence axis
    const size_t nqkv = n.inputs.size() - (rotary ? 4 : 0);
    for (size_t i = 1; i < nqkv; i += 2)
      if (const ir::Value* k = n.input(i); k && k->shape().size() >= seq_from_end)
        skv += double(k->shape()[k->shape().size() - seq_from_end]);
    // Rotating Q and K: two multiplies and an add per element.
    if (rotary && q) fp32(3.0 * (numel(q) + numel(n.input(1))));
    const double dv = y && !y->shape().empty() ? double(y->shape().back()) : 1.0;
    const double pairs = dv > 0 ? numel(y) / dv * skv : 0.0;
    out[size_t(mm_dtype(n))] += 2.0 * pairs * (d + dv);
    fp32((n.attr_int("causal", 0) ? 7.0 : 6.0) * pairs);
  } else if (op == "Softmax" || op == "LogSoftmax") {
    fp32(5.0 * numel(y));  // max, subtract, exp, sum, divide (or log)
  } else if (op == "trn.LayerNorm") {
    fp32(8.0 * numel(y));  // mean, subtract, square, sum, rsqrt-scale, scale, bias
  } else if (op == "trn.RMSNorm") {
    fp32(4.0 * numel(y));  // square, sum, scale, weight
  } else if (op.rfind("Reduce", 0) == 0) {
    fp32(numel(n.input(0)));
  } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    fp32(numel(n.input(0)));
  } else if (op == "MaxPool" || op == "AveragePool") {
    double win = 1;
    if (n.has_attr("kernel_shape"))
      for (int64_t d : n.attr_ints("kernel_shape")) win *= double(d);
    fp32(numel(y) * win);
  } else if (!is_data_movement(op)) {
    fp32(numel(y));  // elementwise: one per output element
  }
}

ProgramRoofline analyse_roofline(const ir::Graph& g, const tile::Kernel& k, const isa::Program& p) {
  ProgramRoofline r;
  // Values that must live in HBM: graph inputs and weights, and their aliases.
  std::set<const ir::Value*> resident;
  for (const ir::Value* v : g.inputs()) resident.insert(v);
  for (const auto& v : g.values())
    if (v->is_constant) resident.insert(v.get());
  std::set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end());

  std::map<std::string, int> kind_of_name;
  std::vector<std::set<std::pair<std::string, std::string>>> origins;  // per kind
  std::vector<int> node_kind;
  // Program: inputs and weights any node reads, each copy (fp32, cast) once.
  std::set<std::pair<const ir::Value*, uint64_t>> read;
  for (const auto& np : g.nodes()) {
    const ir::Node& n = *np;
    std::pair<std::string, std::string> principal{n.op, n.name};
    if (!n.origin.empty()) {
      principal = n.origin.front();
      for (const auto& o : n.origin)
        if (is_tensor_op(o.first)) {
          principal = o;
          break;
        }
    }
    auto [it, fresh] = kind_of_name.emplace(principal.first, int(r.kinds.size()));
    if (fresh) {
      RooflineKind kind;
      kind.name = principal.first;
      r.kinds.push_back(std::move(kind));
      origins.emplace_back();
    }
    const int ki = it->second;
    node_kind.push_back(ki);
    RooflineKind& kind = r.kinds[size_t(ki)];
    origins[size_t(ki)].insert(principal);
    for (const auto& o : n.origin)
      if (o != principal) ++kind.fused[o.first];

    FlopsByDtype f{};
    node_flops(n, f);
    for (size_t d = 0; d < f.size(); ++d) kind.flops[d] += f[d], r.flops[d] += f[d];

    std::set<const ir::Value*> seen;
    if (is_alias(n.op)) {
      // Same bytes under a new shape: resident when its input is; moves bytes only
      // when it copies into a graph output.
      const ir::Value* in = n.input(0);
      for (const ir::Value* o : n.outputs) {
        if (in && resident.count(in) && !outputs.count(o)) resident.insert(o);
        if (outputs.count(o)) kind.min_bytes += hbm_bytes(o);
      }
    } else {
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const ir::Value* v = n.inputs[i];
        if (v && resident.count(v) && seen.insert(v).second) kind.min_bytes += read_bytes(n, i, v);
      }
      for (const ir::Value* o : n.outputs)
        if (outputs.count(o) && seen.insert(o).second) kind.min_bytes += hbm_bytes(o);
    }
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::Value* v = n.inputs[i];
      if (v && (v->is_graph_input || v->is_constant)) read.insert({v, read_bytes(n, i, v)});
    }
  }
  for (size_t i = 0; i < r.kinds.size(); ++i) r.kinds[i].count = origins[i].size();
  for (const auto& [v, bytes] : read) r.min_bytes += bytes;
  std::set<const ir::Value*> written;
  for (const ir::Value* v : g.outputs())
    if (!v->is_graph_input && written.insert(v).second) r.min_bytes += hbm_bytes(v);

  // Instructions per queue, as codegen orders them (tile::queue_of, op list order).
  std::map<tile::QueueId, std::vector<int32_t>> queues;
  for (const tile::Op& op : k.ops)
    queues[tile::queue_of(op)].push_back(
        op.node >= 0 && size_t(op.node) < node_kind.size() ? node_kind[size_t(op.node)] : -1);
  bool match = queues.size() == p.queues.size();
  size_t qi = 0;
  for (auto it = queues.begin(); match && it != queues.end(); ++it, ++qi)
    match = it->second.size() == p.queues[qi].instrs.size();
  if (match)
    for (auto& [id, kinds] : queues) r.instr_kind.push_back(std::move(kinds));
  return r;
}

}  // namespace trnsim::compiler
