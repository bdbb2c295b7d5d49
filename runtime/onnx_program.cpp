#include "runtime/onnx_program.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "compiler/compile.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/lower/lower.h"
#include "compiler/timings.h"
#include "models/isa/file_io.h"
#include "runtime/target_from_config.h"

namespace trnsim::runtime {

namespace {

bool non_float(ir::ElemType t) {
  return !ir::is_float(t);
}

// The .npy header value of `key` ("'descr': '<i8'" -> "<i8"; shape: "(3, 5)").
std::string header_field(const std::string& h, const std::string& key) {
  const size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t p = h.find(':', k);
  if (p == std::string::npos) return "";
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  if (p < h.size() && h[p] == '(') return h.substr(p, h.find(')', p) + 1 - p);
  if (p < h.size() && h[p] == '\'') return h.substr(p + 1, h.find('\'', p + 1) - p - 1);
  size_t e = p;
  while (e < h.size() && h[e] != ',' && h[e] != '}') ++e;
  return h.substr(p, e - p);
}

// An .npy file of integers, bools or floats, as doubles, for the integer or bool
// model input `input`: float files must hold whole numbers (no NaN, inf or 2.7,
// which the input's type cannot hold).
std::vector<double> read_npy_numbers(const std::string& path, std::vector<int64_t>& shape,
                                     const std::string& input) {
  std::string bytes;
  if (const std::string why = isa::read_file(path, bytes); !why.empty())
    throw NpyError(path + ": cannot open: " + why);
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw NpyError(path + ": not an .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t hlen = 0, hstart = 10;
  if (major == 1) {
    hlen = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  } else {
    if (bytes.size() < 12) throw NpyError(path + ": truncated header");
    for (int i = 3; i >= 0; --i) hlen = hlen << 8 | static_cast<unsigned char>(bytes[8 + i]);
    hstart = 12;
  }
  if (hstart + hlen > bytes.size()) throw NpyError(path + ": truncated header");
  const std::string h = bytes.substr(hstart, hlen);
  const std::string descr = header_field(h, "descr");
  if (header_field(h, "fortran_order") != "False")
    throw NpyError(path + ": Fortran-order arrays are not supported");
  const std::string s = header_field(h, "shape");
  shape.clear();
  for (size_t i = 1; i < s.size();) {
    while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    size_t e = i;
    while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
    if (e - i > 18)
      throw NpyError(path + ": shape " + s + " has a dimension too large (over 18 digits)");
    shape.push_back(std::stoll(s.substr(i, e - i)));
    i = e;
  }
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 40))
      throw NpyError(path + ": shape " + shape_string(shape) +
                     " has more elements than fit in memory");
  size_t size = 0;
  if (descr == "<i8" || descr == "<f8")
    size = 8;
  else if (descr == "<i4" || descr == "<f4")
    size = 4;
  else if (descr == "|u1" || descr == "|b1")
    size = 1;
  else
    throw NpyError(path + ": dtype '" + descr +
                   "' is not one of int64, int32, uint8, bool, float32, float64 (little-endian)");
  const size_t data = hstart + hlen;
  if (bytes.size() - data < static_cast<size_t>(n) * size)
    throw NpyError(path + ": data is shorter than shape " + shape_string(shape) + " needs");
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) {
    const char* p = bytes.data() + data + i * size;
    if (descr == "<i8") {
      int64_t x;
      std::memcpy(&x, p, 8);
      v[i] = static_cast<double>(x);
    } else if (descr == "<f8") {
      std::memcpy(&v[i], p, 8);
    } else if (descr == "<i4") {
      int32_t x;
      std::memcpy(&x, p, 4);
      v[i] = x;
    } else if (descr == "<f4") {
      float x;
      std::memcpy(&x, p, 4);
      v[i] = x;
    } else {
      v[i] = static_cast<unsigned char>(*p);
    }
    if ((descr == "<f8" || descr == "<f4") && !(std::isfinite(v[i]) && std::trunc(v[i]) == v[i]))
      throw NpyError(path + ": element " + std::to_string(i) + " (" + std::to_string(v[i]) +
                     ") is not a whole number, but input '" + input +
                     "' is integer or bool: convert the array (e.g. astype) first");
  }
  return v;
}

