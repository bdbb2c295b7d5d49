// trnsim: the command line, a thin face over the runtime API.
//   trnsim run PROGRAM -c CONFIG [--set k=v]... [--input NAME=FILE.npy]...
//              [--random-inputs[=SEED]] [--output-dir DIR] [--stats FILE.json]
//              [--stats-text FILE] [--trace FILE.json] [--vcd FILE.vcd]
//              [--no-functional] [--core N]
//              [--ranks R [--rank-program R=FILE]...] [--tp N] [--dp D]   (runtime/spmd.h)
//   trnsim compile MODEL.onnx|KERNEL.tir -o OUT.tbin|.tasm [-c CONFIG] [--precision P]
//   [--print-after PASS] trnsim asm IN.tasm -o OUT.tbin      trnsim disasm IN.tbin [-o OUT.tasm]
//   trnsim info [-c CONFIG] [--set k=v]... [--keys]
//   trnsim collbench all_reduce|all_gather|reduce_scatter [-c CONFIG] [--ranks N] [--sizes A:B]
//   trnsim sweep|plot|fuzz ARGS   (exec: python3 -m trnsim.sweep|plot|fuzz ARGS)
// Every error names what is wrong and exits non-zero (2: usage, 1: everything else).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/compile.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/graph_passes/pass.h"
#include "compiler/interp/interpreter.h"
#include "compiler/lower/lower.h"
#include "compiler/reuse.h"
#include "compiler/timings.h"
#include "models/common/stats.h"
#include "models/isa/assembler.h"
#include "models/isa/binary.h"
#include "platform/config.h"
#include "runtime/collbench.h"
#include "runtime/constants.h"
#include "runtime/data_parallel.h"
#include "runtime/device.h"
#include "runtime/fallback.h"
#include "runtime/host_memory.h"
#include "runtime/onnx_program.h"
#include "runtime/rank_programs.h"
#include "runtime/report.h"
#include "runtime/spmd.h"
#include "runtime/symmetry.h"
#include "runtime/target_from_config.h"
#include "runtime/tile_program.h"
#include "runtime/tp_io.h"
#include "runtime/validate.h"

