#include "compiler/ir/ops.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "compiler/ir/error.h"
#include "compiler/ir/ops_index.h"
#include "compiler/ir/tile_kernel.h"
#include "compiler/ir/trn_ops.h"

namespace trnsim::ir {
namespace {

using K = Attribute::Kind;
using InferFn = std::function<std::vector<TensorType>(const Node&)>;
using NormFn = std::function<void(Node&)>;

struct OpDef {
  OpSchema schema;
  NormFn normalize;  // op-specific defaults and axis fixing; may be empty
  InferFn infer;
};

[[noreturn]] void fail(const std::string& msg) {
  throw CompileError(msg);
}

std::string str_ints(const std::vector<int64_t>& v) {
  return shape_str(v);
}

const Value& in(const Node& n, size_t k) {
  const Value* v = n.input(k);
  if (!v) fail("input " + std::to_string(k) + " is required");
  return *v;
}

const Shape& shp(const Node& n, size_t k) {
  return in(n, k).shape();
}

void require_float(const Node& n, size_t k) {
  if (!is_float(in(n, k).elem()))
    fail("input " + std::to_string(k) + " ('" + in(n, k).name + "') must be floating point, got " +
         in(n, k).type.str());
}
void require_numeric(const Node& n, size_t k) {
  if (in(n, k).elem() == ElemType::boolean)
    fail("input " + std::to_string(k) + " ('" + in(n, k).name + "') must be numeric, got bool");
}
void require_bool(const Node& n, size_t k) {
  if (in(n, k).elem() != ElemType::boolean)
    fail("input " + std::to_string(k) + " ('" + in(n, k).name + "') must be bool, got " +
         in(n, k).type.str());
}
void require_same_elem(const Node& n, size_t a, size_t b) {
  if (in(n, a).elem() != in(n, b).elem())
    fail("inputs " + std::to_string(a) + " and " + std::to_string(b) + " have different types (" +
         in(n, a).type.str() + ", " + in(n, b).type.str() + ")");
}
void require_rank(const Node& n, size_t k, int64_t lo, int64_t hi) {
  int64_t r = in(n, k).rank();
  if (r < lo || r > hi)
    fail("input " + std::to_string(k) + " ('" + in(n, k).name + "') has rank " + std::to_string(r) +
         ", expected " +
         (lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi)));
}
void require_int_indices(const Node& n, size_t k) {
  ElemType e = in(n, k).elem();
  if (e != ElemType::int64 && e != ElemType::int32)
    fail("input " + std::to_string(k) + " ('" + in(n, k).name +
         "') must be int32/int64 indices, got " + in(n, k).type.str());
}

int64_t axis_attr(Node& n, const std::string& key, int64_t rank, bool inclusive = false) {
  int64_t a = normalize_axis(n.attr_int(key), rank, inclusive);
  n.attrs[key] = a;
  return a;
}

std::vector<int64_t> sorted_axes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> r;
  for (int64_t a : axes) r.push_back(normalize_axis(a, rank));
  std::sort(r.begin(), r.end());
  if (std::adjacent_find(r.begin(), r.end()) != r.end())
    fail("axes " + str_ints(axes) + " repeat an axis");
  return r;
}

std::vector<TensorType> same_as_input0(const Node& n) {
  return {in(n, 0).type};
}

std::vector<TensorType> bcast_out(const Node& n, ElemType elem, size_t first = 0) {
  std::vector<Shape> shapes;
  for (size_t k = first; k < n.inputs.size(); ++k) shapes.push_back(shp(n, k));
  return {{elem, broadcast_shapes(shapes)}};
}

// Windowed ops: fill kernel_shape/strides/dilations/pads defaults.
void norm_window(Node& n, bool from_weights) {
  int64_t k = in(n, 0).rank() - 2;
  if (k < 1) fail("input 0 must have rank >= 3 ([N, C, spatial...]), got " + in(n, 0).type.str());
  if (!n.has_attr("kernel_shape")) {
    if (!from_weights) fail("missing attribute 'kernel_shape'");
    const Shape& w = shp(n, 1);
    if (static_cast<int64_t>(w.size()) != k + 2)
      fail("weights " + in(n, 1).type.str() + " do not match input rank " + std::to_string(k + 2));
    n.attrs["kernel_shape"] = std::vector<int64_t>(w.begin() + 2, w.end());
  }
  if (!n.has_attr("strides")) n.attrs["strides"] = std::vector<int64_t>(k, 1);
  if (!n.has_attr("pads")) n.attrs["pads"] = std::vector<int64_t>(2 * k, 0);
  if (n.op != "AveragePool" && !n.has_attr("dilations"))
    n.attrs["dilations"] = std::vector<int64_t>(k, 1);
  if (n.op == "ConvTranspose" && !n.has_attr("output_padding"))
    n.attrs["output_padding"] = std::vector<int64_t>(k, 0);
}

std::vector<TensorType> infer_conv(const Node& n) {
  require_float(n, 0);
  require_same_elem(n, 0, 1);
  const Shape& x = shp(n, 0);
  const Shape& w = shp(n, 1);
  int64_t g = n.attr_int("group");
  if (w.size() != x.size()) fail("weights " + in(n, 1).type.str() + " must have the input's rank");
  if (g < 1 || x[1] % g != 0)
    fail("group " + std::to_string(g) + " does not divide the input channels");
  bool transposed = n.op == "ConvTranspose";
  int64_t out_ch;
  if (!transposed) {
    if (w[1] * g != x[1])
      fail("weights " + in(n, 1).type.str() + " expect " + std::to_string(w[1] * g) +
           " input channels (group " + std::to_string(g) + "), input has " + std::to_string(x[1]));
    if (w[0] % g != 0) fail("group " + std::to_string(g) + " does not divide the output channels");
    out_ch = w[0];
  } else {
    if (w[0] != x[1])
      fail("weights " + in(n, 1).type.str() + " expect " + std::to_string(w[0]) +
           " input channels, input has " + std::to_string(x[1]));
    out_ch = w[1] * g;
  }
  if (const Value* b = n.input(2)) {
    if (b->shape() != Shape{out_ch})
      fail("bias " + b->type.str() + " must be [" + std::to_string(out_ch) + "]");
    require_same_elem(n, 0, 2);
  }
  WindowGeometry geo = window_geometry(n);
  for (size_t i = 0; i < geo.kernel.size(); ++i)
    if (geo.kernel[i] != w[i + 2])
      fail("kernel_shape " + str_ints(geo.kernel) + " does not match weights " +
           in(n, 1).type.str());
  Shape out{x[0], out_ch};
  out.insert(out.end(), geo.out.begin(), geo.out.end());
  return {{in(n, 0).elem(), out}};
}

std::vector<TensorType> infer_pool(const Node& n) {
  require_numeric(n, 0);
  WindowGeometry geo = window_geometry(n);
  Shape out{shp(n, 0)[0], shp(n, 0)[1]};
  out.insert(out.end(), geo.out.begin(), geo.out.end());
  return {{in(n, 0).elem(), out}};
}

// MaxPool's optional second output: the flat int64 index of each maximum.
std::vector<TensorType> infer_max_pool(const Node& n) {
  std::vector<TensorType> r = infer_pool(n);
  const int64_t order = n.attr_int("storage_order", 0);
  if (order != 0 && order != 1) fail("storage_order must be 0 or 1, got " + std::to_string(order));
  r.push_back({ElemType::int64, r[0].shape});
  return r;
}

std::vector<TensorType> infer_global_pool(const Node& n) {
  require_float(n, 0);
  require_rank(n, 0, 3, 64);
  Shape out = shp(n, 0);
  for (size_t i = 2; i < out.size(); ++i) out[i] = 1;
  return {{in(n, 0).elem(), out}};
}

std::vector<TensorType> infer_reduce(const Node& n) {
  const Value& x = in(n, 0);
  if (n.op != "ReduceMax" && n.op != "ReduceMin") require_numeric(n, 0);
  const auto& axes = n.attr_ints("axes");
  bool keep = n.attr_int("keepdims") != 0;
  Shape out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool reduced = axes.empty() || std::find(axes.begin(), axes.end(), d) != axes.end();
    if (reduced && x.shape()[d] == 0 && (n.op == "ReduceMax" || n.op == "ReduceMin"))
      fail("cannot reduce an empty dim with " + n.op);
    if (!reduced)
      out.push_back(x.shape()[d]);
    else if (keep)
      out.push_back(1);
  }
  return {{x.elem(), out}};
}

Shape matmul_shape(const Shape& a0, const Shape& b0) {
  if (a0.empty() || b0.empty()) fail("MatMul operands must have rank >= 1");
  Shape a = a0, b = b0;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    fail("inner dims differ: " + shape_str(a0) + " @ " + shape_str(b0));
  Shape batch = broadcast_shapes({Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)});
  if (a0.size() != 1) batch.push_back(a[a.size() - 2]);
  if (b0.size() != 1) batch.push_back(b.back());
  return batch;
}

// --- the table --------------------------------------------------------------

std::map<std::string, OpDef, std::less<>>& table() {
  static std::map<std::string, OpDef, std::less<>> t;
  return t;
}

AttrSpec A(std::string name, K kind) {
  return {std::move(name), kind, false, {}};
}
AttrSpec A(std::string name, K kind, Attribute dflt) {
  return {std::move(name), kind, true, std::move(dflt)};
}
// An attribute that may stay absent (no default).
AttrSpec Opt(std::string name, K kind) {
  return {std::move(name), kind, false, {}, true};
}

void def(std::string name, int min_in, int max_in, int min_out, int max_out,
         std::vector<AttrSpec> attrs, InferFn infer, NormFn norm = {}) {
  OpDef d;
  d.schema = {name, min_in, max_in, min_out, max_out, std::move(attrs)};
  d.infer = std::move(infer);
  d.normalize = std::move(norm);
  table().emplace(std::move(name), std::move(d));
}

constexpr float kInf = std::numeric_limits<float>::infinity();

void register_ops_control();

