#include "runtime/tensor.h"
#include "models/isa/file_io.h"

#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

namespace trnsim::runtime {

// .npy data is little-endian on disk; the element copies below are plain memcpy.
static_assert(std::endian::native == std::endian::little, "trnsim assumes a little-endian host");

uint64_t HostTensor::elems() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  return n;
}

std::vector<float> HostTensor::to_float() const {
  const uint64_t n = elems();
  if (data.size() != n * isa::dtype_size(dtype))
    throw std::runtime_error("HostTensor " + shape_string(shape) + " " +
                             std::string(isa::dtype_name(dtype)) + " holds " +
                             std::to_string(data.size()) + " bytes, expected " +
                             std::to_string(n * isa::dtype_size(dtype)));
  std::vector<float> out(n);
  isa::to_fp32(dtype, data.data(), out.data(), n);
  return out;
}

HostTensor HostTensor::from_float(const std::vector<int64_t>& shape, isa::DType t,
                                  const std::vector<float>& values) {
  HostTensor r;
  r.shape = shape;
  r.dtype = t;
  if (values.size() != r.elems())
    throw std::runtime_error("HostTensor::from_float: " + std::to_string(values.size()) +
                             " values for shape " + shape_string(shape));
  r.data.resize(values.size() * isa::dtype_size(t));
  isa::from_fp32(t, values.data(), r.data.data(), values.size());
  return r;
}

HostTensor HostTensor::cast(isa::DType t) const {
  if (t == dtype) return *this;
  return from_float(shape, t, to_float());
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw NpyError(path + ": " + what);
}

// The .npy header is a Python dict literal written by numpy's repr; this parses
// the subset numpy emits: string keys, string / bool / int-tuple values.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  struct Value {
    enum Kind { str, boolean, tuple } kind;
    std::string s;
    bool b = false;
    std::vector<int64_t> ints;
  };

  std::vector<std::pair<std::string, Value>> parse() {
    std::vector<std::pair<std::string, Value>> out;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      Value v = parse_value();
      out.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_ws();
      expect('}');
      break;
    }
    skip_ws();
    if (i_ != s_.size()) bad("unexpected text after the closing '}'");
    return out;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(path_, "bad header dict at character " + std::to_string(i_) + ": " + what +
                    " (header: " + std::string(s_) + ")");
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    ++i_;
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) bad("unterminated string");
    std::string r(s_.substr(start, i_ - start));
    ++i_;
    return r;
  }
  int64_t parse_int() {
    const size_t start = i_;
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++i_;
    if (start == i_) bad("expected a non-negative integer");
    // numpy 1.x may write Python 2 longs ("3L").
    std::string_view digits = s_.substr(start, i_ - start);
    if (peek() == 'L') ++i_;
    if (digits.size() > 18) bad("dimension too large");
    int64_t v = 0;
    for (char c : digits) v = v * 10 + (c - '0');
    return v;
  }
  Value parse_value() {
    Value v{};
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = Value::str;
      v.s = parse_string();
    } else if (s_.substr(i_, 4) == "True") {
      v.kind = Value::boolean;
      v.b = true;
      i_ += 4;
    } else if (s_.substr(i_, 5) == "False") {
      v.kind = Value::boolean;
      i_ += 5;
    } else if (c == '(') {
      v.kind = Value::tuple;
      ++i_;
      skip_ws();
      while (peek() != ')') {
        v.ints.push_back(parse_int());
        skip_ws();
        if (peek() == ',') {
          ++i_;
          skip_ws();
        } else if (peek() != ')') {
          bad("expected ',' or ')' in the shape tuple");
        }
      }
      ++i_;
    } else {
      bad("expected a string, True/False or a tuple");
    }
    return v;
  }

  std::string_view s_;
  const std::string& path_;
  size_t i_ = 0;
};

// On-disk element types read_npy accepts and the HostTensor dtype each becomes.
struct DiskType {
  std::string_view descr;
  size_t size;
  isa::DType dtype;
};
constexpr DiskType kDiskTypes[] = {
    {"<f4", 4, isa::DType::fp32},  {"<f2", 2, isa::DType::fp16},  {"<i4", 4, isa::DType::int32},
    {"|u1", 1, isa::DType::uint8}, {"<u1", 1, isa::DType::uint8}, {"<f8", 8, isa::DType::fp32},
    {"<i8", 8, isa::DType::int32},
};