void write_npy_raw(const std::string& path, const std::string& descr,
                   const std::vector<int64_t>& shape, const std::string& data) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  s += shape.size() == 1 ? ",)" : ")";
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + s + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(1);
  out += static_cast<char>(0);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  out += h + data;
  write_file(path, out);
}

}  // namespace

bool is_onnx_path(const std::string& path) {
  return isa::has_extension(path, ".onnx");
}

ir::ElemType OnnxModel::type_of(const std::string& tensor) const {
  auto it = io_types.find(tensor);
  return it == io_types.end() ? ir::ElemType::fp32 : it->second;
}

std::vector<int64_t> ModelIo::device_shape() const {
  return type.shape.empty() ? std::vector<int64_t>{1} : type.shape;
}

std::vector<ModelIo> model_inputs(const ir::Graph& g) {
  const std::map<std::string, std::string> names = lower::io_tensor_names(g);
  std::vector<ModelIo> r;
  for (const ir::Value* v : g.inputs()) r.push_back({v->name, names.at(v->name), v->type, true});
  return r;
}

const ModelIo* find_input(const std::vector<ModelIo>& inputs, const std::string& given) {
  for (const ModelIo& in : inputs)
    if (in.name == given) return &in;
  for (const ModelIo& in : inputs)
    if (in.tensor == given) return &in;
  return nullptr;
}

std::string describe_inputs(const std::vector<ModelIo>& inputs) {
  if (inputs.empty()) return "(none)";
  std::string s;
  for (const ModelIo& in : inputs) {
    s += (s.empty() ? "'" : ", '") + in.name + "'";
    if (in.tensor != in.name) s += " (tensor " + in.tensor + ")";
    s += " " + in.type.str();
  }
  return s;
}

OnnxModel compile_onnx_model(const std::string& path, const platform::platform_config& cfg,
                             const std::string& precision,
                             const std::vector<std::string>& print_after, std::ostream& dumps,
                             bool allow_fallback, bool keep_on_chip,
                             const frontend::ImportOptions& import) {
  if (!graph_passes::parse_precision(precision))
    throw std::invalid_argument("--precision: '" + precision + "' is not one of bf16, fp32, fp8");
  ir::Graph g = [&] {
    compiler::timings::Scope t("import");
    return frontend::import_onnx_file(path, import);  // its errors name the file
  }();
  return compile_onnx_graph(std::move(g), path, cfg, precision, print_after, dumps, allow_fallback,
                            keep_on_chip);
}

