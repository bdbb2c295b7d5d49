#include "models/isa/file_io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace trnsim::isa {

namespace {

template <typename Buf>
std::string read_into(const std::string& path, Buf& out) {
  out.clear();
  std::error_code ec;
  // An ifstream opens a directory and then reads garbage sizes: refuse it first.
  if (std::filesystem::is_directory(path, ec)) return std::strerror(EISDIR);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::strerror(errno ? errno : ENOENT);
  const bool regular = std::filesystem::is_regular_file(path, ec);
  if (regular) {
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    if (size < 0) return "cannot tell its size";
    f.seekg(0, std::ios::beg);
    out.resize(static_cast<size_t>(size));
    f.read(reinterpret_cast<char*>(out.data()), size);
    if (f.gcount() != size) return "read error (the file shrank while being read?)";
  } else {
    out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  if (f.bad()) return "read error";
  return "";
}

}  // namespace

std::string read_file(const std::string& path, std::string& out) {
  return read_into(path, out);
}
std::string read_file(const std::string& path, std::vector<uint8_t>& out) {
  return read_into(path, out);
}

bool has_extension(const std::string& path, std::string_view ext) {
  if (path.size() < ext.size()) return false;
  const std::string_view tail = std::string_view(path).substr(path.size() - ext.size());
  return std::equal(tail.begin(), tail.end(), ext.begin(), ext.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  });
}

}  // namespace trnsim::isa
