// ONNX conformance against the test data Debian ships in libonnx-testdata, shared by
// the interpreter suite (tests/compiler/test_conformance.cpp) and the simulator
// suite (tests/e2e/test_conformance_sim.cpp): every case of data/{node,
// pytorch-converted, pytorch-operator} is imported; cases a stage refuses
// (unsupported op, type, attribute, dynamic shape) must be refused with a clear
// error naming the model, the rest run on every test_data_set and are compared with
// the packaged outputs (|got - want| <= atol + rtol * |want|, rtol 1e-3, atol 1e-5;
// integer and bool outputs exactly).
//
// Each suite's expected state of every case (pass or refused) is checked in: a wrong
// answer, a case that changes state either way, and a case on no list fail the test. Graph inputs
// the compiler needs at compile time (a Reshape shape, Slice starts, Clip bounds given as inputs)
// are specialised to each data set's values (ImportOptions::constant_inputs); such passes say so in
// the verbose output. TRNSIM_UPDATE_CONFORMANCE=1 rewrites the lists, TRNSIM_CONFORMANCE_FILTER
// (substring) limits the cases, TRNSIM_CONFORMANCE_VERBOSE=1 prints each result,
// TRNSIM_ONNX_TESTDATA overrides the data folder.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/frontend/onnx_import.h"
#include "compiler/frontend/tensor_proto.h"
#include "compiler/interp/interpreter.h"
#include "compiler/ir/error.h"
#include "models/isa/dtype.h"
#include "tests/common/python_env.h"

namespace trnsim::conformance {

namespace fs = std::filesystem;
using ir::Tensor;

inline constexpr double kRtol = 1e-3, kAtol = 1e-5;
inline const char* const kFolders[] = {"node", "pytorch-converted", "pytorch-operator"};

enum class Status { kPass, kFail, kRefused };

struct CaseResult {
  std::string id;  // "node/test_add"
  Status status = Status::kFail;
  std::string detail;
};

inline std::string env_or(const char* name, const std::string& dflt) {
  const char* v = std::getenv(name);
  return v && *v ? v : dflt;
}

inline std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) r.push_back(e.path());
  // input_10.pb sorts after input_9.pb: order by the number after the prefix.
  std::sort(r.begin(), r.end(), [&](const fs::path& a, const fs::path& b) {
    auto num = [&](const fs::path& p) {
      return std::atoi(p.filename().string().c_str() + prefix.size());
    };
    return num(a) < num(b);
  });
  return r;
}

// Compare one output; returns "" when it matches.
inline std::string compare(const Tensor& got, const Tensor& want, const std::string& name) {
  if (got.elem() != want.elem())
    return "output '" + name + "' is " + got.type().str() + ", expected " + want.type().str();
  if (got.shape() != want.shape())
    return "output '" + name + "' is " + got.type().str() + ", expected " + want.type().str();
  int64_t bad = 0, first = -1;
  for (int64_t k = 0; k < got.numel(); ++k) {
    bool ok;
    if (got.holds_floats()) {
      double g = got.at(k), w = want.at(k);
      if (std::isnan(w) || std::isnan(g))
        ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g))
        ok = g == w;
      else
        ok = std::fabs(g - w) <= kAtol + kRtol * std::fabs(w);
    } else {
      ok = got.ints()[k] == want.ints()[k];
    }
    if (!ok && bad++ == 0) first = k;
  }
  if (!bad) return "";
  std::ostringstream o;
  o.precision(9);
  o << "output '" << name << "': " << bad << " of " << got.numel() << " elements differ; first at "
    << first << ": got " << got.at(first) << ", expected " << want.at(first);
  return o.str();
}

// The ONNX 1.12 test data stores bfloat16 tensors as UINT16 bit patterns (numpy
// has no bfloat16): reinterpret them when the graph says bf16.
inline Tensor as_type(Tensor t, ir::ElemType want) {
  if (want == ir::ElemType::bf16 && t.elem() == ir::ElemType::uint16) {
    std::vector<float> f;
    for (int64_t b : t.ints()) f.push_back(isa::bf16_to_fp32(static_cast<uint16_t>(b)));
    return Tensor::from_floats(t.shape(), std::move(f), ir::ElemType::bf16);
  }
  return t;
}

