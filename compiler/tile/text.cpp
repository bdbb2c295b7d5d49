// Text form of the tile IR, one declaration or op per line, `#` comments:
//
//   kernel NAME
//   semaphores N                               (after insert_sync)
//   tensor NAME [D0,D1,...] DTYPE ROLE [@OFFSET] [data=BASE64]
//   pool NAME sbuf|psum bufs=N [@ADDR buf=BYTES]          (@/buf: alloc_memory)
//   tile NAME POOL [P,F0,...] DTYPE slot=K [@ADDR]        (@: alloc_memory)
//   %ID ENGINE OPCODE key=value ...
//
// ENGINE is `auto` (assign_engines decides), an engine name (`vector!` when the
// kernel pinned it), `dma` or `dma.ENGINE.QUEUE` (assign_dma_queues; with `!`, the
// kernel placed it there and no pass splits or moves it). The rest of an
// op line is an instruction in assembly syntax (docs/isa.md) whose operands are
// prefixed by the tile or tensor they address, with offsets relative to it:
//   %3 vector tensor_copy dst=y:sbuf[0:128, 0, fp32, [1,64]] src=x:psum[0:128, 0, fp32, [1,64]]
// Ops appear in list order; the list order is a valid sequential order.
#include <cctype>
#include <cstdio>
#include <sstream>

#include "compiler/tile/ir.h"
#include "models/isa/assembler.h"
#include "models/isa/lexer.h"

namespace trnsim::tile {

namespace {

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string b64_encode(const std::vector<uint8_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); i += 3) {
    uint32_t v = uint32_t{d[i]} << 16;
    if (i + 1 < d.size()) v |= uint32_t{d[i + 1]} << 8;
    if (i + 2 < d.size()) v |= d[i + 2];
    s += kB64[v >> 18 & 63];
    s += kB64[v >> 12 & 63];
    s += i + 1 < d.size() ? kB64[v >> 6 & 63] : '=';
    s += i + 2 < d.size() ? kB64[v & 63] : '=';
  }
  return s;
}

bool b64_decode(std::string_view s, std::vector<uint8_t>& out) {
  if (s.size() % 4) return false;
  auto val = [](char c) -> int {
    for (int i = 0; i < 64; ++i)
      if (kB64[i] == c) return i;
    return -1;
  };
  for (size_t i = 0; i < s.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      const char c = s[i + j];
      int x = 0;
      if (c == '=') {
        if (i + 4 != s.size() || j < 2) return false;
        ++pad;
      } else {
        if (pad) return false;
        x = val(c);
        if (x < 0) return false;
      }
      v = v << 6 | static_cast<uint32_t>(x);
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (pad < 2) out.push_back(static_cast<uint8_t>(v >> 8));
    if (pad < 1) out.push_back(static_cast<uint8_t>(v));
  }
  return true;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string engine_spec(const Op& op) {
  if (op.engine_auto) return "auto";
  if (op.engine == isa::Engine::dma) {
    if (op.dma_engine < 0) return "dma";
    return "dma." + std::to_string(op.dma_engine) + "." + std::to_string(op.dma_queue) +
           (op.dma_pinned ? "!" : "");
  }
  return std::string(isa::engine_name(op.engine)) + (op.pinned ? "!" : "");
}

std::string op_text(const Kernel& k, const Op& op) {
  std::string s = isa::disassemble(op.ins);
  for (int sl = 0; sl < kNumSlots; ++sl) {
    const isa::AccessPattern* ap = slot_ap(op.ins, static_cast<Slot>(sl));
    if (!ap) continue;
    const int r = op.ref[sl];
    std::string name = "?";
    if (ap->space == isa::MemSpace::hbm) {
      if (r >= 0 && r < static_cast<int>(k.tensors.size())) name = k.tensors[r].name;
    } else if (r >= 0 && r < static_cast<int>(k.tiles.size())) {
      name = k.tiles[r].name;
    }
    const std::string key = " " + std::string(slot_key(op.ins, static_cast<Slot>(sl))) + "=";
    const size_t at = s.find(key);
    if (at != std::string::npos) s.insert(at + key.size(), name + ":");
  }
  return s;
}

}  // namespace

