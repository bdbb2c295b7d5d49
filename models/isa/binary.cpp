#include "models/isa/binary.h"

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>

#include "models/isa/assembler.h"
#include "models/isa/file_io.h"
#include "models/isa/limits.h"

// Layout (all little-endian; str = u32 length + bytes; AP = u8 space, u8 dtype,
// u32 partition_start, u32 partition_count, i64 partition_stride, u64 offset,
// u8 ndims, ndims x (i64 stride, u32 size); scalar = u8 is_ap, then AP or f32):
//   "TRNP" u32 version, str name, u32 num_semaphores,
//   u32 ntensors x (str name, u32 rank, rank x i64, u8 dtype, u8 role, u64 hbm_offset),
//   u32 nconstants x (str tensor name, u32 length, bytes),
//   u32 nqueues x (u8 engine, u16 dma_engine, u16 dma_queue, u32 ninstrs x instruction)
// instruction: u8 opcode, AP dst, u8 nsrc, nsrc x AP, u8 func, u8 op0, u8 op1,
//   u8 accum_op, scalar arg0, scalar arg1, u8 flags (reverse0, reverse1, accumulate,
//   has_accum; bit 4: matmul double_row; bits 4-7: dma_copy spread - 1), [AP accum
//   if has_accum], u8 axes,
//   i32 pstep, 4 x i32 steps, f32 fill,
//   u32 nwaits x (u16 sem, u32 value), u32 nsignals x (u16 sem, u32 inc, u8 when),
//   u32 source line; collectives (all_reduce .. permute) then u32 ngroup x u32 rank;
//   permute then u32 npeers x u32 rank (0xFFFFFFFF, kNoPeer: sends nothing; version 2
//   on; a group rank is never 0xFFFFFFFF).