namespace {

using namespace trnsim;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* kMainHelp =
    "usage: trnsim <command> [options]\n"
    "commands:\n"
    "  run PROGRAM     run an assembly (.tasm) or binary (.tbin) program, an ONNX\n"
    "                  model (.onnx) or a tile-IR kernel (.tir), compiled first\n"
    "  compile MODEL   compile an ONNX model or a .tir kernel to a program\n"
    "  asm IN.tasm     assemble to the binary form\n"
    "  disasm IN.tbin  print a program as assembly\n"
    "  validate MODEL  compile, simulate and compare with the reference interpreter\n"
    "  info            print a platform config's resources and every config key\n"
    "  sweep SPEC      design-space sweep of a YAML spec (Python: trnsim.sweep)\n"
    "  plot OUTDIR     plots of a sweep's results (Python: trnsim.plot)\n"
    "  fuzz            differential fuzzing of the compiler (Python: trnsim.fuzz)\n"
    "  train SCRIPT.py training steps of a model a Python file defines (Python:\n"
    "                  trnsim.train; 'trnsim train --help')\n"
    "  collbench COLL  time a collective over the configured chips and nodes\n"
    "Run 'trnsim <command> --help' for its options.\n";

const char* kRunHelp =
    "usage: trnsim run PROGRAM [options]\n"
    "  -c, --config NAME|PATH   preset (trn1, trn2, trn3, tiny) or YAML file [trn2]\n"
    "  --set KEY=VALUE          override a config key (repeatable)\n"
    "  --input NAME=FILE.npy    bind an input tensor (repeatable). For .onnx, NAME is the\n"
    "                           input's name as the model spells it (0, input.1,\n"
    "                           onnx::MatMul_0) or its program tensor name (t_0,\n"
    "                           onnx__MatMul_0); names are checked before compiling\n"
    "  --input-shape NAME=D0xD1...  concrete shape of an ONNX input with symbolic dims\n"
    "                           (e.g. x=8x128; repeatable)\n"
    "  --random-inputs[=SEED]   fill inputs not given with seeded uniform [-1,1) values\n"
    "                           (ONNX integer inputs: integers in [0,10), bools 0/1;\n"
    "                           none when a --no-functional run reads no data). Without\n"
    "                           it every input must be given (the error lists them)\n"
    "  --output-dir DIR         write each output as DIR/TENSOR.npy (file-safe program\n"
    "                           tensor name; ONNX scalars as 0-d arrays) and\n"
    "                           DIR/outputs.json: output name -> {file, shape, dtype}\n"
    "  --stats FILE.json        write the stats tree as JSON\n"
    "  --stats-text FILE        write the stats tree as text\n"
    "  --trace FILE.json        write a Chrome trace (open in ui.perfetto.dev): one track\n"
    "                           per engine and DMA queue, one slice per instruction\n"
    "  --vcd FILE.vcd           write the semaphore values as a VCD waveform\n"
    "  --core N                 run on core N (0 .. cores-1 of the config) [0]\n"
    "  --precision P            for .onnx: matmul operand type bf16|fp32|fp8 [bf16]\n"
    "  --print-after PASS       for .onnx/.tir: print the IR after a graph/tile pass (or *)\n"
    "  --no-functional          timing only: no data moved or computed\n"
    "  --threads N              host threads of a functional run [the host's cores,\n"
    "                           or TRNSIM_THREADS]; any N gives the same results\n"
    "  --no-fallback            for .onnx: refuse nodes the chip cannot run instead of\n"
    "                           running them on the host (reference interpreter)\n"
    "  --no-keep-on-chip        for .onnx: every intermediate goes through HBM (no\n"
    "                           keep_on_chip pass: SBUF forwarding with spills)\n"
    "  --no-reuse               for .onnx: compile every repeated block on its own\n"
    "                           (default: the first is compiled once and reused)\n"
    "  --check-races            happens-before race detection: an access that conflicts\n"
    "                           with another engine's or DMA queue's access not ordered\n"
    "                           before it by semaphores is reported with both instructions\n"
    "  --poison[=0xNN]          SBUF, PSUM and HBM scratch/outputs start as NN [0xff: NaN];\n"
    "                           reads of never-written bytes are reported\n"
    "  --races=error|warn       findings of --check-races/--poison: exit 1 [error] or only\n"
    "                           report [warn]\n"
    "  --drop-sync N            sync mutation: remove semaphore wait N (0-based, in\n"
    "                           disassembly order) before running; see --check-races\n"
    "  --ranks R                SPMD: run the program on R ranks (rank r on core\n"
    "                           r % chip.cores of chip r / chip.cores), its collectives\n"
    "                           timed over the network: section. `{rank}` in an --input\n"
    "                           file name is the rank; --output-dir writes DIR/rankR/\n"
    "  --rank-program R=FILE    with --ranks: rank R runs FILE instead (MPMD)\n"
    "  --tp N                   for .onnx: tensor parallel over N ranks (--ranks N):\n"
    "                           MatMul pairs split Megatron-style, one all_reduce each\n"
    "  --dp D                   for .onnx: D data-parallel replicas (ranks = tp x D, rank\n"
    "                           d x tp + t); `{replica}` in an --input file name is d\n"
    "                           Each replica compiles for batch / D (dim 0 of every\n"
    "                           input); a whole-batch --input file is split by rows\n"
    "  --comm-profile           with --ranks: record instruction intervals so the report\n"
    "                           says how much of each rank's communication overlapped\n"
    "                           its compute (--trace does too)\n"
    "  --no-fold                with --ranks --no-functional: simulate every rank even\n"
    "                           when all are alike (runtime/symmetry.h)\n";

const char* kValidateHelp =
    "usage: trnsim validate MODEL.onnx [options]\n"
    "  compiles and simulates the model, runs the reference interpreter on the same\n"
    "  inputs, and prints per output the max abs and rel error; exit 0 when every\n"
    "  output is within tolerance, 1 otherwise. The reference emulates the precision\n"
    "  (matmul operands rounded as the compiler casts them); the error against the\n"
    "  plain fp32 model is shown beside it. The reference runs the model as imported,\n"
    "  not the compiler's rewritten graph.\n"
    "  Inputs as for run: --input NAME=FILE.npy for each (ONNX or tensor name), or\n"
    "  --random-inputs[=SEED] for those not given.\n"
    "  --rtol X, --atol X       tolerance [fp32: 1e-4, 1e-5; bf16: 1e-2, 1e-2; fp8: 5e-2]\n"
    "  --reference emulated|fp32  pass/fail against the precision-emulating reference\n"
    "                           [emulated] or the plain fp32 model (how far the chosen\n"
    "                           precision is from fp32)\n"
    "  Races and poisoned reads are checked (see 'trnsim run --help'); a finding fails\n"
    "  the validation. --no-check-races and --no-poison turn the checks off.\n"
    "  and every option of 'trnsim run' (-c, --set, --input, --random-inputs,\n"
    "  --precision, --no-fallback, --no-keep-on-chip, --stats, --trace, --output-dir,\n"
    "  --core, --poison=0xNN, --races)\n";

const char* kInfoHelp =
    "usage: trnsim info [-c CONFIG] [--set KEY=VALUE]... | --keys [--json]\n"
    "  prints the platform's resources and peak figures, then every config key;\n"
    "  --keys prints the schema instead: each key's type, unit, default, valid range,\n"
    "  readers (sim: the simulator's timing depends on it; compiler: the compiled\n"
    "  program does), description and source; --json as one JSON object, with the\n"
    "  units each value type accepts\n";

// Pulls "--flag value" or "--flag=value" from args.
bool take_value(std::vector<std::string>& args, size_t& i, const std::string& flag,
                const std::string& alias, std::string& out) {
  const std::string& a = args[i];
  for (const std::string& f : {flag, alias}) {
    if (f.empty()) continue;
    if (a == f) {
      if (i + 1 >= args.size()) throw UsageError(f + " needs a value");
      out = args[++i];
      return true;
    }
    if (a.rfind(f + "=", 0) == 0) {
      out = a.substr(f.size() + 1);
      return true;
    }
  }
  return false;
}

std::string file_safe(const std::string& name) {
  std::string s;
  for (char c : name)
    s +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return s.empty() ? "_" : s;
}

// A file the command writes when it ends, checked before it starts (a simulation or
// compile can take hours): an existing file must be writable (a device such as
// /dev/full too: its write errors are reported when they happen); otherwise its
// directory must exist and be writable. The path must not be a directory.
void check_output_file(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw std::runtime_error(option + " " + path + ": is a directory, not a file");
  if (fs::exists(path, ec)) {
    if (access(path.c_str(), W_OK) != 0)
      throw std::runtime_error(option + " " + path + ": is not writable");
    return;
  }
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    throw std::runtime_error(option + " " + path + ": directory " + dir.string() +
                             " does not exist");
  if (access(dir.c_str(), W_OK) != 0)
    throw std::runtime_error(option + " " + path + ": directory " + dir.string() +
                             " is not writable");
}

long long parse_index(const std::string& flag, const std::string& v) {
  size_t used = 0;
  long long n = -1;
  try {
    n = std::stoll(v, &used);
  } catch (...) {
  }
  if (n < 0 || used != v.size())
    throw UsageError(flag + ": '" + v + "' is not an index (0, 1, ...)");
  return n;
}

// --drop-sync N: removes wait N of `p` and says which; N past the program's waits
// is a usage error naming the option.
std::string drop_sync_wait(isa::Program& p, long long n) {
  const size_t waits = p.wait_count();
  if (n < 0 || size_t(n) >= waits)
    throw UsageError(
        "--drop-sync " + std::to_string(n) + ": program '" + p.name + "' has " +
        (waits ? std::to_string(waits) + " semaphore waits (0.." + std::to_string(waits - 1) + ")"
               : std::string("no semaphore waits")));
  return isa::drop_wait(p, size_t(n));
}

// numpy's name for the dtype write_npy stores `t` as (bf16/fp8 widen to float32).
std::string json_shape(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// --input-shape NAME=D0xD1... (or D0,D1,...): a concrete shape for an ONNX input whose
// declared shape has symbolic dims.
void take_input_shape(const std::string& v, frontend::ImportOptions& o) {
  const auto eq = v.find('=');
  const std::string usage = "--input-shape expects NAME=D0xD1... (e.g. x=8x128), got '" + v + "'";
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) throw UsageError(usage);
  const std::string name = v.substr(0, eq);
  if (o.input_shapes.count(name)) throw UsageError("--input-shape " + name + " given twice");
  ir::Shape shape;
  std::string dims = v.substr(eq + 1) + "x";
  size_t start = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 'x' && dims[i] != ',') continue;
    const std::string d = dims.substr(start, i - start);
    start = i + 1;
    if (d.empty() || d.size() > 12 || d.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(d) < 1)
      throw UsageError(usage + ": '" + d + "' is not a positive dimension");
    shape.push_back(std::stoll(d));
  }
  o.input_shapes[name] = shape;
}