// 0: a tensor, 1: a sequence, 2: an optional (their test data are SequenceProto /
// OptionalProto files, and the import flattens them: frontend::sequence_item_name()).
inline int value_kind(const onnx::TypeProto& t) {
  return t.has_sequence_type() ? 1 : t.has_optional_type() ? 2 : 0;
}

inline std::string item_name(const std::string& name, const frontend::SequenceData& d, size_t k) {
  return frontend::sequence_item_name(name,
                                      d.optional && !d.of_sequence ? -1 : static_cast<int64_t>(k));
}

// Compare a flattened sequence/optional output with its test data; "" when it matches.
inline std::string compare_sequence(const interp::TensorMap& got, const std::string& name,
                                    const frontend::SequenceData& want) {
  for (size_t k = 0; k < want.tensors.size(); ++k) {
    const std::string item = item_name(name, want, k);
    auto it = got.find(item);
    if (it == got.end())
      return "output '" + name + "' should hold " + std::to_string(want.tensors.size()) +
             " tensors; '" + item + "' is missing";
    if (std::string err = compare(it->second, as_type(want.tensors[k], it->second.elem()), item);
        !err.empty())
      return err;
  }
  const std::string extra = want.tensors.empty() && want.optional
                                ? (got.count(name) ? name : name + "[0]")
                                : item_name(name, want, want.tensors.size());
  if (got.count(extra))
    return "output '" + name + "' holds more than the " + std::to_string(want.tensors.size()) +
           " tensors expected ('" + extra + "')";
  return "";
}

// Runs a graph on one data set's feed and returns every output by name.
using Executor = std::function<interp::TensorMap(const ir::Graph&, const interp::TensorMap&)>;

