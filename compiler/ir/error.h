// Exceptions of the compiler. Every message names where the problem is (file,
// line, node, value) so a user can act on it without a debugger.
#pragma once

#include <stdexcept>
#include <string>

namespace trnsim::ir {

// Any error in compiling: bad input, an invalid graph, a failed check.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The input is valid but uses something this compiler does not implement (an op
// type, an element type, an attribute value, a dynamic shape). Callers such as the
// conformance runner count these as "refused", not as failures.
class UnsupportedError : public CompileError {
 public:
  using CompileError::CompileError;
};

}  // namespace trnsim::ir