// The options of `trnsim run` / `trnsim validate`.
struct RunArgs {
  bool validate = false;
  double rtol = -1, atol = -1;
  std::string program_path, config = "trn2", out_dir, stats_path, stats_text_path;
  std::string trace_path, vcd_path, precision = "bf16";
  std::vector<std::string> sets, print_after;
  std::vector<std::pair<std::string, std::string>> inputs;
  frontend::ImportOptions import;
  bool functional = true, random_inputs = false, fallback = true, keep_on_chip = true;
  bool check_races = false, poison = false, races_warn = false;
  bool reference_fp32 = false;  // validate --reference fp32
  long long drop_sync = -1;
  uint8_t poison_byte = 0xff;
  uint64_t seed = 0;
  long threads = -1;  // --threads: -1 unset
  long long core = 0;
  long long ranks = 0;  // SPMD: run on this many ranks (runtime/spmd.h)
  long long tp = 0;     // ONNX + --ranks: tensor-parallel split (compiler/graph_passes)
  long long dp = 0;     // ONNX + --ranks: data-parallel replicas
  std::map<long long, std::string> rank_programs;  // --rank-program R=FILE
  bool comm_profile = false;                       // --comm-profile
  bool fold = true;  // SPMD timing-only: one rank per symmetry class (runtime/symmetry.h)
};

// validate's own options (--reference, --rtol, --atol, --no-check-races,
// --no-poison) at args[i]; false when args[i] is none of them.
bool take_validate_option(std::vector<std::string>& args, size_t& i, RunArgs& r) {
  const std::string& a = args[i];
  std::string v;
  if (take_value(args, i, "--reference", "", v)) {
    if (v != "emulated" && v != "fp32")
      throw UsageError("--reference: '" + v + "' is not emulated or fp32");
    r.reference_fp32 = v == "fp32";
  } else if (take_value(args, i, "--rtol", "", v) || take_value(args, i, "--atol", "", v)) {
    double x = -1;
    try {
      x = std::stod(v);
    } catch (...) {
    }
    if (!(x >= 0))
      throw UsageError(std::string(a.rfind("--rtol", 0) == 0 ? "--rtol" : "--atol") + ": '" + v +
                       "' is not a non-negative number");
    (a.rfind("--rtol", 0) == 0 ? r.rtol : r.atol) = x;
  } else if (a == "--no-check-races") {
    r.check_races = false;
  } else if (a == "--no-poison") {
    r.poison = false;
  } else {
    return false;
  }
  return true;
}

// The access-check and sync-mutation options (--check-races, --poison[=0xNN],
// --races, --drop-sync) at args[i]; false when args[i] is none of them.
bool take_check_option(std::vector<std::string>& args, size_t& i, RunArgs& r) {
  const std::string& a = args[i];
  std::string v;
  if (a == "--check-races") {
    r.check_races = true;
  } else if (a == "--poison") {
    r.poison = true;
  } else if (take_value(args, i, "--poison", "", v)) {
    r.poison = true;
    unsigned long b = 256;
    try {
      size_t used = 0;
      b = std::stoul(v, &used, 0);
      if (used != v.size()) b = 256;
    } catch (...) {
    }
    if (b > 255) throw UsageError("--poison: '" + v + "' is not a byte value (e.g. 0xff)");
    r.poison_byte = uint8_t(b);
  } else if (take_value(args, i, "--drop-sync", "", v)) {
    r.drop_sync = parse_index("--drop-sync", v);
  } else if (take_value(args, i, "--races", "", v)) {
    if (v != "error" && v != "warn")
      throw UsageError("--races: '" + v + "' is not one of error, warn");
    r.races_warn = v == "warn";
  } else {
    return false;
  }
  return true;
}

// Parses run's (or validate's) arguments into `r`; false after printing --help.
bool parse_run_args(std::vector<std::string> args, bool validate, RunArgs& r) {
  r.validate = validate;
  r.check_races = r.poison = validate;
  std::string v;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::cout << (validate ? kValidateHelp : kRunHelp);
      return false;
    } else if (validate && take_validate_option(args, i, r)) {
    } else if (take_check_option(args, i, r)) {
    } else if (take_value(args, i, "--config", "-c", v)) {
      r.config = v;
    } else if (take_value(args, i, "--set", "", v)) {
      r.sets.push_back(v);
    } else if (take_value(args, i, "--input", "", v)) {
      auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw UsageError("--input expects NAME=FILE.npy, got '" + v + "'");
      r.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (take_value(args, i, "--input-shape", "", v)) {
      take_input_shape(v, r.import);
    } else if (a == "--random-inputs") {
      r.random_inputs = true;
    } else if (take_value(args, i, "--random-inputs", "", v)) {
      r.random_inputs = true;
      try {
        r.seed = std::stoull(v);
      } catch (...) {
        throw UsageError("--random-inputs: seed '" + v + "' is not a number");
      }
    } else if (take_value(args, i, "--output-dir", "-o", v)) {
      r.out_dir = v;
    } else if (take_value(args, i, "--stats", "", v)) {
      r.stats_path = v;
    } else if (take_value(args, i, "--stats-text", "", v)) {
      r.stats_text_path = v;
    } else if (take_value(args, i, "--trace", "", v)) {
      r.trace_path = v;
    } else if (take_value(args, i, "--vcd", "", v)) {
      r.vcd_path = v;
    } else if (take_value(args, i, "--precision", "", v)) {
      r.precision = v;
    } else if (take_value(args, i, "--print-after", "", v)) {
      r.print_after.push_back(v);
    } else if (take_value(args, i, "--core", "", v)) {
      r.core = parse_index("--core", v);
    } else if (take_value(args, i, "--rank-program", "", v)) {
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError("--rank-program expects R=FILE, got '" + v + "'");
      const long long k = parse_index("--rank-program", v.substr(0, eq));
      if (!r.rank_programs.emplace(k, v.substr(eq + 1)).second)
        throw UsageError("--rank-program " + std::to_string(k) + " given twice");
    } else if (take_value(args, i, "--dp", "", v)) {
      r.dp = parse_index("--dp", v);
      if (r.dp < 1) throw UsageError("--dp: must be at least 1");
    } else if (take_value(args, i, "--tp", "", v)) {
      r.tp = parse_index("--tp", v);
      if (r.tp < 1) throw UsageError("--tp: must be at least 1");
    } else if (take_value(args, i, "--ranks", "", v)) {
      r.ranks = parse_index("--ranks", v);
      if (r.ranks < 1) throw UsageError("--ranks: must be at least 1");
    } else if (a == "--comm-profile") {
      r.comm_profile = true;
    } else if (a == "--no-functional") {
      r.functional = false;
    } else if (a == "--no-fold") {
      r.fold = false;
    } else if (take_value(args, i, "--threads", "", v)) {
      r.threads = long(std::min(parse_index("--threads", v), 1024LL));
    } else if (a == "--no-fallback") {
      r.fallback = false;
    } else if (a == "--no-keep-on-chip") {
      r.keep_on_chip = false;
    } else if (a == "--no-reuse") {
      compiler::set_reuse_blocks(false);
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("run: unknown option '" + a + "'");
    } else if (r.program_path.empty()) {
      r.program_path = a;
    } else {
      throw UsageError("run: more than one program given ('" + r.program_path + "', '" + a + "')");
    }
  }
  return true;
}

