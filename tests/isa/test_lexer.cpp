#include "models/isa/lexer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace trnsim::isa {
namespace {

std::vector<Token> all_tokens(std::string_view text, NumberSyntax num = {true, true}) {
  Lexer lex(text, {}, num);
  std::vector<Token> out;
  for (;;) {
    Token t = lex.next();
    if (t.kind == TokenKind::end) break;
    out.push_back(std::move(t));
  }
  return out;
}

TEST(Lexer, TokenKindsAndText) {
  const auto t = all_tokens("dst = sbuf[0:128, -3, 1.5e-3] \"a\\\"b\" @x");
  const std::vector<std::pair<TokenKind, std::string>> want = {
      {TokenKind::name, "dst"},          {TokenKind::punct, "="},     {TokenKind::name, "sbuf"},
      {TokenKind::punct, "["},           {TokenKind::integer, "0"},   {TokenKind::punct, ":"},
      {TokenKind::integer, "128"},       {TokenKind::punct, ","},     {TokenKind::integer, "-3"},
      {TokenKind::punct, ","},           {TokenKind::real, "1.5e-3"}, {TokenKind::punct, "]"},
      {TokenKind::string, "\"a\\\"b\""}, {TokenKind::punct, "@"},     {TokenKind::name, "x"},
  };
  ASSERT_EQ(t.size(), want.size());
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].kind, want[i].first) << i;
    EXPECT_EQ(t[i].text, want[i].second) << i;
  }
  EXPECT_EQ(t[12].value, "a\"b");  // escapes resolved
}

TEST(Lexer, PositionsAndNewlines) {
  const auto t = all_tokens("a b\n  cc\n\n\tdd");
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(t[0].pos.line, 1u);
  EXPECT_EQ(t[0].pos.col, 1u);
  EXPECT_EQ(t[1].pos.col, 3u);
  EXPECT_EQ(t[2].kind, TokenKind::newline);
  EXPECT_EQ(t[3].text, "cc");
  EXPECT_EQ(t[3].pos.line, 2u);
  EXPECT_EQ(t[3].pos.col, 3u);
  EXPECT_EQ(t[5].kind, TokenKind::newline);
  EXPECT_EQ(t[6].text, "dd");
  EXPECT_EQ(t[6].pos.line, 4u);
  EXPECT_EQ(t[6].pos.col, 2u);  // a tab is one column
  EXPECT_EQ(t[6].offset, 11u);
}

TEST(Lexer, CommentsRunToTheEndOfTheLine) {
  const auto t = all_tokens("a # b c\nd#e");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].text, "a");
  EXPECT_EQ(t[1].kind, TokenKind::newline);
  EXPECT_EQ(t[2].text, "d");
  EXPECT_EQ(t[2].pos.line, 2u);

  // Another comment character; '#' is then a bad character.
  LexSyntax semi;
  semi.comment = ';';
  Lexer lex("x ; y\n", semi);
  EXPECT_EQ(lex.next().text, "x");
  EXPECT_EQ(lex.next().kind, TokenKind::newline);
  EXPECT_EQ(lex.next().kind, TokenKind::end);
  EXPECT_THROW(Lexer("#", semi).next(), LexError);
}

