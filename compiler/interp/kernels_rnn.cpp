// Kernels for the recurrent ops LSTM, GRU and RNN (ONNX semantics; see
// compiler/ir/ops.h for the canonical attributes). Plain loops in the spec's
// notation: gate pre-activations accumulate in double, state is fp32.
#include <algorithm>
#include <cmath>

#include "compiler/interp/kernels.h"
#include "compiler/ir/ops.h"

namespace trnsim::interp {
namespace {

float activate(const ir::RnnActivation& a, float x) {
  const std::string& f = a.name;
  if (f == "Sigmoid") return 1.0f / (1.0f + std::exp(-x));
  if (f == "Tanh") return std::tanh(x);
  if (f == "Relu") return std::max(0.0f, x);
  if (f == "Affine") return a.alpha * x + a.beta;
  if (f == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (f == "ThresholdedRelu") return x > a.alpha ? x : 0.0f;
  if (f == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (f == "HardSigmoid") return std::clamp(a.alpha * x + a.beta, 0.0f, 1.0f);
  if (f == "Elu") return x >= 0 ? x : a.alpha * (std::exp(x) - 1.0f);
  if (f == "Softsign") return x / (1.0f + std::fabs(x));
  if (f == "Softplus") return std::log1p(std::exp(x));
  kfail("unknown activation '" + f + "'");
}

// One recurrent op. Indexing follows the layout: X[t][b] or X[b][t], Y[t][d][b] or
// Y[b][t][d], state [d][b] or [b][d].
void rnn(const Node& n, const Ins& in, Outs& out) {
  const std::string& op = n.op;
  const int64_t G = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const std::string& direction = n.attr_string("direction");
  const int64_t D = direction == "bidirectional" ? 2 : 1;
  const bool layout1 = n.attr_int("layout") != 0;
  const int64_t H = n.attr_int("hidden_size");
  const bool clip = n.has_attr("clip");
  const float clip_at = clip ? n.attr_float("clip") : 0.0f;
  const bool input_forget = op == "LSTM" && n.attr_int("input_forget") != 0;
  const bool lbr = op == "GRU" && n.attr_int("linear_before_reset") != 0;
  const auto acts = ir::rnn_activations(n);

  const Shape& xs = in[0]->shape();
  const int64_t S = layout1 ? xs[1] : xs[0], B = layout1 ? xs[0] : xs[1], I = xs[2];
  const std::vector<float>& X = in[0]->floats();
  const std::vector<float>& W = in[1]->floats();
  const std::vector<float>& R = in[2]->floats();
  const Tensor* bias = in.size() > 3 ? in[3] : nullptr;
  const Tensor* lens = in.size() > 4 ? in[4] : nullptr;
  const Tensor* h0 = in.size() > 5 ? in[5] : nullptr;
  const Tensor* c0 = op == "LSTM" && in.size() > 6 ? in[6] : nullptr;
  const Tensor* peep = op == "LSTM" && in.size() > 7 ? in[7] : nullptr;

  std::vector<int64_t> len(B, S);
  if (lens)
    for (int64_t b = 0; b < B; ++b) {
      len[b] = lens->ints()[b];
      if (len[b] < 0 || len[b] > S)
        kfail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(len[b]) +
              " is outside [0, " + std::to_string(S) + "]");
    }
  auto xat = [&](int64_t t, int64_t b) { return &X[((layout1 ? b * S + t : t * B + b)) * I]; };
  auto state_off = [&](int64_t d, int64_t b) { return (layout1 ? b * D + d : d * B + b) * H; };
  auto yoff = [&](int64_t t, int64_t d, int64_t b) {
    return (layout1 ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
  };
  float* Y = out.size() > 0 ? out[0].floats().data() : nullptr;
  float* Yh = out.size() > 1 ? out[1].floats().data() : nullptr;
  float* Yc = out.size() > 2 ? out[2].floats().data() : nullptr;
  auto clipped = [&](double v) {
    float f = static_cast<float>(v);
    return clip ? std::clamp(f, -clip_at, clip_at) : f;
  };

  std::vector<double> gx(G * H), gh(G * H);
  std::vector<float> h(H), c(H), hn(H), z(H), rg(H);
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const auto& fa = acts[d];
    const float* Wd = &W[d * G * H * I];
    const float* Rd = &R[d * G * H * H];
    const float* Wb = bias ? &bias->floats()[d * 2 * G * H] : nullptr;
    const float* Rb = bias ? Wb + G * H : nullptr;
    const float* P = peep ? &peep->floats()[d * 3 * H] : nullptr;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t so = state_off(d, b);
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0 ? h0->floats()[so + j] : 0.0f;
        c[j] = c0 ? c0->floats()[so + j] : 0.0f;
      }
      for (int64_t step = 0; step < len[b]; ++step) {
        const int64_t t = reverse ? len[b] - 1 - step : step;
        const float* x = xat(t, b);
        // gx = W x + Wb, gh = R h + Rb, per gate row.
        for (int64_t r = 0; r < G * H; ++r) {
          double sx = Wb ? Wb[r] : 0.0, sh = Rb ? Rb[r] : 0.0;
          for (int64_t i = 0; i < I; ++i) sx += static_cast<double>(Wd[r * I + i]) * x[i];
          for (int64_t i = 0; i < H; ++i) sh += static_cast<double>(Rd[r * H + i]) * h[i];
          gx[r] = sx;
          gh[r] = sh;
        }
        if (op == "RNN") {
          for (int64_t j = 0; j < H; ++j) hn[j] = activate(fa[0], clipped(gx[j] + gh[j]));
        } else if (op == "GRU") {
          // Gate rows: z, r, h.
          for (int64_t j = 0; j < H; ++j) {
            z[j] = activate(fa[0], clipped(gx[j] + gh[j]));
            rg[j] = activate(fa[0], clipped(gx[H + j] + gh[H + j]));
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre;
            if (lbr) {
              pre = gx[2 * H + j] + rg[j] * gh[2 * H + j];
            } else {
              // (r . h) R_h^T + Rb_h: the recurrence sees the reset hidden state.
              double s = Rb ? Rb[2 * H + j] : 0.0;
              for (int64_t i = 0; i < H; ++i)
                s += static_cast<double>(Rd[(2 * H + j) * H + i]) * (rg[i] * h[i]);
              pre = gx[2 * H + j] + s;
            }
            float hh = activate(fa[1], clipped(pre));
            hn[j] = (1.0f - z[j]) * hh + z[j] * h[j];
          }
        } else {
          // Gate rows: i, o, f, c; peepholes: i, o, f.
          for (int64_t j = 0; j < H; ++j) {
            double pi = gx[j] + gh[j] + (P ? P[j] * c[j] : 0.0f);
            double pf = gx[2 * H + j] + gh[2 * H + j] + (P ? P[2 * H + j] * c[j] : 0.0f);
            float ig = activate(fa[0], clipped(pi));
            float fg = input_forget ? 1.0f - ig : activate(fa[0], clipped(pf));
            float cg = activate(fa[1], clipped(gx[3 * H + j] + gh[3 * H + j]));
            float cn = fg * c[j] + ig * cg;
            double po = gx[H + j] + gh[H + j] + (P ? P[H + j] * cn : 0.0f);
            float og = activate(fa[0], clipped(po));
            c[j] = cn;
            hn[j] = og * activate(fa[2], clipped(cn));
          }
        }
        h = hn;
        if (Y) std::copy(h.begin(), h.end(), Y + yoff(t, d, b));
      }
      if (Yh) std::copy(h.begin(), h.end(), Yh + so);
      if (Yc) std::copy(c.begin(), c.end(), Yc + so);
    }
  }
}

}  // namespace

void register_rnn(KernelMap& m) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) m[op] = rnn;
}

}  // namespace trnsim::interp