namespace trnsim::isa {

namespace {

// A long program's queues are large arrays that a run streams through once: on
// Linux, ask for transparent huge pages for them before they are filled (far fewer
// TLB misses while loading and simulating). Only a hint; elsewhere nothing.
void prefer_huge_pages(const void* p, size_t bytes) {
#if defined(__linux__)
  const uintptr_t huge = uintptr_t{2} << 20;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + huge - 1) & ~(huge - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(huge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

constexpr char kMagic[4] = {'T', 'R', 'N', 'P'};

enum Flags : uint8_t {
  kReverse0 = 1,
  kReverse1 = 2,
  kAccumulate = 4,
  kHasAccum = 8,
  kDoubleRow = 16,  // matmul; dma_copy uses the high nibble for spread
};
constexpr int kSpreadShift = 4;  // the high nibble holds dma_copy's spread - 1 (1..16)

class Writer {
 public:
  std::vector<uint8_t> out;
  template <class T>
  void le(T v) {
    using U = std::make_unsigned_t<T>;
    auto u = static_cast<U>(v);
    for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(u >> (8 * i)));
  }
  void u8(uint8_t v) { out.push_back(v); }
  void f32(float f) { le(std::bit_cast<uint32_t>(f)); }
  void count(size_t n) {
    if (n > UINT32_MAX) throw ProgramFormatError("encode_binary: a count exceeds 2^32-1");
    le(static_cast<uint32_t>(n));
  }
  void str(const std::string& s) {
    count(s.size());
    out.insert(out.end(), s.begin(), s.end());
  }
  void ap(const AccessPattern& a) {
    u8(static_cast<uint8_t>(a.space));
    u8(static_cast<uint8_t>(a.dtype));
    le(a.partition_start);
    le(a.partition_count);
    le(a.partition_stride);
    le(a.offset);
    u8(a.ndims);
    for (int i = 0; i < a.ndims && i < kMaxDims; ++i) {
      le(a.dims[i].stride);
      le(a.dims[i].size);
    }
  }
  void scalar(const ScalarOperand& s) {
    u8(s.is_ap ? 1 : 0);
    if (s.is_ap) {
      ap(s.ap);
    } else {
      f32(s.imm);
    }
  }
  void instr(const Instruction& in) {
    u8(static_cast<uint8_t>(in.op));
    ap(in.dst);
    u8(in.nsrc);
    for (int i = 0; i < in.nsrc && i < 3; ++i) ap(in.src[i]);
    u8(static_cast<uint8_t>(in.func));
    u8(static_cast<uint8_t>(in.op0));
    u8(static_cast<uint8_t>(in.op1));
    u8(static_cast<uint8_t>(in.accum_op));
    scalar(in.arg0);
    scalar(in.arg1);
    if (in.spread < 1 || in.spread > 16 || (in.spread != 1 && in.op != Opcode::dma_copy))
      throw ProgramFormatError("encode_binary: spread " + std::to_string(in.spread) +
                               " (dma_copy only, 1..16)");
    u8((in.reverse0 ? kReverse0 : 0) | (in.reverse1 ? kReverse1 : 0) |
       (in.accumulate ? kAccumulate : 0) | (in.has_accum ? kHasAccum : 0) |
       (in.double_row ? kDoubleRow : 0) | ((in.spread - 1) << kSpreadShift));
    if (in.has_accum) ap(in.accum);
    u8(in.axes);
    le(in.pstep);
    for (int32_t s : in.steps) le(s);
    f32(in.fill);
    count(in.waits.size());
    for (const auto& w : in.waits) {
      le(w.sem);
      le(w.value);
    }
    count(in.signals.size());
    for (const auto& s : in.signals) {
      le(s.sem);
      le(s.inc);
      u8(static_cast<uint8_t>(s.when));
    }
    le(in.line);
    if (is_collective(in.op)) {
      count(in.group.size());
      for (uint32_t r : in.group) le(r);
      if (in.op == Opcode::permute) {
        count(in.peers.size());
        for (uint32_t r : in.peers) le(r);
      }
    } else if (!in.group.empty()) {
      throw ProgramFormatError("encode_binary: a group on a non-collective instruction");
    }
  }
};

// Bounds-checked reader: every read names the byte offset where it failed.
class Reader {
 public:
  // `release`: the bytes are a private file mapping whose pages may be given back to
  // the kernel once decoded (release_behind), so the file never sits in memory whole
  // next to its decoded copy.
  Reader(const uint8_t* b, size_t n, const std::string& name, bool release = false)
      : b_(b), n_(n), name_(name), release_(release) {}

  [[noreturn]] void fail_at(size_t at, const std::string& msg) const {
    throw ProgramFormatError(name_ + ": byte " + std::to_string(at) + ": " + msg);
  }
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }

  void need(size_t n, const char* what) const {
    if (n > left())
      fail_at(pos_, std::string("truncated ") + what + " (needs " + std::to_string(n) + " bytes, " +
                        std::to_string(left()) + " left)");
  }
  template <class T>
  T le(const char* what) {
    need(sizeof(T), what);
    std::make_unsigned_t<T> u = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      u |= static_cast<std::make_unsigned_t<T>>(static_cast<std::make_unsigned_t<T>>(b_[pos_ + i])
                                                << (8 * i));
    pos_ += sizeof(T);
    return static_cast<T>(u);
  }
  uint8_t u8(const char* what) { return le<uint8_t>(what); }
  float f32(const char* what) { return std::bit_cast<float>(le<uint32_t>(what)); }

  // A u8 enum value checked against [0, n).
  template <class E>
  E enum8(const char* what, int n) {
    const size_t at = pos_;
    const uint8_t v = u8(what);
    if (v >= n)
      fail_at(at, std::string("bad ") + what + " " + std::to_string(v) + " (0.." +
                      std::to_string(n - 1) + ")");
    return static_cast<E>(v);
  }
  // A u32 count whose items take at least `min_item` bytes each: rejects counts the
  // remaining input cannot hold, so nothing is allocated for a corrupt length.
  uint32_t count(const char* what, size_t min_item) {
    const size_t at = pos_;
    const uint32_t n = le<uint32_t>(what);
    if (static_cast<uint64_t>(n) * min_item > left())
      fail_at(at, std::string(what) + " " + std::to_string(n) + " needs at least " +
                      std::to_string(static_cast<uint64_t>(n) * min_item) + " bytes, " +
                      std::to_string(left()) + " left");
    return n;
  }
  std::string str(const char* what) {
    const uint32_t n = count(what, 1);
    std::string s(reinterpret_cast<const char*>(b_ + pos_), n);
    pos_ += n;
    return s;
  }
  void skip(uint32_t n) {
    need(n, "bytes");
    pos_ += n;
  }
  // Copies [at, at + n) (checked by an earlier skip) and gives the whole pages of
  // the mapping in it back to the kernel.
  void copy(size_t at, size_t n, std::vector<uint8_t>& out) {
    out.assign(b_ + at, b_ + at + n);
    release(at, at + n);
  }
  // Gives the whole pages of the mapping below pos() back to the kernel.
  void release_behind() {
    release(released_, pos_);
    released_ = pos_;
  }

 private:
  void release(size_t from, size_t to) {
#if defined(__linux__)
    if (!release_) return;
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t lo = (reinterpret_cast<uintptr_t>(b_) + from + page - 1) & ~(page - 1);
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(b_) + to) & ~(page - 1);
    if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
#else
    (void)from, (void)to;
#endif
  }

