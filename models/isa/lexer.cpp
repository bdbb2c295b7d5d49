#include "models/isa/lexer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace trnsim::isa {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string show_char(char c) {
  if (std::isprint(static_cast<unsigned char>(c))) return std::string("'") + c + "'";
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
  return buf;
}

}  // namespace

bool CharClass::has(char c) const {
  const auto u = static_cast<unsigned char>(c);
  return (letters && std::isalpha(u)) || (digits && std::isdigit(u)) ||
         (c != '\0' && extra.find(c) != std::string_view::npos);
}

LexError::LexError(TextPos p, size_t off, const std::string& m)
    : std::runtime_error(std::to_string(p.line) + ":" + std::to_string(p.col) + ": " + m),
      pos(p),
      offset(off),
      msg(m) {}

Lexer::Lexer(std::string_view text, LexSyntax syntax, NumberSyntax number)
    : text_(text), syntax_(syntax), number_(number), end_(text.size()) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

TextPos Lexer::pos_at(size_t offset) const {
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const auto line = static_cast<size_t>(it - line_starts_.begin());  // >= 1: starts[0] is 0
  return {static_cast<uint32_t>(line), static_cast<uint32_t>(offset - line_starts_[line - 1] + 1)};
}

bool Lexer::next_line() {
  if (line_index_ >= line_starts_.size()) return false;
  line_begin_ = line_starts_[line_index_];
  size_t e =
      line_index_ + 1 < line_starts_.size() ? line_starts_[line_index_ + 1] - 1 : text_.size();
  ++line_index_;
  line_ = static_cast<uint32_t>(line_index_);
  if (syntax_.comment != '\0') {
    const auto h = text_.substr(line_begin_, e - line_begin_).find(syntax_.comment);
    if (h != std::string_view::npos) e = line_begin_ + h;
  }
  if (e > line_begin_ && text_[e - 1] == '\r') --e;
  pos_ = line_begin_;
  end_ = e;
  return true;
}

bool Lexer::accept(char c) {
  if (at_end() || text_[pos_] != c) return false;
  ++pos_;
  return true;
}

