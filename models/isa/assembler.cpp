#include "models/isa/assembler.h"
#include "models/isa/file_io.h"
#include "models/isa/lexer.h"
#include "models/isa/limits.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>

namespace trnsim::isa {

namespace {

std::string format_error(const std::string& file, uint32_t line, uint32_t col,
                         const std::string& msg) {
  if (line == 0) return file + ": error: " + msg;
  return file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + msg;
}

using i128 = __int128;
constexpr i128 kU16 = std::numeric_limits<uint16_t>::max();
constexpr i128 kU32 = std::numeric_limits<uint32_t>::max();
constexpr i128 kU64 = std::numeric_limits<uint64_t>::max();
constexpr i128 kI32Min = std::numeric_limits<int32_t>::min();
constexpr i128 kI32Max = std::numeric_limits<int32_t>::max();
constexpr i128 kI64Min = std::numeric_limits<int64_t>::min();
constexpr i128 kI64Max = std::numeric_limits<int64_t>::max();

std::string i128_str(i128 v) {
  if (v < 0) return "-" + i128_str(-v);
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return s;
}

// Names are [A-Za-z_][A-Za-z0-9_.]*; blanks are ' ' and '\t'; '#' starts a comment.
constexpr LexSyntax kAsmSyntax{'#', " \t", {true, false, "_"}, {true, true, "_."}};

// ---------------------------------------------------------------------------
// The lexer walking the text line by line, plus the assembler's value syntax and
// messages. Every error carries the 1-based column of the token that is wrong.
class Cursor : public Lexer {
 public:
  Cursor(std::string_view text, const std::string& file) : Lexer(text, kAsmSyntax), file_(file) {}

  [[noreturn]] void fail_at(size_t p, const std::string& msg) const {
    throw AsmError(file_, line(), col_at(p), ctx_ + msg);
  }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(offset(), msg); }

  bool at_value_end() const { return at_end() || is_blank(peek()); }
  // What is at the cursor, for "found ..." in messages.
  std::string found() const { return found_at(offset()); }
  std::string found_at(size_t p) const {
    if (p >= limit()) return "end of line";
    size_t e = p;
    while (e < limit() && !is_blank(text()[e]) && e - p < 16) ++e;
    return "'" + std::string(text().substr(p, e - p)) + "'";
  }
  // Skips blanks before (not after: a value must end at a blank).
  void expect(char c, std::string_view what) {
    skip_blanks();
    if (!accept(c))
      fail("expected '" + std::string(1, c) + "' " + std::string(what) + ", found " + found());
  }
  void expect_str(std::string_view t, std::string_view what) {
    if (!accept(t))
      fail("expected '" + std::string(t) + "' " + std::string(what) + ", found " + found());
  }

  std::string_view name_or_fail(std::string_view what) {
    skip_blanks();
    auto n = name();
    if (n.empty()) fail("expected " + std::string(what) + ", found " + found());
    return n;
  }

  // Decimal or 0x-hex integer with optional sign, range-checked. `x_follows` lets a
  // number end right before 'x' (hbm "ROWSxSTRIDE").
  i128 integer(i128 lo, i128 hi, std::string_view what, bool x_follows = false) {
    skip_blanks();
    const size_t b = offset();
    bool neg = false;
    if (peek() == '-' || peek() == '+') {
      neg = peek() == '-';
      seek(b + 1);
    }
    bool hex = peek() == '0' && (peek(1) == 'x' || peek(1) == 'X') &&
               std::isxdigit(static_cast<unsigned char>(peek(2)));
    if (hex && x_follows) {
      // An hbm row count is hex only if its digits end at the 'x': "0x2x0x3" is 2 rows
      // of stride 3, "0x640," is 0 rows of stride 640 (as the disassembler prints it).
      size_t e = 2;
      while (std::isxdigit(static_cast<unsigned char>(peek(e)))) ++e;
      hex = peek(e) == 'x';
    }
    if (hex) seek(offset() + 2);
    const std::string_view ds = digits(hex ? 16 : 10);
    const auto mag = parse_magnitude(ds, hex ? 16 : 10);
    const char next = peek();
    const bool glued = kAsmSyntax.name_rest.has(next) && !(x_follows && next == 'x');
    if (ds.empty() && !glued && (at_end() || !kAsmSyntax.name_rest.has(text()[b])))
      fail_at(b, "expected a number for " + std::string(what) + ", found " + found_at(b));
    if (ds.empty() || glued) {
      size_t e = offset();
      while (e < limit() &&
             (kAsmSyntax.name_rest.has(text()[e]) || text()[e] == '-' || text()[e] == '+'))
        ++e;
      if (e == b) e = std::min(limit(), b + 1);
      fail_at(b,
              "bad number '" + std::string(text().substr(b, e - b)) + "' for " + std::string(what));
    }
    const i128 m = mag ? static_cast<i128>(*mag) : kU64 + 1;
    const i128 v = neg ? -m : m;
    if (!mag || v < lo || v > hi)
      fail_at(b, std::string(what) + " " + std::string(text().substr(b, offset() - b)) +
                     " out of range (" + i128_str(lo) + ".." + i128_str(hi) + ")");
    return v;
  }