inline CaseResult run_case(const fs::path& dir, const std::string& id, const Executor& exec) {
  CaseResult r;
  r.id = id;
  const fs::path model_path = dir / "model.onnx";
  try {
    onnx::ModelProto m;
    {
      std::ifstream f(model_path, std::ios::binary);
      std::ostringstream ss;
      ss << f.rdbuf();
      if (!m.ParseFromString(ss.str()))
        throw ir::CompileError(model_path.string() + ": not a valid ONNX model");
    }
    // Graph input names (initializers excluded) pair with input_K.pb in order.
    std::set<std::string> inits;
    for (const auto& i : m.graph().initializer()) inits.insert(i.name());
    std::vector<std::string> input_names;
    std::map<std::string, int> kinds;  // value_kind() of each input and output
    for (const auto& i : m.graph().input())
      if (!inits.count(i.name())) {
        input_names.push_back(i.name());
        kinds[i.name()] = value_kind(i.type());
      }
    std::vector<std::string> output_names;
    for (const auto& o : m.graph().output()) {
      output_names.push_back(o.name());
      kinds[o.name()] = value_kind(o.type());
    }

    std::vector<fs::path> sets = sorted_files(dir, "test_data_set_");
    if (sets.empty()) throw ir::CompileError(dir.string() + ": no test_data_set_*");
    // Inputs of every set, read leniently: a model with inputs the front end does
    // not support is refused by the import with a message about the model.
    std::vector<std::map<std::string, Tensor>> set_inputs(sets.size());
    std::vector<std::map<std::string, frontend::SequenceData>> set_seqs(sets.size());
    for (size_t s = 0; s < sets.size(); ++s) {
      std::vector<fs::path> ins = sorted_files(sets[s], "input_");
      for (size_t k = 0; k < ins.size() && k < input_names.size(); ++k) {
        try {
          if (const int kind = kinds[input_names[k]]; kind != 0)
            set_seqs[s][input_names[k]] = frontend::read_sequence_pb(ins[k].string(), kind == 2);
          else
            set_inputs[s][input_names[k]] = frontend::read_tensor_pb(ins[k].string());
        } catch (const std::exception&) {
        }
      }
    }
    // Import; graph inputs the compiler needs as constants (Reshape shapes, Slice
    // starts, Clip bounds, ...) are specialised to the data set's values.
    std::set<std::string> frozen;
    auto import_for = [&](size_t s) {
      for (;;) {
        frontend::ImportOptions opts;
        for (const auto& [name, t] : set_inputs[s]) {
          opts.input_shapes[name] = t.shape();
          if (frozen.count(name)) opts.constant_inputs[name] = t;
        }
        for (const auto& [name, d] : set_seqs[s]) {
          frontend::SequenceInput& si = opts.sequence_inputs[name];
          si.optional = d.optional;
          si.present = d.present;
          si.of_sequence = d.of_sequence;
          for (const Tensor& t : d.tensors) si.items.push_back(t.type());
        }
        try {
          return frontend::import_onnx_model(m, model_path.string(), opts);
        } catch (const frontend::NeedsConstantError& e) {
          if (frozen.count(e.value()) || !set_inputs[s].count(e.value())) throw;
          frozen.insert(e.value());
        }
      }
    };
    ir::Graph g = import_for(0);
    for (size_t s = 0; s < sets.size(); ++s) {
      if (s > 0 && !frozen.empty()) g = import_for(s);
      std::vector<fs::path> ins = sorted_files(sets[s], "input_");
      std::vector<fs::path> outs = sorted_files(sets[s], "output_");
      if (ins.size() != input_names.size())
        throw ir::CompileError(sets[s].string() + ": " + std::to_string(ins.size()) +
                               " input files for " + std::to_string(input_names.size()) +
                               " graph inputs");
      if (outs.size() != output_names.size())
        throw ir::CompileError(sets[s].string() + ": " + std::to_string(outs.size()) +
                               " output files for " + std::to_string(output_names.size()) +
                               " graph outputs");
      interp::TensorMap feed;
      for (size_t k = 0; k < ins.size(); ++k) {
        if (frozen.count(input_names[k])) continue;
        if (const int kind = kinds[input_names[k]]; kind != 0) {
          const frontend::SequenceData d = frontend::read_sequence_pb(ins[k].string(), kind == 2);
          for (size_t j = 0; j < d.tensors.size(); ++j)
            feed[item_name(input_names[k], d, j)] = d.tensors[j];
          continue;
        }
        const ir::Value* v = g.find_value(input_names[k]);
        Tensor t = frontend::read_tensor_pb(ins[k].string());
        feed[input_names[k]] = v ? as_type(std::move(t), v->elem()) : std::move(t);
      }
      interp::TensorMap got = exec(g, feed);
      for (size_t k = 0; k < outs.size(); ++k) {
        if (const int kind = kinds[output_names[k]]; kind != 0) {
          std::string err = compare_sequence(
              got, output_names[k], frontend::read_sequence_pb(outs[k].string(), kind == 2));
          if (!err.empty()) {
            r.status = Status::kFail;
            r.detail = sets[s].filename().string() + ": " + err;
            return r;
          }
          continue;
        }
        const Tensor& out = got.at(output_names[k]);
        Tensor want = as_type(frontend::read_tensor_pb(outs[k].string()), out.elem());
        std::string err = compare(out, want, output_names[k]);
        if (!err.empty()) {
          r.status = Status::kFail;
          r.detail = sets[s].filename().string() + ": " + err;
          return r;
        }
      }
    }
    r.status = Status::kPass;
    if (!frozen.empty()) {
      r.detail = "inputs specialised to constants:";
      for (const auto& f : frozen) r.detail += " " + f;
    }
  } catch (const ir::UnsupportedError& e) {
    r.status = Status::kRefused;
    r.detail = e.what();
    // The front end names the model; later stages name the node: add the model.
    if (r.detail.find(model_path.string()) == std::string::npos)
      r.detail = model_path.string() + ": " + r.detail;
  } catch (const std::exception& e) {
    r.status = Status::kFail;
    r.detail = e.what();
  }
  return r;
}

// The expected state of every case, one per line: "pass ID", "refused ID", or
// "deviates ID # why" for a case whose packaged data we knowingly do not follow (the
// reason is required; such a case must keep failing, or the list is out of date).
struct Expected {
  Status status;
  std::string why;
};