std::string to_text(const Kernel& k, const TextOptions& opts) {
  std::ostringstream os;
  os << "kernel " << k.name << "\n";
  if (k.semaphores) os << "semaphores " << k.semaphores << "\n";
  for (const Tensor& t : k.tensors) {
    os << "tensor " << t.name << " " << shape_text(t.shape) << " " << isa::dtype_name(t.dtype)
       << " " << isa::tensor_role_name(t.role);
    if (t.hbm_offset >= 0) os << " @" << t.hbm_offset;
    if (!t.data.empty()) os << " data=" << b64_encode(t.data);
    os << "\n";
  }
  for (const Pool& p : k.pools) {
    os << "pool " << p.name << " " << isa::mem_space_name(p.space) << " bufs=" << p.bufs;
    if (p.addr >= 0) os << " @" << p.addr << " buf=" << p.buf_bytes;
    os << "\n";
  }
  for (const Tile& t : k.tiles) {
    os << "tile " << t.name << " " << k.pools[t.pool].name << " " << shape_text(t.shape) << " "
       << isa::dtype_name(t.dtype) << " slot=" << t.slot;
    if (t.addr >= 0) os << " @" << t.addr;
    os << "\n";
  }
  for (const Op& op : k.ops) {
    os << "%" << op.id << " " << engine_spec(op) << " " << op_text(k, op);
    if (opts.estimates && op.est_start >= 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "  # t=%.1f..%.1f", op.est_start, op.est_end);
      os << buf;
    }
    os << "\n";
  }
  return os.str();
}

namespace {

// '#' comments; every white space character is a blank. Names are
// [A-Za-z_][A-Za-z0-9_.]*, as in assembly.
constexpr isa::LexSyntax kSyntax{'#', " \t\r\v\f"};
constexpr isa::CharClass kNameStart{true, false, "_"};
constexpr isa::CharClass kNameRest{true, true, "_."};

class Parser {
 public:
  Parser(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  Kernel run() {
    isa::Lexer lex(text_, kSyntax);
    while (lex.next_line()) {
      line_ = lex.line();
      // Words are separated by blanks outside brackets.
      std::vector<std::string_view> w;
      for (lex.skip_blanks(); !lex.at_end(); lex.skip_blanks()) w.push_back(lex.word(true));
      if (!w.empty()) statement(w);
    }
    verify_or_fail();
    return std::move(k_);
  }

 private:
  [[noreturn]] void fail(const std::string& m) {
    throw KernelError(file_ + ":" + std::to_string(line_) + ": error: " + m);
  }

  static std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  }

  int64_t integer(std::string_view s, const std::string& what) {
    if (s.empty()) fail("missing " + what);
    int64_t v = 0;
    switch (isa::parse_int(s, v, /*plus=*/false)) {
      case isa::NumParse::ok:
        break;
      case isa::NumParse::bad:
        fail("bad " + what + " '" + std::string(s) + "'");
      case isa::NumParse::range:
        fail(what + " '" + std::string(s) + "' is out of range");
    }
    return v;
  }

  std::vector<int64_t> shape(std::string_view s) {
    if (s.size() < 2 || s.front() != '[' || s.back() != ']')
      fail("expected a shape like [128,64], got '" + std::string(s) + "'");
    std::vector<int64_t> r;
    std::string_view in = s.substr(1, s.size() - 2);
    while (!in.empty()) {
      const size_t c = in.find(',');
      r.push_back(integer(trim(in.substr(0, c)), "dimension"));
      if (r.back() < 1) fail("dimension " + std::to_string(r.back()) + " must be >= 1");
      if (c == std::string_view::npos) break;
      in = in.substr(c + 1);
    }
    if (r.empty()) fail("empty shape");
    return r;
  }

  isa::DType dtype(std::string_view s) {
    auto d = isa::parse_dtype(s);
    if (!d) fail("unknown dtype '" + std::string(s) + "'");
    return *d;
  }

  void name_ok(std::string_view n) {
    isa::Lexer lex(n);
    if (n.empty() || lex.name(kNameStart, kNameRest).size() != n.size())
      fail("bad name '" + std::string(n) + "'");
  }

  // "key=value" -> value, or empty when the word is not that key.
  static bool keyval(std::string_view w, std::string_view key, std::string_view& v) {
    if (w.size() <= key.size() || w.substr(0, key.size()) != key || w[key.size()] != '=')
      return false;
    v = w.substr(key.size() + 1);
    return true;
  }

  void statement(const std::vector<std::string_view>& w) {
    const std::string_view head = w[0];
    if (head == "kernel") {
      if (w.size() != 2) fail("expected: kernel NAME");
      name_ok(w[1]);
      k_.name = std::string(w[1]);
    } else if (head == "semaphores") {
      if (w.size() != 2) fail("expected: semaphores N");
      k_.semaphores = static_cast<uint32_t>(integer(w[1], "semaphore count"));
    } else if (head == "tensor") {
      tensor(w);
    } else if (head == "pool") {
      pool(w);
    } else if (head == "tile") {
      tile(w);
    } else {
      op(w);
    }
  }