  // Float immediate: anything strtof reads completely (1.5, -inf, nan, 0x1p-3).
  float real(std::string_view what) {
    skip_blanks();
    const size_t b = offset();
    const std::string tok(until("],"));
    if (tok.empty())
      fail_at(b, "expected a number for " + std::string(what) + ", found " + found());
    float f = 0;
    switch (parse_float(tok, f)) {
      case NumParse::ok:
        break;
      case NumParse::bad:
        fail_at(b, "bad number '" + tok + "' for " + std::string(what));
      case NumParse::range:
        fail_at(b, "number '" + tok + "' for " + std::string(what) + " is out of float range");
    }
    return f;
  }

  // `dash`: an entry may be a lone '-' (not a sign: no digit follows), read as *dash.
  std::vector<i128> int_list(i128 lo, i128 hi, std::string_view what, size_t max_len,
                             const i128* dash = nullptr) {
    skip_blanks();
    const size_t b = offset();
    expect('[', "to open the list");
    std::vector<i128> v;
    skip_blanks();
    if (!accept(']')) {
      do {
        skip_blanks();
        const bool lone =
            dash && peek() == '-' && (peek(1) == ',' || peek(1) == ']' || is_blank(peek(1)));
        if (lone) seek(offset() + 1);
        v.push_back(lone ? *dash : integer(lo, hi, what));
        skip_blanks();
      } while (accept(','));
      expect(']', "to close the list");
    }
    if (v.size() > max_len)
      fail_at(b, std::string(what) + " list has " + std::to_string(v.size()) +
                     " entries (at most " + std::to_string(max_len) + ")");
    return v;
  }

  std::string ctx_;  // prefix for messages, e.g. "bad access pattern: "