// Checks what can be checked before loading anything: a program given (an ONNX
// model for validate) and every output file writable.
void check_run_args(const RunArgs& r) {
  if (r.program_path.empty()) throw UsageError("run: no program given\n" + std::string(kRunHelp));
  if (r.validate && !runtime::is_onnx_path(r.program_path))
    throw UsageError("validate: '" + r.program_path + "' is not an ONNX model (.onnx)");
  if (r.validate && !r.functional)
    throw UsageError("validate: --no-functional computes no outputs");
  for (const auto& [option, path] : {std::pair{"--stats", &r.stats_path},
                                     {"--stats-text", &r.stats_text_path},
                                     {"--trace", &r.trace_path},
                                     {"--vcd", &r.vcd_path}})
    if (!path->empty()) check_output_file(option, *path);
  if (!r.out_dir.empty() && std::filesystem::exists(r.out_dir) &&
      !std::filesystem::is_directory(r.out_dir))
    throw std::runtime_error("--output-dir " + r.out_dir + ": exists and is not a directory");
}

// The config whose `core` is core `core`'s type (chip.layout): what a program that
// runs there is compiled for.
platform::platform_config for_core(const platform::platform_config& cfg, uint32_t core) {
  platform::platform_config c = cfg;
  c.core = cfg.core_of(core);
  return c;
}

// Imports the ONNX model, binds --input files to its inputs (before compiling: a
// large model compiles for minutes) and compiles it; `reference` gets the model as
// imported when validating.
runtime::OnnxModel load_onnx_model(const RunArgs& r, const platform::platform_config& cfg,
                                   runtime::Launch& launch, std::optional<ir::Graph>& reference) {
  // By the ONNX name, else the program tensor name; every input is given unless
  // --random-inputs (or a timing-only run, which reads no data).
  ir::Graph imported = frontend::import_onnx_file(r.program_path, r.import);
  const std::vector<runtime::ModelIo> model_in = runtime::model_inputs(imported);
  for (const auto& [name, file] : r.inputs) {
    const runtime::ModelIo* in = runtime::find_input(model_in, name);
    if (!in)
      throw UsageError("--input " + name + ": " + r.program_path + " has no input '" + name +
                       "'; its inputs: " + runtime::describe_inputs(model_in));
    if (launch.inputs.count(in->tensor))
      throw UsageError("--input " + name + ": input '" + in->name + "' given twice");
    launch.inputs[in->tensor] = runtime::read_model_input(*in, file);
  }
  std::vector<runtime::ModelIo> missing;
  for (const runtime::ModelIo& in : model_in)
    if (!launch.inputs.count(in.tensor)) missing.push_back(in);
  if (!missing.empty() && r.functional && !r.random_inputs)
    throw UsageError("missing input(s) of " + r.program_path + ": " +
                     runtime::describe_inputs(missing) +
                     "; give each as --input NAME=FILE.npy, or --random-inputs[=SEED]");
  if (r.validate) reference = imported.clone();
  // Compiled for the type of the core it runs on (chip.layout).
  runtime::OnnxModel model = runtime::compile_onnx_graph(
      std::move(imported), r.program_path, for_core(cfg, launch.core), r.precision, r.print_after,
      std::cout, r.fallback, r.keep_on_chip);
  if (const std::string s = runtime::keep_on_chip_summary(model.compile_stats); !s.empty())
    std::cout << s << "\n";
  return model;
}

// Loads the program (compiling an ONNX model) with its --input files bound in
// `launch`, then applies --drop-sync.
runtime::OnnxModel load_run_model(const RunArgs& r, const platform::platform_config& cfg,
                                  runtime::Launch& launch, std::optional<ir::Graph>& reference) {
  const bool onnx = runtime::is_onnx_path(r.program_path);
  if (!onnx && !r.import.input_shapes.empty())
    throw UsageError("--input-shape: '" + r.program_path +
                     "' is a program, not an ONNX model; its shapes are fixed");
  // ONNX integer/bool inputs and outputs convert at the boundary (fp32 on the device).
  runtime::OnnxModel model;
  if (onnx) {
    model = load_onnx_model(r, cfg, launch, reference);
  } else {
    if (runtime::is_tile_path(r.program_path)) {
      runtime::TileProgram t = runtime::compile_tile_file(
          r.program_path, for_core(cfg, launch.core), r.print_after, std::cout);
      model.program = std::move(t.program);
      model.compile_stats = std::move(t.compile_stats);
    } else {
      if (!r.print_after.empty())
        throw UsageError("--print-after: '" + r.program_path +
                         "' is a compiled program; it applies to .onnx and .tir");
      model.program = isa::load_program(r.program_path, runtime::constants_to_load(r.functional));
    }
    for (const auto& [name, file] : r.inputs) {
      if (launch.inputs.count(name)) throw UsageError("--input " + name + " given twice");
      launch.inputs[name] = runtime::read_npy(file);
    }
  }
  if (r.drop_sync >= 0) {
    if (model.partitioned)
      throw UsageError("--drop-sync: the model runs partly on the host; add --no-fallback");
    const size_t waits = model.program.wait_count();
    const std::string gone = drop_sync_wait(model.program, r.drop_sync);
    std::cout << "drop-sync " << r.drop_sync << " of " << waits << ": removed " << gone << "\n";
  }
  return model;
}

// --random-inputs: seeded values for the inputs not given.
void fill_random_inputs(const RunArgs& r, const runtime::OnnxModel& model,
                        runtime::Launch& launch) {
  const isa::Program& prog = model.program;
  // Timing-only runs of a device program write no data, so random inputs would only
  // cost host memory and time (gigabytes for a large model); host-fallback segments
  // compute on the host and still need values, which do not change the timing.
  if (!(r.functional ? r.random_inputs : model.partitioned != nullptr)) return;
  if (r.functional) runtime::check_host_memory(prog);  // before allocating the inputs
  std::mt19937_64 rng(r.seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const auto& d : prog.tensors) {
    if (d.role != isa::TensorRole::input || launch.inputs.count(d.name)) continue;
    if (auto t = runtime::random_model_input(model, d, rng)) {
      launch.inputs[d.name] = std::move(*t);
      continue;
    }
    std::vector<float> vals(d.bytes() / isa::dtype_size(d.dtype));
    for (auto& x : vals) x = dist(rng);
    launch.inputs[d.name] = runtime::HostTensor::from_float(d.shape, d.dtype, vals);
  }
}

// The device options the run's flags ask for.
runtime::DeviceOptions run_device_options(const RunArgs& r) {
  runtime::DeviceOptions opts(r.functional);
  if (r.threads >= 0) opts.threads = unsigned(r.threads);
  opts.trace_path = r.trace_path;
  opts.vcd_path = r.vcd_path;
  // The flags add to what TRNSIM_CHECK (the test suite's switch) turned on.
  opts.check_races |= r.check_races;
  opts.poison |= r.poison;
  opts.poison_byte = r.poison_byte;
  opts.fail_on_findings = false;  // reported by cmd_run, exit 1 unless --races=warn
  return opts;
}

