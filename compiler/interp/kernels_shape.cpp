// Data-movement kernels: reshapes, transposes, concat/split, slices, gathers,
// expand/tile/pad, depth<->space, Trilu, and the fold-only shape ops.
#include <cmath>

#include "compiler/interp/kernels.h"
#include "compiler/ir/ops.h"

namespace trnsim::interp {
namespace {

// dst[i] = src[base + sum_d idx_d * st[d]] over the row-major indices of `shape`.
template <typename T>
void strided_copy(const Shape& shape, const std::vector<int64_t>& st, int64_t base,
                  const std::vector<T>& src, std::vector<T>& dst) {
  const int64_t total = ir::num_elements(shape);
  if (total == 0) return;
  const size_t r = shape.size();
  if (r == 0) {
    dst[0] = src[base];
    return;
  }
  std::vector<int64_t> idx(r, 0);
  const int64_t inner = shape[r - 1], ist = st[r - 1];
  int64_t off = base;
  for (int64_t k = 0; k < total; k += inner) {
    for (int64_t j = 0; j < inner; ++j) dst[k + j] = src[off + j * ist];
    for (size_t d = r - 1; d-- > 0;) {
      off += st[d];
      if (++idx[d] < shape[d]) break;
      off -= st[d] * shape[d];
      idx[d] = 0;
    }
  }
}

void strided(const Tensor& in, Tensor& out, const std::vector<int64_t>& st, int64_t base) {
  with_storage(in, out, [&](auto& o, const auto& i) { strided_copy(out.shape(), st, base, i, o); });
}

void transpose_into(const Tensor& in, Tensor& out, const std::vector<int64_t>& perm) {
  std::vector<int64_t> ist = ir::strides_of(in.shape()), st;
  for (int64_t p : perm) st.push_back(ist[p]);
  strided(in, out, st, 0);
}

void reshape_like(const Node&, const Ins& in, Outs& out) {
  out[0] = in[0]->reshaped(out[0].shape());
}

void transpose(const Node& n, const Ins& in, Outs& out) {
  transpose_into(*in[0], out[0], n.attr_ints("perm"));
}

void concat(const Node& n, const Ins& in, Outs& out) {
  const int64_t axis = n.attr_int("axis");
  const Shape& os = out[0].shape();
  const int64_t outer = ir::num_elements(Shape(os.begin(), os.begin() + axis));
  const int64_t inner = ir::num_elements(Shape(os.begin() + axis + 1, os.end()));
  with_storage(*in[0], out[0], [&](auto& o, const auto&) {
    int64_t pos = 0;
    for (int64_t a = 0; a < outer; ++a)
      for (const Tensor* t : in) {
        const int64_t chunk = t->shape()[axis] * inner;
        const auto& src = [&]() -> const auto& {
          if constexpr (std::is_same_v<std::decay_t<decltype(o)>, std::vector<float>>)
            return t->floats();
          else
            return t->ints();
        }
        ();
        std::copy(src.begin() + a * chunk, src.begin() + (a + 1) * chunk, o.begin() + pos);
        pos += chunk;
      }
  });
}

void split(const Node& n, const Ins& in, Outs& out) {
  const int64_t axis = n.attr_int("axis");
  const Shape& s = in[0]->shape();
  std::vector<int64_t> st = ir::strides_of(s);
  int64_t start = 0;
  for (Tensor& o : out) {
    strided(*in[0], o, st, start * st[axis]);
    start += o.shape()[axis];
  }
}

void slice(const Node& n, const Ins& in, Outs& out) {
  std::vector<ir::SliceDim> dims = ir::slice_dims(n, in[0]->shape());
  std::vector<int64_t> ist = ir::strides_of(in[0]->shape()), st(dims.size());
  int64_t base = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    // A dim of one element never steps (a huge step would overflow the stride).
    st[d] = dims[d].count > 1 ? ist[d] * dims[d].step : 0;
    if (dims[d].count > 0) base += dims[d].start * ist[d];
  }
  strided(*in[0], out[0], st, base);
}

int64_t fix_index(int64_t i, int64_t dim) {
  if (i < -dim || i >= dim)
    kfail("index " + std::to_string(i) + " is out of range for a dim of size " +
          std::to_string(dim));
  return i < 0 ? i + dim : i;
}

void gather(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t axis = n.attr_int("axis");
  const int64_t pre = ir::num_elements(Shape(s.begin(), s.begin() + axis)), D = s[axis];
  const int64_t post = ir::num_elements(Shape(s.begin() + axis + 1, s.end()));
  const auto& ind = in[1]->ints();
  std::vector<int64_t> fixed(ind.size());
  for (size_t j = 0; j < ind.size(); ++j) fixed[j] = fix_index(ind[j], D);
  with_storage(*in[0], out[0], [&](auto& o, const auto& x) {
    int64_t pos = 0;
    for (int64_t p = 0; p < pre; ++p)
      for (int64_t j : fixed) {
        std::copy(x.begin() + (p * D + j) * post, x.begin() + (p * D + j + 1) * post,
                  o.begin() + pos);
        pos += post;
      }
  });
}

void gather_elements(const Node& n, const Ins& in, Outs& out) {
  const Shape& ds = in[0]->shape();
  const Shape& is = in[1]->shape();
  const int64_t axis = n.attr_int("axis");
  std::vector<int64_t> dst = ir::strides_of(ds);
  const auto& ind = in[1]->ints();
  with_storage(*in[0], out[0], [&](auto& o, const auto& x) {
    std::vector<int64_t> idx(is.size(), 0);
    for (int64_t k = 0; k < static_cast<int64_t>(ind.size()); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < is.size(); ++d) {
        int64_t c = static_cast<int64_t>(d) == axis ? fix_index(ind[k], ds[d]) : idx[d];
        if (c >= ds[d]) kfail("indices shape exceeds the data shape outside the axis");
        off += c * dst[d];
      }
      o[k] = x[off];
      for (size_t d = is.size(); d-- > 0;) {
        if (++idx[d] < is[d]) break;
        idx[d] = 0;
      }
    }
  });
}

