// Units: parsing quantities with units, the error messages for bad ones, and
// formatting back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/units.h"

using namespace trnsim::platform;

namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UnitError& e) {
    return e.what();
  }
  return "<no error>";
}

struct Good {
  const char* text;
  double value;
};

struct Bad {
  const char* text;
  std::vector<const char*> message_has;  // substrings the message must contain
};

}  // namespace

TEST(Units, FrequencyGood) {
  const Good cases[] = {
      {"2.8GHz", 2.8e9},    {"1.12GHz", 1.12e9}, {"960MHz", 960e6}, {"1GHz", 1e9},
      {" 2.4 GHz ", 2.4e9}, {"500kHz", 500e3},   {"1e9Hz", 1e9},    {"0.5THz", 0.5e12},
      {"+3Hz", 3},          {"0Hz", 0},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_DOUBLE_EQ(parse_frequency(c.text), c.value);
  }
}

TEST(Units, BandwidthGood) {
  const Good cases[] = {
      {"820GB/s", 820e9}, {"2.9TB/s", 2.9e12}, {"23GB/s", 23e9}, {"100 MB/s", 100e6},
      {"1KB/s", 1e3},     {"1kB/s", 1e3},      {"1KiB/s", 1024}, {"2GiB/s", 2.0 * (1 << 30)},
      {"17B/ns", 17e9},  // 17 bytes per ns = 17e9 bytes per second
      {"5B/s", 5},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_DOUBLE_EQ(parse_bandwidth(c.text), c.value);
  }
}

TEST(Units, SizeGood) {
  struct {
    const char* text;
    uint64_t bytes;
  } const cases[] = {
      {"24MiB", 24ull << 20},
      {"192KiB", 192ull << 10},
      {"96GiB", 96ull << 30},
      {"1TiB", 1ull << 40},
      {"64B", 64},
      {"0B", 0},
      {"2KB", 2000},
      {"2kB", 2000},
      {"3MB", 3000000},
      {"1GB", 1000000000},
      {"2TB", 2000000000000},
      {"1.5KiB", 1536},     // 1.5 * 1024
      {"0.25MiB", 262144},  // 2^20 / 4
      {"1e3B", 1000},
      {" 16 KiB", 16384},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(parse_size(c.text), c.bytes);
  }
}

TEST(Units, TimeGood) {
  const Good cases[] = {
      {"1.3us", 1.3e-6},  {"600ns", 600e-9},    {"1s", 1},  {"5ms", 5e-3},
      {"250ps", 250e-12}, {"2\xC2\xB5s", 2e-6}, {"0ns", 0}, {"1.5 us", 1.5e-6},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_DOUBLE_EQ(parse_time(c.text), c.value);
  }
}

TEST(Units, CountBoolRatioGood) {
  EXPECT_EQ(parse_count("128"), 128u);
  EXPECT_EQ(parse_count(" 0 "), 0u);
  EXPECT_EQ(parse_count("007"), 7u);
  EXPECT_EQ(parse_count("4294967296"), 4294967296ull);  // 2^32: range is the schema's job
  EXPECT_TRUE(parse_bool("true"));
  EXPECT_FALSE(parse_bool("false"));
  EXPECT_TRUE(parse_bool("True"));
  EXPECT_DOUBLE_EQ(parse_ratio("50%"), 0.5);
  EXPECT_DOUBLE_EQ(parse_ratio("100%"), 1.0);
  EXPECT_DOUBLE_EQ(parse_ratio("0.25"), 0.25);
  EXPECT_DOUBLE_EQ(parse_ratio("12.5 %"), 0.125);
}

