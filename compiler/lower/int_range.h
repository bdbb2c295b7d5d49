// Integers live on the device as fp32, which holds every integer up to 2^24 exactly
// and rounds beyond. This range analysis bounds every integer value of a graph so
// the lowering can refuse (and host fallback take) the nodes whose integers might
// not be exact, instead of letting the device round them silently.
//
// An integer value is exact on the device when its proven range lies within
// +-2^24, or when a value-preserving op (data movement, Max/Min/Relu/Clip, Where,
// ReduceMax/Min, MaxPool) makes it from exact values, or when Cast truncates a
// float (the truncation of an fp32 is an fp32). A result must also lie within its
// type (ONNX wraps narrow types, the device would not). Model inputs count as their
// type's range within +-2^24: the runtime refuses integer input values beyond 2^24
// (runtime/onnx_program.cpp).
#pragma once

#include <map>

#include "compiler/ir/graph.h"

namespace trnsim::lower {

constexpr double kExactIntLimit = 16777216.0;  // 2^24

using IntRange = ir::Value::IntRange;
using IntRanges = std::map<const ir::Value*, IntRange>;

// The range of every integer value of `g` (bools excluded). Graph inputs take
// their int_range when set (a segment's inputs), else +-2^24.
IntRanges int_ranges(const ir::Graph& g);

// Stores int_ranges(g) on the values (Value::int_range), so segments cut from `g`
// keep their inputs' ranges.
void annotate_int_ranges(ir::Graph& g);

// Throws ir::UnsupportedError naming `n` and the value when `n` reads or makes an
// integer the device might not hold exactly.
void check_exact_integers(const ir::Node& n, const IntRanges& r);

}  // namespace trnsim::lower