std::string python_shape(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';
  return s + ")";
}

}  // namespace

HostTensor read_npy(const std::string& path) {
  std::string buf;
  if (const std::string why = isa::read_file(path, buf); !why.empty())
    fail(path, "cannot open: " + why);

  if (buf.size() < kMagicLen || std::memcmp(buf.data(), kMagic, kMagicLen) != 0)
    fail(path, "not a .npy file (bad magic; expected \\x93NUMPY)");
  if (buf.size() < kMagicLen + 2) fail(path, "truncated header: no format version");
  const auto major = static_cast<uint8_t>(buf[6]);
  const auto minor = static_cast<uint8_t>(buf[7]);
  size_t len_bytes = 0;
  if (major == 1)
    len_bytes = 2;
  else if (major == 2 || major == 3)
    len_bytes = 4;
  else
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  const size_t prefix = kMagicLen + 2 + len_bytes;
  if (buf.size() < prefix) fail(path, "truncated header: file ends in the header length field");
  uint64_t hlen = 0;
  for (size_t i = 0; i < len_bytes; ++i)
    hlen |= uint64_t(static_cast<uint8_t>(buf[kMagicLen + 2 + i])) << (8 * i);
  if (buf.size() - prefix < hlen)
    fail(path, "truncated header: header length is " + std::to_string(hlen) + " bytes but only " +
                   std::to_string(buf.size() - prefix) + " follow");
  std::string_view header(buf.data() + prefix, hlen);
  // Trailing newline and padding spaces are part of the header text.
  while (!header.empty() && (header.back() == '\n' || header.back() == ' ' ||
                             header.back() == '\0' || header.back() == '\r'))
    header.remove_suffix(1);

  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  for (auto& [key, v] : HeaderParser(header, path).parse()) {
    using K = HeaderParser::Value;
    if (key == "descr") {
      if (v.kind != K::str)
        fail(path,
             "bad header dict: 'descr' is not a string (structured "
             "dtypes are not supported)");
      descr = v.s;
    } else if (key == "fortran_order") {
      if (v.kind != K::boolean) fail(path, "bad header dict: 'fortran_order' is not True/False");
      fortran = v.b;
    } else if (key == "shape") {
      if (v.kind != K::tuple) fail(path, "bad header dict: 'shape' is not a tuple");
      shape = v.ints;
    } else {
      fail(path, "bad header dict: unknown key '" + key + "'");
    }
  }
  if (!descr) fail(path, "bad header dict: missing key 'descr'");
  if (!fortran) fail(path, "bad header dict: missing key 'fortran_order'");
  if (!shape) fail(path, "bad header dict: missing key 'shape'");
  if (*fortran) fail(path, "fortran_order=True arrays are not supported (save a C-order array)");

  const DiskType* dt = nullptr;
  for (const DiskType& d : kDiskTypes)
    if (d.descr == *descr) dt = &d;
  if (!dt) {
    if (!descr->empty() && descr->front() == '>')
      fail(path, "big-endian dtype '" + *descr + "' is not supported");
    fail(path, "unsupported dtype '" + *descr + "' (supported: <f4 <f2 <i4 |u1 <f8 <i8)");
  }

  HostTensor t;
  t.shape = *shape;
  t.dtype = dt->dtype;
  // Guard the element count against overflow before trusting it.
  uint64_t n = 1;
  for (int64_t d : t.shape) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / 16 / static_cast<uint64_t>(d))
      fail(path, "shape " + shape_string(t.shape) + " is too large");
    n *= static_cast<uint64_t>(d);
  }
  const uint64_t need = n * dt->size;
  const uint64_t have = buf.size() - prefix - hlen;
  if (have < need)
    fail(path, "data is " + std::to_string(have) + " bytes but shape " + shape_string(t.shape) +
                   " of '" + *descr + "' needs " + std::to_string(need));
  if (have > need)
    fail(path, "data is " + std::to_string(have) + " bytes, " + std::to_string(have - need) +
                   " more than shape " + shape_string(t.shape) + " of '" + *descr + "' needs");
  const char* src = buf.data() + prefix + hlen;

  t.data.resize(n * isa::dtype_size(t.dtype));
  if (dt->size == isa::dtype_size(t.dtype)) {
    if (need) std::memcpy(t.data.data(), src, need);  // empty arrays have no data pointer
  } else if (*descr == "<f8") {
    // Narrowed to fp32 now; a later cast rounds it to the tensor's target type.
    for (uint64_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, src + i * 8, 8);
      const auto v = static_cast<float>(d);
      std::memcpy(t.data.data() + i * 4, &v, 4);
    }
  } else {  // <i8
    for (uint64_t i = 0; i < n; ++i) {
      int64_t d;
      std::memcpy(&d, src + i * 8, 8);
      if (d < std::numeric_limits<int32_t>::min() || d > std::numeric_limits<int32_t>::max())
        fail(path, "int64 element " + std::to_string(i) + " = " + std::to_string(d) +
                       " does not fit in int32");
      const auto v = static_cast<int32_t>(d);
      std::memcpy(t.data.data() + i * 4, &v, 4);
    }
  }
  return t;
}

