// Text form of the graph IR: print_graph() writes it after any pass, parse_graph()
// reads it back (round trip: parse(print(g)) prints identically), so pass tests can
// write small graphs by hand.
//
// Syntax (one statement per line, `#` to end of line is a comment):
//
//   graph NAME {
//     input %x: fp32[1,3,8,8]
//     const %w: fp32[4,3,3,3]                      # type only: data omitted
//     const %b: fp32[4] = [0.5, 1, -2, 3.25]        # data, row-major
//     %y: fp32[1,4,8,8] = Conv(%x, %w, %b) {group=1, kernel_shape=[3,3]} @conv1
//     %p: fp32[1,4,4,4], %q: fp32[1,4,4,4] = Split(%y) {axis=2, split=[4,4]}
//     %z: fp32[2] = Clip(%a) {max=6.0, min=0.0}
//     %g: fp32[3] = Gemm(%a, %b, _)                 # `_` = absent optional input
//     output %y, %p
//   }
//
// - Value names follow `%`: bare if made of [A-Za-z0-9_./-], else quoted with
//   \" and \\ escapes (`%"onnx::Conv_1"`). Graph and node names likewise, without %.
// - Types are ELEM[d0,d1,...] with the element names of types.h (`fp32[]` is a
//   scalar). Constant data lists every element; bool is 0/1; floats are printed
//   with 9 significant digits (exact for fp32) and may be inf, -inf, nan.
// - Attribute values: int `3`; float `0.5`, `1e-05`, `2.0`, `inf`, `nan` (a float
//   always has a `.`, an exponent, or is inf/nan); string `"DCR"`; ints `[1,2]`;
//   floats `[0.5, 2.0]`; empty lists `ints[]` / `floats[]` (plain `[]` is ints);
//   tensor `ELEM[dims] [values]` (e.g. `value=fp32[1] [0]`). A graph attribute
//   (If/Loop/Scan body) prints as a nested, indented `graph NAME {...}` for
//   reading; the parser refuses it (no round trip for such graphs).
// - A node line lists its outputs with their types, then `= Op(inputs)`, optional
//   `{attrs}` and an optional `@name`. Every value must be defined before use. The
//   parser normalizes each node (ops.h) and checks the written output types
//   against shape inference. Errors read "FILE:LINE:COL: error: ...".
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace trnsim::ir {

struct PrintOptions {
  // Constants with more elements are printed by type only (data omitted).
  int64_t max_const_elems = 16;
  bool node_names = true;  // print `@name`
};

std::string print_graph(const Graph& g, const PrintOptions& opts = {});

// Parse a graph; throws CompileError "FILE:LINE:COL: error: ...".
Graph parse_graph(const std::string& text, const std::string& filename = "<ir>");

}  // namespace trnsim::ir
