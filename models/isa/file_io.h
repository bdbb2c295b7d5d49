// Whole-file reads for every loader (programs, assembly, configs, ONNX models and
// tensors, .npy inputs): one place that tells a missing file, a directory and a read
// error apart, so each loader's error names the file and says which it was.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::isa {

// Reads all of `path` into `out` (a regular file in one read, else as a stream, e.g.
// a pipe). Returns "" on success, else why not in strerror's words ("No such file or
// directory", "Is a directory", "Permission denied"); callers prefix the file and
// what they could not do.
std::string read_file(const std::string& path, std::string& out);
std::string read_file(const std::string& path, std::vector<uint8_t>& out);

// True when `path` ends in `ext` (e.g. ".onnx"), ignoring ASCII case: how the
// command line tells its input kinds apart.
bool has_extension(const std::string& path, std::string_view ext);

}  // namespace trnsim::isa
