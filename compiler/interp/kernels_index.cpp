// Kernels for resampling and index ops: Resize, TopK, Einsum, GridSample, RoiAlign,
// plus LRN, Shrink, EyeLike, Det and BitShift. Arithmetic runs in double; the
// interpolation formulas follow the ONNX operator descriptions (Resize, RoiAlign)
// and PyTorch's grid_sample (GridSample, whose ONNX definition is PyTorch's).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "compiler/interp/kernels.h"
#include "compiler/ir/ops.h"
#include "compiler/ir/ops_index.h"

namespace trnsim::interp {
namespace {

// A real coordinate as an integer: NaN is 0 and far-out values stop at +-2^62, so
// the cast is defined and neighbours (+-2) do not overflow; callers clamp or
// bounds-check the result.
int64_t to_index(double v) {
  if (std::isnan(v)) return 0;
  constexpr double kLim = 4611686018427387904.0;  // 2^62
  return static_cast<int64_t>(std::clamp(v, -kLim, kLim));
}

// A double as an integer element: NaN is 0, out-of-range values saturate (the
// narrow types then wrap in normalize(), as Cast does).
int64_t to_int_elem(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// --- Resize -----------------------------------------------------------------

struct Tap {
  int64_t idx;
  double w;
};
// Per output coordinate of one axis: the input taps, or none when the coordinate
// falls outside the crop (tf_crop_and_resize: the extrapolation value).
struct AxisTaps {
  std::vector<std::vector<Tap>> taps;
  std::vector<char> outside;
};

std::vector<double> cubic_coeffs(double t, double a) {
  auto near = [a](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [a](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

AxisTaps resize_axis(const Node& n, int64_t in_len, int64_t out_len, double scale, double roi_lo,
                     double roi_hi) {
  const std::string& mode = n.attr_string("mode");
  const std::string& ctm = n.attr_string("coordinate_transformation_mode");
  const std::string& nm = n.attr_string("nearest_mode");
  const bool exclude = n.attr_int("exclude_outside") != 0;
  const double a = n.attr_float("cubic_coeff_a");
  // The resized length as a real number (ONNX: input length times the scale).
  const double out_real = scale * static_cast<double>(in_len);
  AxisTaps r;
  r.taps.resize(out_len);
  r.outside.assign(out_len, 0);
  for (int64_t o = 0; o < out_len; ++o) {
    const double x = static_cast<double>(o);
    double xo;
    if (ctm == "align_corners") {
      xo = out_real == 1 ? 0 : x * static_cast<double>(in_len - 1) / (out_real - 1);
    } else if (ctm == "asymmetric") {
      xo = x / scale;
    } else if (ctm == "pytorch_half_pixel") {
      xo = out_len > 1 ? (x + 0.5) / scale - 0.5 : 0;
    } else if (ctm == "tf_half_pixel_for_nn") {
      xo = (x + 0.5) / scale;
    } else if (ctm == "tf_crop_and_resize") {
      const double span = static_cast<double>(in_len - 1);
      xo = out_len > 1 ? roi_lo * span + x * (roi_hi - roi_lo) * span / (out_real - 1)
                       : 0.5 * (roi_lo + roi_hi) * span;
      if (xo < 0 || xo > span) {
        r.outside[o] = 1;
        continue;
      }
    } else {  // half_pixel
      xo = (x + 0.5) / scale - 0.5;
    }
    const double fl = std::floor(xo);
    const double t = xo - fl;
    const int64_t f = to_index(fl);
    std::vector<Tap> taps;
    if (mode == "nearest") {
      int64_t i = f;
      if (t != 0) {
        if (nm == "ceil" || (nm == "round_prefer_floor" && t > 0.5) ||
            (nm == "round_prefer_ceil" && t >= 0.5))
          i = f + 1;
      }
      taps.push_back({i, 1.0});
    } else if (mode == "linear") {
      taps = {{f, 1 - t}, {f + 1, t}};
    } else {
      std::vector<double> c = cubic_coeffs(t, a);
      for (int j = 0; j < 4; ++j) taps.push_back({f - 1 + j, c[j]});
    }
    if (exclude && mode != "nearest") {
      double sum = 0;
      for (Tap& tp : taps) {
        if (tp.idx < 0 || tp.idx >= in_len) tp.w = 0;
        sum += tp.w;
      }
      if (sum != 0)
        for (Tap& tp : taps) tp.w /= sum;
    }
    for (const Tap& tp : taps) {
      if (tp.w == 0) continue;
      // Outside the input the edge value repeats.
      r.taps[o].push_back({std::clamp<int64_t>(tp.idx, 0, in_len - 1), tp.w});
    }
  }
  return r;
}

void resize(const Node& n, const Ins& in, Outs& out) {
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  const Shape& xs = x.shape();
  const Shape& ys = y.shape();
  const size_t r = xs.size();
  if (y.numel() == 0) return;
  const auto& scales = n.attr_floats("scales");
  const auto& roi = n.attr_floats("roi");
  std::vector<AxisTaps> axes;
  for (size_t d = 0; d < r; ++d) {
    // With sizes the scale is the exact ratio of the lengths.
    const double s = scales.empty() ? static_cast<double>(ys[d]) / static_cast<double>(xs[d])
                                    : static_cast<double>(scales[d]);
    axes.push_back(
        resize_axis(n, xs[d], ys[d], s, roi.empty() ? 0 : roi[d], roi.empty() ? 1 : roi[d + r]));
  }
  const std::vector<int64_t> st = ir::strides_of(xs);
  const double extrap = n.attr_float("extrapolation_value");
  std::vector<int64_t> oi(r, 0);
  // Separable: interpolate along dim d the values interpolated along the dims after it.
  auto eval = [&](auto&& self, size_t d, int64_t off) -> double {
    if (d == r) return x.holds_floats() ? x.floats()[off] : static_cast<double>(x.ints()[off]);
    if (axes[d].outside[oi[d]]) return extrap;
    double acc = 0;
    for (const Tap& t : axes[d].taps[oi[d]]) acc += t.w * self(self, d + 1, off + t.idx * st[d]);
    return acc;
  };
  // Integer inputs (nearest only): copy the one source element exactly.
  auto source = [&](int64_t& off) {
    off = 0;
    for (size_t d = 0; d < r; ++d) {
      if (axes[d].outside[oi[d]]) return false;
      off += axes[d].taps[oi[d]][0].idx * st[d];
    }
    return true;
  };
  for (int64_t k = 0; k < y.numel(); ++k) {
    if (y.holds_floats()) {
      y.floats()[k] = static_cast<float>(eval(eval, 0, 0));
    } else {
      int64_t off;
      y.ints()[k] = source(off) ? x.ints()[off] : to_int_elem(extrap);
    }
    for (size_t d = r; d-- > 0;) {
      if (++oi[d] < ys[d]) break;
      oi[d] = 0;
    }
  }
}

// --- TopK ---------------------------------------------------------------------

template <typename T>
bool nan_of(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

template <typename T>
void topk_impl(const Node& n, const std::vector<T>& x, const Shape& xs, std::vector<T>& vals,
               std::vector<int64_t>& idx) {
  const int64_t axis = n.attr_int("axis"), k = n.attr_int("k");
  const bool largest = n.attr_int("largest") != 0;
  const int64_t len = xs[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
  std::vector<int64_t> order(len);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      auto v = [&](int64_t j) { return x[base + j * inner]; };
      // NaN ranks above every number (as in PyTorch); equal values keep the lower
      // index first, which the ONNX spec requires.
      auto before = [&](int64_t p, int64_t q) {
        T a = v(p), b = v(q);
        bool na = nan_of(a), nb = nan_of(b);
        bool better;
        if (na || nb)
          better = largest ? (na && !nb) : (!na && nb);
        else
          better = largest ? a > b : a < b;
        if (better) return true;
        bool worse;
        if (na || nb)
          worse = largest ? (nb && !na) : (!nb && na);
        else
          worse = largest ? b > a : b < a;
        return !worse && p < q;
      };
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t dst = o * k * inner + j * inner + i;
        vals[dst] = v(order[j]);
        idx[dst] = order[j];
      }
    }
}

void topk(const Node& n, const Ins& in, Outs& out) {
  std::vector<int64_t> idx(out[0].numel());
  if (in[0]->holds_floats())
    topk_impl(n, in[0]->floats(), in[0]->shape(), out[0].floats(), idx);
  else
    topk_impl(n, in[0]->ints(), in[0]->shape(), out[0].ints(), idx);
  if (out.size() > 1) out[1].ints() = std::move(idx);
}

// --- Einsum -------------------------------------------------------------------

void einsum(const Node& n, const Ins& in, Outs& out) {
  std::vector<Shape> shapes;
  for (const Tensor* t : in) shapes.push_back(t->shape());
  ir::EinsumSpec s = ir::parse_einsum(n.attr_string("equation"), shapes);
  const size_t nl = s.label_size.size(), ni = in.size();
  // Loop labels: the output's, then the summed ones.
  std::vector<int> loop = s.out_labels;
  for (size_t l = 0; l < nl; ++l)
    if (std::find(loop.begin(), loop.end(), static_cast<int>(l)) == loop.end())
      loop.push_back(static_cast<int>(l));
  // Stride of each input per loop label: a label repeated in one input (a
  // diagonal) adds its strides; a broadcast ellipsis dim has stride 0.
  std::vector<std::vector<int64_t>> st(ni, std::vector<int64_t>(loop.size(), 0));
  for (size_t k = 0; k < ni; ++k) {
    std::vector<int64_t> own = ir::strides_of(shapes[k]);
    for (size_t d = 0; d < shapes[k].size(); ++d) {
      const int l = s.in_labels[k][d];
      if (shapes[k][d] == 1 && s.label_size[l] != 1) continue;
      const size_t pos = std::find(loop.begin(), loop.end(), l) - loop.begin();
      st[k][pos] += own[d];
    }
  }
  std::vector<int64_t> sizes;
  for (int l : loop) sizes.push_back(s.label_size[l]);
  int64_t inner = 1;
  for (size_t p = s.out_labels.size(); p < loop.size(); ++p) inner *= sizes[p];
  const int64_t outer = out[0].numel();
  if (outer == 0) return;
  std::vector<int64_t> idx(loop.size(), 0), off(ni, 0);
  auto step = [&]() {
    for (size_t p = loop.size(); p-- > 0;) {
      for (size_t k = 0; k < ni; ++k) off[k] += st[k][p];
      if (++idx[p] < sizes[p]) return;
      for (size_t k = 0; k < ni; ++k) off[k] -= sizes[p] * st[k][p];
      idx[p] = 0;
    }
  };
  const bool fl = out[0].holds_floats();
  for (int64_t o = 0; o < outer; ++o) {
    if (fl) {
      // fp32 accumulates in double; fp64 reads and stores double (at() reads both).
      double acc = 0;
      for (int64_t j = 0; j < inner; ++j, step()) {
        double p = 1;
        for (size_t k = 0; k < ni; ++k) p *= in[k]->at(off[k]);
        acc += p;
      }
      if (out[0].holds_doubles())
        out[0].doubles()[o] = acc;
      else
        out[0].floats()[o] = static_cast<float>(acc);
    } else {
      uint64_t acc = 0;  // wraps, as integer arithmetic in the other kernels
      for (int64_t j = 0; j < inner; ++j, step()) {
        uint64_t p = 1;
        for (size_t k = 0; k < ni; ++k) p *= static_cast<uint64_t>(in[k]->ints()[off[k]]);
        acc += p;
      }
      out[0].ints()[o] = static_cast<int64_t>(acc);
    }
  }
}

// --- GridSample ---------------------------------------------------------------

struct GridGeom {
  bool align;
  std::string pad;
};

double grid_unnormalize(double c, int64_t size, bool align) {
  return align ? (c + 1) / 2 * static_cast<double>(size - 1)
               : ((c + 1) * static_cast<double>(size) - 1) / 2;
}

double reflect(double c, double twice_lo, double twice_hi) {
  if (twice_lo == twice_hi) return 0;
  const double lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
  c = std::fabs(c - lo);
  const double extra = std::fmod(c, span);
  const bool even = std::fmod(std::floor(c / span), 2.0) == 0;
  return even ? extra + lo : span - extra + lo;
}

// Border and reflection padding move a coordinate inside the input.
double pad_coord(double c, int64_t size, const GridGeom& g) {
  const double hi = static_cast<double>(size - 1);
  if (g.pad == "border") return std::clamp(c, 0.0, hi);
  if (g.pad == "reflection") {
    c = g.align ? reflect(c, 0, 2 * hi) : reflect(c, -1, 2 * static_cast<double>(size) - 1);
    return std::clamp(c, 0.0, hi);
  }
  return c;
}

void grid_sample(const Node& n, const Ins& in, Outs& out) {
  const Shape& xs = in[0]->shape();
  const Shape& gs = in[1]->shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Ho = gs[1], Wo = gs[2];
  const GridGeom geo{n.attr_int("align_corners") != 0, n.attr_string("padding_mode")};
  const std::string& mode = n.attr_string("mode");
  const auto& x = in[0]->floats();
  const auto& grid = in[1]->floats();
  auto& y = out[0].floats();
  constexpr double kA = -0.75;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        const int64_t gi = ((b * Ho + i) * Wo + j) * 2;
        const double gx = grid[gi], gy = grid[gi + 1];
        for (int64_t c = 0; c < C; ++c) {
          const float* plane = x.data() + (b * C + c) * H * W;
          auto at = [&](int64_t yy, int64_t xx) -> double {
            return yy >= 0 && yy < H && xx >= 0 && xx < W ? plane[yy * W + xx] : 0.0;
          };
          double v = 0;
          if (mode == "bicubic") {
            const double ix = grid_unnormalize(gx, W, geo.align);
            const double iy = grid_unnormalize(gy, H, geo.align);
            const double fx = std::floor(ix), fy = std::floor(iy);
            std::vector<double> cx = cubic_coeffs(ix - fx, kA), cy = cubic_coeffs(iy - fy, kA);
            for (int q = 0; q < 4; ++q)
              for (int p = 0; p < 4; ++p) {
                // Each tap's integer coordinate is padded on its own.
                const double tx = pad_coord(fx - 1 + p, W, geo);
                const double ty = pad_coord(fy - 1 + q, H, geo);
                v += cx[p] * cy[q] * at(to_index(ty), to_index(tx));
              }
          } else {
            const double ix = pad_coord(grid_unnormalize(gx, W, geo.align), W, geo);
            const double iy = pad_coord(grid_unnormalize(gy, H, geo.align), H, geo);
            if (mode == "nearest") {
              v = at(to_index(std::nearbyint(iy)), to_index(std::nearbyint(ix)));
            } else {
              const double fx = std::floor(ix), fy = std::floor(iy);
              const double tx = ix - fx, ty = iy - fy;
              const int64_t x0 = to_index(fx), y0 = to_index(fy);
              v = (1 - ty) * ((1 - tx) * at(y0, x0) + tx * at(y0, x0 + 1)) +
                  ty * ((1 - tx) * at(y0 + 1, x0) + tx * at(y0 + 1, x0 + 1));
            }
          }
          y[((b * C + c) * Ho + i) * Wo + j] = static_cast<float>(v);
        }
      }
}

// --- RoiAlign -----------------------------------------------------------------

void roi_align(const Node& n, const Ins& in, Outs& out) {
  const Shape& xs = in[0]->shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t R = in[1]->shape()[0];
  const int64_t oh = n.attr_int("output_height"), ow = n.attr_int("output_width");
  const int64_t ratio = n.attr_int("sampling_ratio");
  const double scale = n.attr_float("spatial_scale");
  const bool half = n.attr_string("coordinate_transformation_mode") == "half_pixel";
  const bool is_max = n.attr_string("mode") == "max";
  const auto& x = in[0]->floats();
  const auto& rois = in[1]->floats();
  const auto& bidx = in[2]->ints();
  auto& y = out[0].floats();
  for (int64_t r = 0; r < R; ++r) {
    const int64_t b = bidx[r];
    if (b < 0 || b >= N)
      kfail("batch_indices[" + std::to_string(r) + "] = " + std::to_string(b) + " is outside 0.." +
            std::to_string(N - 1));
    for (int j = 0; j < 4; ++j)
      if (!std::isfinite(rois[r * 4 + j] * scale))
        kfail("roi " + std::to_string(r) + " has a non-finite coordinate (after spatial_scale)");
    const double off = half ? 0.5 : 0.0;
    const double x0 = rois[r * 4] * scale - off, y0 = rois[r * 4 + 1] * scale - off;
    const double x1 = rois[r * 4 + 2] * scale - off, y1 = rois[r * 4 + 3] * scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!half) {  // the legacy grid keeps every roi at least one pixel wide
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    // The adaptive grid takes about one sample per input pixel of a bin.
    const double agh = std::ceil(rh / oh), agw = std::ceil(rw / ow);
    if (ratio == 0 && (agh > 1e6 || agw > 1e6))
      kfail("roi " + std::to_string(r) + " spans " + std::to_string(rh) + " x " +
            std::to_string(rw) + " pixels: too many samples per bin with sampling_ratio 0");
    const int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(agh);
    const int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(agw);
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const float* plane = x.data() + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double yy = y0 + ph * bh + (iy + 0.5) * bh / static_cast<double>(gh);
              double xx = x0 + pw * bw + (ix + 0.5) * bw / static_cast<double>(gw);
              // Bilinear sample; samples more than a pixel outside count as 0.
              double w[4] = {0, 0, 0, 0}, v[4] = {0, 0, 0, 0};
              if (!(yy < -1.0 || yy > H || xx < -1.0 || xx > W)) {
                yy = std::max(yy, 0.0);
                xx = std::max(xx, 0.0);
                int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh, xh;
                if (yl >= H - 1) {
                  yh = yl = H - 1;
                  yy = static_cast<double>(yl);
                } else {
                  yh = yl + 1;
                }
                if (xl >= W - 1) {
                  xh = xl = W - 1;
                  xx = static_cast<double>(xl);
                } else {
                  xh = xl + 1;
                }
                const double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
                w[0] = hy * hx;
                w[1] = hy * lx;
                w[2] = ly * hx;
                w[3] = ly * lx;
                v[0] = plane[yl * W + xl];
                v[1] = plane[yl * W + xh];
                v[2] = plane[yh * W + xl];
                v[3] = plane[yh * W + xh];
              }
              if (is_max) {
                // Max mode takes the largest weighted corner (as the ONNX reference).
                const double m = std::max({w[0] * v[0], w[1] * v[1], w[2] * v[2], w[3] * v[3]});
                acc = first ? m : std::max(acc, m);
              } else {
                acc += w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
              }
              first = false;
            }
          y[((r * C + c) * oh + ph) * ow + pw] = static_cast<float>(is_max ? acc : acc / count);
        }
    }
  }
}

// --- LRN, Shrink, EyeLike, Det, BitShift ----------------------------------------

void lrn(const Node& n, const Ins& in, Outs& out) {
  const Shape& xs = in[0]->shape();
  const int64_t N = xs[0], C = xs[1];
  int64_t S = 1;
  for (size_t d = 2; d < xs.size(); ++d) S *= xs[d];
  const int64_t size = n.attr_int("size");
  const double alpha = n.attr_float("alpha"), beta = n.attr_float("beta"),
               bias = n.attr_float("bias");
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor and ceil of (size-1)/2
  const auto& x = in[0]->floats();
  auto& y = out[0].floats();
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        double sq = 0;
        for (int64_t i = std::max<int64_t>(0, c - lo); i <= std::min(C - 1, c + hi); ++i) {
          const double v = x[(b * C + i) * S + s];
          sq += v * v;
        }
        const int64_t k = (b * C + c) * S + s;
        y[k] = static_cast<float>(x[k] / std::pow(bias + alpha / size * sq, beta));
      }
}

void shrink(const Node& n, const Ins& in, Outs& out) {
  const double bias = n.attr_float("bias"), lambd = n.attr_float("lambd");
  auto f = [&](double v) { return v < -lambd ? v + bias : v > lambd ? v - bias : 0.0; };
  if (in[0]->holds_floats()) {
    for (size_t k = 0; k < in[0]->floats().size(); ++k)
      out[0].floats()[k] = static_cast<float>(f(in[0]->floats()[k]));
  } else {
    for (size_t k = 0; k < in[0]->ints().size(); ++k)
      out[0].ints()[k] = to_int_elem(f(static_cast<double>(in[0]->ints()[k])));
  }
}

void eye_like(const Node& n, const Ins&, Outs& out) {
  const int64_t rows = out[0].shape()[0], cols = out[0].shape()[1], k = n.attr_int("k");
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = i + k;
    if (j < 0 || j >= cols) continue;
    if (out[0].holds_doubles())
      out[0].doubles()[i * cols + j] = 1.0;
    else if (out[0].holds_floats())
      out[0].floats()[i * cols + j] = 1.0f;
    else
      out[0].ints()[i * cols + j] = 1;
  }
}