// The access checks' findings, then one line.
void print_checks(const runtime::RunReport& rep, const runtime::DeviceOptions& opts) {
  std::cout << rep.check_report << "checks: " << rep.races << " race(s)"
            << (opts.check_races ? "" : " (not checked)") << ", " << rep.poisoned_reads
            << " poisoned read(s)" << (opts.poison ? "" : " (not checked)") << "\n";
}

// validate: the simulated outputs against the reference interpreter on the model
// as imported; prints the comparison and the verdict. Returns the exit status
// (`status` is 1 already for findings of the checks).
int validate_outputs(const RunArgs& r, const platform::platform_config& cfg, const ir::Graph& g,
                     const runtime::Launch& launch,
                     const std::vector<runtime::HostTensor>& onnx_outputs,
                     const runtime::RunReport& rep, const runtime::DeviceOptions& opts,
                     int status) {
  double rtol = r.rtol, atol = r.atol, drtol, datol;
  runtime::default_tolerance(r.precision, &drtol, &datol);
  if (rtol < 0) rtol = drtol;
  if (atol < 0) atol = datol;
  // The model as imported, by the interpreter (compiler::reference_outputs).
  const std::map<std::string, std::string> io = lower::io_tensor_names(g);
  interp::TensorMap in;
  for (const ir::Value* v : g.inputs())
    in[v->name] = runtime::from_device(launch.inputs.at(io.at(v->name)), v->type);
  const bool emulate = r.precision != "fp32";
  const interp::TensorMap ref32 = interp::run(g, in);
  const interp::TensorMap ref =
      emulate ? compiler::reference_outputs(g, in, *graph_passes::parse_precision(r.precision))
              : ref32;
  const interp::TensorMap& judge = r.reference_fp32 ? ref32 : ref;
  std::vector<runtime::OutputCheck> checks;
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    const ir::Value* v = g.outputs()[k];
    const ir::Tensor got = runtime::from_device(onnx_outputs.at(k), v->type);
    checks.push_back(
        runtime::check_output(v->name, got, judge.at(v->name), ref32.at(v->name), rtol, atol));
  }
  std::cout << "validate " << r.program_path << " on " << cfg.name << " (precision " << r.precision
            << "; reference: the interpreter on the model as imported"
            << (emulate && !r.reference_fp32 ? ", emulating " + r.precision + " matmul operands"
                                             : ", fp32")
            << ")\n"
            << runtime::format_checks(checks, rtol, atol);
  size_t failed = 0;
  for (const auto& c : checks) failed += !c.pass();
  if (failed) status = 1;
  const bool findings = rep.races || rep.poisoned_reads;
  if (opts.check_races || opts.poison) print_checks(rep, opts);
  std::cout << "validate: " << (status ? "FAIL" : "PASS") << " (" << checks.size() - failed
            << " of " << checks.size() << " outputs within tolerance; "
            << (opts.check_races ? std::to_string(rep.races) : std::string("unchecked"))
            << " races; "
            << (opts.poison ? std::to_string(rep.poisoned_reads) : std::string("unchecked"))
            << " poisoned reads" << (findings && r.races_warn ? ", --races=warn" : "") << ")\n";
  return status;
}

// --output-dir: one .npy per output, named by its program tensor (file-safe), and
// outputs.json mapping each output's name (as the ONNX file spells it) to its file.
void write_output_dir(const std::string& out_dir, bool onnx, const runtime::OnnxModel& model,
                      const std::vector<runtime::HostTensor>& onnx_outputs,
                      const runtime::RunReport& rep) {
  std::filesystem::create_directories(out_dir);
  std::string json = "{";
  auto write = [&](const std::string& name, const std::string& tensor,
                   const std::vector<int64_t>& shape, const auto& write_npy_file) {
    const std::string file = file_safe(tensor) + ".npy";
    const std::string path = (std::filesystem::path(out_dir) / file).string();
    const std::string dtype = write_npy_file(path);
    json += std::string(json.size() > 1 ? "," : "") + "\n  \"" + stats::json_escape(name) +
            "\": {\"file\": \"" + stats::json_escape(file) + "\", \"shape\": " + json_shape(shape) +
            ", \"dtype\": \"" + dtype + "\"}";
    std::cout << "wrote " << path << " (output '" << name << "' " << runtime::shape_string(shape)
              << " " << dtype << ")\n";
  };
  if (onnx) {
    for (size_t k = 0; k < onnx_outputs.size(); ++k) {
      const runtime::ModelIo& o = model.outputs[k];
      write(o.name, o.tensor, o.type.shape, [&](const std::string& path) {
        return runtime::write_model_output(o, path, onnx_outputs[k]);
      });
    }
  } else {
    for (const auto& [name, t] : rep.launches.at(0).outputs)
      write(name, name, t.shape, [&](const std::string& path) {
        runtime::write_npy(path, t);
        return runtime::npy_dtype(t.dtype);
      });
  }
  const std::string path = (std::filesystem::path(out_dir) / "outputs.json").string();
  runtime::write_file(path, json + "\n}\n");
  std::cout << "wrote " << path << "\n";
}

// Per-rank inputs of an SPMD run: --input files (`{rank}` replaced by the rank,
// `{replica}` by its data-parallel replica, rank / `tp`), then with --random-inputs
// seeded values (seed + replica) for float inputs not given. `onnx_in`: an ONNX
// model's inputs (names as the model spells them), else null.
std::vector<std::map<std::string, runtime::HostTensor>> spmd_inputs(
    const RunArgs& r, const isa::Program& prog, const std::vector<runtime::ModelIo>* onnx_in,
    uint32_t tp = 1, const std::vector<runtime::ModelIo>* whole_in = nullptr, uint32_t dp = 1) {
  std::vector<std::map<std::string, runtime::HostTensor>> inputs(size_t(r.ranks));
  for (uint32_t k = 0; k < inputs.size(); ++k) {
    for (const auto& [name, file] : r.inputs) {
      std::string f = file;
      for (size_t at; (at = f.find("{rank}")) != std::string::npos;)
        f.replace(at, 6, std::to_string(k));
      for (size_t at; (at = f.find("{replica}")) != std::string::npos;)
        f.replace(at, 9, std::to_string(k / tp));
      std::string tensor = name;
      runtime::HostTensor t;
      if (onnx_in) {
        const runtime::ModelIo* in = runtime::find_input(*onnx_in, name);
        if (!in)
          throw UsageError("--input " + name + ": " + r.program_path + " has no input '" + name +
                           "'; its inputs: " + runtime::describe_inputs(*onnx_in));
        tensor = in->tensor;
        // --dp splits the batch: a file of the whole batch (no `{replica}`) gives
        // replica d its d-th slice of dim 0.
        if (dp > 1 && whole_in && file.find("{replica}") == std::string::npos)
          t = runtime::batch_slice(
              runtime::read_model_input(*runtime::find_input(*whole_in, name), f), k / tp, dp);
        else
          t = runtime::read_model_input(*in, f);
      } else {
        t = runtime::read_npy(f);
      }
      if (inputs[k].count(tensor)) throw UsageError("--input " + name + " given twice");
      inputs[k][tensor] = std::move(t);
    }
    if (!r.random_inputs || !r.functional) continue;
    std::mt19937_64 rng(r.seed + k / tp);  // each replica its own values
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (const auto& d : prog.tensors) {
      if (d.role != isa::TensorRole::input || inputs[k].count(d.name)) continue;
      std::vector<float> vals(d.bytes() / isa::dtype_size(d.dtype));
      for (auto& x : vals) x = dist(rng);
      inputs[k][d.name] = runtime::HostTensor::from_float(d.shape, d.dtype, vals);
    }
  }
  return inputs;
}

