#include "runtime/onnx_program.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "compiler/compile.h"
#include "runtime/target_from_config.h"

namespace trnsim::runtime {

bool is_onnx_path(const std::string& path) {
  if (path.size() < 5) return false;
  std::string ext = path.substr(path.size() - 5);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".onnx";
}

isa::Program compile_model(const std::string& path, const platform::platform_config& cfg,
                           const std::string& precision,
                           const std::vector<std::string>& print_after, std::ostream& dumps) {
  compiler::CompileOnnxOptions o;
  const auto p = gpass::parse_precision(precision);
  if (!p)
    throw std::invalid_argument("--precision: '" + precision + "' is not one of bf16, fp32, fp8");
  o.precision = *p;
  o.target = target_from_config(cfg);
  o.print_after = print_after;
  o.dump = [&dumps](const std::string& pass, const std::string& text) {
    dumps << "# IR after " << pass << "\n" << text;
  };
  return compiler::compile_onnx(path, o).program;
}

}  // namespace trnsim::runtime
