#include "runtime/validate.h"

#include <cmath>
#include <cstdio>

namespace trnsim::runtime {

OutputCheck check_output(const std::string& name, const ir::Tensor& got, const ir::Tensor& ref,
                         const ir::Tensor& ref_fp32, double rtol, double atol) {
  OutputCheck c;
  c.name = name;
  c.elements = ref.numel();
  if (got.numel() != ref.numel()) {
    c.bad = c.elements;
    c.first_bad = 0;
    c.max_abs = c.max_rel = INFINITY;
    return c;
  }
  for (int64_t k = 0; k < ref.numel(); ++k) {
    const double g = got.at(k), w = ref.at(k);
    bool ok;
    double d = 0;
    if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
      if (!ok) d = INFINITY;
    } else if (std::isinf(w) || std::isinf(g)) {
      ok = g == w;
      if (!ok) d = INFINITY;
    } else {
      d = std::fabs(g - w);
      ok = d <= atol + rtol * std::fabs(w);
      if (std::fabs(w) > atol) c.max_rel = std::max(c.max_rel, d / std::fabs(w));
    }
    c.max_abs = std::max(c.max_abs, d);
    if (k < ref_fp32.numel() && std::isfinite(g) && std::isfinite(ref_fp32.at(k)))
      c.max_abs_fp32 = std::max(c.max_abs_fp32, std::fabs(g - ref_fp32.at(k)));
    if (!ok && c.bad++ == 0) c.first_bad = k;
  }
  return c;
}

void default_tolerance(const std::string& precision, double* rtol, double* atol) {
  if (precision == "fp32") {
    *rtol = 1e-4, *atol = 1e-5;
  } else if (precision == "fp8") {
    *rtol = 5e-2, *atol = 5e-2;
  } else {
    *rtol = 1e-2, *atol = 1e-2;
  }
}

std::string format_checks(const std::vector<OutputCheck>& checks, double rtol, double atol) {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s %10s %12s %12s %14s  %s\n", "output", "elements",
                "max abs", "max rel", "max abs (fp32)", "result");
  s += line;
  bool all = true;
  for (const OutputCheck& c : checks) {
    std::snprintf(line, sizeof line, "  %-24s %10lld %12.3e %12.3e %14.3e  %s", c.name.c_str(),
                  static_cast<long long>(c.elements), c.max_abs, c.max_rel, c.max_abs_fp32,
                  c.pass() ? "pass" : "FAIL");
    s += line;
    if (!c.pass())
      s += " (" + std::to_string(c.bad) + " elements outside tolerance, first at " +
           std::to_string(c.first_bad) + ")";
    s += "\n";
    all = all && c.pass();
  }
  std::snprintf(line, sizeof line,
                "%s: %zu output(s) within rtol %.3g, atol %.3g of the reference\n",
                all ? "PASS" : "FAIL", checks.size(), rtol, atol);
  s += all ? line : std::string("FAIL: outputs differ from the reference beyond rtol/atol\n");
  return s;
}

}  // namespace trnsim::runtime