// `trnsim run PROGRAM --ranks R`: one program on R ranks, each with its inputs
// (`{rank}` in a file name), reported per rank with the step's communication share.
// An ONNX model needs --tp R: each rank runs its shard (runtime/spmd.h).
int cmd_run_spmd(const RunArgs& r) {
  if (r.validate) throw UsageError("validate: --ranks is not supported");
  const bool onnx = runtime::is_onnx_path(r.program_path);
  const long long tp = std::max(1LL, r.tp), dp = std::max(1LL, r.dp);
  if (onnx && tp * dp != r.ranks)
    throw UsageError("--ranks " + std::to_string(r.ranks) + ": an ONNX model runs on --tp x " +
                     "--dp ranks (" + std::to_string(tp) + " x " + std::to_string(dp) + ")");
  if (!onnx && (r.tp > 0 || r.dp > 0))
    throw UsageError("--tp/--dp: '" + r.program_path + "' is not an ONNX model");
  const platform::platform_config cfg0 = platform::load_config(r.config, r.sets);
  const auto R = uint32_t(r.ranks);
  const platform::platform_config cfg = runtime::spmd_config(cfg0, R);
  std::vector<isa::Program> progs;
  runtime::RankPrograms shared;                // --rank-program files, each loaded once
  std::vector<const isa::Program*> rank_prog;  // per rank when ranks differ, else empty
  std::vector<std::map<std::string, runtime::HostTensor>> inputs;
  graph_passes::TensorParallelSplit tp_split;  // inputs/outputs split across a tp group
  std::vector<runtime::ModelIo> tp_outputs;
  if (onnx) {
    const ir::Graph whole = frontend::import_onnx_file(r.program_path, r.import);
    // --dp D: each replica compiles for batch / D (dim 0 of every input).
    frontend::ImportOptions split = r.import;
    split.batch_split = dp;
    const ir::Graph imported =
        dp > 1 ? runtime::import_batch_split(r.program_path, split) : whole.clone();
    const std::vector<runtime::ModelIo> model_in = runtime::model_inputs(imported);
    const std::vector<runtime::ModelIo> whole_in = runtime::model_inputs(whole);
    if (tp > 1) {
      std::vector<runtime::OnnxModel> models =
          runtime::compile_tensor_parallel(imported, r.program_path, for_core(cfg0, 0), r.precision,
                                           int(tp), r.keep_on_chip, 1, &tp_split);
      tp_outputs = models.at(0).outputs;
      for (auto& m : models) progs.push_back(std::move(m.program));
      // Replica d's shards are replica 0's with their group moved to its ranks.
      for (long long d = 1; d < dp; ++d)
        for (long long t = 0; t < tp; ++t)
          progs.push_back(runtime::shift_groups(progs[size_t(t)], uint32_t(d * tp)));
    } else {  // data parallel only: every rank runs the whole model on its batch
      std::ostringstream dumps;
      progs.push_back(runtime::compile_onnx_graph(imported.clone(), r.program_path,
                                                  for_core(cfg0, 0), r.precision, {}, dumps, false,
                                                  r.keep_on_chip)
                          .program);
    }
    // The ranks of one tensor-parallel group read the same activations.
    inputs = spmd_inputs(r, progs[0], &model_in, uint32_t(tp), &whole_in, uint32_t(dp));
    runtime::split_tp_inputs(inputs, uint32_t(tp), tp_split, model_in);
  } else {
    progs.push_back(isa::load_program(r.program_path));
    if (r.drop_sync >= 0)
      std::cout << "drop-sync " << r.drop_sync << ": removed "
                << drop_sync_wait(progs[0], r.drop_sync) << "\n";
    inputs = spmd_inputs(r, progs[0], nullptr);
    // --rank-program: that rank runs another program (its own inputs' names); a
    // file with the bytes of one already loaded shares its instructions.
    if (!r.rank_programs.empty()) rank_prog.assign(R, &progs[0]);
    if (r.drop_sync < 0) shared.share(r.program_path, &progs[0]);
    for (const auto& [k, file] : r.rank_programs) {
      if (k >= r.ranks)
        throw UsageError("--rank-program " + std::to_string(k) + ": the run has " +
                         std::to_string(R) + " ranks");
      rank_prog[size_t(k)] = shared.load(file);
    }
  }
  for (size_t k = 0; k < progs.size() && progs.size() > 1; ++k) rank_prog.push_back(&progs[k]);
  runtime::DeviceOptions opts = run_device_options(r);
  opts.chip_cores = cfg0.cores;
  // Timing only: alike ranks fold into one per symmetry class (runtime/symmetry.h).
  runtime::SymmetryPlan sym;
  sym.ranks = sym.simulated = R;
  sym.why_not = "--no-fold";
  if (!r.functional && r.fold) {
    std::vector<const isa::Program*> per_rank(R);
    for (uint32_t k = 0; k < R; ++k) per_rank[k] = rank_prog.empty() ? &progs[0] : rank_prog[k];
    sym = runtime::plan_symmetry(per_rank, cfg0.cores);
    if (sym.folded()) {
      opts.fold_ranks = R;
      inputs.resize(sym.simulated);
    }
  }
  opts.comm_overlap = r.comm_profile;
  runtime::Device dev(sym.folded() ? runtime::spmd_config(cfg0, sym.simulated) : cfg, opts);
  std::vector<runtime::Launch> launches = runtime::spmd_launches(&progs[0], std::move(inputs));
  for (size_t k = 0; k < launches.size() && !rank_prog.empty(); ++k)
    launches[k].program = rank_prog[k];
  runtime::RunReport rep = dev.run(launches);
  std::cout << runtime::format_report(progs[0], cfg, rep) << runtime::format_spmd_report(rep);
  if (!tp_split.outputs.empty() && r.functional) {  // every rank reports the whole output
    std::vector<std::map<std::string, runtime::HostTensor>> outs;
    for (auto& l : rep.launches) outs.push_back(std::move(l.outputs));
    runtime::gather_tp_outputs(outs, uint32_t(tp), tp_split, tp_outputs);
    for (size_t k = 0; k < outs.size(); ++k) rep.launches[k].outputs = std::move(outs[k]);
  }
  if (!r.functional) std::cout << runtime::describe_symmetry(sym);
  int status = 0;
  if (opts.check_races || opts.poison) print_checks(rep, opts);
  if ((rep.races || rep.poisoned_reads) && !r.races_warn) status = 1;
  if (!r.out_dir.empty())
    for (const auto& l : rep.launches)
      for (const auto& [name, t] : l.outputs) {
        const auto dir = std::filesystem::path(r.out_dir) / ("rank" + std::to_string(l.rank));
        std::filesystem::create_directories(dir);
        const std::string path = (dir / (file_safe(name) + ".npy")).string();
        runtime::write_npy(path, t);
        std::cout << "wrote " << path << "\n";
      }
  if (!r.stats_path.empty()) runtime::write_file(r.stats_path, rep.stats_json);
  if (!r.stats_text_path.empty()) runtime::write_file(r.stats_text_path, rep.stats_text);
  return status;
}