inline std::map<std::string, Expected> read_expectations(const fs::path& list_path) {
  std::map<std::string, Expected> m;
  std::ifstream f(list_path);
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::string why;
    if (size_t h = line.find(" # "); h != std::string::npos) {
      why = line.substr(h + 3);
      line.resize(h);
    }
    const size_t sp = line.find(' ');
    const std::string st = line.substr(0, sp),
                      id = sp == std::string::npos ? "" : line.substr(sp + 1);
    const bool ok = !id.empty() && (st == "pass" || st == "refused" || st == "deviates") &&
                    (st == "deviates") == !why.empty();
    if (!ok)
      ADD_FAILURE() << list_path << ":" << n
                    << ": expected 'pass ID', 'refused ID' or 'deviates ID # why', got '" << line
                    << "'";
    else
      m[id] = {st == "pass"      ? Status::kPass
               : st == "refused" ? Status::kRefused
                                 : Status::kFail,
               why};
  }
  return m;
}

inline const char* status_name(Status s) {
  return s == Status::kPass ? "pass" : s == Status::kFail ? "deviates" : "refused";
}

// Runs every case (through `run_one`), prints the counts per folder and in total, and
// checks every case's state against `list_path` (or rewrites it when
// TRNSIM_UPDATE_CONFORMANCE=1).
using CaseRunner = std::function<CaseResult(const fs::path& dir, const std::string& id)>;