  void tensor(const std::vector<std::string_view>& w) {
    if (w.size() < 5) fail("expected: tensor NAME [SHAPE] DTYPE ROLE [@OFFSET] [data=BASE64]");
    Tensor t;
    name_ok(w[1]);
    t.name = std::string(w[1]);
    if (k_.find_tensor(t.name) >= 0) fail("tensor '" + t.name + "' declared twice");
    t.shape = shape(w[2]);
    t.dtype = dtype(w[3]);
    bool role_ok = false;
    for (auto r : {isa::TensorRole::input, isa::TensorRole::output, isa::TensorRole::constant,
                   isa::TensorRole::scratch})
      if (isa::tensor_role_name(r) == w[4]) t.role = r, role_ok = true;
    if (!role_ok) fail("unknown tensor role '" + std::string(w[4]) + "'");
    for (size_t i = 5; i < w.size(); ++i) {
      std::string_view v;
      if (w[i][0] == '@') {
        t.hbm_offset = integer(w[i].substr(1), "hbm offset");
      } else if (keyval(w[i], "data", v)) {
        if (!b64_decode(v, t.data)) fail("bad base64 data for tensor '" + t.name + "'");
        if (t.data.size() != t.bytes())
          fail("tensor '" + t.name + "' data has " + std::to_string(t.data.size()) +
               " bytes, expected " + std::to_string(t.bytes()));
      } else {
        fail("unexpected '" + std::string(w[i]) + "' in tensor declaration");
      }
    }
    k_.tensors.push_back(std::move(t));
  }

  void pool(const std::vector<std::string_view>& w) {
    if (w.size() < 4) fail("expected: pool NAME sbuf|psum bufs=N [@ADDR buf=BYTES]");
    Pool p;
    name_ok(w[1]);
    p.name = std::string(w[1]);
    if (k_.find_pool(p.name) >= 0) fail("pool '" + p.name + "' declared twice");
    if (w[2] == "sbuf")
      p.space = isa::MemSpace::sbuf;
    else if (w[2] == "psum")
      p.space = isa::MemSpace::psum;
    else
      fail("pool space must be sbuf or psum, got '" + std::string(w[2]) + "'");
    std::string_view v;
    if (!keyval(w[3], "bufs", v)) fail("expected bufs=N");
    const int64_t b = integer(v, "bufs");
    if (b < 1) fail("bufs must be >= 1");
    p.bufs = static_cast<uint32_t>(b);
    for (size_t i = 4; i < w.size(); ++i) {
      if (w[i][0] == '@')
        p.addr = integer(w[i].substr(1), "pool address");
      else if (keyval(w[i], "buf", v))
        p.buf_bytes = static_cast<uint64_t>(integer(v, "buffer bytes"));
      else
        fail("unexpected '" + std::string(w[i]) + "' in pool declaration");
    }
    k_.pools.push_back(std::move(p));
  }

  void tile(const std::vector<std::string_view>& w) {
    if (w.size() < 5) fail("expected: tile NAME POOL [SHAPE] DTYPE slot=K [@ADDR]");
    Tile t;
    name_ok(w[1]);
    t.name = std::string(w[1]);
    if (k_.find_tile(t.name) >= 0) fail("tile '" + t.name + "' declared twice");
    t.pool = k_.find_pool(w[2]);
    if (t.pool < 0) fail("unknown pool '" + std::string(w[2]) + "'");
    t.shape = shape(w[3]);
    t.dtype = dtype(w[4]);
    uint32_t count = 0;
    for (const Tile& o : k_.tiles) count += o.pool == t.pool;
    t.slot = count % k_.pools[t.pool].bufs;
    for (size_t i = 5; i < w.size(); ++i) {
      std::string_view v;
      if (w[i][0] == '@')
        t.addr = integer(w[i].substr(1), "tile address");
      else if (keyval(w[i], "slot", v))
        t.slot = static_cast<uint32_t>(integer(v, "slot"));
      else
        fail("unexpected '" + std::string(w[i]) + "' in tile declaration");
    }
    if (t.slot >= k_.pools[t.pool].bufs)
      fail("slot " + std::to_string(t.slot) + " but pool '" + k_.pools[t.pool].name + "' has " +
           std::to_string(k_.pools[t.pool].bufs) + " buffers");
    k_.tiles.push_back(std::move(t));
  }

