// HostTensor and .npy I/O: round trips for every dtype, interchange with numpy in
// both directions, and one test per kind of malformed file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "runtime/tensor.h"
#include "tests/common/python_env.h"

namespace trnsim::runtime {
namespace {

namespace fs = std::filesystem;
using isa::DType;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("trnsim_npy_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  void write_bytes(const std::string& name, const std::string& bytes) const {
    std::ofstream f(path(name), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string read_bytes(const std::string& name) const {
    std::ifstream f(path(name), std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }

  // Runs a python script (numpy as np and sys imported, `d` bound to the temp dir),
  // for TRNSIM_REQUIRE_PYTHON: a missing numpy is kMissingPackageExit.
  test::PyRun numpy_script(const std::string& body) const {
    const std::string script = path("script.py");
    std::ofstream(script) << test::python_require({"numpy"}) << "import numpy as np, sys\nd = r'"
                          << dir_.string() << "'\n"
                          << body;
    return test::run_python(script);
  }

  // Asserts that reading `name` throws NpyError naming the file and containing `what`.
  void expect_error(const std::string& name, const std::string& what) const {
    try {
      read_npy(path(name));
      ADD_FAILURE() << name << ": expected NpyError containing '" << what << "'";
    } catch (const NpyError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path(name)), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << "'" << what << "' not in: " << msg;
    }
  }

  fs::path dir_;
};

// A v1.0 file with the given header dict and payload, padded as numpy does.
std::string make_npy(const std::string& dict, const std::string& payload, int major = 1) {
  std::string h = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  const size_t len_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < len_bytes; ++i) s += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return s + h + payload;
}

std::string floats_payload(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

HostTensor raw_tensor(std::vector<int64_t> shape, DType t, const void* bytes) {
  HostTensor h;
  h.shape = std::move(shape);
  h.dtype = t;
  h.data.resize(h.elems() * isa::dtype_size(t));
  std::memcpy(h.data.data(), bytes, h.data.size());
  return h;
}

// ---- HostTensor basics ----------------------------------------------------------

TEST(NpyTensor, ShapeStringAndElems) {
  EXPECT_EQ(shape_string({2, 3}), "[2,3]");
  EXPECT_EQ(shape_string({}), "[]");
  HostTensor t;
  t.shape = {2, 3, 4};
  EXPECT_EQ(t.elems(), 24u);
  t.shape = {};
  EXPECT_EQ(t.elems(), 1u);  // a 0-d array holds one element
  t.shape = {0, 7};
  EXPECT_EQ(t.elems(), 0u);
}

TEST(NpyTensor, FromFloatChecksCount) {
  EXPECT_THROW(HostTensor::from_float({2, 2}, DType::fp32, {1, 2, 3}), std::runtime_error);
}

TEST(NpyTensor, CastRoundsThroughFp32) {
  // bf16 keeps 7 fraction bits: ulp(1) = 2^-7. 1+2^-8 is a tie -> even (1.0);
  // 1+3*2^-8 is a tie between 1+2^-7 (odd) and 1+2^-6 (even) -> 1+2^-6.
  HostTensor f =
      HostTensor::from_float({4}, DType::fp32, {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.5f, 1e30f});
  std::vector<float> b = f.cast(DType::bf16).to_float();
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], 1.0f + 0x1p-6f);
  EXPECT_EQ(b[2], -2.5f);
  EXPECT_EQ(f.cast(DType::bf16).data.size(), 8u);
  // int32: round to nearest even; uint8 saturates.
  HostTensor g = HostTensor::from_float({4}, DType::fp32, {2.5f, 3.5f, -300.0f, 300.0f});
  std::vector<float> i = g.cast(DType::int32).to_float();
  EXPECT_EQ(i, (std::vector<float>{2, 4, -300, 300}));
  std::vector<float> u = g.cast(DType::uint8).to_float();
  EXPECT_EQ(u, (std::vector<float>{2, 4, 0, 255}));
  // Same dtype: identical bytes.
  EXPECT_EQ(f.cast(DType::fp32).data, f.data);
}

// ---- round trips ----------------------------------------------------------------

TEST_F(NpyTest, RoundTripFp32) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v;
  for (int i = 0; i < 24; ++i) v.push_back((i - 11.5f) * 0.37f);
  v[3] = inf, v[4] = -inf, v[5] = -0.0f, v[6] = std::numeric_limits<float>::denorm_min();
  HostTensor t = HostTensor::from_float({2, 3, 4}, DType::fp32, v);
  write_npy(path("a.npy"), t);
  HostTensor r = read_npy(path("a.npy"));
  EXPECT_EQ(r.dtype, DType::fp32);
  EXPECT_EQ(r.shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(r.data, t.data);  // bit-exact, including -0 and the denormal
  // Version 1.0 header, total header length a multiple of 64 ending in '\n'.
  std::string raw = read_bytes("a.npy");
  EXPECT_EQ(raw.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t hlen = static_cast<uint8_t>(raw[8]) | (static_cast<uint8_t>(raw[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  EXPECT_EQ(raw[10 + hlen - 1], '\n');
  EXPECT_NE(raw.find("'descr': '<f4'"), std::string::npos);
  EXPECT_EQ(raw.size(), 10 + hlen + 24 * 4);
}

TEST_F(NpyTest, RoundTripFp16) {
  const uint16_t bits[5] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000};  // 1, -2, 65504, denorm, -0
  HostTensor t = raw_tensor({5}, DType::fp16, bits);
  write_npy(path("h.npy"), t);
  EXPECT_NE(read_bytes("h.npy").find("'descr': '<f2'"), std::string::npos);
  HostTensor r = read_npy(path("h.npy"));
  EXPECT_EQ(r.dtype, DType::fp16);
  EXPECT_EQ(r.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(r.data, t.data);
}

TEST_F(NpyTest, RoundTripInt32) {
  const int32_t v[6] = {0,
                        -1,
                        123456789,
                        std::numeric_limits<int32_t>::min(),
                        std::numeric_limits<int32_t>::max(),
                        16777217};
  HostTensor t = raw_tensor({3, 2}, DType::int32, v);
  write_npy(path("i.npy"), t);
  EXPECT_NE(read_bytes("i.npy").find("'descr': '<i4'"), std::string::npos);
  HostTensor r = read_npy(path("i.npy"));
  EXPECT_EQ(r.dtype, DType::int32);
  EXPECT_EQ(r.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r.data, t.data);
}

TEST_F(NpyTest, RoundTripUint8) {
  std::vector<uint8_t> v(256);
  for (int i = 0; i < 256; ++i) v[i] = static_cast<uint8_t>(255 - i);
  HostTensor t = raw_tensor({16, 16}, DType::uint8, v.data());
  write_npy(path("u.npy"), t);
  EXPECT_NE(read_bytes("u.npy").find("'descr': '|u1'"), std::string::npos);
  HostTensor r = read_npy(path("u.npy"));
  EXPECT_EQ(r.dtype, DType::uint8);
  EXPECT_EQ(r.data, t.data);
}

// bf16 and fp8 are widened to exact fp32 on disk; narrowing back restores the bits.
TEST_F(NpyTest, RoundTripNarrowFloatsViaFp32) {
  for (DType dt : {DType::bf16, DType::fp8e4m3, DType::fp8e5m2}) {
    SCOPED_TRACE(std::string(isa::dtype_name(dt)));
    std::vector<float> v = {0.0f, 1.0f, -1.5f, 0.25f, 3.0f, -448.0f, 0.015625f, 6.0f};
    HostTensor t = HostTensor::from_float({2, 4}, dt, v);
    write_npy(path("n.npy"), t);
    EXPECT_NE(read_bytes("n.npy").find("'descr': '<f4'"), std::string::npos);
    HostTensor r = read_npy(path("n.npy"));
    EXPECT_EQ(r.dtype, DType::fp32);
    EXPECT_EQ(r.to_float(), t.to_float());
    EXPECT_EQ(r.cast(dt).data, t.data);
  }
}

TEST_F(NpyTest, RoundTripScalarAndEmpty) {
  HostTensor s = HostTensor::from_float({}, DType::fp32, {42.5f});
  write_npy(path("s.npy"), s);
  EXPECT_NE(read_bytes("s.npy").find("'shape': ()"), std::string::npos);
  HostTensor rs = read_npy(path("s.npy"));
  EXPECT_TRUE(rs.shape.empty());
  EXPECT_EQ(rs.to_float(), std::vector<float>{42.5f});

  HostTensor e = HostTensor::from_float({0, 3}, DType::int32, {});
  write_npy(path("e.npy"), e);
  HostTensor re = read_npy(path("e.npy"));
  EXPECT_EQ(re.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(re.data.empty());
}

TEST_F(NpyTest, ReadsVersion2And3Headers) {
  // Hand-built 2.0/3.0 files (4-byte header length).
  for (int major : {2, 3}) {
    write_bytes("v.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                  floats_payload({1.5f, -2.0f}), major));
    HostTensor r = read_npy(path("v.npy"));
    EXPECT_EQ(r.to_float(), (std::vector<float>{1.5f, -2.0f})) << "version " << major;
  }
}

TEST_F(NpyTest, WriteErrorsNameThePath) {
  HostTensor t = HostTensor::from_float({2}, DType::fp32, {1, 2});
  const std::string bad = path("no_such_dir/x.npy");
  try {
    write_npy(bad, t);
    ADD_FAILURE() << "expected NpyError";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  t.data.pop_back();  // inconsistent with the shape
  EXPECT_THROW(write_npy(path("y.npy"), t), NpyError);
}

// ---- interchange with numpy -------------------------------------------------------

TEST_F(NpyTest, ReadsFilesWrittenByNumpy) {
  TRNSIM_REQUIRE_PYTHON(numpy_script(R"(
import os
base = (np.arange(24).reshape(2, 3, 4) - 7.5) * 0.25
np.save(os.path.join(d, 'f4.npy'), base.astype('<f4'))
np.save(os.path.join(d, 'f2.npy'), base.astype('<f2'))
np.save(os.path.join(d, 'f8.npy'), np.array([1/3, -2.5, 1e-3]))
np.save(os.path.join(d, 'i4.npy'), np.array([[-7, 0], [2**31 - 1, -2**31]], dtype='<i4'))
np.save(os.path.join(d, 'i8.npy'), np.array([5, -6, 2**31 - 1], dtype='<i8'))
np.save(os.path.join(d, 'u1.npy'), np.arange(250, 256, dtype=np.uint8))
np.save(os.path.join(d, 'scalar.npy'), np.float32(3.25))
for v in [(2, 0), (3, 0)]:
    with open(os.path.join(d, 'v%d.npy' % v[0]), 'wb') as f:
        np.lib.format.write_array(f, base.astype('<f4'), version=v)
)"));
  std::vector<float> base(24);
  for (int i = 0; i < 24; ++i) base[i] = (i - 7.5f) * 0.25f;  // exact in fp16 and fp32

  HostTensor f4 = read_npy(path("f4.npy"));
  EXPECT_EQ(f4.dtype, DType::fp32);
  EXPECT_EQ(f4.shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(f4.to_float(), base);

  HostTensor f2 = read_npy(path("f2.npy"));
  EXPECT_EQ(f2.dtype, DType::fp16);
  EXPECT_EQ(f2.to_float(), base);

  HostTensor f8 = read_npy(path("f8.npy"));  // narrowed to fp32 on read
  EXPECT_EQ(f8.dtype, DType::fp32);
  EXPECT_EQ(f8.to_float(),
            (std::vector<float>{static_cast<float>(1.0 / 3), -2.5f, static_cast<float>(1e-3)}));

  HostTensor i4 = read_npy(path("i4.npy"));
  EXPECT_EQ(i4.dtype, DType::int32);
  const int32_t want_i4[4] = {-7, 0, std::numeric_limits<int32_t>::max(),
                              std::numeric_limits<int32_t>::min()};
  ASSERT_EQ(i4.data.size(), sizeof want_i4);
  EXPECT_EQ(std::memcmp(i4.data.data(), want_i4, sizeof want_i4), 0);

  HostTensor i8 = read_npy(path("i8.npy"));
  EXPECT_EQ(i8.dtype, DType::int32);
  const int32_t want_i8[3] = {5, -6, std::numeric_limits<int32_t>::max()};
  ASSERT_EQ(i8.data.size(), sizeof want_i8);
  EXPECT_EQ(std::memcmp(i8.data.data(), want_i8, sizeof want_i8), 0);

  HostTensor u1 = read_npy(path("u1.npy"));
  EXPECT_EQ(u1.dtype, DType::uint8);
  EXPECT_EQ(u1.data, (std::vector<uint8_t>{250, 251, 252, 253, 254, 255}));

  HostTensor sc = read_npy(path("scalar.npy"));
  EXPECT_TRUE(sc.shape.empty());
  EXPECT_EQ(sc.to_float(), std::vector<float>{3.25f});

  for (const char* v : {"v2.npy", "v3.npy"}) {
    std::string raw = read_bytes(v);
    ASSERT_GE(raw.size(), 8u);
    EXPECT_EQ(raw[6], v[1] - '0') << "numpy wrote another version";
    EXPECT_EQ(read_npy(path(v)).to_float(), base) << v;
  }
}

TEST_F(NpyTest, NumpyReadsOurFiles) {
  // numpy checks the files after they are written: its absence shows as a skip there.
  const uint16_t h[3] = {0x3c00, 0xc100, 0x3555};  // 1, -2.5, 0.333251953125
  const int32_t i[3] = {-5, 0, 2000000000};
  const uint8_t u[3] = {0, 128, 255};
  write_npy(path("f4.npy"), HostTensor::from_float({3, 1}, DType::fp32, {0.5f, -1e-7f, 3e8f}));
  write_npy(path("f2.npy"), raw_tensor({3}, DType::fp16, h));
  write_npy(path("i4.npy"), raw_tensor({1, 3}, DType::int32, i));
  write_npy(path("u1.npy"), raw_tensor({3}, DType::uint8, u));
  write_npy(path("bf.npy"), HostTensor::from_float({2}, DType::bf16, {1.0f + 0x1p-7f, -3.0f}));
  write_npy(path("sc.npy"), HostTensor::from_float({}, DType::fp32, {7.0f}));
  TRNSIM_REQUIRE_PYTHON(numpy_script(R"(
import os
def load(n):
    return np.load(os.path.join(d, n))
def check(n, want, dtype, shape):
    a = load(n)
    ok = a.dtype == np.dtype(dtype) and a.shape == shape and np.array_equal(a, np.array(want, dtype=dtype).reshape(shape))
    if not ok:
        print('mismatch', n, a.dtype, a.shape, a)
        sys.exit(1)
check('f4.npy', [0.5, -1e-7, 3e8], '<f4', (3, 1))
check('f2.npy', [1, -2.5, 0.333251953125], '<f2', (3,))
check('i4.npy', [-5, 0, 2000000000], '<i4', (1, 3))
check('u1.npy', [0, 128, 255], 'u1', (3,))
check('bf.npy', [1 + 2**-7, -3], '<f4', (2,))
check('sc.npy', 7.0, '<f4', ())
)"));
}

TEST_F(NpyTest, NumpyFortranOrderIsRejected) {
  TRNSIM_REQUIRE_PYTHON(
      numpy_script("np.save(d + '/fo.npy', np.asfortranarray(np.ones((3, 2), 'f4')))\n"));
  expect_error("fo.npy", "fortran_order");
}

// ---- malformed files: each names the file and the problem -------------------------

const char kGoodDict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";

TEST_F(NpyTest, MalformedBadMagic) {
  std::string s = make_npy(kGoodDict, floats_payload({1, 2}));
  s[1] = 'X';
  write_bytes("m.npy", s);
  expect_error("m.npy", "bad magic");
  write_bytes("empty.npy", "");
  expect_error("empty.npy", "bad magic");
}

TEST_F(NpyTest, MalformedMissingFile) {
  expect_error("nope.npy", "cannot open");
}

TEST_F(NpyTest, MalformedUnsupportedVersion) {
  std::string s = make_npy(kGoodDict, floats_payload({1, 2}));
  s[6] = 4;
  write_bytes("m.npy", s);
  expect_error("m.npy", "unsupported .npy format version 4.0");
}

TEST_F(NpyTest, MalformedTruncatedHeader) {
  const std::string s = make_npy(kGoodDict, floats_payload({1, 2}));
  write_bytes("a.npy", s.substr(0, 7));  // magic only, no version
  expect_error("a.npy", "truncated header");
  write_bytes("b.npy", s.substr(0, 9));  // half of the length field
  expect_error("b.npy", "truncated header");
  // The 57-character dict pads to a 118-byte header (10 + 118 = 128); cutting the
  // file at 40 bytes leaves 30 of them.
  write_bytes("c.npy", s.substr(0, 40));
  expect_error("c.npy", "truncated header: header length is 118 bytes but only 30 follow");
}

TEST_F(NpyTest, MalformedBadDict) {
  const std::string payload = floats_payload({1, 2});
  write_bytes("a.npy", make_npy("not a dict", payload));
  expect_error("a.npy", "bad header dict");
  write_bytes("b.npy", make_npy("{'descr': '<f4', 'shape': (2,), }", payload));
  expect_error("b.npy", "missing key 'fortran_order'");
  write_bytes("c.npy", make_npy("{'descr': '<f4', 'fortran_order': False}", payload));
  expect_error("c.npy", "missing key 'shape'");
  write_bytes("d.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': 2, }", payload));
  expect_error("d.npy", "bad header dict");
  write_bytes("e.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
                                "'extra': 1}",
                                payload));
  expect_error("e.npy", "bad header dict");
  write_bytes("f.npy",
              make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", payload));
  expect_error("f.npy", "bad header dict");
  write_bytes("g.npy",
              make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", payload));
  expect_error("g.npy", "expected '}'");
  write_bytes("h.npy", make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
                                payload));
  expect_error("h.npy", "bad header dict");
}

TEST_F(NpyTest, MalformedDataShorterThanShape) {
  write_bytes("m.npy", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                floats_payload({1, 2, 3, 4, 5})));
  // 2*3 fp32 = 24 bytes needed, 20 present.
  expect_error("m.npy", "data is 20 bytes but shape [2,3] of '<f4' needs 24");
}

TEST_F(NpyTest, MalformedTrailingData) {
  write_bytes("m.npy", make_npy(kGoodDict, floats_payload({1, 2, 3})));
  expect_error("m.npy", "4 more than shape [2]");
}

TEST_F(NpyTest, MalformedUnsupportedDtype) {
  write_bytes("m.npy", make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                                std::string(8, '\0')));
  expect_error("m.npy", "unsupported dtype '<c8'");
  write_bytes("b.npy", make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }",
                                std::string(1, '\1')));
  expect_error("b.npy", "unsupported dtype '|b1'");
}

TEST_F(NpyTest, MalformedBigEndian) {
  write_bytes("m.npy", make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                                floats_payload({1, 2})));
  expect_error("m.npy", "big-endian dtype '>f4'");
}

TEST_F(NpyTest, MalformedFortranOrder) {
  write_bytes("m.npy", make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
                                floats_payload({1, 2})));
  expect_error("m.npy", "fortran_order=True");
}

TEST_F(NpyTest, MalformedInt64OutOfRange) {
  const int64_t v[2] = {1, int64_t{1} << 40};
  std::string payload(16, '\0');
  std::memcpy(payload.data(), v, 16);
  write_bytes("m.npy",
              make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", payload));
  expect_error("m.npy", "int64 element 1 = 1099511627776 does not fit in int32");
}

}  // namespace
}  // namespace trnsim::runtime
