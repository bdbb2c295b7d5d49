// Plain C++ references for the end-to-end programs (fp64 arithmetic) and an
// element-by-element comparison that reports the first mismatch.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace trnsim::e2e {

inline double gelu_erf(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// C[M,N] = gelu(A[M,K] @ W[K,N] + b[N]).
inline std::vector<double> ref_matmul_gelu(const std::vector<float>& a, const std::vector<float>& w,
                                           const std::vector<float>& b, int m, int k, int n) {
  std::vector<double> c(size_t(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = b[j];
      for (int kk = 0; kk < k; ++kk) acc += double(a[size_t(i) * k + kk]) * w[size_t(kk) * n + j];
      c[size_t(i) * n + j] = gelu_erf(acc);
    }
  return c;
}

// Row-wise softmax of X[rows, cols].
inline std::vector<double> ref_softmax(const std::vector<float>& x, int rows, int cols) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const float* row = &x[size_t(r) * cols];
    double mx = row[0];
    for (int c = 1; c < cols; ++c) mx = std::max(mx, double(row[c]));
    double sum = 0;
    for (int c = 0; c < cols; ++c) sum += std::exp(double(row[c]) - mx);
    for (int c = 0; c < cols; ++c) y[size_t(r) * cols + c] = std::exp(double(row[c]) - mx) / sum;
  }
  return y;
}

// Layer norm over the last axis with population variance.
inline std::vector<double> ref_layernorm(const std::vector<float>& x,
                                         const std::vector<float>& gamma,
                                         const std::vector<float>& beta, int rows, int cols,
                                         double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const float* row = &x[size_t(r) * cols];
    double mean = 0;
    for (int c = 0; c < cols; ++c) mean += row[c];
    mean /= cols;
    double var = 0;
    for (int c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= cols;
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < cols; ++c)
      y[size_t(r) * cols + c] = (row[c] - mean) * rstd * gamma[c] + beta[c];
  }
  return y;
}

// Every element must satisfy |got - want| <= abs_tol + rel_tol * |want| (NaN fails).
// On failure: the first mismatching index (flat and per axis), both values, and how
// many elements mismatch in all.
inline ::testing::AssertionResult all_close(const std::string& what, const std::vector<float>& got,
                                            const std::vector<double>& want,
                                            const std::vector<int64_t>& shape, double abs_tol,
                                            double rel_tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << what << ": " << got.size() << " elements, expected " << want.size();
  size_t bad = 0, first = 0, nans = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - want[i]);
    if (!(d <= abs_tol + rel_tol * std::fabs(want[i]))) {
      if (bad++ == 0) first = i;
    }
    if (std::isnan(d))
      ++nans;
    else if (d > worst)
      worst = d;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::vector<int64_t> idx(shape.size());
  size_t rest = first;
  for (size_t ax = shape.size(); ax-- > 0;) {
    idx[ax] = static_cast<int64_t>(rest % shape[ax]);
    rest /= shape[ax];
  }
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << got.size() << " elements mismatch; first at flat index "
     << first << " [";
  for (size_t ax = 0; ax < idx.size(); ++ax) os << (ax ? "," : "") << idx[ax];
  os << "]: got " << got[first] << ", expected " << want[first] << " (abs " << abs_tol << ", rel "
     << rel_tol << "; largest finite abs error " << worst << "; " << nans << " NaN)";
  return ::testing::AssertionFailure() << os.str();
}

}  // namespace trnsim::e2e