void expand(const Node&, const Ins& in, Outs& out) {
  strided(*in[0], out[0], broadcast_strides(in[0]->shape(), out[0].shape()), 0);
}

void tile(const Node&, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const Shape& os = out[0].shape();
  std::vector<int64_t> ist = ir::strides_of(s);
  with_storage(*in[0], out[0], [&](auto& o, const auto& x) {
    std::vector<int64_t> idx(os.size(), 0);
    for (int64_t k = 0; k < out[0].numel(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < os.size(); ++d) off += (idx[d] % s[d]) * ist[d];
      o[k] = x[off];
      for (size_t d = os.size(); d-- > 0;) {
        if (++idx[d] < os[d]) break;
        idx[d] = 0;
      }
    }
  });
}

void pad(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const Shape& os = out[0].shape();
  const auto& pads = n.attr_ints("pads");
  const std::string& mode = n.attr_string("mode");
  const size_t r = s.size();
  const float value = n.attr_float("value");
  std::vector<int64_t> ist = ir::strides_of(s);
  auto src_index = [&](int64_t c, int64_t dim) -> int64_t {
    if (c >= 0 && c < dim) return c;
    if (mode == "constant") return -1;
    if (mode == "edge") return c < 0 ? 0 : dim - 1;
    if (dim == 1) return 0;
    // reflect (mirror without repeating the edge), period 2*(dim-1)
    const int64_t period = 2 * (dim - 1);
    c %= period;
    if (c < 0) c += period;
    return c < dim ? c : period - c;
  };
  with_storage(*in[0], out[0], [&](auto& o, const auto& x) {
    using T = typename std::decay_t<decltype(o)>::value_type;
    const T fill = static_cast<T>(value);
    std::vector<int64_t> idx(r, 0);
    for (int64_t k = 0; k < out[0].numel(); ++k) {
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < r; ++d) {
        int64_t c = src_index(idx[d] - pads[d], s[d]);
        if (c < 0) {
          inside = false;
          break;
        }
        off += c * ist[d];
      }
      o[k] = inside ? x[off] : fill;
      for (size_t d = r; d-- > 0;) {
        if (++idx[d] < os[d]) break;
        idx[d] = 0;
      }
    }
  });
}