// `trnsim run`, and with `validate` set `trnsim validate` (ONNX models only:
// simulated outputs against the reference interpreter, exit 1 when they differ).
int cmd_run(std::vector<std::string> args, bool validate = false) {
  RunArgs r;
  if (!parse_run_args(std::move(args), validate, r)) return 0;
  check_run_args(r);
  if ((r.tp > 0 || r.dp > 0) && r.ranks == 0) r.ranks = std::max(1LL, r.tp) * std::max(1LL, r.dp);
  if (r.ranks > 0) return cmd_run_spmd(r);
  const platform::platform_config cfg = platform::load_config(r.config, r.sets);
  if (r.core >= cfg.cores)
    throw UsageError("--core " + std::to_string(r.core) + ": platform '" + cfg.name + "' has " +
                     std::to_string(cfg.cores) + " core(s) (0.." + std::to_string(cfg.cores - 1) +
                     ")");
  const bool onnx = runtime::is_onnx_path(r.program_path);
  runtime::Launch launch;
  launch.core = uint32_t(r.core);
  std::optional<ir::Graph> reference;  // validate: the model as imported
  const runtime::OnnxModel model = load_run_model(r, cfg, launch, reference);
  const isa::Program& prog = model.program;
  launch.program = &prog;
  launch.roofline = model.roofline.get();
  fill_random_inputs(r, model, launch);

  const runtime::DeviceOptions opts = run_device_options(r);
  runtime::Device dev(cfg, opts);
  std::string fallback_summary;
  const runtime::RunReport rep =
      model.partitioned
          ? runtime::run_fallback(dev, cfg, *model.partitioned, launch, &fallback_summary)
          : dev.run({launch});
  std::cout << runtime::format_report(prog, cfg, rep) << fallback_summary;
  // The model's outputs in ONNX order, as the device holds them (outputs that are
  // inputs or constants included).
  const std::vector<runtime::HostTensor> onnx_outputs =
      onnx && r.functional
          ? runtime::model_output_values(model, launch.inputs, rep.launches.at(0).outputs)
          : std::vector<runtime::HostTensor>{};
  int status = 0;
  // The access checks' findings, then one line; in validate after the outputs.
  const bool checked = opts.check_races || opts.poison;
  if (checked && !validate) print_checks(rep, opts);
  if (checked && (rep.races || rep.poisoned_reads) && !r.races_warn) status = 1;
  if (validate)
    status = validate_outputs(r, cfg, *reference, launch, onnx_outputs, rep, opts, status);
  if (!r.out_dir.empty()) write_output_dir(r.out_dir, onnx, model, onnx_outputs, rep);
  if (!r.stats_path.empty()) runtime::write_file(r.stats_path, rep.stats_json);
  if (!r.stats_text_path.empty()) runtime::write_file(r.stats_text_path, rep.stats_text);
  if (!r.trace_path.empty()) std::cout << "wrote " << r.trace_path << "\n";
  if (!r.vcd_path.empty()) std::cout << "wrote " << r.vcd_path << "\n";
  return status;
}

int cmd_asm(std::vector<std::string> args, bool to_binary) {
  std::string in, out, v;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::cout << (to_binary ? "usage: trnsim asm IN.tasm -o OUT.tbin\n"
                              : "usage: trnsim disasm IN.tbin|IN.tasm [-o OUT.tasm]\n");
      return 0;
    } else if (take_value(args, i, "--output", "-o", v)) {
      out = v;
    } else if (!args[i].empty() && args[i][0] == '-') {
      throw UsageError("unknown option '" + args[i] + "'");
    } else if (in.empty()) {
      in = args[i];
    } else {
      throw UsageError("more than one input given");
    }
  }
  if (in.empty()) throw UsageError("no input program given");
  const isa::Program p = isa::load_program(in);
  if (to_binary) {
    if (out.empty()) throw UsageError("asm: -o OUT.tbin is required");
    const auto bytes = isa::encode_binary(p);
    runtime::write_file(out, std::string(bytes.begin(), bytes.end()));
  } else if (out.empty()) {
    std::cout << isa::disassemble(p);
  } else {
    runtime::write_file(out, isa::disassemble(p));
  }
  return 0;
}

const char* kCompileHelp =
    "usage: trnsim compile MODEL.onnx|KERNEL.tir -o PROGRAM.tbin|.tasm [options]\n"
    "  -c, --config NAME|PATH   platform to compile for [trn2]\n"
    "  --set KEY=VALUE          override a config key (repeatable)\n"
    "  --precision P            matmul operand type bf16|fp32|fp8 [bf16]\n"
    "  --core-type NAME         compile for this core type of the config (core_types) [core]\n"
    "  --print-after PASS       print the IR after a graph or tile pass (or *; repeatable)\n"
    "  --input-shape NAME=D0xD1...  concrete shape of an ONNX input with symbolic dims\n"
    "  --no-keep-on-chip        every intermediate goes through HBM (no keep_on_chip\n"
    "                           pass: SBUF forwarding with spills)\n"
    "  --no-reuse               compile every repeated block on its own (default: the\n"
    "                           first is compiled once and reused)\n"
    "  --drop-sync N            sync mutation: remove semaphore wait N (0-based, in\n"
    "                           disassembly order) from the program written\n"
    "  --timings                print the seconds of each compiler phase (import, every\n"
    "                           graph and tile pass, verify, lower, codegen, write:\n"
    "                           encoded as written) and the total, wall and CPU seconds\n";