 public:
  AccessPattern ap() {
    AccessPattern a;
    a.space = enum8<MemSpace>("memory space", 3);
    a.dtype = enum8<DType>("dtype", kNumDTypes);
    a.partition_start = le<uint32_t>("partition start");
    a.partition_count = le<uint32_t>("partition count");
    a.partition_stride = le<int64_t>("partition stride");
    a.offset = le<uint64_t>("offset");
    const size_t at = pos_;
    a.ndims = u8("ndims");
    if (a.ndims > kMaxDims)
      fail_at(at, "ndims " + std::to_string(a.ndims) + " exceeds " + std::to_string(kMaxDims));
    for (int i = 0; i < a.ndims; ++i) {
      a.dims[i].stride = le<int64_t>("dim stride");
      a.dims[i].size = le<uint32_t>("dim size");
    }
    return a;
  }
  ScalarOperand scalar() {
    ScalarOperand s;
    const size_t at = pos_;
    const uint8_t k = u8("scalar kind");
    if (k > 1) fail_at(at, "bad scalar kind " + std::to_string(k) + " (0..1)");
    s.is_ap = k == 1;
    if (s.is_ap) {
      s.ap = ap();
    } else {
      s.imm = f32("immediate");
    }
    return s;
  }
  Instruction instr() {
    Instruction in;
    in.op = enum8<Opcode>("opcode", kNumOpcodes);
    in.dst = ap();
    const size_t at = pos_;
    in.nsrc = u8("source count");
    if (in.nsrc > 3) fail_at(at, "source count " + std::to_string(in.nsrc) + " exceeds 3");
    for (int i = 0; i < in.nsrc; ++i) in.src[i] = ap();
    in.func = enum8<ActFunc>("activation function", kNumActFuncs);
    in.op0 = enum8<AluOp>("ALU op", kNumAluOps);
    in.op1 = enum8<AluOp>("ALU op", kNumAluOps);
    in.accum_op = enum8<AluOp>("ALU op", kNumAluOps);
    in.arg0 = scalar();
    in.arg1 = scalar();
    const size_t fat = pos_;
    const uint8_t f = u8("flags");
    const uint8_t known = kReverse0 | kReverse1 | kAccumulate | kHasAccum |
                          (in.op == Opcode::dma_copy ? 0xf0
                           : in.op == Opcode::matmul ? kDoubleRow
                                                     : 0);
    if (f & ~known) fail_at(fat, "bad flags " + std::to_string(f));
    in.spread = in.op == Opcode::dma_copy ? static_cast<uint8_t>((f >> kSpreadShift) + 1) : 1;
    in.reverse0 = f & kReverse0;
    in.reverse1 = f & kReverse1;
    in.accumulate = f & kAccumulate;
    in.has_accum = f & kHasAccum;
    in.double_row = in.op == Opcode::matmul && (f & kDoubleRow);
    if (in.has_accum) in.accum = ap();
    in.axes = u8("axes");
    in.pstep = le<int32_t>("pstep");
    for (auto& s : in.steps) s = le<int32_t>("steps");
    in.fill = f32("fill");
    const uint32_t nw = count("wait count", 6);
    for (uint32_t i = 0; i < nw; ++i) {
      SemWait w;
      w.sem = le<uint16_t>("wait semaphore");
      w.value = le<uint32_t>("wait value");
      in.waits.push_back(w);
    }
    const uint32_t ns = count("signal count", 7);
    for (uint32_t i = 0; i < ns; ++i) {
      SemSignal s;
      s.sem = le<uint16_t>("signal semaphore");
      s.inc = le<uint32_t>("signal increment");
      s.when = enum8<SignalWhen>("signal time", 2);
      in.signals.push_back(s);
    }
    in.line = le<uint32_t>("source line");
    if (is_collective(in.op)) {
      const uint32_t ng = count("group size", 4);
      if (ng > kMaxGroup) fail_at(pos_ - 4, "group size " + std::to_string(ng) + " too large");
      for (uint32_t i = 0; i < ng; ++i) {
        in.group.push_back(le<uint32_t>("group rank"));
        if (in.group.back() == kNoPeer)
          fail_at(pos_ - 4,
                  "group rank " + std::to_string(kNoPeer) + " is the no-peer mark, not a rank");
      }
      if (in.op == Opcode::permute) {
        const uint32_t np = count("peers size", 4);
        if (np > kMaxGroup) fail_at(pos_ - 4, "peers size " + std::to_string(np) + " too large");
        for (uint32_t i = 0; i < np; ++i) in.peers.push_back(le<uint32_t>("peer rank"));
      }
    }
    return in;
  }