void depth_space(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t b = n.attr_int("blocksize"), N = s[0], C = s[1], H = s[2], W = s[3];
  Shape mid;
  std::vector<int64_t> perm;
  if (n.op == "SpaceToDepth") {
    mid = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
  } else if (n.attr_string("mode") == "DCR") {
    mid = {N, b, b, C / (b * b), H, W};
    perm = {0, 3, 4, 1, 5, 2};
  } else {
    mid = {N, C / (b * b), b, b, H, W};
    perm = {0, 1, 4, 2, 5, 3};
  }
  Tensor x = in[0]->reshaped(mid);
  Shape tshape;
  for (int64_t p : perm) tshape.push_back(mid[p]);
  Tensor t(out[0].elem(), tshape);
  transpose_into(x, t, perm);
  out[0] = t.reshaped(out[0].shape());
}

void trilu(const Node& n, const Ins& in, Outs& out) {
  const Shape& s = in[0]->shape();
  const int64_t R = s[s.size() - 2], Cc = s[s.size() - 1],
                mats = in[0]->numel() / std::max<int64_t>(R * Cc, 1);
  const bool upper = n.attr_int("upper") != 0;
  const int64_t kd = n.attr_int("k");
  with_storage(*in[0], out[0], [&](auto& o, const auto& x) {
    for (int64_t m = 0; m < mats; ++m)
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < Cc; ++j) {
          const int64_t k = (m * R + i) * Cc + j;
          const bool keep = upper ? (j - i >= kd) : (j - i <= kd);
          o[k] = keep ? x[k] : 0;
        }
  });
}

// Shape and Size read the input's type from the node: folding calls them with no
// input data.
void shape_op(const Node& n, const Ins&, Outs& out) {
  const Shape& s = n.inputs[0]->shape();
  auto& o = out[0].ints();
  for (int64_t d = n.attr_int("start"), k = 0; d < n.attr_int("end"); ++d, ++k) o[k] = s[d];
}

void constant_of_shape(const Node& n, const Ins&, Outs& out) {
  const Tensor& v = n.attr_tensor("value");
  if (out[0].holds_doubles())
    std::fill(out[0].doubles().begin(), out[0].doubles().end(), v.at(0));
  else if (out[0].holds_floats())
    std::fill(out[0].floats().begin(), out[0].floats().end(), v.floats()[0]);
  else
    std::fill(out[0].ints().begin(), out[0].ints().end(), v.ints()[0]);
}

void range(const Node&, const Ins& in, Outs& out) {
  const double start = in[0]->at(0), delta = in[2]->at(0);
  if (out[0].holds_floats()) {
    auto& o = out[0].floats();
    for (size_t k = 0; k < o.size(); ++k)
      o[k] = static_cast<float>(start + static_cast<double>(k) * delta);
  } else {
    auto& o = out[0].ints();
    const int64_t s = in[0]->ints()[0], d = in[2]->ints()[0];
    for (size_t k = 0; k < o.size(); ++k) o[k] = s + static_cast<int64_t>(k) * d;
  }
}

}  // namespace

void register_shape(KernelMap& m) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) m[op] = reshape_like;
  m["Transpose"] = transpose;
  m["Concat"] = concat;
  m["Split"] = split;
  m["Slice"] = slice;
  m["Gather"] = gather;
  m["GatherElements"] = gather_elements;
  m["Expand"] = expand;
  m["Tile"] = tile;
  m["Pad"] = pad;
  m["DepthToSpace"] = depth_space;
  m["SpaceToDepth"] = depth_space;
  m["Trilu"] = trilu;
  m["Shape"] = shape_op;
  m["Size"] = [](const Node& n, const Ins&, Outs& out) {
    out[0].ints()[0] = n.inputs[0]->type.numel();
  };
  m["ConstantOfShape"] = constant_of_shape;
  m["Range"] = range;
}

}  // namespace trnsim::interp