int cmd_compile(std::vector<std::string> args) {
  std::string model, out, config = "trn2", precision = "bf16", core_type = "core", v;
  std::vector<std::string> sets, print_after;
  frontend::ImportOptions import;
  long long drop_sync = -1;
  bool keep_on_chip = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::cout << kCompileHelp;
      return 0;
    } else if (args[i] == "--no-keep-on-chip") {
      keep_on_chip = false;
    } else if (args[i] == "--no-reuse") {
      compiler::set_reuse_blocks(false);
    } else if (args[i] == "--timings") {
      compiler::timings::enable(true);
    } else if (take_value(args, i, "--drop-sync", "", v)) {
      drop_sync = parse_index("--drop-sync", v);
    } else if (take_value(args, i, "--output", "-o", v)) {
      out = v;
    } else if (take_value(args, i, "--config", "-c", v)) {
      config = v;
    } else if (take_value(args, i, "--set", "", v)) {
      sets.push_back(v);
    } else if (take_value(args, i, "--precision", "", v)) {
      precision = v;
    } else if (take_value(args, i, "--core-type", "", v)) {
      core_type = v;
    } else if (take_value(args, i, "--print-after", "", v)) {
      print_after.push_back(v);
    } else if (take_value(args, i, "--input-shape", "", v)) {
      take_input_shape(v, import);
    } else if (!args[i].empty() && args[i][0] == '-') {
      throw UsageError("compile: unknown option '" + args[i] + "'");
    } else if (model.empty()) {
      model = args[i];
    } else {
      throw UsageError("compile: more than one model given");
    }
  }
  if (model.empty()) throw UsageError("compile: no model given\n" + std::string(kCompileHelp));
  if (out.empty()) throw UsageError("compile: -o PROGRAM.tbin|.tasm is required");
  check_output_file("-o", out);
  platform::platform_config cfg = platform::load_config(config, sets);
  const size_t type = cfg.find_core_type(core_type);
  if (type == cfg.core_types())
    throw UsageError("--core-type " + core_type + ": platform '" + cfg.name +
                     "' has no such core type (its types: " + cfg.core_type_names() + ")");
  cfg.core = cfg.core_type(type);
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = compiler::timings::process_cpu_seconds();
  runtime::OnnxModel m;
  if (runtime::is_tile_path(model)) {
    runtime::TileProgram t = runtime::compile_tile_file(model, cfg, print_after, std::cout);
    m.program = std::move(t.program);
  } else {
    m = runtime::compile_onnx_model(model, cfg, precision, print_after, std::cout, false,
                                    keep_on_chip, import);
  }
  // Only the program is written: the graph (every weight in fp32) goes before the
  // program is encoded, which copies the constants once more.
  m.graph.reset();
  m.partitioned.reset();
  isa::Program& p = m.program;
  if (const std::string s = runtime::keep_on_chip_summary(m.compile_stats); !s.empty())
    std::cout << s << "\n";
  if (const std::string s = runtime::repeated_blocks_summary(m.compile_stats); !s.empty())
    std::cout << s << "\n";
  std::cout << "program: " << p.instruction_count() << " instructions, " << p.wait_count()
            << " semaphore waits\n";
  if (drop_sync >= 0)
    std::cout << "drop-sync " << drop_sync << ": removed " << drop_sync_wait(p, drop_sync) << "\n";
  if (out.size() >= 5 && out.substr(out.size() - 5) == ".tasm") {
    runtime::write_file(out, isa::disassemble(p));
  } else {
    // Encoded as it is written: the constants are not copied into one buffer first.
    compiler::timings::Scope t("write");
    runtime::write_file(out, [&](std::ostream& f) { isa::write_binary(p, f); });
  }
  std::cout << "wrote " << out << "\n";
  if (compiler::timings::enabled())
    std::cout << compiler::timings::format()
              << compiler::timings::format_line(
                     "total",
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                     compiler::timings::process_cpu_seconds() - cpu0);
  return 0;
}

int cmd_info(std::vector<std::string> args) {
  std::string config = "trn2", v;
  std::vector<std::string> sets;
  bool keys = false, json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-h" || args[i] == "--help") {
      std::cout << kInfoHelp;
      return 0;
    } else if (take_value(args, i, "--config", "-c", v)) {
      config = v;
    } else if (take_value(args, i, "--set", "", v)) {
      sets.push_back(v);
    } else if (args[i] == "--keys") {
      keys = true;
    } else if (args[i] == "--json") {
      json = true;
    } else {
      throw UsageError("info: unknown argument '" + args[i] + "'");
    }
  }
  if (json && !keys) throw UsageError("info: --json goes with --keys");
  if (keys) {
    std::cout << (json ? platform::schema_json() : platform::schema_table());
    return 0;
  }
  const auto cfg = platform::load_config(config, sets);
  std::cout << runtime::format_platform(cfg) << "\n" << platform::describe(cfg);
  return 0;
}

// `trnsim sweep|plot|fuzz ARGS` run `python3 -m trnsim.<verb> ARGS` from this source tree,
// told which binary to drive (this one) and its version; returns only on failure.
int exec_python(const std::string& verb, const std::vector<std::string>& args) {
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("cannot find this binary (/proc/self/exe): " + ec.message());
  const char* old_path = std::getenv("PYTHONPATH");
  std::string py_path = TRNSIM_PYTHON_DIR;
  if (old_path && *old_path) py_path += std::string(":") + old_path;
  setenv("PYTHONPATH", py_path.c_str(), 1);
  setenv("TRNSIM_BIN", self.c_str(), 1);
  setenv("TRNSIM_VERSION", TRNSIM_VERSION, 1);
  std::vector<std::string> argv_s = {TRNSIM_PYTHON_EXE, "-m", "trnsim." + verb};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv_c;
  for (auto& a : argv_s) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  execv(argv_c[0], argv_c.data());
  throw std::runtime_error(std::string("cannot run ") + TRNSIM_PYTHON_EXE + ": " +
                           std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kMainHelp;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  // What a command prints is its result too (disasm's program, run's report): a
  // failed write to standard output (a full disk) is an error, not exit 0.
  const auto flushed = [](int status) {
    std::cout.flush();
    errno = 0;
    if (std::fflush(stdout) == 0 && !std::ferror(stdout) && std::cout) return status;
    std::cerr << "trnsim: error: standard output: write failed"
              << (errno ? std::string(": ") + std::strerror(errno) : std::string()) << "\n";
    return 1;
  };
  try {
    if (cmd == "run") return flushed(cmd_run(args));
    if (cmd == "validate") return flushed(cmd_run(args, true));
    if (cmd == "compile") return flushed(cmd_compile(args));
    if (cmd == "asm") return flushed(cmd_asm(args, true));
    if (cmd == "disasm") return flushed(cmd_asm(args, false));
    if (cmd == "info") return flushed(cmd_info(args));
    if (cmd == "collbench") {
      try {
        return flushed(runtime::collbench(args, std::cout));
      } catch (const runtime::CollbenchUsage& e) {
        throw UsageError(e.what());
      }
    }
    if (cmd == "sweep" || cmd == "plot" || cmd == "fuzz") return exec_python(cmd, args);
    if (cmd == "train") return exec_python(cmd, args);
    throw UsageError("unknown command '" + cmd + "'\n" + kMainHelp);
  } catch (const UsageError& e) {
    std::cerr << "trnsim: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trnsim: error: " << e.what() << "\n";
    return 1;
  }
}
