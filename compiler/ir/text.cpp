#include "compiler/ir/text.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "compiler/ir/error.h"
#include "compiler/ir/ops.h"
#include "models/isa/lexer.h"

namespace trnsim::ir {
namespace {

// ---------------------------------------------------------------------------
// Printing

// The lexer's view of the text: `#` comments; blanks within a line are ' ', '\t', '\r'.
constexpr isa::LexSyntax kSyntax{'#', " \t\r"};
constexpr isa::CharClass kWord{true, true, "_"};     // keywords, element types, ops
constexpr isa::CharClass kBare{true, true, "_./-"};  // unquoted names
constexpr isa::NumberSyntax kInt{true, false};
constexpr isa::NumberSyntax kNumber{true, true};

std::string ident(const std::string& s) {
  bool bare = !s.empty();
  for (char c : s) bare = bare && kBare.has(c);
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
    if (t.holds_doubles()) {
      char buf[48];
      std::snprintf(buf, sizeof buf, "%.17g", t.doubles()[k]);
      r += buf;
    } else {
      r += t.holds_floats() ? fmt_float(t.floats()[k], false) : std::to_string(t.ints()[k]);
    }
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
    case Attribute::Kind::kGraph: {
      // The body, nested one level deeper; the text form is for reading only
      // (the parser refuses graph attributes).
      const auto& body = std::get<std::shared_ptr<const Graph>>(s);
      if (!body) return "graph <none>";
      std::string text = print_graph(*body), r;
      if (!text.empty() && text.back() == '\n') text.pop_back();
      for (char c : text) {
        r += c;
        if (c == '\n') r += "    ";
      }
      return r;
    }
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Parsing

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : lex_(text, kSyntax), file_(file) {}

  Graph parse() {
    try {
      return parse_graph();
    } catch (const isa::LexError& e) {
      error_at(e.offset, e.msg);
    }
  }

 private:
  Graph parse_graph() {
    skip_space();
    expect_word("graph");
    g_.name = parse_ident("graph name");
    expect('{');
    for (;;) {
      skip_space();
      if (at_end()) error("missing '}' at the end of the graph");
      if (lex_.accept('}')) break;
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

  // --- lexing helpers -------------------------------------------------------
  bool at_end() const { return lex_.at_end(); }
  char peek() const { return lex_.peek(); }

  [[noreturn]] void error(const std::string& msg) const { error_at(lex_.offset(), msg); }
  [[noreturn]] void error_at(size_t pos, const std::string& msg) const {
    const isa::TextPos p = lex_.pos_at(pos);
    throw CompileError(file_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.col) +
                       ": error: " + msg);
  }

  // Skips blanks and comments, including newlines.
  void skip_space() { lex_.skip_space(); }
  // Skips blanks and comments on the current line only.
  void skip_inline() { lex_.skip_blanks(); }
  bool accept(char c) {
    skip_space();
    return lex_.accept(c);
  }
  void expect(char c) {
    if (!accept(c)) error(std::string("expected '") + c + "'");
  }
  std::string word() {
    skip_space();
    return std::string(lex_.span(kWord));
  }
  void expect_word(const std::string& w) {
    size_t at = lex_.offset();
    if (word() != w) error_at(at, "expected '" + w + "'");
  }
  std::string parse_ident(const std::string& what) {
    skip_space();
    if (peek() == '"') return lex_.quoted();
    const auto n = lex_.span(kBare);
    if (n.empty()) error("expected " + what);
    return std::string(n);
  }
  std::string value_name() {
    expect('%');
    if (std::isspace(static_cast<unsigned char>(peek()))) error("expected a value name after '%'");
    return parse_ident("value name");
  }
  int64_t parse_int() {
    skip_space();
    size_t b = lex_.offset();
    const std::string t(lex_.number(kInt));
    if (t.empty()) error_at(b, "expected an integer");
    int64_t v = 0;
    if (isa::parse_int(t, v) != isa::NumParse::ok)
      error_at(b, "integer '" + t + "' is out of range");
    return v;
  }
  // A number token: returns its text; `is_float` if it has '.', an exponent, or is
  // inf/nan.
  std::string number(bool& is_float) {
    skip_space();
    size_t b = lex_.offset();
    const std::string t(lex_.number(kNumber, &is_float));
    if (t.empty()) error_at(b, "expected a number");
    return t;
  }
  float to_float(const std::string& t, size_t at) const {
    if (t == "inf" || t == "+inf") return std::numeric_limits<float>::infinity();
    if (t == "-inf") return -std::numeric_limits<float>::infinity();
    if (t == "nan" || t == "-nan" || t == "+nan") return std::numeric_limits<float>::quiet_NaN();
    float v = 0;
    // Out of float range reads as inf.
    if (isa::parse_float(t, v) == isa::NumParse::bad) error_at(at, "bad number '" + t + "'");
    return v;
  }
  int64_t to_int(const std::string& t, size_t at) const {
    int64_t v = 0;
    const auto r = isa::parse_int(t, v);
    if (r == isa::NumParse::bad) error_at(at, "expected an integer, got '" + t + "'");
    if (r == isa::NumParse::range) error_at(at, "integer '" + t + "' is out of range");
    return v;
  }

  TensorType parse_type() {
    skip_space();
    size_t at = lex_.offset();
    std::string e = word();
    auto elem = parse_elem_type(e);
    if (!elem) error_at(at, "unknown element type '" + e + "'");
    TensorType t;
    t.elem = *elem;
    expect('[');
    if (!accept(']')) {
      do {
        size_t dat = lex_.offset();
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
    std::vector<double> ds;  // fp64: parsed as double, so printing round-trips
    std::vector<int64_t> is;
    if (!accept(']')) {
      do {
        skip_space();
        size_t at = lex_.offset();
        bool f = false;
        std::string tok = number(f);
        if (t.elem == ElemType::fp64)
          ds.push_back(std::strtod(tok.c_str(), nullptr));
        else if (is_float(t.elem))
          fs.push_back(to_float(tok, at));
        else if (f)
          error_at(at, "expected an integer for " + std::string(elem_type_name(t.elem)) + " data");
        else
          is.push_back(to_int(tok, at));
      } while (accept(','));
      expect(']');
    }
    int64_t n = t.elem == ElemType::fp64 ? static_cast<int64_t>(ds.size())
                : is_float(t.elem)       ? static_cast<int64_t>(fs.size())
                                         : static_cast<int64_t>(is.size());
    if (n != t.numel())
      error(t.str() + " needs " + std::to_string(t.numel()) + " values, got " + std::to_string(n));
    if (t.elem == ElemType::fp64) return Tensor::from_doubles(t.shape, std::move(ds));
    return is_float(t.elem) ? Tensor::from_floats(t.shape, std::move(fs), t.elem)
                            : Tensor::from_ints(t.shape, std::move(is), t.elem);
  }

  Attribute parse_attr_value() {
    skip_space();
    size_t at = lex_.offset();
    char c = peek();
    if (c == '"') return Attribute(lex_.quoted());
    if (c == '[') return parse_list(at, 0);
    if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t save = lex_.offset();
      std::string w = word();
      if (w == "ints" && peek() == '[') return parse_list(at, 1);
      if (w == "floats" && peek() == '[') return parse_list(at, 2);
      if (w == "graph")
        error_at(at, "graph attributes (the bodies of If, Loop and Scan) cannot be read from text");
      if (w == "inf" || w == "nan") {
        lex_.seek(save);
      } else {
        lex_.seek(save);
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
        where.push_back(lex_.offset());
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
    size_t at = lex_.offset();
    if (peek() == '%') return node_statement();
    std::string kw = word();
    if (kw == "input") {
      skip_space();
      size_t nat = lex_.offset();
      std::string name = value_name();
      check_new(name, nat);
      expect(':');
      g_.add_input(name, parse_type());
    } else if (kw == "const") {
      skip_space();
      size_t nat = lex_.offset();
      std::string name = value_name();
      check_new(name, nat);
      expect(':');
      TensorType t = parse_type();
      skip_inline();
      if (lex_.accept('=')) {
        g_.add_constant(name, parse_data(t));
      } else {
        g_.add_constant(name, t);
      }
    } else if (kw == "output") {
      do {
        skip_space();
        size_t vat = lex_.offset();
        g_.add_output(lookup(value_name(), vat));
      } while (accept(','));
    } else {
      error_at(at, kw.empty() ? "expected a statement" : "unknown statement '" + kw + "'");
    }
    end_of_statement();
  }

  void node_statement() {
    size_t stmt_at = lex_.offset();
    std::vector<std::pair<std::string, TensorType>> outs;
    std::vector<size_t> out_at;
    do {
      skip_space();
      out_at.push_back(lex_.offset());
      std::string name = value_name();
      check_new(name, out_at.back());
      for (const auto& o : outs)
        if (o.first == name) error_at(out_at.back(), "value '%" + name + "' is already defined");
      expect(':');
      outs.emplace_back(name, parse_type());
    } while (accept(','));
    expect('=');
    skip_space();
    size_t op_at = lex_.offset();
    std::string op = word();
    while (lex_.accept('.')) {  // prefixed ops: trn.Gelu
      op += "." + word();
    }
    if (op.empty()) error("expected an op type");
    if (!find_op_schema(op)) error_at(op_at, "unknown op type '" + op + "'");
    expect('(');
    std::vector<Value*> inputs;
    if (!accept(')')) {
      do {
        skip_space();
        size_t iat = lex_.offset();
        if (lex_.accept('_')) {
          inputs.push_back(nullptr);
        } else {
          inputs.push_back(lookup(value_name(), iat));
        }
      } while (accept(','));
      expect(')');
    }
    std::map<std::string, Attribute> attrs;
    skip_inline();
    if (lex_.accept('{')) {
      if (!accept('}')) {
        do {
          skip_space();
          size_t kat = lex_.offset();
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
    if (lex_.accept('@')) {
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

  isa::Lexer lex_;
  std::string file_;
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
