#include "compiler/ir/trn_ops.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>

#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"

namespace trnsim::ir {
namespace {

// ---------------------------------------------------------------------------
// expr parsing

class ExprParser {
 public:
  explicit ExprParser(const std::string& s) : s_(s) {}

  std::vector<FusedStep> parse() {
    std::vector<FusedStep> steps;
    do {
      steps.push_back(step());
      skip();
    } while (accept(';'));
    skip();
    if (pos_ < s_.size()) error("expected ';' or the end of the expr");
    return steps;
  }

 private:
  [[noreturn]] void error(const std::string& msg) const {
    throw CompileError("expr col " + std::to_string(pos_ + 1) + ": " + msg);
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char peek() {
    skip();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) error(std::string("expected '") + c + "'");
  }
  static bool word_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }
  std::string word(const std::string& what) {
    skip();
    size_t b = pos_;
    while (pos_ < s_.size() && word_char(s_[pos_])) ++pos_;
    if (b == pos_) error("expected " + what);
    return s_.substr(b, pos_ - b);
  }
  int index() {
    size_t b = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (b == pos_ || pos_ - b > 6) error("expected an operand index");
    return std::stoi(s_.substr(b, pos_ - b));
  }

  FusedStep step() {
    FusedStep st;
    st.op = word("an op name");
    expect('(');
    if (!accept(')')) {
      do {
        char c = peek();
        if (c != '%' && c != '$') error("expected an operand (%k or $j)");
        ++pos_;
        st.args.push_back({c == '$', index()});
      } while (accept(','));
      expect(')');
    }
    if (accept('{')) {
      if (!accept('}')) {
        do {
          std::string key = word("an attribute name");
          expect('=');
          if (st.attrs.count(key)) error("attribute '" + key + "' is given twice");
          st.attrs[key] = value();
        } while (accept(','));
        expect('}');
      }
    }
    return st;
  }

  // A number token; `is_float` when it has '.', an exponent, or is inf/nan.
  std::string number(bool& is_float) {
    skip();
    size_t b = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    if (s_.compare(pos_, 3, "inf") == 0 || s_.compare(pos_, 3, "nan") == 0) {
      pos_ += 3;
      is_float = true;
      return s_.substr(b, pos_ - b);
    }
    is_float = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+'))
          ++pos_;
      } else {
        break;
      }
    }
    std::string t = s_.substr(b, pos_ - b);
    if (t.empty() || t == "-" || t == "+") error("expected a number");
    return t;
  }
  float to_float(const std::string& t) const {
    if (t == "inf" || t == "+inf") return std::numeric_limits<float>::infinity();
    if (t == "-inf") return -std::numeric_limits<float>::infinity();
    if (t.find("nan") != std::string::npos) return std::numeric_limits<float>::quiet_NaN();
    char* end = nullptr;
    float v = std::strtof(t.c_str(), &end);
    if (!end || *end) error("bad number '" + t + "'");
    return v;
  }
  int64_t to_int(const std::string& t) const {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (!end || *end || errno == ERANGE) error("bad integer '" + t + "'");
    return v;
  }

  Attribute value() {
    char c = peek();
    if (c == '"') {
      ++pos_;
      std::string r;
      for (;;) {
        if (pos_ >= s_.size()) error("unterminated string");
        char d = s_[pos_++];
        if (d == '"') break;
        if (d == '\\' && pos_ < s_.size()) d = s_[pos_++];
        r += d;
      }
      return r;
    }
    if (s_.compare(pos_, 6, "ints[]") == 0) {
      pos_ += 6;
      return std::vector<int64_t>{};
    }
    if (s_.compare(pos_, 8, "floats[]") == 0) {
      pos_ += 8;
      return std::vector<float>{};
    }
    if (c == '[') {
      ++pos_;
      std::vector<std::string> toks;
      bool any_float = false;
      if (!accept(']')) {
        do {
          bool f = false;
          toks.push_back(number(f));
          any_float = any_float || f;
        } while (accept(','));
        expect(']');
      }
      if (any_float) {
        std::vector<float> v;
        for (const auto& t : toks) v.push_back(to_float(t));
        return v;
      }
      std::vector<int64_t> v;
      for (const auto& t : toks) v.push_back(to_int(t));
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' ||
        s_.compare(pos_, 3, "inf") == 0 || s_.compare(pos_, 3, "nan") == 0) {
      bool f = false;
      std::string t = number(f);
      if (f) return to_float(t);
      return to_int(t);
    }
    return word("an attribute value");  // a bare-word string
  }

  const std::string& s_;
  size_t pos_ = 0;
};