  void op(const std::vector<std::string_view>& w) {
    Op op;
    op.id = k_.next_op_id();
    size_t i = 0;
    if (w[0][0] == '%') {
      op.id = static_cast<int>(integer(w[0].substr(1), "op id"));
      for (const Op& o : k_.ops)
        if (o.id == op.id) fail("op id %" + std::to_string(op.id) + " used twice");
      ++i;
    }
    if (i >= w.size()) fail("missing engine and instruction");
    std::string_view spec = w[i++];
    std::string queue = "vector";
    if (spec == "auto") {
      op.engine_auto = true;
    } else if (spec.substr(0, 3) == "dma") {
      op.engine = isa::Engine::dma;
      queue = "dma 0 0";
      if (spec.size() > 3) {
        if (spec[3] != '.') fail("bad engine '" + std::string(spec) + "'");
        // `dma.E.Q!`: the kernel placed it; no pass splits or moves it.
        if (spec.back() == '!') op.dma_pinned = true, spec.remove_suffix(1);
        std::string_view rest = spec.substr(4);
        const size_t dot = rest.find('.');
        if (dot == std::string_view::npos) fail("expected dma.ENGINE.QUEUE");
        op.dma_engine = static_cast<int>(integer(rest.substr(0, dot), "dma engine"));
        op.dma_queue = static_cast<int>(integer(rest.substr(dot + 1), "dma queue"));
      }
    } else {
      if (spec.back() == '!') op.pinned = true, spec.remove_suffix(1);
      auto e = isa::parse_engine(spec);
      if (!e) fail("unknown engine '" + std::string(spec) + "'");
      op.engine = *e;
      queue = std::string(spec);
    }
    if (i >= w.size()) fail("missing instruction");
    // Strip the "NAME:" operand prefixes, remembering them by key.
    std::string instr;
    std::vector<std::pair<std::string, std::string>> named;
    for (; i < w.size(); ++i) {
      std::string word(w[i]);
      const size_t eq = word.find('=');
      if (eq != std::string::npos) {
        size_t j = eq + 1;
        while (j < word.size() && kNameRest.has(word[j])) ++j;
        if (j > eq + 1 && j < word.size() && word[j] == ':') {
          named.push_back({word.substr(0, eq), word.substr(eq + 1, j - eq - 1)});
          word.erase(eq + 1, j - eq);
        }
      }
      instr += (instr.empty() ? "" : " ") + word;
    }
    isa::Program p;
    try {
      p = isa::assemble(".semaphores 65536\n.queue " + queue + "\n" + instr + "\n", file_);
    } catch (const isa::AsmError& e) {
      std::string m = e.what();
      const size_t at = m.find("error: ");
      fail(at == std::string::npos ? m : m.substr(at + 7));
    }
    if (p.queues.size() != 1 || p.queues[0].instrs.size() != 1) fail("expected one instruction");
    op.ins = p.queues[0].instrs[0];
    op.ins.line = 0;
    for (int s = 0; s < kNumSlots; ++s) {
      const isa::AccessPattern* ap = slot_ap(op.ins, static_cast<Slot>(s));
      if (!ap) continue;
      const std::string key(slot_key(op.ins, static_cast<Slot>(s)));
      std::string name;
      for (const auto& [kk, n] : named)
        if (kk == key) name = n;
      if (name.empty()) fail(key + " needs a tile or tensor name, e.g. " + key + "=x:sbuf[...]");
      const int r = ap->space == isa::MemSpace::hbm ? k_.find_tensor(name) : k_.find_tile(name);
      if (r < 0)
        fail(std::string(ap->space == isa::MemSpace::hbm ? "unknown tensor '" : "unknown tile '") +
             name + "' in " + key);
      op.ref[s] = r;
    }
    for (const auto& [kk, n] : named) {
      bool used = false;
      for (int s = 0; s < kNumSlots; ++s)
        used |=
            slot_ap(op.ins, static_cast<Slot>(s)) && slot_key(op.ins, static_cast<Slot>(s)) == kk;
      if (!used) fail("'" + n + ":' prefixes " + kk + ", which is not an operand of this op");
    }
    k_.ops.push_back(std::move(op));
  }

  void verify_or_fail() {
    try {
      verify(k_);
    } catch (const KernelError& e) {
      throw KernelError(file_ + ": error: " + e.what());
    }
  }

  std::string_view text_;
  std::string file_;
  uint32_t line_ = 0;
  Kernel k_;
};

}  // namespace

Kernel parse(std::string_view text, const std::string& file) {
  return Parser(text, file).run();
}

}  // namespace trnsim::tile