void register_ops() {
  // Unary float ops.
  auto unary_float = [](const Node& n) {
    require_float(n, 0);
    return same_as_input0(n);
  };
  for (const char* op :
       {"Sigmoid",  "Tanh",      "Erf",   "Exp",   "Log",   "Sqrt",  "Reciprocal", "Softplus",
        "Softsign", "HardSwish", "Sin",   "Cos",   "Tan",   "Asin",  "Acos",       "Atan",
        "Sinh",     "Cosh",      "Asinh", "Acosh", "Atanh", "Floor", "Ceil",       "Round"})
    def(op, 1, 1, 1, 1, {}, unary_float);
  def("HardSigmoid", 1, 1, 1, 1, {A("alpha", K::kFloat, 0.2f), A("beta", K::kFloat, 0.5f)},
      unary_float);
  def("Elu", 1, 1, 1, 1, {A("alpha", K::kFloat, 1.0f)}, unary_float);
  def("Celu", 1, 1, 1, 1, {A("alpha", K::kFloat, 1.0f)}, unary_float);
  def("Selu", 1, 1, 1, 1,
      {A("alpha", K::kFloat, 1.67326319217681884765625f),
       A("gamma", K::kFloat, 1.05070102214813232421875f)},
      unary_float);
  def("LeakyRelu", 1, 1, 1, 1, {A("alpha", K::kFloat, 0.01f)}, unary_float);
  def("ThresholdedRelu", 1, 1, 1, 1, {A("alpha", K::kFloat, 1.0f)}, unary_float);

  auto unary_numeric = [](const Node& n) {
    require_numeric(n, 0);
    return same_as_input0(n);
  };
  for (const char* op : {"Relu", "Neg", "Abs", "Sign"}) def(op, 1, 1, 1, 1, {}, unary_numeric);
  def("Clip", 1, 1, 1, 1, {A("min", K::kFloat, -kInf), A("max", K::kFloat, kInf)}, unary_numeric);
  def("Identity", 1, 1, 1, 1, {}, same_as_input0);
  def("Not", 1, 1, 1, 1, {}, [](const Node& n) {
    require_bool(n, 0);
    return same_as_input0(n);
  });
  auto float_to_bool = [](const Node& n) {
    require_float(n, 0);
    return std::vector<TensorType>{{ElemType::boolean, shp(n, 0)}};
  };
  def("IsNaN", 1, 1, 1, 1, {}, float_to_bool);
  def("IsInf", 1, 1, 1, 1, {A("detect_negative", K::kInt, 1), A("detect_positive", K::kInt, 1)},
      float_to_bool);

  // Binary and variadic broadcasting ops.
  auto arith = [](const Node& n) {
    require_numeric(n, 0);
    for (size_t k = 1; k < n.inputs.size(); ++k) require_same_elem(n, 0, k);
    return bcast_out(n, in(n, 0).elem());
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) def(op, 2, 2, 1, 1, {}, arith);
  def("Mod", 2, 2, 1, 1, {A("fmod", K::kInt, 0)}, arith);
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) def(op, 1, -1, 1, 1, {}, arith);
  def("Pow", 2, 2, 1, 1, {}, [](const Node& n) {
    require_numeric(n, 0);
    require_numeric(n, 1);
    return bcast_out(n, in(n, 0).elem());
  });
  def("PRelu", 2, 2, 1, 1, {}, [](const Node& n) {
    require_float(n, 0);
    require_same_elem(n, 0, 1);
    if (broadcast_shapes({shp(n, 0), shp(n, 1)}) != shp(n, 0))
      fail("slope " + in(n, 1).type.str() + " does not broadcast to " + in(n, 0).type.str());
    return same_as_input0(n);
  });
  auto compare = [](const Node& n) {
    require_same_elem(n, 0, 1);
    return bcast_out(n, ElemType::boolean);
  };
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    def(op, 2, 2, 1, 1, {}, compare);
  auto logic = [](const Node& n) {
    require_bool(n, 0);
    require_bool(n, 1);
    return bcast_out(n, ElemType::boolean);
  };
  for (const char* op : {"And", "Or", "Xor"}) def(op, 2, 2, 1, 1, {}, logic);
  def("Where", 3, 3, 1, 1, {}, [](const Node& n) {
    require_bool(n, 0);
    require_same_elem(n, 1, 2);
    return bcast_out(n, in(n, 1).elem());
  });
  def("Cast", 1, 1, 1, 1, {A("to", K::kString)}, [](const Node& n) {
    auto t = parse_elem_type(n.attr_string("to"));
    if (!t) fail("unknown element type '" + n.attr_string("to") + "'");
    return std::vector<TensorType>{{*t, shp(n, 0)}};
  });

  // Linear algebra and NN ops.
  def("MatMul", 2, 2, 1, 1, {Opt("compute_dtype", K::kString)}, [](const Node& n) {
    require_numeric(n, 0);
    require_same_elem(n, 0, 1);
    return std::vector<TensorType>{{in(n, 0).elem(), matmul_shape(shp(n, 0), shp(n, 1))}};
  });
  def("Gemm", 2, 3, 1, 1,
      {A("alpha", K::kFloat, 1.0f), A("beta", K::kFloat, 1.0f), A("transA", K::kInt, 0),
       A("transB", K::kInt, 0), Opt("compute_dtype", K::kString)},
      [](const Node& n) {
        require_numeric(n, 0);
        require_same_elem(n, 0, 1);
        require_rank(n, 0, 2, 2);
        require_rank(n, 1, 2, 2);
        const Shape& a = shp(n, 0);
        const Shape& b = shp(n, 1);
        int64_t m = n.attr_int("transA") ? a[1] : a[0];
        int64_t ka = n.attr_int("transA") ? a[0] : a[1];
        int64_t kb = n.attr_int("transB") ? b[1] : b[0];
        int64_t nn = n.attr_int("transB") ? b[0] : b[1];
        if (ka != kb)
          fail("inner dims differ: A " + shape_str(a) + ", B " + shape_str(b) +
               " (after transA/transB)");
        Shape out{m, nn};
        if (const Value* c = n.input(2)) {
          require_same_elem(n, 0, 2);
          if (broadcast_shapes({out, c->shape()}) != out)
            fail("C " + c->type.str() + " does not broadcast to " + shape_str(out));
        }
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      });
  std::vector<AttrSpec> conv_attrs{A("kernel_shape", K::kInts), A("strides", K::kInts),
                                   A("pads", K::kInts),         A("dilations", K::kInts),
                                   A("group", K::kInt, 1),      Opt("compute_dtype", K::kString)};
  def("Conv", 2, 3, 1, 1, conv_attrs, infer_conv, [](Node& n) { norm_window(n, true); });
  conv_attrs.push_back(A("output_padding", K::kInts));
  def("ConvTranspose", 2, 3, 1, 1, conv_attrs, infer_conv, [](Node& n) { norm_window(n, true); });
  def("MaxPool", 1, 1, 1, 2,
      {A("kernel_shape", K::kInts), A("strides", K::kInts), A("pads", K::kInts),
       A("dilations", K::kInts), A("ceil_mode", K::kInt, 0), Opt("storage_order", K::kInt)},
      infer_max_pool, [](Node& n) { norm_window(n, false); });
  def(
      "AveragePool", 1, 1, 1, 1,
      {A("kernel_shape", K::kInts), A("strides", K::kInts), A("pads", K::kInts),
       A("ceil_mode", K::kInt, 0), A("count_include_pad", K::kInt, 0)},
      [](const Node& n) {
        require_float(n, 0);
        return infer_pool(n);
      },
      [](Node& n) { norm_window(n, false); });
  def("GlobalAveragePool", 1, 1, 1, 1, {}, infer_global_pool);
  def("GlobalMaxPool", 1, 1, 1, 1, {}, infer_global_pool);
  def("BatchNormalization", 5, 5, 1, 1, {A("epsilon", K::kFloat, 1e-5f)}, [](const Node& n) {
    require_float(n, 0);
    require_rank(n, 0, 2, 64);
    for (size_t k = 1; k < 5; ++k) {
      require_float(n, k);
      if (shp(n, k) != Shape{shp(n, 0)[1]})
        fail("input " + std::to_string(k) + " ('" + in(n, k).name + "') is " + in(n, k).type.str() +
             ", expected [" + std::to_string(shp(n, 0)[1]) + "] (one per channel)");
    }
    return same_as_input0(n);
  });
  def("InstanceNormalization", 3, 3, 1, 1, {A("epsilon", K::kFloat, 1e-5f)}, [](const Node& n) {
    require_float(n, 0);
    require_rank(n, 0, 3, 64);
    for (size_t k = 1; k < 3; ++k)
      if (shp(n, k) != Shape{shp(n, 0)[1]})
        fail("input " + std::to_string(k) + " is " + in(n, k).type.str() + ", expected [" +
             std::to_string(shp(n, 0)[1]) + "]");
    return same_as_input0(n);
  });
  def(
      "LayerNormalization", 2, 3, 1, 3, {A("axis", K::kInt, -1), A("epsilon", K::kFloat, 1e-5f)},
      [](const Node& n) {
        require_float(n, 0);
        const Shape& x = shp(n, 0);
        int64_t axis = n.attr_int("axis");
        Shape inner(x.begin() + axis, x.end());
        for (size_t k = 1; k < 3; ++k)
          if (const Value* p = n.input(k)) {
            require_same_elem(n, 0, k);
            if (broadcast_shapes({inner, p->shape()}) != inner)
              fail("input " + std::to_string(k) + " " + p->type.str() +
                   " does not broadcast to the normalized dims " + shape_str(inner));
          }
        Shape stat = x;
        for (size_t d = axis; d < stat.size(); ++d) stat[d] = 1;
        return std::vector<TensorType>{
            in(n, 0).type, {ElemType::fp32, stat}, {ElemType::fp32, stat}};
      },
      [](Node& n) { axis_attr(n, "axis", in(n, 0).rank()); });
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    def(
        op, 1, 1, 1, 1, {A("axis", K::kInt, -1)},
        [](const Node& n) {
          require_float(n, 0);
          return same_as_input0(n);
        },
        [](Node& n) { axis_attr(n, "axis", in(n, 0).rank()); });

  // Reductions.
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    def(op, 1, 1, 1, 1, {A("axes", K::kInts, std::vector<int64_t>{}), A("keepdims", K::kInt, 1)},
        infer_reduce,
        [](Node& n) { n.attrs["axes"] = sorted_axes(n.attr_ints("axes"), in(n, 0).rank()); });
  for (const char* op : {"ArgMax", "ArgMin"})
    def(
        op, 1, 1, 1, 1,
        {A("axis", K::kInt, 0), A("keepdims", K::kInt, 1), A("select_last_index", K::kInt, 0)},
        [](const Node& n) {
          require_numeric(n, 0);
          Shape out = shp(n, 0);
          int64_t axis = n.attr_int("axis");
          if (out[axis] == 0) fail("cannot take " + n.op + " over an empty dim");
          if (n.attr_int("keepdims"))
            out[axis] = 1;
          else
            out.erase(out.begin() + axis);
          return std::vector<TensorType>{{ElemType::int64, out}};
        },
        [](Node& n) {
          if (in(n, 0).rank() == 0) fail("input must have rank >= 1");
          axis_attr(n, "axis", in(n, 0).rank());
        });

  // Shape manipulation.
  def("Reshape", 1, 1, 1, 1, {A("shape", K::kInts)}, [](const Node& n) {
    const Shape& s = n.attr_ints("shape");
    for (int64_t d : s)
      if (d < 0) fail("shape " + str_ints(s) + " must be fully resolved (no -1)");
    if (num_elements(s) != in(n, 0).type.numel())
      fail("cannot reshape " + in(n, 0).type.str() + " to " + str_ints(s));
    return std::vector<TensorType>{{in(n, 0).elem(), s}};
  });
  def(
      "Flatten", 1, 1, 1, 1, {A("axis", K::kInt, 1)},
      [](const Node& n) {
        const Shape& x = shp(n, 0);
        int64_t axis = n.attr_int("axis");
        Shape out{num_elements(Shape(x.begin(), x.begin() + axis)),
                  num_elements(Shape(x.begin() + axis, x.end()))};
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) { axis_attr(n, "axis", in(n, 0).rank(), true); });
  def(
      "Transpose", 1, 1, 1, 1, {A("perm", K::kInts)},
      [](const Node& n) {
        const Shape& x = shp(n, 0);
        const auto& perm = n.attr_ints("perm");
        std::vector<int64_t> sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        for (size_t i = 0; i < sorted.size(); ++i)
          if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != x.size())
            fail("perm " + str_ints(perm) + " is not a permutation of 0.." +
                 std::to_string(x.size() - 1));
        Shape out;
        for (int64_t p : perm) out.push_back(x[p]);
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) {
        int64_t r = in(n, 0).rank();
        if (!n.has_attr("perm")) {
          std::vector<int64_t> p(r);
          for (int64_t i = 0; i < r; ++i) p[i] = r - 1 - i;
          n.attrs["perm"] = p;
        } else {
          std::vector<int64_t> p = n.attr_ints("perm");
          if (static_cast<int64_t>(p.size()) != r)
            fail("perm " + str_ints(p) + " must have " + std::to_string(r) + " entries");
          for (auto& a : p) a = normalize_axis(a, r);
          n.attrs["perm"] = p;
        }
      });
  def(
      "Squeeze", 1, 1, 1, 1, {A("axes", K::kInts)},
      [](const Node& n) {
        const Shape& x = shp(n, 0);
        const auto& axes = n.attr_ints("axes");
        Shape out;
        for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) {
          if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
            out.push_back(x[d]);
          } else if (x[d] != 1) {
            fail("cannot squeeze dim " + std::to_string(d) + " of " + in(n, 0).type.str() +
                 " (size is not 1)");
          }
        }
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) {
        const Shape& x = shp(n, 0);
        if (!n.has_attr("axes")) {
          std::vector<int64_t> axes;
          for (size_t d = 0; d < x.size(); ++d)
            if (x[d] == 1) axes.push_back(static_cast<int64_t>(d));
          n.attrs["axes"] = axes;
        } else {
          n.attrs["axes"] = sorted_axes(n.attr_ints("axes"), in(n, 0).rank());
        }
      });
  def(
      "Unsqueeze", 1, 1, 1, 1, {A("axes", K::kInts)},
      [](const Node& n) {
        const Shape& x = shp(n, 0);
        const auto& axes = n.attr_ints("axes");
        Shape out;
        size_t src = 0;
        for (size_t d = 0; d < x.size() + axes.size(); ++d) {
          if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end())
            out.push_back(1);
          else
            out.push_back(x[src++]);
        }
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) {
        int64_t out_rank = in(n, 0).rank() + static_cast<int64_t>(n.attr_ints("axes").size());
        n.attrs["axes"] = sorted_axes(n.attr_ints("axes"), out_rank);
      });
  def(
      "Concat", 1, -1, 1, 1, {A("axis", K::kInt)},
      [](const Node& n) {
        Shape out = shp(n, 0);
        int64_t axis = n.attr_int("axis");
        for (size_t k = 1; k < n.inputs.size(); ++k) {
          const Shape& s = shp(n, k);
          require_same_elem(n, 0, k);
          bool ok = s.size() == out.size();
          for (size_t d = 0; ok && d < s.size(); ++d)
            if (static_cast<int64_t>(d) != axis && s[d] != out[d]) ok = false;
          if (!ok)
            fail("input " + std::to_string(k) + " " + in(n, k).type.str() +
                 " does not match input 0 " + in(n, 0).type.str() + " outside axis " +
                 std::to_string(axis));
          out[axis] += s[axis];
        }
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) {
        if (in(n, 0).rank() == 0) fail("cannot concatenate scalars");
        axis_attr(n, "axis", in(n, 0).rank());
      });
  def(
      "Split", 1, 1, 1, -1, {A("axis", K::kInt, 0), A("split", K::kInts)},
      [](const Node& n) {
        const Shape& x = shp(n, 0);
        int64_t axis = n.attr_int("axis");
        const auto& split = n.attr_ints("split");
        int64_t total = 0;
        for (int64_t s : split) {
          if (s < 0) fail("split " + str_ints(split) + " has a negative size");
          total += s;
        }
        if (total != x[axis])
          fail("split " + str_ints(split) + " does not sum to dim " + std::to_string(axis) +
               " of " + in(n, 0).type.str());
        if (!n.outputs.empty() && split.size() != n.outputs.size())
          fail("split " + str_ints(split) + " has " + std::to_string(split.size()) + " parts for " +
               std::to_string(n.outputs.size()) + " outputs");
        std::vector<TensorType> r;
        for (int64_t s : split) {
          Shape o = x;
          o[axis] = s;
          r.push_back({in(n, 0).elem(), o});
        }
        return r;
      },
      [](Node& n) {
        if (in(n, 0).rank() == 0) fail("cannot split a scalar");
        int64_t axis = axis_attr(n, "axis", in(n, 0).rank());
        if (!n.has_attr("split")) {
          int64_t parts = static_cast<int64_t>(n.outputs.size());
          int64_t dim = shp(n, 0)[axis];
          if (parts == 0 || dim % parts != 0)
            fail("dim " + std::to_string(axis) + " (" + std::to_string(dim) +
                 ") does not split evenly into " + std::to_string(parts) + " outputs");
          n.attrs["split"] = std::vector<int64_t>(parts, dim / parts);
        }
      });
  def(
      "Slice", 1, 1, 1, 1,
      {A("starts", K::kInts), A("ends", K::kInts), A("axes", K::kInts), A("steps", K::kInts)},
      [](const Node& n) {
        Shape out = shp(n, 0);
        std::vector<SliceDim> dims = slice_dims(n, out);
        for (size_t d = 0; d < out.size(); ++d) out[d] = dims[d].count;
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) {
        size_t cnt = n.attr_ints("starts").size();
        int64_t r = in(n, 0).rank();
        if (n.attr_ints("ends").size() != cnt) fail("starts and ends differ in length");
        if (!n.has_attr("axes")) {
          std::vector<int64_t> axes(cnt);
          for (size_t i = 0; i < cnt; ++i) axes[i] = static_cast<int64_t>(i);
          n.attrs["axes"] = axes;
        }
        std::vector<int64_t> axes = n.attr_ints("axes");
        if (axes.size() != cnt) fail("axes and starts differ in length");
        for (auto& a : axes) a = normalize_axis(a, r);
        std::vector<int64_t> chk = axes;
        std::sort(chk.begin(), chk.end());
        if (std::adjacent_find(chk.begin(), chk.end()) != chk.end())
          fail("axes " + str_ints(axes) + " repeat an axis");
        n.attrs["axes"] = axes;
        if (!n.has_attr("steps")) n.attrs["steps"] = std::vector<int64_t>(cnt, 1);
        if (n.attr_ints("steps").size() != cnt) fail("steps and starts differ in length");
        for (int64_t s : n.attr_ints("steps"))
          if (s == 0) fail("slice step must not be 0");
      });
  def(
      "Gather", 2, 2, 1, 1, {A("axis", K::kInt, 0)},
      [](const Node& n) {
        require_int_indices(n, 1);
        const Shape& x = shp(n, 0);
        int64_t axis = n.attr_int("axis");
        Shape out(x.begin(), x.begin() + axis);
        out.insert(out.end(), shp(n, 1).begin(), shp(n, 1).end());
        out.insert(out.end(), x.begin() + axis + 1, x.end());
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) {
        if (in(n, 0).rank() == 0) fail("cannot gather from a scalar");
        axis_attr(n, "axis", in(n, 0).rank());
      });
  def(
      "GatherElements", 2, 2, 1, 1, {A("axis", K::kInt, 0)},
      [](const Node& n) {
        require_int_indices(n, 1);
        if (shp(n, 1).size() != shp(n, 0).size()) fail("indices must have the data's rank");
        return std::vector<TensorType>{{in(n, 0).elem(), shp(n, 1)}};
      },
      [](Node& n) {
        if (in(n, 0).rank() == 0) fail("cannot gather from a scalar");
        axis_attr(n, "axis", in(n, 0).rank());
      });
  def("Expand", 1, 1, 1, 1, {A("shape", K::kInts)}, [](const Node& n) {
    return std::vector<TensorType>{
        {in(n, 0).elem(), broadcast_shapes({shp(n, 0), n.attr_ints("shape")})}};
  });
  def("Tile", 1, 1, 1, 1, {A("repeats", K::kInts)}, [](const Node& n) {
    Shape out = shp(n, 0);
    const auto& rep = n.attr_ints("repeats");
    if (rep.size() != out.size())
      fail("repeats " + str_ints(rep) + " must have one entry per dim of " + in(n, 0).type.str());
    for (size_t d = 0; d < out.size(); ++d) {
      if (rep[d] < 0) fail("repeats " + str_ints(rep) + " has a negative entry");
      out[d] *= rep[d];
    }
    return std::vector<TensorType>{{in(n, 0).elem(), out}};
  });
  def("Pad", 1, 1, 1, 1,
      {A("pads", K::kInts), A("mode", K::kString, "constant"), A("value", K::kFloat, 0.0f)},
      [](const Node& n) {
        Shape out = shp(n, 0);
        const auto& pads = n.attr_ints("pads");
        const std::string& mode = n.attr_string("mode");
        if (mode != "constant" && mode != "reflect" && mode != "edge")
          throw UnsupportedError("Pad mode '" + mode +
                                 "' is not supported (constant, reflect, edge)");
        if (pads.size() != 2 * out.size())
          fail("pads " + str_ints(pads) + " must have 2 entries per dim of " + in(n, 0).type.str());
        size_t r = out.size();
        for (size_t d = 0; d < r; ++d) {
          int64_t o = out[d] + pads[d] + pads[d + r];
          if (o < 0) fail("pads " + str_ints(pads) + " crop dim " + std::to_string(d) + " below 0");
          if (mode != "constant" && (pads[d] > 0 || pads[d + r] > 0) && out[d] == 0)
            fail("cannot " + mode + "-pad an empty dim");
          if (mode == "reflect" && (pads[d] >= out[d] || pads[d + r] >= out[d]) &&
              (pads[d] > 0 || pads[d + r] > 0))
            fail("reflect pads " + str_ints(pads) + " must be smaller than dim " +
                 std::to_string(d));
          out[d] = o;
        }
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      });
  def("DepthToSpace", 1, 1, 1, 1, {A("blocksize", K::kInt), A("mode", K::kString, "DCR")},
      [](const Node& n) {
        require_rank(n, 0, 4, 4);
        Shape x = shp(n, 0);
        int64_t b = n.attr_int("blocksize");
        const std::string& mode = n.attr_string("mode");
        if (mode != "DCR" && mode != "CRD") fail("mode must be DCR or CRD, got '" + mode + "'");
        if (b < 1 || x[1] % (b * b) != 0)
          fail("blocksize " + std::to_string(b) + " squared does not divide the channels");
        return std::vector<TensorType>{
            {in(n, 0).elem(), {x[0], x[1] / (b * b), x[2] * b, x[3] * b}}};
      });
  def("SpaceToDepth", 1, 1, 1, 1, {A("blocksize", K::kInt)}, [](const Node& n) {
    require_rank(n, 0, 4, 4);
    Shape x = shp(n, 0);
    int64_t b = n.attr_int("blocksize");
    if (b < 1 || x[2] % b != 0 || x[3] % b != 0)
      fail("blocksize " + std::to_string(b) + " does not divide the spatial dims");
    return std::vector<TensorType>{{in(n, 0).elem(), {x[0], x[1] * b * b, x[2] / b, x[3] / b}}};
  });
  def(
      "CumSum", 1, 1, 1, 1,
      {A("axis", K::kInt), A("exclusive", K::kInt, 0), A("reverse", K::kInt, 0)},
      [](const Node& n) {
        require_numeric(n, 0);
        return same_as_input0(n);
      },
      [](Node& n) {
        if (in(n, 0).rank() == 0) fail("input must have rank >= 1");
        axis_attr(n, "axis", in(n, 0).rank());
      });
  def("Trilu", 1, 1, 1, 1, {A("upper", K::kInt, 1), A("k", K::kInt, 0)}, [](const Node& n) {
    require_rank(n, 0, 2, 64);
    return same_as_input0(n);
  });

  // Fold-only ops.
  def(
      "Shape", 1, 1, 1, 1,
      {A("start", K::kInt, 0), A("end", K::kInt, std::numeric_limits<int64_t>::max())},
      [](const Node& n) {
        int64_t cnt = std::max<int64_t>(0, n.attr_int("end") - n.attr_int("start"));
        return std::vector<TensorType>{{ElemType::int64, {cnt}}};
      },
      [](Node& n) {
        int64_t r = in(n, 0).rank();
        for (const char* key : {"start", "end"}) {
          int64_t v = n.attr_int(key);
          if (v < 0) v += r;
          n.attrs[key] = std::clamp<int64_t>(v, 0, r);
        }
      });
  def("Size", 1, 1, 1, 1, {}, [](const Node&) {
    return std::vector<TensorType>{{ElemType::int64, {}}};
  });
  def("ConstantOfShape", 1, 1, 1, 1, {A("value", K::kTensor, Tensor::from_floats({1}, {0.0f}))},
      [](const Node& n) {
        const Value& s = in(n, 0);
        if (!s.has_data())
          throw UnsupportedError("shape input '" + s.name +
                                 "' must be a constant (static shapes only)");
        if (s.elem() != ElemType::int64 || s.rank() != 1)
          fail("shape input must be a 1-D int64 tensor");
        const Tensor& v = n.attr_tensor("value");
        if (v.numel() != 1) fail("value must hold one element");
        Shape out = s.data->ints();
        for (int64_t d : out)
          if (d < 0) fail("shape " + str_ints(out) + " has a negative dim");
        return std::vector<TensorType>{{v.elem(), out}};
      });
  def("Range", 3, 3, 1, 1, {}, [](const Node& n) {
    for (size_t k = 0; k < 3; ++k) {
      if (!in(n, k).has_data())
        throw UnsupportedError("input " + std::to_string(k) + " ('" + in(n, k).name +
                               "') must be a constant (static shapes only)");
      if (in(n, k).type.numel() != 1) fail("inputs must be scalars");
      require_same_elem(n, 0, k);
    }
    double start = in(n, 0).data->at(0), limit = in(n, 1).data->at(0), delta = in(n, 2).data->at(0);
    if (delta == 0) fail("delta must not be 0");
    int64_t cnt = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
    return std::vector<TensorType>{{in(n, 0).elem(), {cnt}}};
  });

  // trnsim ops made by the graph passes (compiler/ir/trn_ops.h).
  auto float_unary = [](const Node& n) {
    require_float(n, 0);
    return same_as_input0(n);
  };
  def("trn.Gelu", 1, 1, 1, 1, {A("approximate", K::kString, "none")}, [](const Node& n) {
    const std::string& a = n.attr_string("approximate");
    if (a != "none" && a != "tanh")
      fail("approximate must be \"none\" or \"tanh\", got '" + a + "'");
    require_float(n, 0);
    return same_as_input0(n);
  });
  def("trn.Silu", 1, 1, 1, 1, {}, float_unary);
  auto norm_axis = [](Node& n) { axis_attr(n, "axis", in(n, 0).rank()); };
  def("trn.LayerNorm", 1, 3, 1, 1, {A("axis", K::kInt, -1), A("epsilon", K::kFloat, 1e-5f)},
      infer_trn_norm, norm_axis);
  def("trn.RMSNorm", 1, 2, 1, 1, {A("axis", K::kInt, -1), A("epsilon", K::kFloat, 1e-5f)},
      infer_trn_norm, norm_axis);
  def("trn.Elementwise", 1, -1, 1, 1, {A("expr", K::kString)}, infer_trn_fused);
  def("trn.MatMulEpilogue", 2, -1, 1, 1, {A("expr", K::kString), Opt("compute_dtype", K::kString)},
      infer_trn_fused);
  // Sum over the ranks `group` of an SPMD launch (graph_passes/tensor_parallel.h).
  def("trn.AllReduce", 1, 1, 1, 1, {A("group", K::kInts)}, [](const Node& n) {
    require_float(n, 0);
    if (n.attr_ints("group").empty()) fail("group lists no rank");
    return same_as_input0(n);
  });
  def("trn.TileKernel", 0, -1, 1, -1,
      {A("tir", K::kString), A("inputs", K::kString), A("outputs", K::kString)},
      infer_trn_tile_kernel);
  def("trn.Attention", 3, -1, 1, 1,
      {A("scale", K::kFloat, 1.0f), A("causal", K::kInt, 0), Opt("compute_dtype", K::kString),
       Opt("seq_first", K::kInt), Opt("rotary", K::kInt)},
      infer_trn_attention);
  register_ops_control();
}