std::string fmt_float(float f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", f);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

bool bare_word(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s == "inf" || s == "nan" ||
      s.rfind("ints[", 0) == 0 || s.rfind("floats[", 0) == 0)
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

std::string fmt_value(const Attribute& a) {
  const auto& s = a.storage();
  switch (a.kind()) {
    case Attribute::Kind::kInt:
      return std::to_string(std::get<int64_t>(s));
    case Attribute::Kind::kFloat:
      return fmt_float(std::get<float>(s));
    case Attribute::Kind::kString: {
      const auto& v = std::get<std::string>(s);
      if (bare_word(v)) return v;
      std::string r = "\"";
      for (char c : v) {
        if (c == '"' || c == '\\') r += '\\';
        r += c;
      }
      return r + "\"";
    }
    case Attribute::Kind::kInts: {
      const auto& v = std::get<std::vector<int64_t>>(s);
      if (v.empty()) return "ints[]";
      std::string r = "[";
      for (size_t k = 0; k < v.size(); ++k) r += (k ? "," : "") + std::to_string(v[k]);
      return r + "]";
    }
    case Attribute::Kind::kFloats: {
      const auto& v = std::get<std::vector<float>>(s);
      if (v.empty()) return "floats[]";
      std::string r = "[";
      for (size_t k = 0; k < v.size(); ++k) r += (k ? ", " : "") + fmt_float(v[k]);
      return r + "]";
    }
    case Attribute::Kind::kTensor:
    case Attribute::Kind::kGraph:
      break;
  }
  throw CompileError("fused expr: tensor attributes cannot be written in an expr");
}

const std::set<std::string, std::less<>>& elementwise_ops() {
  static const std::set<std::string, std::less<>> s{
      "Sigmoid",     "Tanh",     "Erf",      "Exp",       "Log",       "Sqrt",
      "Reciprocal",  "Softplus", "Softsign", "HardSwish", "Sin",       "Cos",
      "Tan",         "Asin",     "Acos",     "Atan",      "Sinh",      "Cosh",
      "Asinh",       "Acosh",    "Atanh",    "Floor",     "Ceil",      "Round",
      "HardSigmoid", "Elu",      "Celu",     "Selu",      "LeakyRelu", "ThresholdedRelu",
      "Relu",        "Neg",      "Abs",      "Sign",      "Clip",      "Add",
      "Sub",         "Mul",      "Div",      "Pow",       "Max",       "Min",
      "PRelu",       "trn.Gelu", "trn.Silu"};
  return s;
}

std::string step_label(size_t j, const FusedStep& st) {
  return "step " + std::to_string(j) + " (" + st.op + ")";
}

}  // namespace

std::vector<FusedStep> parse_fused_expr(const std::string& expr) {
  return ExprParser(expr).parse();
}

std::string format_fused_expr(const std::vector<FusedStep>& steps) {
  std::string r;
  for (size_t j = 0; j < steps.size(); ++j) {
    const FusedStep& st = steps[j];
    if (j) r += "; ";
    r += st.op + "(";
    for (size_t k = 0; k < st.args.size(); ++k)
      r += (k ? ", " : "") + std::string(st.args[k].is_step ? "$" : "%") +
           std::to_string(st.args[k].index);
    r += ")";
    if (!st.attrs.empty()) {
      r += "{";
      bool first = true;
      for (const auto& [key, a] : st.attrs) {
        r += (first ? "" : ", ") + key + "=" + fmt_value(a);
        first = false;
      }
      r += "}";
    }
  }
  return r;
}

bool is_fusible_elementwise(std::string_view op) {
  return elementwise_ops().count(op) != 0;
}

bool is_matmul_anchor(std::string_view op) {
  return op == "MatMul" || op == "Gemm" || op == "Conv" || op == "ConvTranspose";
}

std::vector<FusedStep> fused_steps(const Node& n) {
  return parse_fused_expr(n.attr_string("expr"));
}

