#include "compiler/ir/ops_index.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "compiler/ir/error.h"

namespace trnsim::ir {
namespace {

// One term of the equation: its letters, with -1 where the ellipsis stands.
std::vector<int> parse_term(const std::string& term, const std::string& eq) {
  std::vector<int> r;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == '.') {
      if (term.compare(i, 3, "...") != 0 || ellipsis)
        throw CompileError("equation '" + eq + "': a '.' that is not one '...' per term");
      ellipsis = true;
      r.push_back(-1);
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      r.push_back(static_cast<unsigned char>(c));
    } else {
      throw CompileError("equation '" + eq + "': unexpected character '" + std::string(1, c) + "'");
    }
  }
  return r;
}

}  // namespace

EinsumSpec parse_einsum(const std::string& equation, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(lhs.substr(start, comma - start), equation));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size())
    throw CompileError("equation '" + equation + "' has " + std::to_string(terms.size()) +
                       " input terms for " + std::to_string(shapes.size()) + " inputs");
  // Ellipsis dims of each input, right-aligned over the widest.
  size_t ell = 0;
  std::vector<size_t> in_ell(terms.size(), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    const bool has = std::count(terms[k].begin(), terms[k].end(), -1) > 0;
    const size_t letters = terms[k].size() - (has ? 1 : 0);
    if (shapes[k].size() < letters || (!has && shapes[k].size() != letters))
      throw CompileError("equation '" + equation + "': term " + std::to_string(k) + " has " +
                         std::to_string(letters) + " subscripts for input " + std::to_string(k) +
                         " of shape " + shape_str(shapes[k]));
    in_ell[k] = shapes[k].size() - letters;
    ell = std::max(ell, in_ell[k]);
  }
  EinsumSpec s;
  s.label_size.assign(ell, 1);  // labels 0..ell-1: the ellipsis dims
  std::map<int, int> letter_id;
  std::map<int, int> letter_count;
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int>& lab = s.in_labels.emplace_back();
    size_t d = 0;
    for (int c : terms[k]) {
      if (c == -1) {
        for (size_t e = 0; e < in_ell[k]; ++e, ++d) {
          const int id = static_cast<int>(ell - in_ell[k] + e);
          int64_t& sz = s.label_size[id];
          if (shapes[k][d] != 1) {
            if (sz != 1 && sz != shapes[k][d])
              throw CompileError("equation '" + equation + "': the ellipsis dims of the inputs " +
                                 "do not broadcast");
            sz = shapes[k][d];
          }
          lab.push_back(id);
        }
        continue;
      }
      auto [it, fresh] = letter_id.emplace(c, static_cast<int>(s.label_size.size()));
      if (fresh) {
        s.label_size.push_back(shapes[k][d]);
      } else if (s.label_size[it->second] != shapes[k][d]) {
        throw CompileError("equation '" + equation + "': subscript '" +
                           std::string(1, static_cast<char>(c)) + "' has sizes " +
                           std::to_string(s.label_size[it->second]) + " and " +
                           std::to_string(shapes[k][d]));
      }
      ++letter_count[c];
      lab.push_back(it->second);
      ++d;
    }
  }
  if (arrow == std::string::npos) {
    for (size_t e = 0; e < ell; ++e) s.out_labels.push_back(static_cast<int>(e));
    for (const auto& [c, n] : letter_count)  // std::map: ASCII order
      if (n == 1) s.out_labels.push_back(letter_id.at(c));
    return s;
  }
  std::vector<int> out = parse_term(eq.substr(arrow + 2), equation);
  // As numpy: dims an ellipsis covers are never summed away implicitly.
  if (ell > 0 && std::count(out.begin(), out.end(), -1) == 0)
    throw CompileError("equation '" + equation +
                       "': the output must keep the ellipsis ('...') of the inputs");
  for (int c : out) {
    if (c == -1) {
      for (size_t e = 0; e < ell; ++e) s.out_labels.push_back(static_cast<int>(e));
      continue;
    }
    auto it = letter_id.find(c);
    if (it == letter_id.end())
      throw CompileError("equation '" + equation + "': output subscript '" +
                         std::string(1, static_cast<char>(c)) + "' is in no input");
    if (std::count(out.begin(), out.end(), c) > 1)
      throw CompileError("equation '" + equation + "': output subscript '" +
                         std::string(1, static_cast<char>(c)) + "' repeats");
    s.out_labels.push_back(it->second);
  }
  return s;
}

}  // namespace trnsim::ir