// --- control flow and recurrent ops -------------------------------------------

int rnn_gates(std::string_view op) {
  return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
}

int64_t rnn_directions(const Node& n) {
  const std::string& d = n.attr_string("direction");
  if (d == "forward" || d == "reverse") return 1;
  if (d == "bidirectional") return 2;
  fail("direction must be forward, reverse or bidirectional, got '" + d + "'");
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> r;
  size_t start = 0;
  for (;;) {
    size_t c = s.find(',', start);
    r.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) return r;
    start = c + 1;
  }
}

void norm_rnn(Node& n) {
  const int64_t dirs = rnn_directions(n);
  if (!n.has_attr("hidden_size")) {
    const Shape& r = shp(n, 2);
    if (r.size() != 3) fail("R must have rank 3, got " + in(n, 2).type.str());
    n.attrs["hidden_size"] = r[2];
  }
  const int per = rnn_activations_per_direction(n.op);
  if (!n.has_attr("activations")) {
    std::string dflt = n.op == "LSTM"  ? "Sigmoid,Tanh,Tanh"
                       : n.op == "GRU" ? "Sigmoid,Tanh"
                                       : "Tanh";
    n.attrs["activations"] = dirs == 2 ? dflt + "," + dflt : dflt;
  }
  std::vector<std::string> acts = split_commas(n.attr_string("activations"));
  if (static_cast<int64_t>(acts.size()) != per * dirs)
    fail("activations '" + n.attr_string("activations") + "' must list " +
         std::to_string(per * dirs) + " functions (" + std::to_string(per) + " per direction)");
  std::string canon;
  std::vector<float> alphas, betas;
  for (const auto& a : acts) {
    std::string c = rnn_activation_canonical(a);
    if (c.empty())
      throw UnsupportedError("activation '" + a +
                             "' is not supported (Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                             "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)");
    canon += (canon.empty() ? "" : ",") + c;
    auto [al, be] = rnn_activation_defaults(c);
    alphas.push_back(al);
    betas.push_back(be);
  }
  n.attrs["activations"] = canon;
  if (!n.has_attr("activation_alpha")) n.attrs["activation_alpha"] = alphas;
  if (!n.has_attr("activation_beta")) n.attrs["activation_beta"] = betas;
  if (n.attr_floats("activation_alpha").size() != acts.size() ||
      n.attr_floats("activation_beta").size() != acts.size())
    fail("activation_alpha and activation_beta need one value per activation (" +
         std::to_string(acts.size()) + ")");
}