void det(const Node&, const Ins& in, Outs& out) {
  const Shape& xs = in[0]->shape();
  const int64_t m = xs.back();
  const auto& x = in[0]->floats();
  std::vector<double> a(m * m);
  for (int64_t b = 0; b < out[0].numel(); ++b) {
    for (int64_t k = 0; k < m * m; ++k) a[k] = x[b * m * m + k];
    // LU with partial pivoting.
    double d = 1;
    for (int64_t c = 0; c < m && d != 0; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[r * m + c]) > std::fabs(a[p * m + c])) p = r;
      if (a[p * m + c] == 0) {
        d = 0;
        break;
      }
      if (p != c) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[p * m + j], a[c * m + j]);
        d = -d;
      }
      d *= a[c * m + c];
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[r * m + c] / a[c * m + c];
        for (int64_t j = c; j < m; ++j) a[r * m + j] -= f * a[c * m + j];
      }
    }
    out[0].floats()[b] = static_cast<float>(d);
  }
}

void bit_shift(const Node& n, const Ins& in, Outs& out) {
  const bool left = n.attr_string("direction") == "LEFT";
  const auto& a = in[0]->ints();
  const auto& s = in[1]->ints();
  auto& y = out[0].ints();
  for_each_broadcast<2>(out[0].shape(), {&in[0]->shape(), &in[1]->shape()},
                        [&](int64_t k, const std::array<int64_t, 2>& off) {
                          const uint64_t v = static_cast<uint64_t>(a[off[0]]);
                          const uint64_t sh = static_cast<uint64_t>(s[off[1]]);
                          // Shifting by the width or more clears every bit; the
                          // result then wraps to the element type.
                          y[k] = sh >= 64 ? 0 : static_cast<int64_t>(left ? v << sh : v >> sh);
                        });
}