 private:
  const std::string& file_;
};

struct CtxGuard {
  Cursor& c;
  std::string saved;
  CtxGuard(Cursor& cur, std::string ctx) : c(cur), saved(cur.ctx_) { c.ctx_ = std::move(ctx); }
  ~CtxGuard() { c.ctx_ = saved; }
};

// ---------------------------------------------------------------------------
// Operand and key syntax shared by parser and printer.

enum class Key {
  dst,
  src0,
  src1,
  src2,
  accum,
  scale,
  bias,
  arg0,
  arg1,
  value,
  base,
  fill,
  func,
  op,
  op0,
  op1,
  accum_op,
  cmp,
  accumulate,
  double_row,
  reverse0,
  reverse1,
  axes,
  pstep,
  steps,
  spread,
  group,
  peers,
  wait,
  signal,
};

struct KeySpec {
  std::string_view name;
  Key key;
  bool required;
};

// Keys each opcode accepts besides wait/signal; operands come from the opcode table.
std::vector<KeySpec> keys_for(Opcode op) {
  std::vector<KeySpec> k;
  const auto& info = opcode_info(op);
  if (info.has_dst) k.push_back({"dst", Key::dst, true});
  for (int i = 0; i < info.nsrc; ++i)
    k.push_back({info.src_names[i], static_cast<Key>(static_cast<int>(Key::src0) + i), true});
  switch (op) {
    case Opcode::dma_copy:
      k.push_back({"spread", Key::spread, false});
      break;
    case Opcode::matmul:
      k.insert(k.end(),
               {{"accumulate", Key::accumulate, false}, {"double_row", Key::double_row, false}});
      break;
    case Opcode::activation:
      k.insert(k.end(), {{"func", Key::func, true},
                         {"scale", Key::scale, false},
                         {"bias", Key::bias, false},
                         {"accum", Key::accum, false}});
      break;
    case Opcode::tensor_tensor:
    case Opcode::partition_reduce:
      k.push_back({"op", Key::op, true});
      break;
    case Opcode::tensor_scalar:
      k.insert(k.end(), {{"op0", Key::op0, true},
                         {"arg0", Key::arg0, true},
                         {"op1", Key::op1, false},
                         {"arg1", Key::arg1, false},
                         {"reverse0", Key::reverse0, false},
                         {"reverse1", Key::reverse1, false},
                         {"accum", Key::accum, false},
                         {"accum_op", Key::accum_op, false}});
      break;
    case Opcode::tensor_reduce:
      k.insert(k.end(), {{"op", Key::op, true}, {"axes", Key::axes, true}});
      break;
    case Opcode::memset:
      k.push_back({"value", Key::value, true});
      break;
    case Opcode::iota:
      k.insert(
          k.end(),
          {{"base", Key::base, false}, {"pstep", Key::pstep, false}, {"steps", Key::steps, false}});
      break;
    case Opcode::affine_select:
      k.insert(k.end(), {{"cmp", Key::cmp, true},
                         {"base", Key::base, false},
                         {"pstep", Key::pstep, false},
                         {"steps", Key::steps, false},
                         {"fill", Key::fill, false}});
      break;
    case Opcode::all_reduce:
    case Opcode::all_gather:
    case Opcode::reduce_scatter:
    case Opcode::barrier:
    case Opcode::all_to_all:
      k.push_back({"group", Key::group, true});
      break;
    case Opcode::permute:
      k.insert(k.end(), {{"group", Key::group, true}, {"peers", Key::peers, true}});
      break;
    default:
      break;
  }
  return k;
}

AccessPattern parse_ap(Cursor& c, const Program& prog) {
  CtxGuard g(c, "bad access pattern: ");
  c.skip_blanks();
  const size_t b = c.offset();
  const auto sp = c.name();
  AccessPattern ap;
  if (sp == "sbuf") {
    ap.space = MemSpace::sbuf;
  } else if (sp == "psum") {
    ap.space = MemSpace::psum;
  } else if (sp == "hbm") {
    ap.space = MemSpace::hbm;
  } else {
    c.fail_at(b, sp.empty() ? "expected sbuf[...], psum[...] or hbm[...], found " + c.found()
                            : "unknown memory space '" + std::string(sp) + "'");
  }
  c.expect('[', "after the memory space");
  if (ap.space == MemSpace::hbm) {
    ap.partition_count = static_cast<uint32_t>(c.integer(0, kU32, "row count", true));
    c.expect('x', "between row count and row stride");
    ap.partition_stride = static_cast<int64_t>(c.integer(kI64Min, kI64Max, "row stride"));
  } else {
    const size_t pb = c.offset();
    const i128 s = c.integer(0, kU32, "partition start");
    c.expect(':', "in the partition range");
    const i128 e = c.integer(0, kU32, "partition end");
    if (e <= s) c.fail_at(pb, "partition range " + i128_str(s) + ":" + i128_str(e) + " is empty");
    ap.partition_start = static_cast<uint32_t>(s);
    ap.partition_count = static_cast<uint32_t>(e - s);
  }
  c.expect(',', "after the partitions");
  c.skip_blanks();
  const size_t ob = c.offset();
  if (c.accept('@')) {
    if (ap.space != MemSpace::hbm) c.fail_at(ob, "@name offsets are only for hbm patterns");
    const size_t nb = c.offset();
    const auto nm = c.name();
    if (nm.empty()) c.fail("expected a tensor name after '@', found " + c.found());
    const TensorDecl* t = prog.find_tensor(nm);
    if (!t) c.fail_at(nb, "unknown tensor '" + std::string(nm) + "'");
    i128 off = t->hbm_offset;
    if (c.peek() == '+' || c.peek() == '-') off += c.integer(kI64Min, kI64Max, "tensor offset");
    if (off < 0 || off > kU64) c.fail_at(ob, "offset " + i128_str(off) + " is outside hbm");
    ap.offset = static_cast<uint64_t>(off);
  } else {
    ap.offset = static_cast<uint64_t>(c.integer(0, kU64, "offset"));
  }
  c.expect(',', "after the offset");
  c.skip_blanks();
  const size_t db = c.offset();
  const auto dt = c.name();
  const auto t = parse_dtype(dt);
  if (!t)
    c.fail_at(db, dt.empty() ? "expected a dtype, found " + c.found()
                             : "unknown dtype '" + std::string(dt) + "'");
  ap.dtype = *t;
  c.skip_blanks();
  while (c.accept(',')) {
    c.skip_blanks();
    if (ap.ndims == kMaxDims) c.fail("more than " + std::to_string(kMaxDims) + " free-axis dims");
    c.expect('[', "to open a [stride,size] dim");
    ap.dims[ap.ndims].stride = static_cast<int64_t>(c.integer(kI64Min, kI64Max, "stride"));
    c.expect(',', "between stride and size");
    ap.dims[ap.ndims].size = static_cast<uint32_t>(c.integer(0, kU32, "size"));
    c.expect(']', "to close the dim");
    ++ap.ndims;
    c.skip_blanks();
  }
  c.expect(']', "to close the pattern");
  return ap;
}

ScalarOperand parse_scalar(Cursor& c, const Program& prog, std::string_view key) {
  c.skip_blanks();
  ScalarOperand s;
  // A pattern starts with a memory-space name and '['; anything else is a number.
  const size_t b = c.offset();
  const bool named = !c.name().empty() && c.peek() == '[';
  c.seek(b);
  if (named) {
    s.is_ap = true;
    s.ap = parse_ap(c, prog);
  } else {
    s.imm = c.real(key);
  }
  return s;
}

AluOp parse_alu(Cursor& c, std::string_view key) {
  c.skip_blanks();
  const size_t b = c.offset();
  const auto n = c.name();
  const auto op = parse_alu_op(n);
  if (!op)
    c.fail_at(b, "unknown ALU op '" + std::string(n.empty() ? c.word() : n) + "' for " +
                     std::string(key));
  return *op;
}

bool parse_bool(Cursor& c, std::string_view key) {
  return c.integer(0, 1, std::string(key) + " (0 or 1)") != 0;
}

uint16_t parse_sem(Cursor& c, const Program& prog) {
  c.expect_str("s", "to start a semaphore (sN)");
  const size_t b = c.offset();
  const auto n = static_cast<uint16_t>(c.integer(0, kU16, "semaphore"));
  if (n >= prog.num_semaphores)
    c.fail_at(b, "semaphore s" + std::to_string(n) + " out of range (.semaphores " +
                     std::to_string(prog.num_semaphores) + ")");
  return n;
}

// ---------------------------------------------------------------------------
// Base64 (RFC 4648 alphabet, '=' padding). Each .data line decodes on its own.

constexpr std::string_view kB64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string b64_encode(const uint8_t* p, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = uint32_t{p[i]} << 16 | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0) |
                       (i + 2 < n ? p[i + 2] : 0);
    out += kB64[v >> 18 & 63];
    out += kB64[v >> 12 & 63];
    out += i + 1 < n ? kB64[v >> 6 & 63] : '=';
    out += i + 2 < n ? kB64[v & 63] : '=';
  }
  return out;
}