bool Lexer::accept(std::string_view s) {
  if (end_ - std::min(pos_, end_) < s.size() || text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

bool Lexer::is_blank(char c) const {
  return c != '\0' && syntax_.blanks.find(c) != std::string_view::npos;
}

void Lexer::skip_blanks() {
  while (!at_end()) {
    const char c = text_[pos_];
    if (c != '\0' && c == syntax_.comment) {
      while (!at_end() && text_[pos_] != '\n') ++pos_;
    } else if (is_blank(c)) {
      ++pos_;
    } else {
      break;
    }
  }
}

void Lexer::skip_space() {
  while (!at_end()) {
    const char c = text_[pos_];
    if (c != '\0' && c == syntax_.comment) {
      while (!at_end() && text_[pos_] != '\n') ++pos_;
    } else if (is_blank(c) || std::isspace(static_cast<unsigned char>(c))) {
      ++pos_;
    } else {
      break;
    }
  }
}

std::string_view Lexer::name(const CharClass& start, const CharClass& rest) {
  const size_t b = pos_;
  if (!at_end() && start.has(text_[pos_]))
    for (++pos_; !at_end() && rest.has(text_[pos_]);) ++pos_;
  return text_.substr(b, pos_ - b);
}

std::string_view Lexer::digits(int base) {
  const size_t b = pos_;
  while (!at_end() && (base == 16 ? std::isxdigit(static_cast<unsigned char>(text_[pos_]))
                                  : is_digit(text_[pos_])))
    ++pos_;
  return text_.substr(b, pos_ - b);
}

std::string_view Lexer::word(bool nested) {
  const size_t b = pos_;
  int depth = 0;
  for (; !at_end(); ++pos_) {
    const char c = text_[pos_];
    if (c == '\n') break;
    if (nested && c == '[') ++depth;
    if (nested && c == ']') --depth;
    if (depth == 0 && is_blank(c)) break;
  }
  // An open '[' ran to the end of the line: the word ends at its last non-blank.
  while (pos_ > b && is_blank(text_[pos_ - 1])) --pos_;
  return text_.substr(b, pos_ - b);
}

std::string_view Lexer::until(std::string_view stops) {
  const size_t b = pos_;
  while (!at_end() && text_[pos_] != '\n' && !is_blank(text_[pos_]) &&
         stops.find(text_[pos_]) == std::string_view::npos)
    ++pos_;
  return text_.substr(b, pos_ - b);
}

std::string_view Lexer::number(const NumberSyntax& syntax, bool* is_real) {
  const size_t b = pos_;
  bool real = false;
  if (syntax.sign && (peek() == '-' || peek() == '+')) ++pos_;
  const std::string_view rest = text_.substr(pos_, std::min<size_t>(3, end_ - pos_));
  if (syntax.real && (rest == "inf" || rest == "nan")) {
    pos_ += 3;
    real = true;
  } else {
    while (!at_end()) {
      const char c = text_[pos_];
      if (is_digit(c)) {
        ++pos_;
      } else if (syntax.real && (c == '.' || c == 'e' || c == 'E')) {
        real = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && (peek() == '-' || peek() == '+')) ++pos_;
      } else {
        break;
      }
    }
  }
  if (pos_ == b || (pos_ == b + 1 && (text_[b] == '-' || text_[b] == '+'))) {
    pos_ = b;
    real = false;
  }
  if (is_real) *is_real = real;
  return text_.substr(b, pos_ - b);
}

std::string Lexer::quoted() {
  ++pos_;  // the opening '"'
  std::string r;
  for (;;) {
    if (at_end() || peek() == '\n') fail_at(pos_, "unterminated string");
    char c = text_[pos_++];
    if (c == '"') break;
    if (c == '\\') {
      if (at_end()) fail_at(pos_, "unterminated string");
      c = text_[pos_++];
    }
    r += c;
  }
  return r;
}

Token Lexer::next() {
  skip_blanks();
  Token t;
  t.offset = pos_;
  t.pos = pos_at(pos_);
  if (at_end()) return t;
  const char c = peek();
  if (c == '\n') {
    t.kind = TokenKind::newline;
    ++pos_;
  } else if (c == '"') {
    t.kind = TokenKind::string;
    t.value = quoted();
  } else if (is_digit(c) || (number_.sign && (c == '-' || c == '+') && is_digit(peek(1)))) {
    bool real = false;
    number(number_, &real);
    t.kind = real ? TokenKind::real : TokenKind::integer;
  } else if (syntax_.name_start.has(c)) {
    name();
    t.kind = TokenKind::name;
  } else if (syntax_.punct.find(c) != std::string_view::npos) {
    t.kind = TokenKind::punct;
    ++pos_;
  } else {
    fail_at(pos_, "unexpected character " + show_char(c));
  }
  t.text = text_.substr(t.offset, pos_ - t.offset);
  return t;
}

void Lexer::fail_at(size_t offset, const std::string& msg) const {
  throw LexError(pos_at(offset), offset, msg);
}

std::optional<uint64_t> parse_magnitude(std::string_view digits, int base) {
  if (digits.empty()) return std::nullopt;
  uint64_t v = 0;
  for (const char c : digits) {
    uint64_t d;
    if (is_digit(c)) {
      d = static_cast<uint64_t>(c - '0');
    } else if (base == 16 && std::isxdigit(static_cast<unsigned char>(c))) {
      d = static_cast<uint64_t>(std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    } else {
      return std::nullopt;
    }
    const auto b = static_cast<uint64_t>(base);
    if (v > (std::numeric_limits<uint64_t>::max() - d) / b) return std::nullopt;
    v = v * b + d;
  }
  return v;
}

NumParse parse_int(std::string_view s, int64_t& v, bool plus) {
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || (plus && s[0] == '+'))) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || !std::all_of(s.begin(), s.end(), is_digit)) return NumParse::bad;
  const auto mag = parse_magnitude(s, 10);
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!mag || *mag > kMax + (neg ? 1 : 0)) return NumParse::range;
  v = neg ? static_cast<int64_t>(0 - *mag) : static_cast<int64_t>(*mag);
  return NumParse::ok;
}

NumParse parse_float(std::string_view s, float& f) {
  if (s.empty()) return NumParse::bad;
  const std::string t(s);
  char* end = nullptr;
  errno = 0;
  f = std::strtof(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return NumParse::bad;
  // ERANGE on underflow is fine (subnormals must round-trip); on overflow it is not.
  if (errno == ERANGE && std::isinf(f)) return NumParse::range;
  return NumParse::ok;
}

}  // namespace trnsim::isa