std::vector<TensorType> infer_rnn(const Node& n) {
  const int64_t G = rnn_gates(n.op);
  const int64_t dirs = rnn_directions(n);
  const int64_t layout = n.attr_int("layout");
  if (layout != 0 && layout != 1) fail("layout must be 0 or 1, got " + std::to_string(layout));
  const int64_t H = n.attr_int("hidden_size");
  if (H < 1) fail("hidden_size must be positive, got " + std::to_string(H));
  if (n.has_attr("clip") && !(n.attr_float("clip") > 0))
    fail("clip must be positive, got " + std::to_string(n.attr_float("clip")));
  require_float(n, 0);
  for (size_t k = 0; k < 3; ++k) require_rank(n, k, 3, 3);
  require_same_elem(n, 0, 1);
  require_same_elem(n, 0, 2);
  const Shape& x = shp(n, 0);
  const int64_t S = layout ? x[1] : x[0], B = layout ? x[0] : x[1], I = x[2];
  auto expect = [&](size_t k, const Shape& s, const char* what) {
    const Value* v = n.input(k);
    if (!v) return;
    if (v->shape() != s)
      fail(std::string(what) + " '" + v->name + "' is " + v->type.str() + ", expected " +
           shape_str(s));
    if (k != 4) require_same_elem(n, 0, k);
  };
  expect(1, {dirs, G * H, I}, "W");
  expect(2, {dirs, G * H, H}, "R");
  expect(3, {dirs, 2 * G * H}, "B");
  if (n.input(4)) {
    require_int_indices(n, 4);
    expect(4, {B}, "sequence_lens");
  }
  const Shape state = layout ? Shape{B, dirs, H} : Shape{dirs, B, H};
  expect(5, state, "initial_h");
  if (n.op == "LSTM") {
    expect(6, state, "initial_c");
    expect(7, {dirs, 3 * H}, "P");
    if (n.attr_int("input_forget") != 0 && n.attr_int("input_forget") != 1)
      fail("input_forget must be 0 or 1");
  } else if (n.op == "GRU" && n.attr_int("linear_before_reset") != 0 &&
             n.attr_int("linear_before_reset") != 1) {
    fail("linear_before_reset must be 0 or 1");
  }
  const ElemType e = in(n, 0).elem();
  std::vector<TensorType> out{{e, layout ? Shape{B, S, dirs, H} : Shape{S, dirs, B, H}},
                              {e, state}};
  if (n.op == "LSTM") out.push_back({e, state});
  return out;
}

// If/Loop/Scan: a body's interface is checked against the node (ops.h).

// Scan outputs of a Loop hold one row per iteration: a trip count above this is
// a "run until the condition stops it" loop, whose rows cannot be sized.
constexpr int64_t kMaxScanLoopTrips = std::numeric_limits<int32_t>::max();
const Graph& body_of(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end() || it->second.kind() != K::kGraph)
    fail("attribute '" + key + "' must be a graph");
  return n.attr_graph(key);
}

void require_scalar(const Node& n, size_t k, ElemType e, const char* what) {
  const Value& v = in(n, k);
  if (v.elem() != e || v.type.numel() != 1)
    fail(std::string(what) + " '" + v.name + "' must hold one " + std::string(elem_type_name(e)) +
         " value, got " + v.type.str());
}

void require_body_input(const Graph& b, size_t k, const TensorType& t, const std::string& what) {
  if (k >= b.inputs().size()) fail("body '" + b.name + "' has no input for " + what);
  if (b.inputs()[k]->type != t)
    fail("body '" + b.name + "' input '" + b.inputs()[k]->name + "' (" + what + ") is " +
         b.inputs()[k]->type.str() + ", expected " + t.str());
}

void require_output_count(const Node& n, size_t count) {
  if (!n.outputs.empty() && n.outputs.size() != count)
    fail("has " + std::to_string(n.outputs.size()) + " outputs, its body gives " +
         std::to_string(count));
}

std::vector<TensorType> infer_if(const Node& n) {
  const Value& c = in(n, 0);
  if (c.elem() != ElemType::boolean || c.type.numel() != 1)
    fail("condition '" + c.name + "' must hold one bool, got " + c.type.str());
  const Graph& tb = body_of(n, "then_branch");
  const Graph& eb = body_of(n, "else_branch");
  for (const Graph* b : {&tb, &eb}) {
    if (b->inputs().size() != n.inputs.size() - 1)
      fail("branch '" + b->name + "' takes " + std::to_string(b->inputs().size()) +
           " captured values, the node passes " + std::to_string(n.inputs.size() - 1));
    for (size_t k = 1; k < n.inputs.size(); ++k)
      require_body_input(*b, k - 1, in(n, k).type, "captured '" + in(n, k).name + "'");
  }
  if (tb.outputs().size() != eb.outputs().size())
    fail("the branches disagree on the output count: then gives " +
         std::to_string(tb.outputs().size()) + ", else gives " +
         std::to_string(eb.outputs().size()));
  std::vector<TensorType> r;
  for (size_t k = 0; k < tb.outputs().size(); ++k) {
    const TensorType& t = tb.outputs()[k]->type;
    const TensorType& e = eb.outputs()[k]->type;
    if (t != e)
      fail("the branches disagree on output " + std::to_string(k) + ": then gives " + t.str() +
           ", else gives " + e.str() + " (static shapes: both must have the same type)");
    r.push_back(t);
  }
  require_output_count(n, r.size());
  return r;
}

std::vector<TensorType> infer_loop(const Node& n) {
  const Graph& b = body_of(n, "body");
  const int64_t caps = n.attr_int("num_captures");
  const int64_t nin = static_cast<int64_t>(n.inputs.size());
  if (nin < 2 || caps < 0 || caps > nin - 2)
    fail("needs inputs (M, cond, carried..., captured...), got " + std::to_string(nin) +
         " with num_captures " + std::to_string(caps));
  const size_t N = static_cast<size_t>(nin - 2 - caps);
  if (n.input(0)) require_scalar(n, 0, ElemType::int64, "trip count");
  if (n.input(1)) require_scalar(n, 1, ElemType::boolean, "condition");
  if (b.inputs().size() != static_cast<size_t>(nin))
    fail("body '" + b.name + "' takes " + std::to_string(b.inputs().size()) + " inputs, expected " +
         std::to_string(nin) + " (iteration, condition, " + std::to_string(N) + " carried, " +
         std::to_string(caps) + " captured)");
  require_body_input(b, 0, {ElemType::int64, {}}, "iteration number");
  require_body_input(b, 1, {ElemType::boolean, {}}, "condition");
  for (size_t k = 2; k < static_cast<size_t>(nin); ++k)
    require_body_input(b, k, in(n, k).type,
                       (k < 2 + N ? "carried '" : "captured '") + in(n, k).name + "'");
  if (b.outputs().size() < 1 + N)
    fail("body '" + b.name + "' gives " + std::to_string(b.outputs().size()) +
         " outputs, expected the condition and " + std::to_string(N) + " carried values");
  const TensorType& co = b.outputs()[0]->type;
  if (co.elem != ElemType::boolean || co.numel() != 1)
    fail("body '" + b.name + "' condition output is " + co.str() + ", expected one bool");
  std::vector<TensorType> r;
  for (size_t k = 0; k < N; ++k) {
    const TensorType& t = b.outputs()[1 + k]->type;
    if (t != in(n, 2 + k).type)
      fail("loop-carried value " + std::to_string(k) + " ('" + in(n, 2 + k).name + "') is " +
           in(n, 2 + k).type.str() + " but the body gives " + t.str() +
           " (static shapes: a carried value keeps its type)");
    r.push_back(t);
  }
  const size_t K = b.outputs().size() - 1 - N;
  if (K > 0) {
    // Scan outputs stack one row per iteration: the count must be known.
    const Value* m = n.input(0);
    if (!m || !m->has_data())
      throw UnsupportedError(
          std::string("the trip count ") + (m ? "'" + m->name + "' " : "") +
          "must be a constant when the loop has scan outputs (their first dim is the number of "
          "iterations)");
    int64_t trip = std::max<int64_t>(0, m->data->ints()[0]);
    if (trip > kMaxScanLoopTrips)
      throw UnsupportedError("the trip count " + std::to_string(trip) + " of '" + m->name +
                             "' is too large to size scan outputs (at most " +
                             std::to_string(kMaxScanLoopTrips) + ")");
    const Value* c = n.input(1);
    if (c && c->has_data() && c->data->at(0) == 0) trip = 0;
    for (size_t j = 0; j < K; ++j) {
      TensorType t = b.outputs()[1 + N + j]->type;
      t.shape.insert(t.shape.begin(), trip);
      r.push_back(t);
    }
  }
  require_output_count(n, r.size());
  return r;
}

// Scan (opset 9+): inputs (states..., scanned..., captured...).
struct ScanLayout {
  size_t N = 0, K = 0, C = 0, L = 0;
};
ScanLayout scan_layout(const Node& n) {
  const Graph& b = body_of(n, "body");
  const int64_t K = n.attr_int("num_scan_inputs"), C = n.attr_int("num_captures");
  const int64_t nin = static_cast<int64_t>(n.inputs.size());
  if (K < 1 || C < 0 || K + C > nin)
    fail("num_scan_inputs " + std::to_string(K) + " and num_captures " + std::to_string(C) +
         " do not fit " + std::to_string(nin) + " inputs");
  ScanLayout l;
  l.K = static_cast<size_t>(K);
  l.C = static_cast<size_t>(C);
  l.N = static_cast<size_t>(nin - K - C);
  if (b.outputs().size() < l.N)
    fail("body '" + b.name + "' gives fewer outputs than the " + std::to_string(l.N) + " states");
  l.L = b.outputs().size() - l.N;
  return l;
}