void b64_decode(Cursor& c, std::string_view tok, size_t tok_pos, std::vector<uint8_t>& out) {
  if (tok.size() % 4 != 0)
    c.fail_at(tok_pos,
              "bad base64: length " + std::to_string(tok.size()) + " is not a multiple of 4");
  for (size_t i = 0; i < tok.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char ch = tok[i + j];
      uint32_t d = 0;
      if (ch == '=') {
        // Padding only in the last two places of the last group.
        if (i + 4 != tok.size() || j < 2 || (j == 2 && tok[i + 3] != '='))
          c.fail_at(tok_pos + i + j, "bad base64: misplaced '='");
        ++pad;
      } else {
        const auto k = kB64.find(ch);
        if (k == std::string_view::npos)
          c.fail_at(tok_pos + i + j, "bad base64: character '" + std::string(1, ch) + "'");
        d = static_cast<uint32_t>(k);
      }
      v = v << 6 | d;
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (pad < 2) out.push_back(static_cast<uint8_t>(v >> 8));
    if (pad < 1) out.push_back(static_cast<uint8_t>(v));
  }
}

// ---------------------------------------------------------------------------

class Assembler {
 public:
  Assembler(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  Program run() {
    Cursor c(text_, file_);
    while (c.next_line()) statement(c);
    for (const auto& [name, bytes] : p_.constants) {
      const TensorDecl* t = p_.find_tensor(name);
      if (bytes.size() != t->bytes()) {
        const auto& [dl, dc] = data_pos_.at(name);
        throw AsmError(file_, dl, dc,
                       "constant data for '" + name + "' has " + std::to_string(bytes.size()) +
                           " bytes; the tensor needs " + std::to_string(t->bytes()));
      }
    }
    return std::move(p_);
  }

 private:
  void statement(Cursor& c) {
    if (c.at_line_end()) return;
    if (c.peek() == '.') {
      directive(c);
    } else {
      instruction(c, c.line());
    }
  }

  void end_of_statement(Cursor& c, std::string_view what) {
    if (!c.at_line_end()) c.fail("unexpected " + c.found() + " after " + std::string(what));
  }

  void before_queues(Cursor& c, size_t b, std::string_view d) {
    if (cur_ != nullptr || !p_.queues.empty())
      c.fail_at(b, "directive " + std::string(d) + " must come before the first .queue");
  }

  void directive(Cursor& c) {
    const size_t b = c.offset();
    c.accept('.');
    const std::string d = "." + std::string(c.name());
    if (d == ".program") {
      before_queues(c, b, d);
      if (seen_program_) c.fail_at(b, "duplicate .program");
      seen_program_ = true;
      p_.name = c.name_or_fail("a program name");
    } else if (d == ".semaphores") {
      before_queues(c, b, d);
      if (seen_sems_) c.fail_at(b, "duplicate .semaphores");
      seen_sems_ = true;
      p_.num_semaphores = static_cast<uint32_t>(c.integer(0, kU32, "semaphore count"));
    } else if (d == ".tensor") {
      before_queues(c, b, d);
      tensor(c);
    } else if (d == ".data") {
      before_queues(c, b, d);
      data(c);
    } else if (d == ".queue") {
      queue(c);
    } else {
      c.fail_at(b, "unknown directive '" + d + "'");
    }
    end_of_statement(c, d);
  }

  void tensor(Cursor& c) {
    TensorDecl t;
    c.skip_blanks();
    const size_t nb = c.offset();
    t.name = c.name_or_fail("a tensor name");
    if (p_.find_tensor(t.name)) c.fail_at(nb, "duplicate tensor '" + t.name + "'");
    for (auto d : c.int_list(0, kI64Max, "dimension", 64))
      t.shape.push_back(static_cast<int64_t>(d));
    c.skip_blanks();
    const size_t db = c.offset();
    const auto dt = c.name();
    const auto ty = parse_dtype(dt);
    if (!ty)
      c.fail_at(db, dt.empty() ? "expected a dtype, found " + c.found()
                               : "unknown dtype '" + std::string(dt) + "'");
    t.dtype = *ty;
    c.skip_blanks();
    const size_t rb = c.offset();
    const auto role = c.name();
    bool ok = false;
    for (auto r :
         {TensorRole::input, TensorRole::output, TensorRole::constant, TensorRole::scratch})
      if (tensor_role_name(r) == role) t.role = r, ok = true;
    if (!ok)
      c.fail_at(rb, "unknown tensor role '" + std::string(role.empty() ? c.word() : role) +
                        "' (input, output, constant, scratch)");
    c.expect('@', "before the tensor's hbm offset");
    t.hbm_offset = static_cast<uint64_t>(c.integer(0, kU64, "hbm offset"));
    // Also a validate() rule; here it gets the line (bytes() saturates at 2^64-1).
    uint64_t end;
    if (__builtin_add_overflow(t.hbm_offset, t.bytes(), &end) || end > kMaxHbmBytes)
      c.fail_at(nb, "tensor '" + t.name + "' ends past hbm byte " + std::to_string(kMaxHbmBytes) +
                        " (1 PiB), the largest hbm the simulator models");
    p_.tensors.push_back(std::move(t));
  }

  void data(Cursor& c) {
    c.skip_blanks();
    const size_t nb = c.offset();
    const std::string name(c.name_or_fail("a tensor name"));
    if (!p_.find_tensor(name)) c.fail_at(nb, "unknown tensor '" + name + "'");
    data_pos_.try_emplace(name, c.line(), c.col_at(nb));
    auto& bytes = p_.constants[name];
    c.skip_blanks();
    const size_t tb = c.offset();
    b64_decode(c, c.word(), tb, bytes);
  }

  void queue(Cursor& c) {
    c.skip_blanks();
    const size_t eb = c.offset();
    const auto en = c.name();
    const auto e = parse_engine(en);
    if (!e)
      c.fail_at(eb, "unknown engine '" + std::string(en.empty() ? c.word() : en) +
                        "' (tensor, vector, scalar, gpsimd, sync, dma)");
    Queue q;
    q.engine = *e;
    if (q.engine == Engine::dma) {
      q.dma_engine = static_cast<uint16_t>(c.integer(0, kU16, "dma engine"));
      q.dma_queue = static_cast<uint16_t>(c.integer(0, kU16, "dma queue"));
    }
    // A repeated .queue continues the existing queue (documented in docs/isa.md).
    cur_ = nullptr;
    for (auto& existing : p_.queues)
      if (existing.engine == q.engine && existing.dma_engine == q.dma_engine &&
          existing.dma_queue == q.dma_queue)
        cur_ = &existing;
    if (!cur_) {
      p_.queues.push_back(std::move(q));
      // Pointers into p_.queues are refreshed on every .queue, so growth is safe.
      cur_ = &p_.queues.back();
    }
  }

  void instruction(Cursor& c, uint32_t line) {
    const size_t ob = c.offset();
    const auto on = c.name();
    if (on.empty()) c.fail("expected an opcode or a directive, found " + c.found());
    if (!cur_) c.fail_at(ob, "instruction before any .queue");
    const auto op = parse_opcode(on);
    if (!op) c.fail_at(ob, "unknown opcode '" + std::string(on) + "'");

    Instruction in;
    in.op = *op;
    in.line = line;
    in.nsrc = opcode_info(*op).nsrc;
    if (*op == Opcode::activation) in.arg0.imm = 1.0f;  // scale defaults to 1
    const auto specs = keys_for(*op);
    std::vector<bool> seen(specs.size(), false);

    while (!c.at_line_end()) {
      const size_t kb = c.offset();
      const auto key = c.name();
      if (key.empty()) c.fail("expected key=value, found " + c.found());
      if (!c.accept('='))
        c.fail("expected '=' after key '" + std::string(key) + "', found " + c.found());
      if (key == "wait") {
        SemWait w;
        w.sem = parse_sem(c, p_);
        c.expect_str(">=", "in wait=sN>=V");
        w.value = static_cast<uint32_t>(c.integer(0, kU32, "wait value"));
        in.waits.push_back(w);
      } else if (key == "signal") {
        SemSignal s;
        s.sem = parse_sem(c, p_);
        c.expect_str("+", "in signal=sN+K");
        s.inc = static_cast<uint32_t>(c.integer(0, kU32, "signal increment"));
        if (c.accept('@')) {
          const size_t wb = c.offset();
          const auto when = c.name();
          if (when == "start") {
            s.when = SignalWhen::start;
          } else if (when != "done") {
            c.fail_at(wb, "expected @start or @done after the signal, found '" +
                              std::string(when.empty() ? c.word() : when) + "'");
          }
        }
        in.signals.push_back(s);
      } else {
        size_t i = 0;
        while (i < specs.size() && specs[i].name != key) ++i;
        if (i == specs.size())
          c.fail_at(kb, "unknown key '" + std::string(key) + "' for " + std::string(on));
        if (seen[i]) c.fail_at(kb, "duplicate key '" + std::string(key) + "'");
        seen[i] = true;
        value(c, in, specs[i]);
      }
      if (!c.at_value_end())
        c.fail("unexpected " + c.found() + " after the value of '" + std::string(key) + "'");
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      if (!specs[i].required || seen[i]) continue;
      const bool operand = specs[i].key <= Key::src2;
      c.fail_at(ob, std::string("missing required ") + (operand ? "operand" : "key") + " '" +
                        std::string(specs[i].name) + "' for " + std::string(on));
    }
    cur_->instrs.push_back(std::move(in));
  }

  void value(Cursor& c, Instruction& in, const KeySpec& k) {
    switch (k.key) {
      case Key::dst:
        in.dst = parse_ap(c, p_);
        break;
      case Key::src0:
      case Key::src1:
      case Key::src2:
        in.src[static_cast<int>(k.key) - static_cast<int>(Key::src0)] = parse_ap(c, p_);
        break;
      case Key::accum:
        in.has_accum = true;
        in.accum = parse_ap(c, p_);
        break;
      case Key::scale:
      case Key::arg0:
        in.arg0 = parse_scalar(c, p_, k.name);
        break;
      case Key::bias:
      case Key::arg1:
        in.arg1 = parse_scalar(c, p_, k.name);
        break;
      case Key::value:
      case Key::base:
        in.arg0.imm = c.real(k.name);
        break;
      case Key::fill:
        in.fill = c.real(k.name);
        break;
      case Key::func: {
        c.skip_blanks();
        const size_t b = c.offset();
        const auto n = c.name();
        const auto f = parse_act_func(n);
        if (!f)
          c.fail_at(b,
                    "unknown activation function '" + std::string(n.empty() ? c.word() : n) + "'");
        in.func = *f;
        break;
      }
      case Key::op:
      case Key::op0:
      case Key::cmp:
        in.op0 = parse_alu(c, k.name);
        break;
      case Key::op1:
        in.op1 = parse_alu(c, k.name);
        break;
      case Key::accum_op:
        in.accum_op = parse_alu(c, k.name);
        break;
      case Key::accumulate:
        in.accumulate = parse_bool(c, k.name);
        break;
      case Key::double_row:
        in.double_row = parse_bool(c, k.name);
        break;
      case Key::reverse0:
        in.reverse0 = parse_bool(c, k.name);
        break;
      case Key::reverse1:
        in.reverse1 = parse_bool(c, k.name);
        break;
      case Key::axes: {
        c.skip_blanks();
        const size_t b = c.offset();
        for (auto a : c.int_list(0, kMaxDims - 1, "axis", kMaxDims)) {
          const auto m = static_cast<uint8_t>(1u << static_cast<int>(a));
          if (in.axes & m) c.fail_at(b, "axis " + i128_str(a) + " listed twice");
          in.axes |= m;
        }
        break;
      }
      case Key::pstep:
        in.pstep = static_cast<int32_t>(c.integer(kI32Min, kI32Max, "pstep"));
        break;
      case Key::spread:
        in.spread = static_cast<uint8_t>(c.integer(1, 16, "spread"));
        break;
      case Key::steps: {
        const auto v = c.int_list(kI32Min, kI32Max, "step", kMaxDims);
        for (size_t i = 0; i < v.size(); ++i) in.steps[i] = static_cast<int32_t>(v[i]);
        break;
      }
      case Key::group: {
        c.skip_blanks();
        const size_t b = c.offset();
        for (auto r : c.int_list(0, kU32 - 1, "rank", kMaxGroup)) {
          const auto rank = static_cast<uint32_t>(r);
          if (!in.group.empty() && rank <= in.group.back())
            c.fail_at(b, "group ranks must be ascending and distinct (" + i128_str(r) + " after " +
                             std::to_string(in.group.back()) + ")");
          in.group.push_back(rank);
        }
        if (in.group.empty()) c.fail_at(b, "group lists no rank");
        break;
      }
      case Key::peers: {
        c.skip_blanks();
        // `-`: this group position sends nothing (kNoPeer, above every rank).
        const i128 none = kNoPeer;
        for (auto r : c.int_list(0, kU32 - 1, "rank", kMaxGroup, &none))
          in.peers.push_back(static_cast<uint32_t>(r));
        break;
      }
      case Key::wait:
      case Key::signal:
        break;  // handled by the caller
    }
  }

  std::string_view text_;
  const std::string& file_;
  Program p_;
  Queue* cur_ = nullptr;
  bool seen_program_ = false, seen_sems_ = false;
  std::map<std::string, std::pair<uint32_t, uint32_t>> data_pos_;  // first .data line, col
};

// ---------------------------------------------------------------------------
// Printer.

std::string fmt_float(float f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
  return buf;
}

std::string ap_text(const AccessPattern& ap, const Program* p) {
  if (ap.space != MemSpace::hbm || p == nullptr) return to_string(ap);
  // HBM offsets inside a declared tensor print as @name+N (first tensor that holds it).
  for (const auto& t : p->tensors) {
    if (ap.offset < t.hbm_offset || ap.offset - t.hbm_offset >= t.bytes()) continue;
    AccessPattern rest = ap;
    rest.offset = 0;
    std::string s = to_string(rest);
    const std::string zero = ", 0, ";
    const auto at = s.find(zero);
    std::string off = "@" + t.name;
    if (ap.offset != t.hbm_offset) off += "+" + std::to_string(ap.offset - t.hbm_offset);
    return s.replace(at, zero.size(), ", " + off + ", ");
  }
  return to_string(ap);
}

bool is_imm(const ScalarOperand& s, float v) {
  return !s.is_ap && std::bit_cast<uint32_t>(s.imm) == std::bit_cast<uint32_t>(v);
}

std::string scalar_text(const ScalarOperand& s, const Program* p) {
  return s.is_ap ? ap_text(s.ap, p) : fmt_float(s.imm);
}

}  // namespace