OnnxModel compile_onnx_graph(ir::Graph imported, const std::string& path,
                             const platform::platform_config& cfg, const std::string& precision,
                             const std::vector<std::string>& print_after, std::ostream& dumps,
                             bool allow_fallback, bool keep_on_chip) {
  compiler::CompileOnnxOptions o;
  o.keep_on_chip = keep_on_chip;
  const auto p = graph_passes::parse_precision(precision);
  if (!p)
    throw std::invalid_argument("--precision: '" + precision + "' is not one of bf16, fp32, fp8");
  o.precision = *p;
  o.target = target_from_config(cfg);
  o.print_after = print_after;
  o.dump = [&dumps](const std::string& pass, const std::string& text) {
    dumps << "# IR after " << pass << "\n" << text;
  };
  // Compiler errors name the node, value or kernel; the file is added here, keeping the
  // type (callers count UnsupportedError as refused).
  compiler::PartitionedModel pm = [&] {
    try {
      return compiler::compile_partitioned(std::move(imported), o, allow_fallback);
    } catch (const ir::UnsupportedError& e) {
      throw ir::UnsupportedError(path + ": " + e.what());
    } catch (const ir::CompileError& e) {
      throw ir::CompileError(path + ": " + e.what());
    } catch (const tile::KernelError& e) {
      throw tile::KernelError(path + ": " + e.what());
    }
  }();
  OnnxModel m;
  m.compile_stats = pm.stats;
  const std::map<std::string, std::string> names = lower::io_tensor_names(pm.graph);
  for (const ir::Value* v : pm.graph.inputs()) m.io_types[names.at(v->name)] = v->elem();
  for (const ir::Value* v : pm.graph.outputs()) m.io_types[names.at(v->name)] = v->elem();
  m.inputs = model_inputs(pm.graph);
  for (const ir::Value* v : pm.graph.outputs())
    m.outputs.push_back({v->name, names.at(v->name), v->type, v->is_graph_input});
  if (pm.segments.size() == 1 && pm.segments[0].on_device) {
    // pm ends here: its graph moves (a clone would copy every weight once more).
    m.graph = std::make_shared<const ir::Graph>(std::move(pm.graph));
    m.program = std::move(pm.segments[0].program);
    m.roofline = pm.segments[0].roofline;
    return m;
  }
  {
    compiler::timings::Scope t("graph.clone");
    m.graph = std::make_shared<const ir::Graph>(pm.graph.clone());
  }
  // Several segments (or none: every output a constant or an input): the program
  // only declares the model's inputs and outputs (as the device holds them), so
  // binding, random inputs and output files work as for one program.
  m.program.name = pm.graph.name.empty() ? "model" : pm.graph.name;
  auto declare = [&](const ir::Value* v, isa::TensorRole role) {
    for (const isa::TensorDecl& d : m.program.tensors)
      if (d.name == names.at(v->name)) return;
    isa::TensorDecl d;
    d.name = names.at(v->name);
    d.shape = v->shape().empty() ? std::vector<int64_t>{1} : v->shape();
    d.dtype = v->elem() == ir::ElemType::bf16   ? isa::DType::bf16
              : v->elem() == ir::ElemType::fp16 ? isa::DType::fp16
                                                : isa::DType::fp32;
    d.role = role;
    m.program.tensors.push_back(d);
  };
  for (const ir::Value* v : pm.graph.inputs()) declare(v, isa::TensorRole::input);
  for (const ir::Value* v : pm.graph.outputs()) declare(v, isa::TensorRole::output);
  m.partitioned = std::make_shared<compiler::PartitionedModel>(std::move(pm));
  return m;
}

std::string keep_on_chip_summary(const std::map<std::string, double>& s) {
  auto get = [&](const char* k) {
    auto it = s.find(std::string("keep_on_chip.") + k);
    return it == s.end() ? 0.0 : it->second;
  };
  const double fwd = get("loads_forwarded"), spilled = get("loads_spilled");
  if (fwd + spilled == 0) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "keep_on_chip: %.0f loads forwarded through SBUF (%.0f copies), %.0f spilled "
                "to HBM; %.0f stores dropped; %.2f MiB less HBM traffic",
                fwd, get("copies"), spilled, get("stores_dropped"),
                get("hbm_bytes_saved") / (1024.0 * 1024.0));
  return buf;
}

std::string repeated_blocks_summary(const std::map<std::string, double>& s) {
  auto get = [&](const char* k) {
    auto it = s.find(std::string("repeat.") + k);
    return it == s.end() ? 0.0 : it->second;
  };
  if (get("blocks") < 2) return "";
  char buf[320];
  if (get("reused_blocks") > 0)
    std::snprintf(buf, sizeof buf,
                  "repeated blocks: %.0f identical blocks of %.0f nodes (of %.0f); %.0f "
                  "compiled, %.0f reusing the first's program (a barrier between blocks)",
                  get("blocks"), get("block_nodes"), get("graph_nodes"), get("compiled_blocks"),
                  get("reused_blocks"));
  else
    std::snprintf(buf, sizeof buf,
                  "repeated blocks: %.0f identical blocks of %.0f nodes (of %.0f); each is "
                  "compiled on its own",
                  get("blocks"), get("block_nodes"), get("graph_nodes"));
  return buf;
}

isa::Program compile_model(const std::string& path, const platform::platform_config& cfg,
                           const std::string& precision,
                           const std::vector<std::string>& print_after, std::ostream& dumps,
                           bool keep_on_chip) {
  OnnxModel m = compile_onnx_model(path, cfg, precision, print_after, dumps, false, keep_on_chip);
  return std::move(m.program);
}

