#include "compiler/ir/text.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"

namespace trnsim::ir {
namespace {

// ---------------------------------------------------------------------------
// Printing

bool bare_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
         c == '-';
}

std::string ident(const std::string& s) {
  bool bare = !s.empty();
  for (char c : s) bare = bare && bare_char(c);
  if (bare) return s;
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}

std::string fmt_float(float f, bool mark) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", f);
  std::string s = buf;
  if (mark && s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string fmt_data(const Tensor& t) {
  std::string r = "[";
  for (int64_t k = 0; k < t.numel(); ++k) {
    if (k) r += ", ";
    r += t.holds_floats() ? fmt_float(t.floats()[k], false) : std::to_string(t.ints()[k]);
  }
  return r + "]";
}

std::string fmt_attr(const Attribute& a) {
  const auto& s = a.storage();
  switch (a.kind()) {
    case Attribute::Kind::kInt:
      return std::to_string(std::get<int64_t>(s));
    case Attribute::Kind::kFloat:
      return fmt_float(std::get<float>(s), true);
    case Attribute::Kind::kString: {
      std::string r = "\"";
      for (char c : std::get<std::string>(s)) {
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
      for (size_t k = 0; k < v.size(); ++k) r += (k ? ", " : "") + fmt_float(v[k], true);
      return r + "]";
    }
    case Attribute::Kind::kTensor: {
      const Tensor& t = std::get<Tensor>(s);
      return t.type().str() + " " + fmt_data(t);
    }
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Parsing

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  Graph parse() {
    skip_space();
    expect_word("graph");
    g_.name = parse_ident("graph name");
    expect('{');
    for (;;) {
      skip_space();
      if (at_end()) error("missing '}' at the end of the graph");
      if (peek() == '}') {
        ++pos_;
        break;
      }
      statement();
    }
    skip_space();
    if (!at_end()) error("unexpected text after the graph");
    try {
      g_.verify();
    } catch (const CompileError& e) {
      throw CompileError(file_ + ": error: " + e.what());
    }
    return std::move(g_);
  }

 private:
  // --- lexing helpers -------------------------------------------------------
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }

  [[noreturn]] void error(const std::string& msg) const { error_at(pos_, msg); }
  [[noreturn]] void error_at(size_t pos, const std::string& msg) const {
    int line = 1, col = 1;
    for (size_t k = 0; k < pos && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw CompileError(file_ + ":" + std::to_string(line) + ":" + std::to_string(col) +
                       ": error: " + msg);
  }

  // Skips blanks and comments, including newlines.
  void skip_space() {
    while (!at_end()) {
      char c = s_[pos_];
      if (c == '#') {
        while (!at_end() && s_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        break;
      }
    }
  }
  // Skips blanks and comments on the current line only.
  void skip_inline() {
    while (!at_end()) {
      char c = s_[pos_];
      if (c == '#') {
        while (!at_end() && s_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }
  bool accept(char c) {
    skip_space();
    if (peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) error(std::string("expected '") + c + "'");
  }
  std::string word() {
    skip_space();
    size_t b = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    return s_.substr(b, pos_ - b);
  }
  void expect_word(const std::string& w) {
    size_t at = pos_;
    if (word() != w) error_at(at, "expected '" + w + "'");
  }
  std::string quoted() {
    // At '"'.
    ++pos_;
    std::string r;
    for (;;) {
      if (at_end() || peek() == '\n') error("unterminated string");
      char c = s_[pos_++];
      if (c == '"') break;
      if (c == '\\') {
        if (at_end()) error("unterminated string");
        c = s_[pos_++];
      }
      r += c;
    }
    return r;
  }
  std::string parse_ident(const std::string& what) {
    skip_space();
    if (peek() == '"') return quoted();
    size_t b = pos_;
    while (!at_end() && bare_char(s_[pos_])) ++pos_;
    if (b == pos_) error("expected " + what);
    return s_.substr(b, pos_ - b);
  }
  std::string value_name() {
    expect('%');
    if (std::isspace(static_cast<unsigned char>(peek()))) error("expected a value name after '%'");
    return parse_ident("value name");
  }
  int64_t parse_int() {
    skip_space();
    size_t b = pos_;
    if (peek() == '-' || peek() == '+') ++pos_;
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    std::string t = s_.substr(b, pos_ - b);
    if (t.empty() || t == "-" || t == "+") error_at(b, "expected an integer");
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (errno == ERANGE) error_at(b, "integer '" + t + "' is out of range");
    return v;
  }
  // A number token: returns its text; `is_float` if it has '.', an exponent, or is
  // inf/nan.
  std::string number(bool& is_float) {
    skip_space();
    size_t b = pos_;
    if (peek() == '-' || peek() == '+') ++pos_;
    if (s_.compare(pos_, 3, "inf") == 0 || s_.compare(pos_, 3, "nan") == 0) {
      pos_ += 3;
      is_float = true;
      return s_.substr(b, pos_ - b);
    }
    is_float = false;
    while (!at_end()) {
      char c = s_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && (peek() == '-' || peek() == '+')) ++pos_;
      } else {
        break;
      }
    }
    std::string t = s_.substr(b, pos_ - b);
    if (t.empty() || t == "-" || t == "+") error_at(b, "expected a number");
    return t;
  }
  float to_float(const std::string& t, size_t at) const {
    if (t == "inf" || t == "+inf") return std::numeric_limits<float>::infinity();
    if (t == "-inf") return -std::numeric_limits<float>::infinity();
    if (t == "nan" || t == "-nan" || t == "+nan") return std::numeric_limits<float>::quiet_NaN();
    char* end = nullptr;
    float v = std::strtof(t.c_str(), &end);
    if (!end || *end) error_at(at, "bad number '" + t + "'");
    return v;
  }
  int64_t to_int(const std::string& t, size_t at) const {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (!end || *end) error_at(at, "expected an integer, got '" + t + "'");
    if (errno == ERANGE) error_at(at, "integer '" + t + "' is out of range");
    return v;
  }

  TensorType parse_type() {
    skip_space();
    size_t at = pos_;
    std::string e = word();
    auto elem = parse_elem_type(e);
    if (!elem) error_at(at, "unknown element type '" + e + "'");
    TensorType t;
    t.elem = *elem;
    expect('[');
    if (!accept(']')) {
      do {
        size_t dat = pos_;
        int64_t d = parse_int();
        if (d < 0) error_at(dat, "dims must not be negative");
        t.shape.push_back(d);
      } while (accept(','));
      expect(']');
    }
    return t;
  }

  Tensor parse_data(const TensorType& t) {
    expect('[');
    std::vector<float> fs;
    std::vector<int64_t> is;
    if (!accept(']')) {
      do {
        skip_space();
        size_t at = pos_;
        bool f = false;
        std::string tok = number(f);
        if (is_float(t.elem))
          fs.push_back(to_float(tok, at));
        else if (f)
          error_at(at, "expected an integer for " + std::string(elem_type_name(t.elem)) + " data");
        else
          is.push_back(to_int(tok, at));
      } while (accept(','));
      expect(']');
    }
    int64_t n =
        is_float(t.elem) ? static_cast<int64_t>(fs.size()) : static_cast<int64_t>(is.size());
    if (n != t.numel())
      error(t.str() + " needs " + std::to_string(t.numel()) + " values, got " + std::to_string(n));
    return is_float(t.elem) ? Tensor::from_floats(t.shape, std::move(fs), t.elem)
                            : Tensor::from_ints(t.shape, std::move(is), t.elem);
  }

  Attribute parse_attr_value() {
    skip_space();
    size_t at = pos_;
    char c = peek();
    if (c == '"') return Attribute(quoted());
    if (c == '[') return parse_list(at, 0);
    if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t save = pos_;
      std::string w = word();
      if (w == "ints" && peek() == '[') return parse_list(at, 1);
      if (w == "floats" && peek() == '[') return parse_list(at, 2);
      if (w == "inf" || w == "nan") {
        pos_ = save;
      } else {
        pos_ = save;
        TensorType t = parse_type();
        return Attribute(parse_data(t));
      }
    }
    bool f = false;
    std::string tok = number(f);
    return f ? Attribute(to_float(tok, at)) : Attribute(to_int(tok, at));
  }

  // kind: 0 = infer from elements, 1 = ints, 2 = floats.
  Attribute parse_list(size_t at, int kind) {
    expect('[');
    std::vector<std::string> toks;
    std::vector<size_t> where;
    bool any_float = false;
    if (!accept(']')) {
      do {
        skip_space();
        where.push_back(pos_);
        bool f = false;
        toks.push_back(number(f));
        any_float = any_float || f;
      } while (accept(','));
      expect(']');
    }
    if (kind == 1 && any_float) error_at(at, "ints list holds a float");
    if (kind == 2 || (kind == 0 && any_float)) {
      std::vector<float> v;
      for (size_t k = 0; k < toks.size(); ++k) v.push_back(to_float(toks[k], where[k]));
      return Attribute(v);
    }
    std::vector<int64_t> v;
    for (size_t k = 0; k < toks.size(); ++k) v.push_back(to_int(toks[k], where[k]));
    return Attribute(v);
  }

  Value* lookup(const std::string& name, size_t at) {
    Value* v = g_.find_value(name);
    if (!v)
      error_at(at, "value '%" + name + "' is not defined (values must be defined before use)");
    return v;
  }

  void check_new(const std::string& name, size_t at) {
    if (g_.find_value(name)) error_at(at, "value '%" + name + "' is already defined");
  }

  void end_of_statement() {
    skip_inline();
    if (!at_end() && peek() != '\n' && peek() != '}')
      error("unexpected text at the end of the statement");
  }

  void statement() {
    size_t at = pos_;
    if (peek() == '%') return node_statement();
    std::string kw = word();
    if (kw == "input") {
      skip_space();
      size_t nat = pos_;
      std::string name = value_name();
      check_new(name, nat);
      expect(':');
      g_.add_input(name, parse_type());
    } else if (kw == "const") {
      skip_space();
      size_t nat = pos_;
      std::string name = value_name();
      check_new(name, nat);
      expect(':');
      TensorType t = parse_type();
      skip_inline();
      if (peek() == '=') {
        ++pos_;
        g_.add_constant(name, parse_data(t));
      } else {
        g_.add_constant(name, t);
      }
    } else if (kw == "output") {
      do {
        skip_space();
        size_t vat = pos_;
        g_.add_output(lookup(value_name(), vat));
      } while (accept(','));
    } else {
      error_at(at, kw.empty() ? "expected a statement" : "unknown statement '" + kw + "'");
    }
    end_of_statement();
  }

  void node_statement() {
    size_t stmt_at = pos_;
    std::vector<std::pair<std::string, TensorType>> outs;
    std::vector<size_t> out_at;
    do {
      skip_space();
      out_at.push_back(pos_);
      std::string name = value_name();
      check_new(name, out_at.back());
      for (const auto& o : outs)
        if (o.first == name) error_at(out_at.back(), "value '%" + name + "' is already defined");
      expect(':');
      outs.emplace_back(name, parse_type());
    } while (accept(','));
    expect('=');
    skip_space();
    size_t op_at = pos_;
    std::string op = word();
    while (peek() == '.') {  // prefixed ops: trn.Gelu
      ++pos_;
      op += "." + word();
    }
    if (op.empty()) error("expected an op type");
    if (!find_op_schema(op)) error_at(op_at, "unknown op type '" + op + "'");
    expect('(');
    std::vector<Value*> inputs;
    if (!accept(')')) {
      do {
        skip_space();
        size_t iat = pos_;
        if (peek() == '_') {
          ++pos_;
          inputs.push_back(nullptr);
        } else {
          inputs.push_back(lookup(value_name(), iat));
        }
      } while (accept(','));
      expect(')');
    }
    std::map<std::string, Attribute> attrs;
    skip_inline();
    if (peek() == '{') {
      ++pos_;
      if (!accept('}')) {
        do {
          skip_space();
          size_t kat = pos_;
          std::string key = parse_ident("attribute name");
          if (attrs.count(key)) error_at(kat, "attribute '" + key + "' is given twice");
          expect('=');
          attrs[key] = parse_attr_value();
        } while (accept(','));
        expect('}');
      }
    }
    std::string node_name;
    skip_inline();
    if (peek() == '@') {
      ++pos_;
      node_name = parse_ident("node name");
    }
    end_of_statement();

    // Normalize and check the declared types against inference.
    Node probe;
    probe.op = op;
    probe.name = node_name;
    probe.inputs = inputs;
    probe.attrs = std::move(attrs);
    std::vector<Value> dummies(outs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      dummies[k].name = outs[k].first;
      probe.outputs.push_back(&dummies[k]);
    }
    std::vector<TensorType> types;
    try {
      normalize_node(probe);
      types = infer_types(probe);
    } catch (const CompileError& e) {
      error_at(stmt_at, probe.label() + ": " + e.what());
    }
    if (types.size() < outs.size())
      error_at(stmt_at, op + " has at most " + std::to_string(types.size()) + " outputs");
    for (size_t k = 0; k < outs.size(); ++k)
      if (types[k] != outs[k].second)
        error_at(out_at[k], "output '%" + outs[k].first + "' is written " + outs[k].second.str() +
                                " but " + op + " gives " + types[k].str());
    g_.add_node(op, std::move(inputs), outs, std::move(probe.attrs), node_name);
  }

  const std::string& s_;
  std::string file_;
  size_t pos_ = 0;
  Graph g_;
};

}  // namespace

std::string print_graph(const Graph& g, const PrintOptions& opts) {
  std::ostringstream o;
  o << "graph " << ident(g.name) << " {\n";
  for (const Value* v : g.inputs())
    o << "  input %" << ident(v->name) << ": " << v->type.str() << "\n";
  for (const auto& v : g.values()) {
    if (!v->is_constant) continue;
    o << "  const %" << ident(v->name) << ": " << v->type.str();
    if (v->has_data() && v->type.numel() <= opts.max_const_elems) o << " = " << fmt_data(*v->data);
    o << "\n";
  }
  for (const auto& n : g.nodes()) {
    o << "  ";
    for (size_t k = 0; k < n->outputs.size(); ++k)
      o << (k ? ", " : "") << "%" << ident(n->outputs[k]->name) << ": "
        << n->outputs[k]->type.str();
    o << " = " << n->op << "(";
    for (size_t k = 0; k < n->inputs.size(); ++k)
      o << (k ? ", " : "") << (n->inputs[k] ? "%" + ident(n->inputs[k]->name) : std::string("_"));
    o << ")";
    if (!n->attrs.empty()) {
      o << " {";
      bool first = true;
      for (const auto& [key, a] : n->attrs) {
        o << (first ? "" : ", ") << ident(key) << "=" << fmt_attr(a);
        first = false;
      }
      o << "}";
    }
    if (opts.node_names && !n->name.empty()) o << " @" << ident(n->name);
    o << "\n";
  }
  if (!g.outputs().empty()) {
    o << "  output ";
    for (size_t k = 0; k < g.outputs().size(); ++k)
      o << (k ? ", " : "") << "%" << ident(g.outputs()[k]->name);
    o << "\n";
  }
  o << "}\n";
  return o.str();
}

Graph parse_graph(const std::string& text, const std::string& filename) {
  return Parser(text, filename).parse();
}

}  // namespace trnsim::ir