AsmError::AsmError(std::string f, uint32_t l, uint32_t c, const std::string& msg)
    : std::runtime_error(format_error(f, l, c, msg)), file(std::move(f)), line(l), col(c) {}

Program assemble(std::string_view text, const std::string& file) {
  return Assembler(text, file).run();
}

Program assemble_file(const std::string& path) {
  std::string text;
  if (const std::string why = read_file(path, text); !why.empty())
    throw AsmError(path, 0, 0, "cannot open the file: " + why);
  return assemble(text, path);
}

std::string disassemble(const Instruction& in, const Program* p) {
  const auto& info = opcode_info(in.op);
  std::string s(info.name);
  auto key = [&](std::string_view k, const std::string& v) {
    s += ' ';
    s += k;
    s += '=';
    s += v;
  };
  if (info.has_dst) key("dst", ap_text(in.dst, p));
  for (int i = 0; i < info.nsrc; ++i) key(info.src_names[i], ap_text(in.src[i], p));
  auto steps = [&] {
    int n = kMaxDims;
    while (n > 0 && in.steps[n - 1] == 0) --n;
    if (in.pstep != 0) key("pstep", std::to_string(in.pstep));
    if (n == 0) return;
    std::string v = "[";
    for (int i = 0; i < n; ++i) v += (i ? "," : "") + std::to_string(in.steps[i]);
    key("steps", v + "]");
  };
  auto accum = [&] {
    if (in.has_accum) key("accum", ap_text(in.accum, p));
  };
  switch (in.op) {
    case Opcode::dma_copy:
      if (in.spread != 1) key("spread", std::to_string(in.spread));
      break;
    case Opcode::matmul:
      if (in.accumulate) key("accumulate", "1");
      if (in.double_row) key("double_row", "1");
      break;
    case Opcode::activation:
      key("func", std::string(act_func_name(in.func)));
      if (!is_imm(in.arg0, 1.0f)) key("scale", scalar_text(in.arg0, p));
      if (!is_imm(in.arg1, 0.0f)) key("bias", scalar_text(in.arg1, p));
      accum();
      break;
    case Opcode::tensor_tensor:
    case Opcode::partition_reduce:
      key("op", std::string(alu_op_name(in.op0)));
      break;
    case Opcode::tensor_scalar:
      key("op0", std::string(alu_op_name(in.op0)));
      key("arg0", scalar_text(in.arg0, p));
      if (in.op1 != AluOp::bypass) key("op1", std::string(alu_op_name(in.op1)));
      if (!is_imm(in.arg1, 0.0f)) key("arg1", scalar_text(in.arg1, p));
      if (in.reverse0) key("reverse0", "1");
      if (in.reverse1) key("reverse1", "1");
      accum();
      if (in.accum_op != AluOp::add) key("accum_op", std::string(alu_op_name(in.accum_op)));
      break;
    case Opcode::tensor_reduce: {
      key("op", std::string(alu_op_name(in.op0)));
      std::string v = "[";
      for (int i = 0; i < 8; ++i)
        if (in.axes >> i & 1) v += (v.size() > 1 ? "," : "") + std::to_string(i);
      key("axes", v + "]");
      break;
    }
    case Opcode::memset:
      key("value", scalar_text(in.arg0, p));
      break;
    case Opcode::iota:
      if (!is_imm(in.arg0, 0.0f)) key("base", scalar_text(in.arg0, p));
      steps();
      break;
    case Opcode::affine_select:
      key("cmp", std::string(alu_op_name(in.op0)));
      if (!is_imm(in.arg0, 0.0f)) key("base", scalar_text(in.arg0, p));
      steps();
      if (std::bit_cast<uint32_t>(in.fill) != 0) key("fill", fmt_float(in.fill));
      break;
    case Opcode::all_reduce:
    case Opcode::all_gather:
    case Opcode::reduce_scatter:
    case Opcode::barrier:
    case Opcode::all_to_all:
    case Opcode::permute: {
      const auto list = [](const std::vector<uint32_t>& r) {
        std::string v = "[";
        for (size_t i = 0; i < r.size(); ++i)
          v += (i ? "," : "") + (r[i] == kNoPeer ? std::string("-") : std::to_string(r[i]));
        return v + "]";
      };
      key("group", list(in.group));
      if (in.op == Opcode::permute) key("peers", list(in.peers));
      break;
    }
    default:
      break;
  }
  for (const auto& w : in.waits)
    key("wait", "s" + std::to_string(w.sem) + ">=" + std::to_string(w.value));
  for (const auto& g : in.signals)
    key("signal", "s" + std::to_string(g.sem) + "+" + std::to_string(g.inc) +
                      (g.when == SignalWhen::start ? "@start" : ""));
  return s;
}

