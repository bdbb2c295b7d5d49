#include "runtime/tile_program.h"

#include <stdexcept>

#include "compiler/codegen/codegen.h"
#include "compiler/tile/ir.h"
#include "models/isa/file_io.h"
#include "models/isa/validate.h"
#include "runtime/target_from_config.h"

namespace trnsim::runtime {

bool is_tile_path(const std::string& path) {
  return isa::has_extension(path, ".tir");
}

TileProgram compile_tile_file(const std::string& path, const platform::platform_config& cfg,
                              const std::vector<std::string>& print_after, std::ostream& dumps) {
  std::string text;
  if (std::string why = isa::read_file(path, text); !why.empty())
    throw std::runtime_error(path + ": cannot read the kernel: " + why);
  codegen::CompileOptions o;
  o.dump_after = print_after;
  o.dump = [&dumps](const std::string& pass, const std::string& ir) {
    dumps << "# IR after " << pass << "\n" << ir;
  };
  try {
    codegen::CompileResult r =
        codegen::compile(tile::parse(text, path), target_from_config(cfg), o);
    return {std::move(r.program), std::move(r.stats)};
  } catch (const tile::KernelError& e) {
    const std::string what = e.what();
    // Parse errors already start with the file; pass errors name the kernel.
    throw tile::KernelError(what.rfind(path, 0) == 0 ? what : path + ": " + what);
  } catch (const isa::ValidationError& e) {
    throw std::runtime_error(path + ": the compiled kernel breaks a hardware rule: " + e.what());
  }
}

}  // namespace trnsim::runtime
