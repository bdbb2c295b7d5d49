// The one lexer behind the three hand-written text formats: assembly (.tasm, here),
// the graph IR text (compiler/ir/text.cpp) and the tile IR text
// (compiler/tile/text.cpp). It is a cursor over the whole text with scanning
// primitives the parsers call in context (a graph IR value name may look like a
// number, an assembly value must end at a blank), plus next() for context-free
// tokens. Positions are 1-based line and byte column.
//
// Two ways to walk a text:
// - whole text: skip_space() crosses newlines and comments (graph IR);
// - line by line: next_line() limits the cursor to one line, its comment and a
//   trailing '\r' cut off (assembly, tile IR).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::isa {

struct TextPos {
  uint32_t line = 0, col = 0;  // 1-based
};

// A set of characters: letters and/or digits plus a few extra ones.
struct CharClass {
  bool letters = true;
  bool digits = false;
  std::string_view extra;
  bool has(char c) const;
};

struct LexSyntax {
  char comment = '#';               // to the end of the line; '\0' for none
  std::string_view blanks = " \t";  // skipped within a line
  CharClass name_start{true, false, "_"};
  CharClass name_rest{true, true, "_"};
  std::string_view punct = "[](){}<>,:;=@%!+-*/";  // one-character tokens of next()
};

// How next() and number() read a number.
struct NumberSyntax {
  bool sign = true;   // a leading '-' or '+'
  bool real = false;  // '.', an exponent, or inf/nan make it a real
};

enum class TokenKind { end, newline, name, integer, real, string, punct };

struct Token {
  TokenKind kind = TokenKind::end;
  std::string_view text;  // as written (a string with its quotes and escapes)
  std::string value;      // a string's contents, escapes resolved
  size_t offset = 0;
  TextPos pos;
};

// Thrown by the lexer's own checks (unterminated string, bad character); parsers
// catch it and re-throw in their format. what() is "LINE:COL: MSG".
class LexError : public std::runtime_error {
 public:
  LexError(TextPos pos, size_t offset, const std::string& msg);
  TextPos pos;
  size_t offset;
  std::string msg;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text, LexSyntax syntax = {}, NumberSyntax number = {});

  std::string_view text() const { return text_; }
  size_t offset() const { return pos_; }
  void seek(size_t offset) { pos_ = offset; }
  TextPos pos() const { return pos_at(pos_); }
  TextPos pos_at(size_t offset) const;

  // Line by line. next_line() is false past the last line (a text of n newlines
  // has n+1 lines).
  bool next_line();
  uint32_t line() const { return line_; }
  size_t line_start() const { return line_begin_; }
  uint32_t col_at(size_t offset) const { return static_cast<uint32_t>(offset - line_begin_ + 1); }

  bool at_end() const { return pos_ >= end_; }  // end of the text or of the line
  size_t limit() const { return end_; }
  char peek(size_t ahead = 0) const { return pos_ + ahead < end_ ? text_[pos_ + ahead] : '\0'; }
  bool accept(char c);
  bool accept(std::string_view s);
  bool is_blank(char c) const;

  void skip_blanks();  // blanks and comments, not newlines
  void skip_space();   // blanks, comments and any white space
  bool at_line_end() {
    skip_blanks();
    return at_end() || peek() == '\n';
  }

  // Scanners: each returns what it read; empty (and the cursor unmoved) when
  // nothing matches.
  std::string_view name() { return name(syntax_.name_start, syntax_.name_rest); }
  std::string_view name(const CharClass& start, const CharClass& rest);
  std::string_view span(const CharClass& chars) { return name(chars, chars); }
  std::string_view digits(int base);  // base 10 or 16
  // Non-blank run; with `nested` a blank inside [...] does not end it.
  std::string_view word(bool nested = false);
  // Run up to a blank or one of `stops`.
  std::string_view until(std::string_view stops);
  // Sign, digits and (if real) '.', e/E with a sign, or inf/nan. Permissive: "1.2.3"
  // is one number that the value conversion rejects. Empty when only a sign is there.
  std::string_view number(const NumberSyntax& syntax, bool* is_real = nullptr);
  std::string_view number(bool* is_real = nullptr) { return number(number_, is_real); }
  // At '"': the contents, \x meaning x. Throws LexError when the line ends first.
  std::string quoted();

  // Context-free token; newlines are tokens. Throws LexError on a character that
  // starts no token.
  Token next();

  [[noreturn]] void fail_at(size_t offset, const std::string& msg) const;

 private:
  std::string_view text_;
  LexSyntax syntax_;
  NumberSyntax number_;
  std::vector<size_t> line_starts_;
  size_t pos_ = 0, end_;
  size_t line_index_ = 0;  // lines walked by next_line()
  uint32_t line_ = 0;
  size_t line_begin_ = 0;
};

// Conversions of scanned text, all of it or failure.
enum class NumParse { ok, bad, range };
// Digits in `base` (10 or 16); nullopt if the value exceeds 2^64-1 or a character is
// not a digit.
std::optional<uint64_t> parse_magnitude(std::string_view digits, int base);
// Optional sign ('+' only with `plus`) then decimal digits.
NumParse parse_int(std::string_view s, int64_t& v, bool plus = true);
// What strtof reads completely (1.5, -inf, nan, 0x1p-3); range when it overflows.
NumParse parse_float(std::string_view s, float& f);

}  // namespace trnsim::isa