TEST(Units, FrequencyBad) {
  const Bad cases[] = {
      {"2.8", {"missing unit", "'2.8'", "GHz"}},
      {"2.8GB", {"unknown unit 'GB'", "frequency", "Hz, kHz, MHz, GHz"}},
      {"2.8 ghz", {"unknown unit 'ghz'", "GHz"}},
      {"GHz", {"not a number", "frequency"}},
      {"", {"empty value", "frequency"}},
      {"-1GHz", {"negative", "frequency"}},
      {"1e999GHz", {"out of range"}},
      {"2.8.1GHz", {"unknown unit '.1GHz'"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string msg = error_of([&] { parse_frequency(c.text); });
    for (const char* part : c.message_has) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

TEST(Units, BandwidthSizeTimeBad) {
  struct {
    double (*parse)(std::string_view);
    Bad bad;
  } const cases[] = {
      {parse_bandwidth, {"820GB", {"unknown unit 'GB'", "B/s", "GB/s"}}},
      {parse_bandwidth, {"820", {"missing unit", "bandwidth", "TB/s"}}},
      {parse_bandwidth, {"8Gb/s", {"unknown unit 'Gb/s'"}}},
      {[](std::string_view s) { return static_cast<double>(parse_size(s)); },
       {"24", {"missing unit", "size", "KiB", "MiB"}}},
      {[](std::string_view s) { return static_cast<double>(parse_size(s)); },
       {"24Mi", {"unknown unit 'Mi'", "MiB"}}},
      {[](std::string_view s) { return static_cast<double>(parse_size(s)); },
       {"24MiB/s", {"unknown unit 'MiB/s'", "size"}}},
      {[](std::string_view s) { return static_cast<double>(parse_size(s)); },
       {"0.5B", {"not a whole number of bytes"}}},
      {[](std::string_view s) { return static_cast<double>(parse_size(s)); },
       {"99999999TiB", {"too large"}}},  // ~1e8 * 2^40 > 2^64
      {parse_time, {"1.3", {"missing unit", "time", "us", "ns"}}},
      {parse_time, {"5min", {"unknown unit 'min'", "ms"}}},
      {parse_time, {"-5ns", {"negative"}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.bad.text);
    const std::string msg = error_of([&] { c.parse(c.bad.text); });
    for (const char* part : c.bad.message_has) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

TEST(Units, CountBoolRatioBad) {
  const Bad counts[] = {
      {"64cycles", {"plain integer", "'64cycles'"}},
      {"1.5", {"plain integer"}},
      {"1e3", {"plain integer"}},
      {"abc", {"not a number"}},
      {"-3", {"negative"}},
      {"99999999999999999999999", {"too large"}},
  };
  for (const auto& c : counts) {
    SCOPED_TRACE(c.text);
    const std::string msg = error_of([&] { parse_count(c.text); });
    for (const char* part : c.message_has) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
  for (const char* b : {"yes", "1", "", "tru"}) {
    SCOPED_TRACE(b);
    const std::string msg = error_of([&] { parse_bool(b); });
    EXPECT_NE(msg.find("true or false"), std::string::npos) << msg;
  }
  const std::string msg = error_of([] { parse_ratio("50 percent"); });
  EXPECT_NE(msg.find("unknown unit 'percent'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("50%"), std::string::npos) << msg;
}

TEST(Units, Format) {
  EXPECT_EQ(format_frequency(2.4e9), "2.4GHz");
  EXPECT_EQ(format_frequency(1.12e9), "1.12GHz");
  EXPECT_EQ(format_frequency(0.96e9), "960MHz");
  EXPECT_EQ(format_frequency(0), "0Hz");
  EXPECT_EQ(format_bandwidth(2.9e12), "2.9TB/s");
  EXPECT_EQ(format_bandwidth(820e9), "820GB/s");
  EXPECT_EQ(format_bandwidth(23e9), "23GB/s");
  EXPECT_EQ(format_size(24ull << 20), "24MiB");
  EXPECT_EQ(format_size(192ull << 10), "192KiB");
  EXPECT_EQ(format_size(96ull << 30), "96GiB");
  EXPECT_EQ(format_size(1536), "1.5KiB");
  EXPECT_EQ(format_size(2000), "2kB");
  EXPECT_EQ(format_size(1001), "1001B");
  EXPECT_EQ(format_size(0), "0B");
  EXPECT_EQ(format_time(1.3e-6), "1.3us");
  EXPECT_EQ(format_time(64e-9), "64ns");
  EXPECT_EQ(format_time(2.5e-3), "2.5ms");
  EXPECT_EQ(format_time(1), "1s");
  EXPECT_EQ(format_time(0), "0ns");
  EXPECT_EQ(format_ratio(0.5), "50%");
  EXPECT_EQ(format_bool(true), "true");
  EXPECT_EQ(format_bool(false), "false");
}

TEST(Units, FormatRoundTrips) {
  for (double hz : {2.8e9, 1.12e9, 0.96e9, 1.4e9, 1e9, 123456789.0, 2.5e3})
    EXPECT_DOUBLE_EQ(parse_frequency(format_frequency(hz)), hz) << hz;
  for (double bps : {820e9, 2.9e12, 4.9e12, 17e9, 23e9, 33e9, 1.5e6})
    EXPECT_DOUBLE_EQ(parse_bandwidth(format_bandwidth(bps)), bps) << bps;
  for (uint64_t b :
       {24ull << 20, 28ull << 20, 224ull << 10, 144ull << 30, 1536ull, 1001ull, 123456789ull, 0ull})
    EXPECT_EQ(parse_size(format_size(b)), b) << b;
  for (double s : {1.3e-6, 600e-9, 64e-9, 11e-9, 0.0, 1.0, 3.25e-3, 7e-12})
    EXPECT_DOUBLE_EQ(parse_time(format_time(s)), s) << s;
  for (double r : {0.5, 0.9, 1.0, 0.125}) EXPECT_DOUBLE_EQ(parse_ratio(format_ratio(r)), r) << r;
}

TEST(Units, TypeNamesAndHints) {
  EXPECT_EQ(value_type_name(ValueType::frequency), "frequency");
  EXPECT_EQ(value_type_name(ValueType::boolean), "bool");
  EXPECT_EQ(value_type_name(ValueType::cycles), "cycles");
  // Every example parses as its own type.
  EXPECT_NO_THROW(parse_frequency(example_value(ValueType::frequency)));
  EXPECT_NO_THROW(parse_bandwidth(example_value(ValueType::bandwidth)));
  EXPECT_NO_THROW(parse_size(example_value(ValueType::size)));
  EXPECT_NO_THROW(parse_time(example_value(ValueType::time)));
  EXPECT_NO_THROW(parse_count(example_value(ValueType::count)));
  EXPECT_NO_THROW(parse_count(example_value(ValueType::cycles)));
  EXPECT_NO_THROW(parse_bool(example_value(ValueType::boolean)));
  EXPECT_NO_THROW(parse_ratio(example_value(ValueType::ratio)));
}