TEST(Lexer, LinesCutCommentsAndCarriageReturns) {
  Lexer lex("one two # c\r\nthree\r\n\n");
  std::vector<std::string> words;
  std::vector<uint32_t> lines;
  while (lex.next_line()) {
    for (lex.skip_blanks(); !lex.at_end(); lex.skip_blanks()) {
      words.emplace_back(lex.word());
      lines.push_back(lex.line());
    }
  }
  EXPECT_EQ(words, (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(lines, (std::vector<uint32_t>{1, 1, 2}));
  EXPECT_EQ(lex.line(), 4u);  // three newlines: four lines
}

TEST(Lexer, NestedWordsKeepBlanksInsideBrackets) {
  Lexer lex("tensor x [1, 2] fp32 [3, 4  ");
  std::vector<std::string> w;
  for (lex.skip_blanks(); !lex.at_end(); lex.skip_blanks()) w.emplace_back(lex.word(true));
  EXPECT_EQ(w, (std::vector<std::string>{"tensor", "x", "[1, 2]", "fp32", "[3, 4"}));
}

TEST(Lexer, Numbers) {
  auto one = [](std::string_view s, NumberSyntax ns, bool* real) {
    Lexer lex(s);
    return std::string(lex.number(ns, real));
  };
  bool real = true;
  EXPECT_EQ(one("42,", {true, false}, &real), "42");
  EXPECT_FALSE(real);
  EXPECT_EQ(one("-7]", {true, false}, &real), "-7");
  EXPECT_EQ(one("-x", {true, false}, &real), "");  // a sign alone is no number
  EXPECT_EQ(one("-5", {false, false}, &real), "");
  EXPECT_EQ(one("1.5e+3x", {true, true}, &real), "1.5e+3");
  EXPECT_TRUE(real);
  EXPECT_EQ(one("-inf]", {true, true}, &real), "-inf");
  EXPECT_TRUE(real);
  EXPECT_EQ(one("nan", {true, true}, &real), "nan");
  EXPECT_EQ(one("1.5", {true, false}, &real), "1");  // integers only
  EXPECT_FALSE(real);

  Lexer hex("0x1fZ");
  EXPECT_TRUE(hex.accept("0x"));
  EXPECT_EQ(hex.digits(16), "1f");
  EXPECT_EQ(parse_magnitude("1f", 16).value_or(0), 31u);
  EXPECT_EQ(parse_magnitude("18446744073709551615", 10).value_or(0),
            std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(parse_magnitude("18446744073709551616", 10));
  EXPECT_FALSE(parse_magnitude("12a", 10));

  int64_t v = 0;
  EXPECT_EQ(parse_int("-9223372036854775808", v), NumParse::ok);
  EXPECT_EQ(v, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(parse_int("9223372036854775808", v), NumParse::range);
  EXPECT_EQ(parse_int("+3", v), NumParse::ok);
  EXPECT_EQ(v, 3);
  EXPECT_EQ(parse_int("+3", v, /*plus=*/false), NumParse::bad);
  EXPECT_EQ(parse_int("-", v), NumParse::bad);
  EXPECT_EQ(parse_int("1e3", v), NumParse::bad);

  float f = 0;
  EXPECT_EQ(parse_float("0x1p-3", f), NumParse::ok);
  EXPECT_EQ(f, 0.125f);
  EXPECT_EQ(parse_float("-inf", f), NumParse::ok);
  EXPECT_TRUE(std::isinf(f) && f < 0);
  EXPECT_EQ(parse_float("1e39", f), NumParse::range);
  EXPECT_EQ(parse_float("1e-45", f), NumParse::ok);  // subnormal, not an error
  EXPECT_EQ(parse_float("1.5x", f), NumParse::bad);
  EXPECT_EQ(parse_float("", f), NumParse::bad);
}

TEST(Lexer, NamesFollowTheSyntax) {
  const CharClass start{true, false, "_"}, rest{true, true, "_."};
  Lexer lex("_a.b1-c 9x");
  EXPECT_EQ(lex.name(start, rest), "_a.b1");
  EXPECT_TRUE(lex.accept('-'));
  EXPECT_EQ(lex.name(start, rest), "c");
  lex.skip_blanks();
  EXPECT_EQ(lex.name(start, rest), "");  // a digit does not start a name
  EXPECT_EQ(lex.offset(), 8u);           // unmoved
  EXPECT_EQ(lex.span({true, true, ""}), "9x");
}

TEST(Lexer, BadCharacterNamesLineAndColumn) {
  try {
    all_tokens("ok\n  a $b");
    FAIL() << "no error";
  } catch (const LexError& e) {
    EXPECT_EQ(e.pos.line, 2u);
    EXPECT_EQ(e.pos.col, 5u);
    EXPECT_EQ(e.offset, 7u);
    EXPECT_EQ(std::string(e.what()), "2:5: unexpected character '$'");
  }
  try {
    all_tokens("x \x01");
    FAIL() << "no error";
  } catch (const LexError& e) {
    EXPECT_EQ(std::string(e.what()), "1:3: unexpected character 0x01");
  }
}

TEST(Lexer, UnterminatedString) {
  try {
    all_tokens("\"abc\nd\"");
    FAIL() << "no error";
  } catch (const LexError& e) {
    EXPECT_EQ(std::string(e.what()), "1:5: unterminated string");
  }
}

}  // namespace
}  // namespace trnsim::isa
