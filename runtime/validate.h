// `trnsim validate`: simulated outputs against the reference interpreter. The
// reference for pass/fail runs the compiled graph emulating the precision the
// compiler chose (matmul operands rounded to bf16/fp8, as autocast put them), so a
// tolerance near the type's rounding catches code-generation bugs; the error
// against the plain fp32 model is reported beside it.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/tensor.h"

namespace trnsim::runtime {

struct OutputCheck {
  std::string name;
  int64_t elements = 0;
  double max_abs = 0;       // vs the precision-emulating reference
  double max_rel = 0;       // max |d| / |ref| over elements with |ref| > atol
  double max_abs_fp32 = 0;  // vs the fp32 reference
  int64_t bad = 0;          // elements outside atol + rtol * |ref|
  int64_t first_bad = -1;
  bool pass() const { return bad == 0; }
};

// Compares `got` with `ref` (and `ref_fp32`) element by element; NaN matches only
// NaN and an infinity only itself. A shape or size mismatch counts every element bad.
OutputCheck check_output(const std::string& name, const ir::Tensor& got, const ir::Tensor& ref,
                         const ir::Tensor& ref_fp32, double rtol, double atol);

// Default tolerances for a --precision: fp32 1e-4/1e-5, bf16 1e-2/1e-2, fp8 5e-2/5e-2.
void default_tolerance(const std::string& precision, double* rtol, double* atol);

// The table `trnsim validate` prints (one row per output) and its verdict line.
std::string format_checks(const std::vector<OutputCheck>& checks, double rtol, double atol);

}  // namespace trnsim::runtime