 private:
  const uint8_t* b_;
  size_t n_;
  const std::string& name_;
  bool release_;
  size_t pos_ = 0;
  size_t released_ = 0;
};

// Smallest encodings, for count checks: a tensor (empty name, rank 0), a constant
// (empty name and data), a queue (no instructions), an instruction (all APs with
// no dims, immediates, no accum, no waits/signals):
// op 1 + dst 27 + nsrc 1 + 4 enums + 2 x 5 scalars + flags 1 + axes 1 + pstep 4 +
// steps 16 + fill 4 + 2 counts 8 + line 4 = 81.
constexpr size_t kMinTensor = 4 + 4 + 1 + 1 + 8;
constexpr size_t kMinConstant = 4 + 4;
constexpr size_t kMinQueue = 1 + 2 + 2 + 4;
constexpr size_t kMinInstr = 81;

}  // namespace

namespace {

// The encoding in order, handed to emit(data, size) in pieces: each constant's bytes
// straight from the program (a large model's weights are not copied once more).
// Returns the total size.
template <class Emit>
size_t encode_parts(const Program& p, Emit&& emit) {
  // The queues first, into their own buffer, so that the whole size is known (a
  // caller collecting the bytes allocates once rather than regrowing).
  Writer tail;
  tail.count(p.queues.size());
  for (const auto& q : p.queues) {
    tail.u8(static_cast<uint8_t>(q.engine));
    tail.le(q.dma_engine);
    tail.le(q.dma_queue);
    tail.count(q.instrs.size());
    for (const auto& in : q.instrs) tail.instr(in);
  }
  Writer w;
  w.out.insert(w.out.end(), std::begin(kMagic), std::end(kMagic));
  w.le(kBinaryVersion);
  w.str(p.name);
  w.le(p.num_semaphores);
  w.count(p.tensors.size());
  for (const auto& t : p.tensors) {
    w.str(t.name);
    w.count(t.shape.size());
    for (int64_t d : t.shape) w.le(d);
    w.u8(static_cast<uint8_t>(t.dtype));
    w.u8(static_cast<uint8_t>(t.role));
    w.le(t.hbm_offset);
  }
  w.count(p.constants.size());
  size_t total = w.out.size() + tail.out.size();
  for (const auto& [name, bytes] : p.constants) total += 4 + name.size() + 4 + bytes.size();
  emit(nullptr, total);  // the size first
  emit(w.out.data(), w.out.size());
  for (const auto& [name, bytes] : p.constants) {
    Writer h;
    h.str(name);
    h.count(bytes.size());
    emit(h.out.data(), h.out.size());
    emit(bytes.data(), bytes.size());
  }
  emit(tail.out.data(), tail.out.size());
  return total;
}

}  // namespace

std::vector<uint8_t> encode_binary(const Program& p) {
  std::vector<uint8_t> out;
  encode_parts(p, [&](const uint8_t* d, size_t n) {
    if (!d)
      out.reserve(n);
    else
      out.insert(out.end(), d, d + n);
  });
  return out;
}

size_t write_binary(const Program& p, std::ostream& out) {
  return encode_parts(p, [&](const uint8_t* d, size_t n) {
    if (d) out.write(reinterpret_cast<const char*>(d), static_cast<std::streamsize>(n));
  });
}