void max_unpool(const Node& n, const Ins& in, Outs& out) {
  // Indices count in the shape MaxPool saw; a larger output_shape pads at the ends.
  const Shape inf = ir::max_unpool_inferred(n);
  const int64_t total = ir::num_elements(inf);
  const Shape& ys = out[0].shape();
  const std::vector<int64_t> ist = ir::strides_of(inf), yst = ir::strides_of(ys);
  const auto& x = in[0]->floats();
  const auto& idx = in[1]->ints();
  for (size_t k = 0; k < idx.size(); ++k) {
    int64_t i = idx[k];
    if (i < 0 || i >= total)
      kfail("index " + std::to_string(i) + " (element " + std::to_string(k) +
            " of the indices) is outside 0.." + std::to_string(total - 1));
    int64_t o = 0;
    for (size_t d = 0; d < inf.size(); ++d) {
      o += i / ist[d] * yst[d];
      i %= ist[d];
    }
    out[0].floats()[o] = x[k];
  }
}

}  // namespace

void register_index(KernelMap& m) {
  m["Resize"] = resize;
  m["TopK"] = topk;
  m["Einsum"] = einsum;
  m["GridSample"] = grid_sample;
  m["RoiAlign"] = roi_align;
  m["LRN"] = lrn;
  m["Shrink"] = shrink;
  m["EyeLike"] = eye_like;
  m["Det"] = det;
  m["BitShift"] = bit_shift;
  m["MaxUnpool"] = max_unpool;
}

}  // namespace trnsim::interp