std::string npy_dtype(isa::DType t) {
  switch (t) {
    case isa::DType::fp16:
      return "float16";
    case isa::DType::int32:
      return "int32";
    case isa::DType::uint8:
      return "uint8";
    default:
      return "float32";
  }
}

void write_npy(const std::string& path, const HostTensor& t) {
  for (int64_t d : t.shape)
    if (d < 0) fail(path, "cannot write negative shape " + shape_string(t.shape));
  const uint64_t n = t.elems();
  if (t.data.size() != n * isa::dtype_size(t.dtype))
    fail(path, "tensor " + shape_string(t.shape) + " " + std::string(isa::dtype_name(t.dtype)) +
                   " holds " + std::to_string(t.data.size()) + " bytes, expected " +
                   std::to_string(n * isa::dtype_size(t.dtype)));

  std::string descr;
  const std::vector<uint8_t>* payload = &t.data;
  std::vector<uint8_t> widened;
  switch (t.dtype) {
    case isa::DType::fp32:
      descr = "<f4";
      break;
    case isa::DType::fp16:
      descr = "<f2";
      break;
    case isa::DType::int32:
      descr = "<i4";
      break;
    case isa::DType::uint8:
      descr = "|u1";
      break;
    case isa::DType::bf16:
    case isa::DType::fp8e4m3:
    case isa::DType::fp8e5m2: {
      // numpy has no such types: store exact fp32 values.
      descr = "<f4";
      std::vector<float> f = t.to_float();
      widened.resize(f.size() * 4);
      std::memcpy(widened.data(), f.data(), widened.size());
      payload = &widened;
      break;
    }
  }

  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + python_shape(t.shape) + ", }";
  // Pad with spaces so magic + version + length + header is a multiple of 64,
  // ending in '\n' (what numpy writes).
  const size_t v1_prefix = kMagicLen + 2 + 2;
  size_t total = v1_prefix + header.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  header.append(pad, ' ');
  header += '\n';
  if (header.size() > 0xffff) fail(path, "header too long for .npy version 1.0");

  try {
    write_file(path, [&](std::ostream& f) {
      f.write(kMagic, kMagicLen);
      const char ver[2] = {1, 0};
      f.write(ver, 2);
      const char len[2] = {static_cast<char>(header.size() & 0xff),
                           static_cast<char>(header.size() >> 8)};
      f.write(len, 2);
      f.write(header.data(), static_cast<std::streamsize>(header.size()));
      f.write(reinterpret_cast<const char*>(payload->data()),
              static_cast<std::streamsize>(payload->size()));
    });
  } catch (const std::runtime_error& e) {
    throw NpyError(e.what());
  }
}

void write_file(const std::string& path, const std::function<void(std::ostream&)>& body) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
  errno = 0;
  body(f);
  f.flush();
  const int err = errno;
  f.close();
  if (!f)
    throw std::runtime_error(path + ": write failed: " +
                             std::strerror(err     ? err
                                           : errno ? errno
                                                   : EIO));
}

void write_file(const std::string& path, const std::string& bytes) {
  write_file(path, [&](std::ostream& f) { f.write(bytes.data(), std::streamsize(bytes.size())); });
}

}  // namespace trnsim::runtime