Graph fused_body(const Node& n, bool inline_constants) {
  const bool epilogue = n.op == "trn.MatMulEpilogue";
  if (!epilogue && n.op != "trn.Elementwise")
    throw CompileError("fused_body: op " + n.op + " has no fused body");
  std::vector<FusedStep> steps = fused_steps(n);
  Graph body;
  body.name = n.name.empty() ? "body" : n.name;
  std::vector<Value*> ins;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Value* v = n.inputs[k];
    if (!v)
      throw CompileError("input " + std::to_string(k) +
                         " is absent (fused ops take no "
                         "optional inputs)");
    std::string name = std::to_string(k);
    if (inline_constants && v->is_constant)
      ins.push_back(v->has_data() ? body.add_constant(name, *v->data)
                                  : body.add_constant(name, v->type));
    else
      ins.push_back(body.add_input(name, v->type));
  }
  std::vector<Value*> results;
  std::vector<int> step_uses(steps.size(), 0);
  for (size_t j = 0; j < steps.size(); ++j) {
    const FusedStep& st = steps[j];
    const std::string where = step_label(j, st) + ": ";
    const bool anchor = epilogue && j == 0;
    if (anchor) {
      if (!is_matmul_anchor(st.op))
        throw CompileError(where +
                           "step 0 of trn.MatMulEpilogue must be MatMul, Gemm, Conv "
                           "or ConvTranspose");
      if (st.args.size() < 2 || st.args[0] != FusedArg{false, 0} ||
          st.args[1] != FusedArg{false, 1})
        throw CompileError(where + "must read %0 and %1 as its first two operands");
      if (st.attrs.count("compute_dtype"))
        throw CompileError(where + "compute_dtype belongs on the trn.MatMulEpilogue node");
    } else if (!is_fusible_elementwise(st.op)) {
      throw CompileError(where + "is not an elementwise op that can be fused");
    }
    std::vector<Value*> args;
    int prev_reads = 0;
    for (const FusedArg& a : st.args) {
      if (a.is_step) {
        if (a.index < 0 || a.index >= static_cast<int>(j))
          throw CompileError(where + "reads $" + std::to_string(a.index) +
                             ", which is not an earlier step");
        if (epilogue && a.index != static_cast<int>(j) - 1)
          throw CompileError(where + "epilogue steps may only read the previous step ($" +
                             std::to_string(j - 1) + ")");
        ++step_uses[a.index];
        if (a.index == static_cast<int>(j) - 1) ++prev_reads;
        args.push_back(results[a.index]);
      } else {
        if (a.index < 0 || a.index >= static_cast<int>(ins.size()))
          throw CompileError(where + "reads %" + std::to_string(a.index) + " but the node has " +
                             std::to_string(ins.size()) + " inputs");
        args.push_back(ins[a.index]);
      }
    }
    if (epilogue && j > 0 && prev_reads != 1)
      throw CompileError(where + "an epilogue step must read the previous step ($" +
                         std::to_string(j - 1) + ") exactly once");
    std::map<std::string, Attribute> attrs = st.attrs;
    if (anchor && n.has_attr("compute_dtype")) attrs["compute_dtype"] = n.attrs.at("compute_dtype");
    Node* sn = make_node(body, st.op, std::move(args), std::move(attrs), "step" + std::to_string(j),
                         1, {"s" + std::to_string(j)});
    if (!anchor && !is_float(sn->outputs[0]->elem()))
      throw CompileError(where + "gives " + sn->outputs[0]->type.str() +
                         "; fused steps must give floats");
    results.push_back(sn->outputs[0]);
  }
  if (results.empty()) throw CompileError("empty expr");
  body.add_output(results.back());
  return body;
}

std::vector<TensorType> infer_trn_norm(const Node& n) {
  const Value* x = n.input(0);
  if (!x) throw CompileError("input 0 is required");
  if (!is_float(x->elem()))
    throw CompileError("input 0 must be floating point, got " + x->type.str());
  int64_t axis = n.attr_int("axis");
  Shape inner(x->shape().begin() + axis, x->shape().end());
  for (size_t k = 1; k < n.inputs.size(); ++k)
    if (const Value* p = n.input(k)) {
      if (p->elem() != x->elem())
        throw CompileError("input " + std::to_string(k) + " is " + p->type.str() + ", input 0 is " +
                           x->type.str());
      if (broadcast_shapes({inner, p->shape()}) != inner)
        throw CompileError("input " + std::to_string(k) + " " + p->type.str() +
                           " does not broadcast to the normalized dims " + shape_str(inner));
    }
  if (n.attr_float("epsilon") < 0) throw CompileError("epsilon must not be negative");
  return {x->type};
}

std::vector<TensorType> infer_trn_fused(const Node& n) {
  Graph body = fused_body(n, /*inline_constants=*/false);
  return {body.outputs()[0]->type};
}

std::optional<ElemType> compute_dtype(const Node& n) {
  if (!n.has_attr("compute_dtype")) return std::nullopt;
  const std::string& s = n.attr_string("compute_dtype");
  auto t = parse_elem_type(s);
  if (!t || !is_float(*t))
    throw CompileError(n.label() + ": compute_dtype '" + s +
                       "' is not a floating element type (fp32, bf16, fp16, fp8e4m3, fp8e5m2)");
  return t;
}

}  // namespace trnsim::ir