void norm_scan(Node& n) {
  const ScanLayout l = scan_layout(n);
  const Graph& b = n.attr_graph("body");
  auto fill = [&](const char* key, size_t count) {
    if (!n.has_attr(key)) n.attrs[key] = std::vector<int64_t>(count, 0);
    if (n.attr_ints(key).size() != count)
      fail(std::string(key) + " needs " + std::to_string(count) + " entries");
  };
  fill("scan_input_axes", l.K);
  fill("scan_input_directions", l.K);
  fill("scan_output_axes", l.L);
  fill("scan_output_directions", l.L);
  std::vector<int64_t> ia = n.attr_ints("scan_input_axes"), oa = n.attr_ints("scan_output_axes");
  for (size_t j = 0; j < l.K; ++j) ia[j] = normalize_axis(ia[j], in(n, l.N + j).rank());
  for (size_t j = 0; j < l.L; ++j) oa[j] = normalize_axis(oa[j], b.outputs()[l.N + j]->rank() + 1);
  n.attrs["scan_input_axes"] = ia;
  n.attrs["scan_output_axes"] = oa;
}

std::vector<TensorType> infer_scan(const Node& n) {
  const ScanLayout l = scan_layout(n);
  const Graph& b = body_of(n, "body");
  const auto& ia = n.attr_ints("scan_input_axes");
  const auto& oa = n.attr_ints("scan_output_axes");
  for (const char* key : {"scan_input_directions", "scan_output_directions"})
    for (int64_t d : n.attr_ints(key))
      if (d != 0 && d != 1) fail(std::string(key) + " must be 0 or 1");
  if (b.inputs().size() != n.inputs.size())
    fail("body '" + b.name + "' takes " + std::to_string(b.inputs().size()) + " inputs, expected " +
         std::to_string(n.inputs.size()));
  int64_t seq = -1;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    TensorType t = in(n, k).type;
    if (k >= l.N && k < l.N + l.K) {
      const int64_t axis = ia[k - l.N];
      if (seq >= 0 && t.shape[axis] != seq)
        fail("scanned inputs disagree on the sequence length (" + std::to_string(seq) + " vs " +
             std::to_string(t.shape[axis]) + ")");
      seq = t.shape[axis];
      t.shape.erase(t.shape.begin() + axis);
    }
    require_body_input(b, k, t, "'" + in(n, k).name + "'");
  }
  std::vector<TensorType> r;
  for (size_t k = 0; k < l.N; ++k) {
    if (b.outputs()[k]->type != in(n, k).type)
      fail("state " + std::to_string(k) + " ('" + in(n, k).name + "') is " + in(n, k).type.str() +
           " but the body gives " + b.outputs()[k]->type.str());
    r.push_back(in(n, k).type);
  }
  for (size_t j = 0; j < l.L; ++j) {
    TensorType t = b.outputs()[l.N + j]->type;
    t.shape.insert(t.shape.begin() + oa[j], seq);
    r.push_back(t);
  }
  require_output_count(n, r.size());
  return r;
}

void register_ops_control() {
  std::vector<AttrSpec> rnn_attrs{A("hidden_size", K::kInt),
                                  A("direction", K::kString, "forward"),
                                  A("layout", K::kInt, 0),
                                  A("activations", K::kString),
                                  A("activation_alpha", K::kFloats),
                                  A("activation_beta", K::kFloats),
                                  Opt("clip", K::kFloat)};
  // hidden_size (from R), activations and their parameters are filled by norm_rnn.
  auto lstm_attrs = rnn_attrs;
  lstm_attrs.push_back(A("input_forget", K::kInt, 0));
  auto gru_attrs = rnn_attrs;
  gru_attrs.push_back(A("linear_before_reset", K::kInt, 0));
  def("LSTM", 3, 8, 1, 3, lstm_attrs, infer_rnn, norm_rnn);
  def("GRU", 3, 6, 1, 2, gru_attrs, infer_rnn, norm_rnn);
  def("RNN", 3, 6, 1, 2, rnn_attrs, infer_rnn, norm_rnn);
  def("If", 1, -1, 1, -1, {A("then_branch", K::kGraph), A("else_branch", K::kGraph)}, infer_if);
  def("Loop", 0, -1, 1, -1, {A("body", K::kGraph), A("num_captures", K::kInt, 0)}, infer_loop);
  def("Scan", 1, -1, 1, -1,
      {A("body", K::kGraph), A("num_scan_inputs", K::kInt), A("scan_input_axes", K::kInts),
       A("scan_input_directions", K::kInts), A("scan_output_axes", K::kInts),
       A("scan_output_directions", K::kInts), A("num_captures", K::kInt, 0)},
      infer_scan, norm_scan);
}

// --- scatter/gather, data-dependent, quantisation, loss and window ops -------

const char* const kScatterReductions[] = {"none", "add", "mul", "max", "min"};

void check_reduction(const Node& n) {
  const std::string& r = n.attr_string("reduction");
  if (std::find(std::begin(kScatterReductions), std::end(kScatterReductions), r) ==
      std::end(kScatterReductions))
    fail("reduction must be none, add, mul, max or min, got '" + r + "'");
  if (r != "none") require_numeric(n, 0);
}

// The data of an input that decides an output shape (NonZero, Unique).
const Tensor& shape_data(const Node& n, size_t k) {
  const Value& v = in(n, k);
  if (!v.has_data())
    throw UnsupportedError("input " + std::to_string(k) + " ('" + v.name +
                           "') must be a constant: the output shape of " + n.op +
                           " depends on its values (static shapes only)");
  return *v.data;
}

void require_int8ish(const Node& n, size_t k) {
  ElemType e = in(n, k).elem();
  if (e != ElemType::uint8 && e != ElemType::int8)
    fail("input " + std::to_string(k) + " ('" + in(n, k).name + "') must be uint8 or int8, got " +
         in(n, k).type.str());
}

// A quantisation scale (float) with an optional zero point (input zk, the type of
// input qk when given): one value per tensor, or a 1-D tensor of `count` values.
void check_quant_params(const Node& n, size_t sk, size_t zk, int64_t count, const char* what) {
  require_float(n, sk);
  const Value& s = in(n, sk);
  const bool per_tensor = s.type.numel() == 1 && s.rank() <= 1;
  if (!per_tensor && (s.rank() != 1 || s.shape()[0] != count))
    fail("scale '" + s.name + "' is " + s.type.str() + "; expected one value or " +
         std::to_string(count) + " (" + what + ")");
  if (const Value* z = n.input(zk)) {
    if (z->shape() != s.shape() && !(per_tensor && z->type.numel() == 1))
      fail("zero point '" + z->name + "' " + z->type.str() + " does not match scale " +
           s.type.str());
  }
}

// A zero point of an integer matmul/conv operand: one value, or one per row/column
// `count` (given as [count] or in a shape that broadcasts).
void check_zero_point(const Node& n, size_t zk, size_t xk, int64_t count) {
  const Value* z = n.input(zk);
  if (!z) return;
  require_same_elem(n, xk, zk);
  if (z->type.numel() != 1 && z->type.numel() != count)
    fail("zero point '" + z->name + "' " + z->type.str() + " must hold 1 or " +
         std::to_string(count) + " values");
}

// Conv-like output shape for integer convs: x input 0, weights input `wk`.
Shape int_conv_shape(const Node& n, size_t wk) {
  const Shape& x = shp(n, 0);
  const Shape& w = shp(n, wk);
  int64_t g = n.attr_int("group");
  if (w.size() != x.size()) fail("weights " + in(n, wk).type.str() + " must have the input's rank");
  if (g < 1 || x[1] % g != 0 || w[1] * g != x[1] || w[0] % g != 0)
    fail("weights " + in(n, wk).type.str() + " do not match input " + in(n, 0).type.str() +
         " with group " + std::to_string(g));
  WindowGeometry geo = window_geometry(n);
  for (size_t i = 0; i < geo.kernel.size(); ++i)
    if (geo.kernel[i] != w[i + 2])
      fail("kernel_shape " + str_ints(geo.kernel) + " does not match weights " +
           in(n, wk).type.str());
  Shape out{x[0], w[0]};
  out.insert(out.end(), geo.out.begin(), geo.out.end());
  return out;
}

void norm_int_conv(Node& n, size_t wk) {
  int64_t k = in(n, 0).rank() - 2;
  if (k < 1) fail("input 0 must have rank >= 3 ([N, C, spatial...]), got " + in(n, 0).type.str());
  if (!n.has_attr("kernel_shape")) {
    const Shape& w = shp(n, wk);
    if (static_cast<int64_t>(w.size()) != k + 2)
      fail("weights " + in(n, wk).type.str() + " do not match input rank " + std::to_string(k + 2));
    n.attrs["kernel_shape"] = std::vector<int64_t>(w.begin() + 2, w.end());
  }
  norm_window(n, false);
}

std::vector<TensorType> infer_loss(const Node& n) {
  require_float(n, 0);
  require_int_indices(n, 1);
  const Shape& x = shp(n, 0);
  if (x.size() < 2) fail("input 0 must be [N, C, d1...], got " + in(n, 0).type.str());
  Shape t = x;
  t.erase(t.begin() + 1);
  if (shp(n, 1) != t)
    fail("target " + in(n, 1).type.str() + " must be " + shape_str(t) + " for input " +
         in(n, 0).type.str());
  if (const Value* w = n.input(2)) {
    require_same_elem(n, 0, 2);
    if (w->shape() != Shape{x[1]})
      fail("weight " + w->type.str() + " must be [C] = [" + std::to_string(x[1]) + "]");
  }
  const std::string& r = n.attr_string("reduction");
  if (r != "none" && r != "sum" && r != "mean")
    fail("reduction must be none, sum or mean, got '" + r + "'");
  std::vector<TensorType> out{{in(n, 0).elem(), r == "none" ? t : Shape{}}};
  if (n.op == "SoftmaxCrossEntropyLoss") out.push_back(in(n, 0).type);
  return out;
}