inline void run_suite(const std::string& label, const fs::path& list_path,
                      const std::string& regenerate, const CaseRunner& run_one) {
  const fs::path root = env_or("TRNSIM_ONNX_TESTDATA", "/usr/share/libonnx-testdata/data");
  if (!fs::is_directory(root / "node"))
    TRNSIM_SKIP_MISSING_PACKAGE(root << " not found (install libonnx-testdata)");
  const std::string filter = env_or("TRNSIM_CONFORMANCE_FILTER", "");
  const bool verbose = env_or("TRNSIM_CONFORMANCE_VERBOSE", "") == "1";
  const bool update = env_or("TRNSIM_UPDATE_CONFORMANCE", "") == "1";
  auto t0 = std::chrono::steady_clock::now();

  std::vector<CaseResult> results;
  std::map<std::string, std::array<int, 3>> per_folder;  // pass, fail, refused
  for (const char* folder : kFolders) {
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(root / folder))
      if (e.is_directory()) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (const fs::path& c : cases) {
      std::string id = std::string(folder) + "/" + c.filename().string();
      if (!filter.empty() && id.find(filter) == std::string::npos) continue;
      CaseResult r = run_one(c, id);
      per_folder[folder][static_cast<int>(r.status)]++;
      if (verbose)
        std::cout << (r.status == Status::kPass   ? "PASS    "
                      : r.status == Status::kFail ? "FAIL    "
                                                  : "REFUSED ")
                  << id << (r.detail.empty() ? "" : ": " + r.detail) << "\n";
      results.push_back(std::move(r));
    }
  }

  int passed = 0, failed = 0, refused = 0;
  for (const auto& r : results) {
    if (r.status == Status::kPass) {
      ++passed;
    } else if (r.status == Status::kFail) {
      ++failed;
    } else {
      ++refused;
      // Refusals carry the model path and name the problem; unsupported ops list
      // the supported set.
      EXPECT_NE(r.detail.find("model.onnx: "), std::string::npos) << r.id << ": " << r.detail;
      EXPECT_EQ(r.detail.find("node ''"), std::string::npos) << r.id << ": " << r.detail;
      if (r.detail.find("unsupported op type") != std::string::npos) {
        EXPECT_NE(r.detail.find("; supported: Abs, "), std::string::npos)
            << r.id << ": " << r.detail;
      }
      if (r.detail.find("cannot be lowered") != std::string::npos) {
        EXPECT_NE(r.detail.find("; lowerable: "), std::string::npos) << r.id << ": " << r.detail;
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& [folder, c] : per_folder)
    std::cout << "conformance (" << label << ") " << folder << ": " << c[0] << " passed, " << c[1]
              << " failed, " << c[2] << " refused\n";
  std::cout << passed << " passed, " << failed << " failed\n"
            << refused << " refused (unsupported), " << secs << " s\n";
  if (!verbose) {
    int shown = 0;
    for (const auto& r : results)
      if (r.status == Status::kFail && shown++ < 40)
        std::cout << "FAIL " << r.id << ": " << r.detail << "\n";
  }

  if (!filter.empty()) {
    // A partial run says nothing about the list, but a wrong answer is still one.
    for (const auto& r : results)
      if (r.status == Status::kFail) ADD_FAILURE() << "wrong: " << r.id << ": " << r.detail;
    return;
  }
  if (update) {
    // Keeps the reasons of listed deviations; a new wrong answer is not listed (it
    // fails until it is fixed, refused, or listed by hand with its reason).
    std::map<std::string, Expected> old;
    if (fs::exists(list_path)) old = read_expectations(list_path);
    std::ofstream f(list_path);
    f << "# Expected state of every conformance case (" << label << "):\n"
      << "# pass, refused, or deviates (# why: we knowingly differ from the packaged data).\n"
      << "# A case that changes state, or is on no line, fails the suite.\n"
      << "# Regenerate: " << regenerate << "\n";
    std::vector<const CaseResult*> sorted;
    for (const auto& r : results) sorted.push_back(&r);
    std::sort(sorted.begin(), sorted.end(),
              [](const CaseResult* a, const CaseResult* b) { return a->id < b->id; });
    for (const CaseResult* r : sorted) {
      auto o = old.find(r->id);
      if (r->status != Status::kFail)
        f << status_name(r->status) << " " << r->id << "\n";
      else if (o != old.end() && o->second.status == Status::kFail)
        f << "deviates " << r->id << " # " << o->second.why << "\n";
      else
        ADD_FAILURE() << "wrong: " << r->id << ": " << r->detail;
    }
    std::cout << "wrote " << sorted.size() << " cases to " << list_path << "\n";
    return;
  }
  const std::map<std::string, Expected> expected = read_expectations(list_path);
  ASSERT_FALSE(expected.empty()) << list_path << " is missing or empty";
  std::set<std::string> seen;
  for (const auto& r : results) {
    seen.insert(r.id);
    auto it = expected.find(r.id);
    if (it == expected.end()) {
      ADD_FAILURE() << r.id << " (" << (r.status == Status::kFail ? "wrong" : status_name(r.status))
                    << ") is on no line of " << list_path
                    << (r.status == Status::kFail ? ": " + r.detail
                                                  : ": add it (TRNSIM_UPDATE_CONFORMANCE=1)");
    } else if (it->second.status != r.status) {
      const bool better = r.status == Status::kPass;
      ADD_FAILURE() << (better ? "improvement" : "regression") << ": " << r.id << " was "
                    << status_name(it->second.status) << ", now "
                    << (r.status == Status::kFail ? "wrong" : status_name(r.status))
                    << (r.detail.empty() ? "" : ": " + r.detail)
                    << (better ? " (update the list: TRNSIM_UPDATE_CONFORMANCE=1)" : "");
    }
  }
  for (const auto& [id, e] : expected)
    if (!seen.count(id)) ADD_FAILURE() << id << " is listed but no longer in the test data";
}

// ---- generated single-op cases (interp_oracle, interp_index, interp_scatter) ---------

// The reference interpreter as an Executor.
inline Executor interpreter() {
  return [](const ir::Graph& g, const interp::TensorMap& feed) { return interp::run(g, feed); };
}

// The case folders a generator wrote under `out`, sorted.
inline std::vector<fs::path> case_dirs(const fs::path& out) {
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(out))
    if (e.is_directory()) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  return cases;
}

// Runs one generated case and checks it: a case with an `expect_error` file must fail
// with an error containing its text and naming its node (n_<case>); the others pass.
inline CaseResult check_generated_case(const fs::path& dir, const Executor& exec) {
  const std::string id = dir.filename().string();
  const CaseResult r = run_case(dir, id, exec);
  if (fs::exists(dir / "expect_error")) {
    std::ifstream f(dir / "expect_error");
    std::string want((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(r.status, Status::kPass) << id << ": expected an error containing '" << want << "'";
    EXPECT_NE(r.detail.find(want), std::string::npos) << id << ": " << r.detail;
    EXPECT_NE(r.detail.find("n_" + id), std::string::npos)
        << id << ": the error should name the node: " << r.detail;
  } else {
    EXPECT_EQ(r.status, Status::kPass) << id << ": " << r.detail;
  }
  return r;
}

}  // namespace trnsim::conformance