std::string disassemble(const Program& p) {
  std::string s = ".program " + p.name + "\n";
  s += ".semaphores " + std::to_string(p.num_semaphores) + "\n";
  for (const auto& t : p.tensors) {
    s += ".tensor " + t.name + " [";
    for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? "," : "") + std::to_string(t.shape[i]);
    s += "] " + std::string(dtype_name(t.dtype)) + " " + std::string(tensor_role_name(t.role)) +
         " @" + std::to_string(t.hbm_offset) + "\n";
  }
  // 57 bytes encode to 76 base64 characters: the classic MIME line length.
  constexpr size_t kChunk = 57;
  for (const auto& [name, bytes] : p.constants) {
    if (bytes.empty()) s += ".data " + name + "\n";
    for (size_t i = 0; i < bytes.size(); i += kChunk)
      s += ".data " + name + " " +
           b64_encode(bytes.data() + i, std::min(kChunk, bytes.size() - i)) + "\n";
  }
  for (const auto& q : p.queues) {
    s += ".queue " + std::string(engine_name(q.engine));
    if (q.engine == Engine::dma)
      s += " " + std::to_string(q.dma_engine) + " " + std::to_string(q.dma_queue);
    s += "\n";
    for (const auto& in : q.instrs) s += disassemble(in, &p) + "\n";
  }
  return s;
}

}  // namespace trnsim::isa