void register_ops_scatter() {
  def(
      "ScatterElements", 3, 3, 1, 1, {A("axis", K::kInt, 0), A("reduction", K::kString, "none")},
      [](const Node& n) {
        require_int_indices(n, 1);
        require_same_elem(n, 0, 2);
        check_reduction(n);
        const Shape& d = shp(n, 0);
        const Shape& i = shp(n, 1);
        if (i != shp(n, 2))
          fail("indices " + in(n, 1).type.str() + " and updates " + in(n, 2).type.str() +
               " must have the same shape");
        if (i.size() != d.size())
          fail("indices " + in(n, 1).type.str() + " must have the rank of data " +
               in(n, 0).type.str());
        for (size_t k = 0; k < d.size(); ++k)
          if (static_cast<int64_t>(k) != n.attr_int("axis") && i[k] > d[k])
            fail("indices " + in(n, 1).type.str() + " exceed data " + in(n, 0).type.str() +
                 " in dim " + std::to_string(k));
        return same_as_input0(n);
      },
      [](Node& n) {
        if (in(n, 0).rank() == 0) fail("data must have rank >= 1");
        axis_attr(n, "axis", in(n, 0).rank());
      });
  def("ScatterND", 3, 3, 1, 1, {A("reduction", K::kString, "none")}, [](const Node& n) {
    require_int_indices(n, 1);
    require_same_elem(n, 0, 2);
    check_reduction(n);
    const Shape& d = shp(n, 0);
    const Shape& i = shp(n, 1);
    if (d.empty() || i.empty()) fail("data and indices must have rank >= 1");
    const int64_t k = i.back();
    if (k < 0 || k > static_cast<int64_t>(d.size()))
      fail("indices " + in(n, 1).type.str() + " address " + std::to_string(k) + " dims of data " +
           in(n, 0).type.str());
    Shape u(i.begin(), i.end() - 1);
    u.insert(u.end(), d.begin() + k, d.end());
    if (shp(n, 2) != u)
      fail("updates " + in(n, 2).type.str() + " must be " + shape_str(u) + " for indices " +
           in(n, 1).type.str() + " and data " + in(n, 0).type.str());
    return same_as_input0(n);
  });
  def("GatherND", 2, 2, 1, 1, {A("batch_dims", K::kInt, 0)}, [](const Node& n) {
    require_int_indices(n, 1);
    const Shape& d = shp(n, 0);
    const Shape& i = shp(n, 1);
    const int64_t b = n.attr_int("batch_dims");
    const int64_t r = static_cast<int64_t>(d.size()), q = static_cast<int64_t>(i.size());
    if (r < 1 || q < 1) fail("data and indices must have rank >= 1");
    if (b < 0 || b >= std::min(r, q))
      fail("batch_dims " + std::to_string(b) + " must be in [0, min(rank(data), rank(indices)))");
    const int64_t k = i.back();
    if (k < 1 || b + k > r)
      fail("indices " + in(n, 1).type.str() + " address " + std::to_string(k) + " dims of data " +
           in(n, 0).type.str() + " after " + std::to_string(b) + " batch dims");
    for (int64_t a = 0; a < b; ++a)
      if (d[a] != i[a])
        fail("batch dim " + std::to_string(a) + " differs: data " + in(n, 0).type.str() +
             ", indices " + in(n, 1).type.str());
    Shape out(i.begin(), i.end() - 1);
    out.insert(out.end(), d.begin() + b + k, d.end());
    return std::vector<TensorType>{{in(n, 0).elem(), out}};
  });
  def(
      "OneHot", 2, 2, 1, 1, {A("axis", K::kInt, -1), A("depth", K::kInt)},
      [](const Node& n) {
        require_numeric(n, 0);
        if (in(n, 1).shape() != Shape{2})
          fail("values " + in(n, 1).type.str() + " must be [2] ([off_value, on_value])");
        const int64_t depth = n.attr_int("depth");
        if (depth < 0) fail("depth " + std::to_string(depth) + " must not be negative");
        Shape out = shp(n, 0);
        out.insert(out.begin() + n.attr_int("axis"), depth);
        return std::vector<TensorType>{{in(n, 1).elem(), out}};
      },
      [](Node& n) { axis_attr(n, "axis", in(n, 0).rank() + 1); });
  def("NonZero", 1, 1, 1, 1, {}, [](const Node& n) {
    const Tensor& x = shape_data(n, 0);
    int64_t nz = 0;
    for (int64_t k = 0; k < x.numel(); ++k) nz += x.at(k) != 0;
    return std::vector<TensorType>{{ElemType::int64, {std::max<int64_t>(x.rank(), 1), nz}}};
  });
  def(
      "Unique", 1, 1, 1, 4, {A("sorted", K::kInt, 1), Opt("axis", K::kInt)},
      [](const Node& n) {
        const Tensor& x = shape_data(n, 0);
        const int64_t axis = n.has_attr("axis") ? n.attr_int("axis") : -1;
        const int64_t cnt = static_cast<int64_t>(unique_slices(x, axis, true).first.size());
        Shape y{cnt};
        if (axis >= 0) {
          y = x.shape();
          y[axis] = cnt;
        }
        const int64_t all = axis >= 0 ? x.shape()[axis] : x.numel();
        return std::vector<TensorType>{{x.elem(), y},
                                       {ElemType::int64, {cnt}},
                                       {ElemType::int64, {all}},
                                       {ElemType::int64, {cnt}}};
      },
      [](Node& n) {
        if (n.has_attr("axis")) {
          if (in(n, 0).rank() == 0) fail("axis needs an input of rank >= 1");
          axis_attr(n, "axis", in(n, 0).rank());
        }
      });
  def(
      "Compress", 1, 1, 1, 1, {A("condition", K::kInts), Opt("axis", K::kInt)},
      [](const Node& n) {
        const auto& c = n.attr_ints("condition");
        const int64_t kept = std::count_if(c.begin(), c.end(), [](int64_t v) { return v != 0; });
        const int64_t len = static_cast<int64_t>(c.size());
        if (!n.has_attr("axis")) {
          if (len > in(n, 0).type.numel())
            fail("condition has " + std::to_string(len) + " entries for " +
                 std::to_string(in(n, 0).type.numel()) + " elements");
          return std::vector<TensorType>{{in(n, 0).elem(), {kept}}};
        }
        Shape out = shp(n, 0);
        const int64_t a = n.attr_int("axis");
        if (len > out[a])
          fail("condition has " + std::to_string(len) + " entries for dim " + std::to_string(a) +
               " of " + in(n, 0).type.str());
        out[a] = kept;
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) {
        if (n.has_attr("axis")) {
          if (in(n, 0).rank() == 0) fail("axis needs an input of rank >= 1");
          axis_attr(n, "axis", in(n, 0).rank());
        }
      });

  // Quantisation (linear, uint8/int8, round half to even, saturating).
  auto norm_quant_axis = [](Node& n) {
    if (in(n, 1).type.numel() != 1 || in(n, 1).rank() > 1) {
      if (in(n, 0).rank() == 0) fail("a per-axis scale needs an input of rank >= 1");
      axis_attr(n, "axis", in(n, 0).rank());
    }
  };
  def(
      "QuantizeLinear", 2, 3, 1, 1, {A("axis", K::kInt, 1)},
      [](const Node& n) {
        require_float(n, 0);
        const bool per_tensor = in(n, 1).type.numel() == 1 && in(n, 1).rank() <= 1;
        check_quant_params(n, 1, 2, per_tensor ? 1 : shp(n, 0)[n.attr_int("axis")], "per axis");
        ElemType e = ElemType::uint8;
        if (const Value* z = n.input(2)) {
          require_int8ish(n, 2);
          e = z->elem();
        }
        return std::vector<TensorType>{{e, shp(n, 0)}};
      },
      norm_quant_axis);
  def(
      "DequantizeLinear", 2, 3, 1, 1, {A("axis", K::kInt, 1)},
      [](const Node& n) {
        const ElemType e = in(n, 0).elem();
        if (e != ElemType::uint8 && e != ElemType::int8 && e != ElemType::int32)
          fail("input 0 ('" + in(n, 0).name + "') must be uint8, int8 or int32, got " +
               in(n, 0).type.str());
        const bool per_tensor = in(n, 1).type.numel() == 1 && in(n, 1).rank() <= 1;
        check_quant_params(n, 1, 2, per_tensor ? 1 : shp(n, 0)[n.attr_int("axis")], "per axis");
        if (n.input(2)) require_same_elem(n, 0, 2);
        return std::vector<TensorType>{{in(n, 1).elem(), shp(n, 0)}};
      },
      norm_quant_axis);
  def("DynamicQuantizeLinear", 1, 1, 1, 3, {}, [](const Node& n) {
    if (in(n, 0).elem() != ElemType::fp32)
      fail("input 0 ('" + in(n, 0).name + "') must be fp32, got " + in(n, 0).type.str());
    return std::vector<TensorType>{
        {ElemType::uint8, shp(n, 0)}, {ElemType::fp32, {}}, {ElemType::uint8, {}}};
  });
  def("MatMulInteger", 2, 4, 1, 1, {}, [](const Node& n) {
    require_int8ish(n, 0);
    require_int8ish(n, 1);
    Shape out = matmul_shape(shp(n, 0), shp(n, 1));
    const Shape& a = shp(n, 0);
    const Shape& b = shp(n, 1);
    check_zero_point(n, 2, 0, a.size() >= 2 ? a[a.size() - 2] : 1);
    check_zero_point(n, 3, 1, b.size() >= 2 ? b.back() : 1);
    return std::vector<TensorType>{{ElemType::int32, out}};
  });
  def("QLinearMatMul", 8, 8, 1, 1, {}, [](const Node& n) {
    require_int8ish(n, 0);
    require_int8ish(n, 3);
    require_int8ish(n, 7);
    const Shape& a = shp(n, 0);
    const Shape& b = shp(n, 3);
    Shape out = matmul_shape(a, b);
    check_quant_params(n, 1, 2, a.size() >= 2 ? a[a.size() - 2] : 1, "per row of a");
    check_quant_params(n, 4, 5, b.size() >= 2 ? b.back() : 1, "per column of b");
    check_quant_params(n, 6, 7, 1, "per tensor");
    require_same_elem(n, 0, 2);
    require_same_elem(n, 3, 5);
    return std::vector<TensorType>{{in(n, 7).elem(), out}};
  });
  std::vector<AttrSpec> int_conv_attrs{A("kernel_shape", K::kInts), A("strides", K::kInts),
                                       A("pads", K::kInts), A("dilations", K::kInts),
                                       A("group", K::kInt, 1)};
  def(
      "ConvInteger", 2, 4, 1, 1, int_conv_attrs,
      [](const Node& n) {
        require_int8ish(n, 0);
        require_int8ish(n, 1);
        Shape out = int_conv_shape(n, 1);
        check_zero_point(n, 2, 0, 1);
        check_zero_point(n, 3, 1, shp(n, 1)[0]);
        return std::vector<TensorType>{{ElemType::int32, out}};
      },
      [](Node& n) { norm_int_conv(n, 1); });
  def(
      "QLinearConv", 8, 9, 1, 1, int_conv_attrs,
      [](const Node& n) {
        require_int8ish(n, 0);
        require_int8ish(n, 3);
        require_int8ish(n, 7);
        require_same_elem(n, 0, 2);
        require_same_elem(n, 3, 5);
        Shape out = int_conv_shape(n, 3);
        check_quant_params(n, 1, 2, 1, "per tensor");
        check_quant_params(n, 4, 5, shp(n, 3)[0], "per output channel");
        check_quant_params(n, 6, 7, 1, "per tensor");
        if (const Value* b = n.input(8)) {
          if (b->elem() != ElemType::int32 || b->shape() != Shape{shp(n, 3)[0]})
            fail("bias " + b->type.str() + " must be int32[" + std::to_string(shp(n, 3)[0]) + "]");
        }
        return std::vector<TensorType>{{in(n, 7).elem(), out}};
      },
      [](Node& n) { norm_int_conv(n, 3); });

  def("ReverseSequence", 2, 2, 1, 1, {A("batch_axis", K::kInt, 1), A("time_axis", K::kInt, 0)},
      [](const Node& n) {
        require_rank(n, 0, 2, 64);
        require_int_indices(n, 1);
        const int64_t b = n.attr_int("batch_axis"), t = n.attr_int("time_axis");
        if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
          fail("batch_axis and time_axis must be 0 and 1 in some order");
        if (shp(n, 1) != Shape{shp(n, 0)[b]})
          fail("sequence_lens " + in(n, 1).type.str() + " must be [" +
               std::to_string(shp(n, 0)[b]) + "] (the batch dim)");
        return same_as_input0(n);
      });
  def("NegativeLogLikelihoodLoss", 2, 3, 1, 1,
      {Opt("ignore_index", K::kInt), A("reduction", K::kString, "mean")}, infer_loss);
  def("SoftmaxCrossEntropyLoss", 2, 3, 1, 2,
      {Opt("ignore_index", K::kInt), A("reduction", K::kString, "mean")}, infer_loss);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    def(op, 0, 0, 1, 1,
        {A("size", K::kInt), A("periodic", K::kInt, 1), A("output_datatype", K::kString, "fp32")},
        [](const Node& n) {
          auto t = parse_elem_type(n.attr_string("output_datatype"));
          if (!t) fail("unknown element type '" + n.attr_string("output_datatype") + "'");
          if (n.attr_int("size") < 0)
            fail("size " + std::to_string(n.attr_int("size")) + " must not be negative");
          return std::vector<TensorType>{{*t, {n.attr_int("size")}}};
        });
}

// --- index, resampling and misc ops (Resize, TopK, Einsum, GridSample, ...) ---

bool one_of(const std::string& s, std::initializer_list<const char*> set) {
  for (const char* x : set)
    if (s == x) return true;
  return false;
}