namespace {

Program decode(const uint8_t* data, size_t size, const std::string& name, bool release,
               const ConstantFilter& keep) {
  Reader r(data, size, name, release);
  if (size < 4 || std::memcmp(data, kMagic, 4) != 0)
    r.fail_at(0, "not a trnsim binary program (magic \"TRNP\" missing)");
  for (int i = 0; i < 4; ++i) r.u8("magic");
  const size_t vat = r.pos();
  const uint32_t version = r.le<uint32_t>("version");
  if (version != kBinaryVersion)
    r.fail_at(vat, "unsupported version " + std::to_string(version) + " (this build reads " +
                       std::to_string(kBinaryVersion) + ")");
  Program p;
  p.name = r.str("program name length");
  p.num_semaphores = r.le<uint32_t>("semaphore count");
  const uint32_t nt = r.count("tensor count", kMinTensor);
  for (uint32_t i = 0; i < nt; ++i) {
    TensorDecl t;
    t.name = r.str("tensor name length");
    const uint32_t rank = r.count("tensor rank", 8);
    for (uint32_t k = 0; k < rank; ++k) t.shape.push_back(r.le<int64_t>("tensor dimension"));
    t.dtype = r.enum8<DType>("dtype", kNumDTypes);
    t.role = r.enum8<TensorRole>("tensor role", 4);
    t.hbm_offset = r.le<uint64_t>("hbm offset");
    p.tensors.push_back(std::move(t));
  }
  // Constants are copied once the queues are decoded, when `keep` can see them: the
  // ones it drops are never copied (nor, from a mapping, read).
  struct span {
    std::string name;
    size_t at, len;
  };
  std::vector<span> spans;
  std::set<std::string> cnames;
  const uint32_t nc = r.count("constant count", kMinConstant);
  for (uint32_t i = 0; i < nc; ++i) {
    const size_t at = r.pos();
    std::string cname = r.str("constant name length");
    if (!cnames.insert(cname).second) r.fail_at(at, "duplicate constant '" + cname + "'");
    const uint32_t len = r.count("constant length", 1);
    spans.push_back({std::move(cname), r.pos(), len});
    r.skip(len);
  }
  const uint32_t nq = r.count("queue count", kMinQueue);
  for (uint32_t i = 0; i < nq; ++i) {
    Queue q;
    q.engine = r.enum8<Engine>("engine", kNumEngines);
    q.dma_engine = r.le<uint16_t>("dma engine");
    q.dma_queue = r.le<uint16_t>("dma queue");
    const uint32_t ni = r.count("instruction count", kMinInstr);  // bounded by the bytes left
    q.instrs.reserve(ni);
    prefer_huge_pages(q.instrs.data(), ni * sizeof(Instruction));
    for (uint32_t k = 0; k < ni; ++k) {
      q.instrs.push_back(r.instr());
      if (k % 4096 == 4095) r.release_behind();
    }
    p.queues.push_back(std::move(q));
  }
  if (r.left() != 0) r.fail_at(r.pos(), std::to_string(r.left()) + " trailing bytes");
  for (const span& c : spans) {
    const TensorDecl* t = keep ? p.find_tensor(c.name) : nullptr;
    if (keep && t && !keep(p, *t)) continue;
    r.copy(c.at, c.len, p.constants[c.name]);
  }
  return p;
}

#if defined(__linux__)
// A binary program decoded straight from a read-only private mapping of its file,
// whose pages go back to the kernel as they are decoded: a program of gigabytes of
// constants costs their decoded copy only. Empty when the file is not a binary
// program or cannot be mapped (the caller reads it instead).
std::optional<Program> load_mapped(const std::string& path, const ConstantFilter& keep) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  void* m = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 4)
    m = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return std::nullopt;
  struct unmap {
    void* m;
    size_t n;
    ~unmap() { munmap(m, n); }
  } guard{m, size_t(st.st_size)};
  const auto* data = static_cast<const uint8_t*>(m);
  if (std::memcmp(data, kMagic, 4) != 0) return std::nullopt;
  madvise(m, size_t(st.st_size), MADV_SEQUENTIAL);
  return decode(data, size_t(st.st_size), path, true, keep);
}
#endif

}  // namespace

Program decode_binary(const std::vector<uint8_t>& bytes, const std::string& name) {
  return decode(bytes.data(), bytes.size(), name, false, {});
}

Program load_program(const std::string& path, const ConstantFilter& keep) {
#if defined(__linux__)
  if (std::optional<Program> p = load_mapped(path, keep)) return std::move(*p);
#endif
  // One read of the whole file (a program can be hundreds of MB).
  std::vector<uint8_t> bytes;
  if (const std::string why = read_file(path, bytes); !why.empty())
    throw std::runtime_error(path + ": cannot open: " + why);
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0)
    return decode(bytes.data(), bytes.size(), path, false, keep);
  return assemble(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                  path);
}

void save_program(const Program& p, const std::string& path) {
  const bool binary = path.size() >= 5 && path.compare(path.size() - 5, 5, ".tbin") == 0;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  if (binary) {
    write_binary(p, f);
  } else {
    f << disassemble(p);
  }
  f.close();
  if (!f) throw std::runtime_error(path + ": write error");
}

}  // namespace trnsim::isa