HostTensor read_model_input(const ModelIo& in, const std::string& path) {
  const ir::ElemType t = in.type.elem;
  HostTensor h;
  if (!non_float(t)) {
    h = read_npy(path);
  } else {
    std::vector<int64_t> shape;
    const std::vector<double> v = read_npy_numbers(path, shape, in.name);
    std::vector<float> f(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == ir::ElemType::boolean) {
        f[i] = v[i] != 0 ? 1.0f : 0.0f;
        continue;
      }
      if (std::fabs(v[i]) > 16777216.0)
        throw NpyError(path + ": element " + std::to_string(i) + " (" + std::to_string(v[i]) +
                       ") of " + std::string(ir::elem_type_name(t)) + " input '" + in.name +
                       "' is beyond 2^24, which the device's fp32 cannot hold exactly");
      f[i] = static_cast<float>(std::trunc(v[i]));
    }
    h = HostTensor::from_float(shape, isa::DType::fp32, f);
  }
  // A scalar may come as a 0-d or a one-element 1-d array.
  const bool scalar_row = in.type.shape.empty() && h.shape == std::vector<int64_t>{1};
  if (h.shape != in.type.shape && !scalar_row)
    throw NpyError(path + ": shape " + shape_string(h.shape) + ", but input '" + in.name + "' is " +
                   in.type.str());
  h.shape = in.device_shape();  // ONNX scalars live on the device as [1]
  return h;
}

std::optional<HostTensor> random_model_input(const OnnxModel& m, const isa::TensorDecl& d,
                                             std::mt19937_64& rng) {
  const ir::ElemType t = m.type_of(d.name);
  if (!non_float(t)) return std::nullopt;
  std::vector<float> vals(d.bytes() / isa::dtype_size(d.dtype));
  const uint64_t range = t == ir::ElemType::boolean ? 2 : 10;
  for (float& x : vals) x = static_cast<float>(rng() % range);
  return HostTensor::from_float(d.shape, isa::DType::fp32, vals);
}

std::string write_model_output(const ModelIo& out, const std::string& path, const HostTensor& t) {
  const ir::ElemType e = out.type.elem;
  if (!non_float(e)) {
    HostTensor h = t;
    h.shape = out.type.shape;  // a scalar is 0-d, not the device's [1]
    write_npy(path, h);
    return npy_dtype(h.dtype);
  }
  // numpy's name and size of the type; host and .npy are both little-endian.
  std::string descr = "<i8", dtype = "int64";
  size_t size = 8;
  switch (e) {
    case ir::ElemType::boolean:
      descr = "|b1", dtype = "bool", size = 1;
      break;
    case ir::ElemType::int8:
      descr = "|i1", dtype = "int8", size = 1;
      break;
    case ir::ElemType::uint8:
      descr = "|u1", dtype = "uint8", size = 1;
      break;
    case ir::ElemType::int16:
      descr = "<i2", dtype = "int16", size = 2;
      break;
    case ir::ElemType::uint16:
      descr = "<u2", dtype = "uint16", size = 2;
      break;
    case ir::ElemType::int32:
      descr = "<i4", dtype = "int32", size = 4;
      break;
    case ir::ElemType::uint32:
      descr = "<u4", dtype = "uint32", size = 4;
      break;
    default:
      break;
  }
  std::string data;
  for (float x : t.to_float()) {
    const int64_t i =
        e == ir::ElemType::boolean ? (x != 0) : static_cast<int64_t>(std::nearbyint(x));
    char b[8];
    std::memcpy(b, &i, 8);
    data.append(b, size);
  }
  write_npy_raw(path, descr, out.type.shape, data);
  return dtype;
}

std::vector<HostTensor> model_output_values(const OnnxModel& m,
                                            const std::map<std::string, HostTensor>& inputs,
                                            const std::map<std::string, HostTensor>& outputs) {
  std::vector<HostTensor> r;
  for (const ModelIo& o : m.outputs) {
    const auto& from = o.is_input ? inputs : outputs;
    auto it = from.find(o.tensor);
    if (it == from.end())
      throw std::runtime_error("output '" + o.name + "' (tensor " + o.tensor +
                               ") was not produced by the run");
    r.push_back(it->second);
  }
  return r;
}

}  // namespace trnsim::runtime