std::vector<TensorType> infer_resize(const Node& n) {
  require_numeric(n, 0);
  const Shape& x = shp(n, 0);
  const int64_t r = in(n, 0).rank();
  if (r == 0) fail("input must have rank >= 1");
  const std::string& mode = n.attr_string("mode");
  const std::string& ctm = n.attr_string("coordinate_transformation_mode");
  const std::string& nm = n.attr_string("nearest_mode");
  if (!one_of(mode, {"nearest", "linear", "cubic"}))
    throw UnsupportedError("Resize mode '" + mode + "' is not supported (nearest, linear, cubic)");
  if (!one_of(ctm, {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize"}))
    throw UnsupportedError("Resize coordinate_transformation_mode '" + ctm +
                           "' is not supported (half_pixel, pytorch_half_pixel, align_corners, "
                           "asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize)");
  if (!one_of(nm, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}))
    throw UnsupportedError("Resize nearest_mode '" + nm +
                           "' is not supported (round_prefer_floor, round_prefer_ceil, floor, "
                           "ceil)");
  if (mode != "nearest" && !is_float(in(n, 0).elem()))
    throw UnsupportedError("Resize mode '" + mode + "' on " + in(n, 0).type.str() +
                           " is not supported (floating point input only)");
  const Shape& sizes = n.attr_ints("sizes");
  const auto& scales = n.attr_floats("scales");
  if (static_cast<int64_t>(sizes.size()) != r)
    fail("sizes " + str_ints(sizes) + " must have one entry per dim of " + in(n, 0).type.str());
  if (!scales.empty() && static_cast<int64_t>(scales.size()) != r)
    fail("scales must have one entry per dim of " + in(n, 0).type.str() + ", got " +
         std::to_string(scales.size()));
  for (float s : scales)
    if (!(s > 0) || !std::isfinite(s))
      fail("scales must be positive and finite, got " + std::to_string(s));
  for (int64_t d = 0; d < r; ++d) {
    if (sizes[d] < 0) fail("sizes " + str_ints(sizes) + " has a negative entry");
    if (x[d] == 0 && sizes[d] > 0)
      fail("cannot resize empty dim " + std::to_string(d) + " of " + in(n, 0).type.str());
  }
  if (ctm == "tf_crop_and_resize" && static_cast<int64_t>(n.attr_floats("roi").size()) != 2 * r)
    fail("tf_crop_and_resize needs roi with " + std::to_string(2 * r) + " entries (starts, ends)");
  for (float v : n.attr_floats("roi"))
    if (!std::isfinite(v)) fail("roi must be finite, got " + std::to_string(v));
  return {{in(n, 0).elem(), sizes}};
}

}  // namespace

// MaxUnpool's output shape without output_shape: the input of the MaxPool it undoes.
Shape max_unpool_inferred(const Node& n) {
  const Shape& x = shp(n, 0);
  const size_t k = x.size() - 2;
  const auto& ks = n.attr_ints("kernel_shape");
  const auto& st = n.attr_ints("strides");
  const auto& pads = n.attr_ints("pads");
  if (ks.size() != k || st.size() != k || pads.size() != 2 * k)
    fail("kernel_shape/strides need " + std::to_string(k) + " entries and pads " +
         std::to_string(2 * k) + " for input " + shape_str(x));
  Shape out{x[0], x[1]};
  for (size_t d = 0; d < k; ++d) {
    if (ks[d] < 1 || st[d] < 1) fail("kernel_shape and strides must be positive");
    const int64_t o = (x[d + 2] - 1) * st[d] + ks[d] - pads[d] - pads[d + k];
    if (o < 1) fail("output dim " + std::to_string(d) + " would be " + std::to_string(o));
    out.push_back(o);
  }
  return out;
}

namespace {

void register_ops_index() {
  def("Resize", 1, 1, 1, 1,
      {A("mode", K::kString, "nearest"),
       A("coordinate_transformation_mode", K::kString, "half_pixel"),
       A("nearest_mode", K::kString, "round_prefer_floor"), A("cubic_coeff_a", K::kFloat, -0.75f),
       A("exclude_outside", K::kInt, 0), A("extrapolation_value", K::kFloat, 0.0f),
       A("sizes", K::kInts), A("scales", K::kFloats, std::vector<float>{}),
       A("roi", K::kFloats, std::vector<float>{})},
      infer_resize);
  def(
      "TopK", 1, 1, 1, 2,
      {A("axis", K::kInt, -1), A("k", K::kInt), A("largest", K::kInt, 1), A("sorted", K::kInt, 1)},
      [](const Node& n) {
        require_numeric(n, 0);
        Shape out = shp(n, 0);
        const int64_t axis = n.attr_int("axis"), k = n.attr_int("k");
        if (k < 0 || k > out[axis])
          fail("k " + std::to_string(k) + " is outside 0.." + std::to_string(out[axis]) + " (dim " +
               std::to_string(axis) + " of " + in(n, 0).type.str() + ")");
        out[axis] = k;
        return std::vector<TensorType>{{in(n, 0).elem(), out}, {ElemType::int64, out}};
      },
      [](Node& n) {
        if (in(n, 0).rank() == 0) fail("input must have rank >= 1");
        axis_attr(n, "axis", in(n, 0).rank());
      });
  def("Einsum", 1, -1, 1, 1, {A("equation", K::kString)}, [](const Node& n) {
    std::vector<Shape> shapes;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      require_numeric(n, k);
      require_same_elem(n, 0, k);
      shapes.push_back(shp(n, k));
    }
    EinsumSpec s = parse_einsum(n.attr_string("equation"), shapes);
    Shape out;
    for (int l : s.out_labels) out.push_back(s.label_size[l]);
    return std::vector<TensorType>{{in(n, 0).elem(), out}};
  });
  def("GridSample", 2, 2, 1, 1,
      {A("align_corners", K::kInt, 0), A("mode", K::kString, "bilinear"),
       A("padding_mode", K::kString, "zeros")},
      [](const Node& n) {
        require_float(n, 0);
        require_float(n, 1);
        require_rank(n, 0, 4, 4);
        require_rank(n, 1, 4, 4);
        const Shape& x = shp(n, 0);
        const Shape& g = shp(n, 1);
        const std::string& mode = n.attr_string("mode");
        const std::string& pad = n.attr_string("padding_mode");
        if (!one_of(mode, {"bilinear", "nearest", "bicubic"}))
          throw UnsupportedError("GridSample mode '" + mode +
                                 "' is not supported (bilinear, nearest, bicubic)");
        if (!one_of(pad, {"zeros", "border", "reflection"}))
          throw UnsupportedError("GridSample padding_mode '" + pad +
                                 "' is not supported (zeros, border, reflection)");
        if ((x[2] == 0 || x[3] == 0) && x[0] * x[1] * g[1] * g[2] != 0)
          fail("cannot sample the empty input " + in(n, 0).type.str());
        if (g[0] != x[0] || g[3] != 2)
          fail("grid " + in(n, 1).type.str() + " must be [" + std::to_string(x[0]) +
               ", H_out, W_out, 2] for input " + in(n, 0).type.str());
        return std::vector<TensorType>{{in(n, 0).elem(), {x[0], x[1], g[1], g[2]}}};
      });
  def("RoiAlign", 3, 3, 1, 1,
      {A("coordinate_transformation_mode", K::kString, "half_pixel"), A("mode", K::kString, "avg"),
       A("output_height", K::kInt, 1), A("output_width", K::kInt, 1),
       A("sampling_ratio", K::kInt, 0), A("spatial_scale", K::kFloat, 1.0f)},
      [](const Node& n) {
        require_float(n, 0);
        require_rank(n, 0, 4, 4);
        require_same_elem(n, 0, 1);
        require_rank(n, 1, 2, 2);
        require_int_indices(n, 2);
        require_rank(n, 2, 1, 1);
        const std::string& mode = n.attr_string("mode");
        const std::string& ctm = n.attr_string("coordinate_transformation_mode");
        if (mode != "avg" && mode != "max")
          throw UnsupportedError("RoiAlign mode '" + mode + "' is not supported (avg, max)");
        if (ctm != "half_pixel" && ctm != "output_half_pixel")
          throw UnsupportedError("RoiAlign coordinate_transformation_mode '" + ctm +
                                 "' is not supported (half_pixel, output_half_pixel)");
        const int64_t r = shp(n, 1)[0];
        if (shp(n, 1)[1] != 4) fail("rois " + in(n, 1).type.str() + " must be [num_rois, 4]");
        if (shp(n, 2)[0] != r)
          fail("batch_indices " + in(n, 2).type.str() + " must have one entry per roi (" +
               std::to_string(r) + ")");
        if ((shp(n, 0)[2] == 0 || shp(n, 0)[3] == 0) && r * shp(n, 0)[1] != 0)
          fail("cannot pool from the empty input " + in(n, 0).type.str());
        const int64_t oh = n.attr_int("output_height"), ow = n.attr_int("output_width");
        if (oh < 1 || ow < 1) fail("output_height and output_width must be positive");
        if (n.attr_int("sampling_ratio") < 0) fail("sampling_ratio must not be negative");
        return std::vector<TensorType>{{in(n, 0).elem(), {r, shp(n, 0)[1], oh, ow}}};
      });
  def("LRN", 1, 1, 1, 1,
      {A("alpha", K::kFloat, 1e-4f), A("beta", K::kFloat, 0.75f), A("bias", K::kFloat, 1.0f),
       A("size", K::kInt)},
      [](const Node& n) {
        require_float(n, 0);
        require_rank(n, 0, 2, 64);
        if (n.attr_int("size") < 1) fail("size must be positive");
        return same_as_input0(n);
      });
  def("Shrink", 1, 1, 1, 1, {A("bias", K::kFloat, 0.0f), A("lambd", K::kFloat, 0.5f)},
      [](const Node& n) {
        require_numeric(n, 0);
        return same_as_input0(n);
      });
  def("EyeLike", 1, 1, 1, 1, {Opt("dtype", K::kString), A("k", K::kInt, 0)}, [](const Node& n) {
    require_rank(n, 0, 2, 2);
    ElemType e = in(n, 0).elem();
    if (n.has_attr("dtype")) {
      auto t = parse_elem_type(n.attr_string("dtype"));
      if (!t) fail("unknown element type '" + n.attr_string("dtype") + "'");
      e = *t;
    }
    return std::vector<TensorType>{{e, shp(n, 0)}};
  });
  def("Det", 1, 1, 1, 1, {}, [](const Node& n) {
    require_float(n, 0);
    require_rank(n, 0, 2, 64);
    const Shape& x = shp(n, 0);
    if (x[x.size() - 1] != x[x.size() - 2])
      fail("input " + in(n, 0).type.str() + " must end in square matrices");
    return std::vector<TensorType>{{in(n, 0).elem(), Shape(x.begin(), x.end() - 2)}};
  });
  def(
      "MaxUnpool", 2, 2, 1, 1,
      {A("kernel_shape", K::kInts), A("strides", K::kInts), A("pads", K::kInts),
       A("output_shape", K::kInts, std::vector<int64_t>{})},
      [](const Node& n) {
        require_float(n, 0);
        if (in(n, 1).elem() != ElemType::int64)
          fail("indices '" + in(n, 1).name + "' must be int64, got " + in(n, 1).type.str());
        if (shp(n, 1) != shp(n, 0))
          fail("indices " + in(n, 1).type.str() + " must have the shape of " + in(n, 0).type.str());
        Shape out = max_unpool_inferred(n);
        const auto& given = n.attr_ints("output_shape");
        if (!given.empty()) {
          bool ok = given.size() == out.size() && given[0] == out[0] && given[1] == out[1];
          for (size_t d = 2; ok && d < out.size(); ++d) ok = given[d] >= out[d];
          if (!ok)
            fail("output_shape " + str_ints(given) + " must keep N and C and be at least " +
                 str_ints(out));
          out = given;
        }
        return std::vector<TensorType>{{in(n, 0).elem(), out}};
      },
      [](Node& n) {
        const int64_t k = in(n, 0).rank() - 2;
        if (k < 1) fail("input 0 must have rank >= 3 ([N, C, spatial...])");
        if (!n.has_attr("strides")) n.attrs["strides"] = std::vector<int64_t>(k, 1);
        if (!n.has_attr("pads")) n.attrs["pads"] = std::vector<int64_t>(2 * k, 0);
      });
  def("BitShift", 2, 2, 1, 1, {A("direction", K::kString)}, [](const Node& n) {
    const ElemType e = in(n, 0).elem();
    if (e != ElemType::uint8 && e != ElemType::uint16 && e != ElemType::uint32)
      fail("input 0 ('" + in(n, 0).name + "') must be unsigned (uint8/16/32), got " +
           in(n, 0).type.str());
    require_same_elem(n, 0, 1);
    const std::string& d = n.attr_string("direction");
    if (d != "LEFT" && d != "RIGHT") fail("direction must be LEFT or RIGHT, got '" + d + "'");
    return bcast_out(n, e);
  });
}

const std::map<std::string, OpDef, std::less<>>& ops() {
  static const bool once = (register_ops(), register_ops_scatter(), register_ops_index(), true);
  (void)once;
  return table();
}

const OpDef& lookup(const Node& n) {
  auto it = ops().find(n.op);
  if (it == ops().end()) throw UnsupportedError("unknown op type '" + n.op + "'");
  return it->second;
}

}  // namespace

const OpSchema* find_op_schema(std::string_view op) {
  auto it = ops().find(op);
  return it == ops().end() ? nullptr : &it->second.schema;
}

std::vector<std::string> op_names() {
  std::vector<std::string> r;
  for (const auto& [name, d] : ops()) r.push_back(name);
  return r;
}

int64_t normalize_axis(int64_t axis, int64_t rank, bool inclusive) {
  int64_t hi = inclusive ? rank : rank - 1;
  if (axis < -rank || axis > hi)
    fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

void normalize_node(Node& n) {
  const OpDef& d = lookup(n);
  const OpSchema& s = d.schema;
  int nin = static_cast<int>(n.inputs.size());
  if (nin < s.min_inputs || (s.max_inputs >= 0 && nin > s.max_inputs))
    fail("has " + std::to_string(nin) + " inputs, expected " + std::to_string(s.min_inputs) +
         (s.max_inputs == s.min_inputs
              ? ""
              : ".." + (s.max_inputs < 0 ? std::string("n") : std::to_string(s.max_inputs))));
  for (int k = 0; k < s.min_inputs; ++k)
    if (!n.inputs[k]) fail("input " + std::to_string(k) + " is required");
  int nout = static_cast<int>(n.outputs.size());
  if (nout && (nout < s.min_outputs || (s.max_outputs >= 0 && nout > s.max_outputs)))
    fail("has " + std::to_string(nout) + " outputs, expected " + std::to_string(s.min_outputs) +
         (s.max_outputs == s.min_outputs
              ? ""
              : ".." + (s.max_outputs < 0 ? std::string("n") : std::to_string(s.max_outputs))));
  for (const auto& [key, a] : n.attrs) {
    auto it = std::find_if(s.attrs.begin(), s.attrs.end(),
                           [&k = key](const AttrSpec& x) { return x.name == k; });
    if (it == s.attrs.end()) fail("unknown attribute '" + key + "'");
    if (a.kind() != it->kind)
      fail("attribute '" + key + "' is " + std::string(attribute_kind_name(a.kind())) +
           ", expected " + std::string(attribute_kind_name(it->kind)));
  }
  for (const AttrSpec& a : s.attrs)
    if (a.has_default && !n.has_attr(a.name)) n.attrs[a.name] = a.dflt;
  if (d.normalize) d.normalize(n);
  for (const AttrSpec& a : s.attrs) {
    if (!n.has_attr(a.name) && a.optional) continue;
    if (!n.has_attr(a.name)) fail("missing attribute '" + a.name + "'");
    if (n.attrs[a.name].kind() != a.kind) fail("attribute '" + a.name + "' has the wrong kind");
  }
}

std::vector<TensorType> infer_types(const Node& n) {
  const OpDef& d = lookup(n);
  if (n.has_attr("compute_dtype") && n.attrs.at("compute_dtype").kind() == K::kString) {
    const std::string& c = n.attr_string("compute_dtype");
    auto t = parse_elem_type(c);
    if (!t || !is_float(*t))
      fail("compute_dtype '" + c +
           "' is not a floating element type (fp32, bf16, fp16, fp8e4m3, "
           "fp8e5m2)");
  }
  return d.infer(n);
}

Node* make_node(Graph& g, const std::string& op, std::vector<Value*> inputs,
                std::map<std::string, Attribute> attrs, const std::string& node_name,
                int num_outputs, const std::vector<std::string>& out_names, const Node* before) {
  Node probe;
  probe.op = op;
  probe.name = node_name;
  probe.inputs = inputs;
  probe.attrs = std::move(attrs);
  // Placeholder outputs so count checks and Split's default see the output count.
  std::vector<Value> dummies(num_outputs);
  for (auto& v : dummies) probe.outputs.push_back(&v);
  std::vector<TensorType> types;
  try {
    normalize_node(probe);
    types = infer_types(probe);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(probe.label() + ": " + e.what());
  } catch (const CompileError& e) {
    throw CompileError(probe.label() + ": " + e.what());
  }
  if (static_cast<int>(types.size()) < num_outputs)
    throw CompileError(probe.label() + ": has at most " + std::to_string(types.size()) +
                       " outputs");
  std::vector<std::pair<std::string, TensorType>> outs;
  std::string base = node_name.empty() ? op : node_name;
  for (int k = 0; k < num_outputs; ++k) {
    std::string nm =
        k < static_cast<int>(out_names.size()) && !out_names[k].empty()
            ? out_names[k]
            : g.unique_name(base + (num_outputs > 1 ? "_out" + std::to_string(k) : "_out"));
    outs.emplace_back(nm, types[k]);
  }
  return g.add_node(op, std::move(inputs), outs, std::move(probe.attrs), node_name, before);
}

// ---------------------------------------------------------------------------
// Unique

UniqueSlices unique_slices(const Tensor& x, int64_t axis, bool sorted) {
  const Shape& s = x.shape();
  const int64_t S = axis < 0 ? x.numel() : s[axis];
  const int64_t inner = axis < 0 ? 1 : num_elements(Shape(s.begin() + axis + 1, s.end()));
  const int64_t outer = axis < 0 ? 1 : num_elements(Shape(s.begin(), s.begin() + axis));
  // Element e of slice j.
  auto elem = [&](int64_t j, int64_t e) {
    const int64_t o = e / std::max<int64_t>(inner, 1), i = e % std::max<int64_t>(inner, 1);
    return x.at((o * S + j) * inner + i);
  };
  const int64_t len = outer * inner;
  // -1, 0, 1 with NaN above every number and equal to NaN.
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t e = 0; e < len; ++e) {
      const double va = elem(a, e), vb = elem(b, e);
      const bool na = std::isnan(va), nb = std::isnan(vb);
      if (na || nb) {
        if (na != nb) return na ? 1 : -1;
        continue;
      }
      if (va != vb) return va < vb ? -1 : 1;
    }
    return 0;
  };
  std::vector<int64_t> order(S);
  for (int64_t j = 0; j < S; ++j) order[j] = j;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  // Groups in ascending order; the first of each run is its first occurrence.
  std::vector<int64_t> group_of(S), firsts, counts;
  for (int64_t k = 0; k < S; ++k) {
    if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
      firsts.push_back(order[k]);
      counts.push_back(0);
    }
    group_of[order[k]] = static_cast<int64_t>(firsts.size()) - 1;
    ++counts.back();
  }
  std::vector<int64_t> rank(firsts.size());
  for (size_t g = 0; g < firsts.size(); ++g) rank[g] = static_cast<int64_t>(g);
  if (!sorted) {
    std::vector<int64_t> by_first(firsts.size());
    for (size_t g = 0; g < firsts.size(); ++g) by_first[g] = static_cast<int64_t>(g);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return firsts[a] < firsts[b]; });
    for (size_t k = 0; k < by_first.size(); ++k) rank[by_first[k]] = static_cast<int64_t>(k);
  }
  UniqueSlices r;
  r.first.resize(firsts.size());
  r.counts.resize(firsts.size());
  for (size_t g = 0; g < firsts.size(); ++g) {
    r.first[rank[g]] = firsts[g];
    r.counts[rank[g]] = counts[g];
  }
  r.inverse.resize(S);
  for (int64_t j = 0; j < S; ++j) r.inverse[j] = rank[group_of[j]];
  return r;
}

// ---------------------------------------------------------------------------
// Geometry

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes) {
    size_t off = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[off + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o == 1) {
        o = s[d];
        continue;
      }
      std::string all;
      for (const auto& t : shapes) all += (all.empty() ? "" : ", ") + shape_str(t);
      fail("shapes " + all + " do not broadcast");
    }
  }
  return out;
}

WindowGeometry window_geometry(const Node& n) {
  WindowGeometry g;
  const Shape& x = shp(n, 0);
  size_t k = x.size() - 2;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = n.attr_ints("kernel_shape");
  g.strides = n.attr_ints("strides");
  g.dilations = n.has_attr("dilations") ? n.attr_ints("dilations") : std::vector<int64_t>(k, 1);
  const auto& pads = n.attr_ints("pads");
  if (g.kernel.size() != k || g.strides.size() != k || g.dilations.size() != k ||
      pads.size() != 2 * k)
    fail("kernel_shape/strides/dilations need " + std::to_string(k) + " entries and pads " +
         std::to_string(2 * k) + " for input " + shape_str(x));
  g.pads_begin.assign(pads.begin(), pads.begin() + k);
  g.pads_end.assign(pads.begin() + k, pads.end());
  bool ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  bool transposed = n.op == "ConvTranspose";
  for (size_t i = 0; i < k; ++i) {
    if (g.kernel[i] < 1 || g.strides[i] < 1 || g.dilations[i] < 1)
      fail("kernel_shape, strides and dilations must be positive");
    if (g.pads_begin[i] < 0 || g.pads_end[i] < 0) fail("pads must not be negative");
    int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t o;
    if (transposed) {
      const auto& op = n.attr_ints("output_padding");
      if (op.size() != k) fail("output_padding needs " + std::to_string(k) + " entries");
      o = g.strides[i] * (g.in[i] - 1) + op[i] + span - g.pads_begin[i] - g.pads_end[i];
    } else {
      int64_t padded = g.in[i] + g.pads_begin[i] + g.pads_end[i];
      if (padded < span)
        fail("window " + std::to_string(span) + " is larger than padded input dim " +
             std::to_string(padded));
      int64_t num = padded - span;
      o = (ceil_mode ? (num + g.strides[i] - 1) / g.strides[i] : num / g.strides[i]) + 1;
      if (ceil_mode && (o - 1) * g.strides[i] >= g.in[i] + g.pads_begin[i]) --o;
    }
    if (o < 1) fail("output dim " + std::to_string(i) + " would be " + std::to_string(o));
    g.out.push_back(o);
  }
  return g;
}

std::vector<SliceDim> slice_dims(const Node& n, const Shape& in) {
  std::vector<SliceDim> r(in.size());
  for (size_t d = 0; d < in.size(); ++d) r[d] = {0, 1, in[d]};
  const auto& starts = n.attr_ints("starts");
  const auto& ends = n.attr_ints("ends");
  const auto& axes = n.attr_ints("axes");
  const auto& steps = n.attr_ints("steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail("starts, ends, axes and steps must have the same length");
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = normalize_axis(axes[i], static_cast<int64_t>(in.size()));
    int64_t dim = in[a], step = steps[i];
    if (step == 0) fail("slice step must not be 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t cnt;
    if (dim == 0) {
      s = 0;
      cnt = 0;
    } else if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      cnt = e > s ? (e - s - 1) / step + 1 : 0;  // no overflow for huge steps
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      const int64_t mag =
          step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      cnt = s > e ? (s - e - 1) / mag + 1 : 0;
    }
    r[a] = {s, step, cnt};
  }
  return r;
}

// ---------------------------------------------------------------------------
// Recurrent ops

int rnn_activations_per_direction(std::string_view op) {
  return op == "LSTM" ? 3 : op == "GRU" ? 2 : 1;
}

std::string rnn_activation_canonical(std::string_view name) {
  static const char* const kNames[] = {
      "Relu",       "Tanh",        "Sigmoid", "Affine",   "LeakyRelu", "ThresholdedRelu",
      "ScaledTanh", "HardSigmoid", "Elu",     "Softsign", "Softplus"};
  auto lower = [](std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
  };
  for (const char* k : kNames)
    if (lower(k) == lower(name)) return k;
  return "";
}

bool rnn_activation_takes_alpha(std::string_view c) {
  return c == "Affine" || c == "LeakyRelu" || c == "ThresholdedRelu" || c == "ScaledTanh" ||
         c == "HardSigmoid" || c == "Elu";
}
bool rnn_activation_takes_beta(std::string_view c) {
  return c == "Affine" || c == "ScaledTanh" || c == "HardSigmoid";
}

// The defaults of the ONNX ops of the same names (Affine and ScaledTanh, which
// had none, get the identity scale).
std::pair<float, float> rnn_activation_defaults(std::string_view c) {
  if (c == "LeakyRelu") return {0.01f, 0.0f};
  if (c == "ThresholdedRelu" || c == "Elu") return {1.0f, 0.0f};
  if (c == "HardSigmoid") return {0.2f, 0.5f};
  if (c == "Affine") return {1.0f, 0.0f};
  if (c == "ScaledTanh") return {1.0f, 1.0f};
  return {0.0f, 0.0f};
}

std::vector<std::vector<RnnActivation>> rnn_activations(const Node& n) {
  std::vector<std::string> names = split_commas(n.attr_string("activations"));
  const auto& al = n.attr_floats("activation_alpha");
  const auto& be = n.attr_floats("activation_beta");
  const size_t per = static_cast<size_t>(rnn_activations_per_direction(n.op));
  if (names.size() % per != 0 || al.size() != names.size() || be.size() != names.size())
    fail("activations are not in normalized form");
  std::vector<std::vector<RnnActivation>> r(names.size() / per);
  for (size_t k = 0; k < names.size(); ++k) r[k / per].push_back({names[k], al[k], be[k]});
  return r;
}

}  // namespace trnsim::ir
