// The command line's contract: every class of bad input gets a clear message naming
// what is wrong and a non-zero exit; good runs print the report and write outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "tests/runtime/cli_harness.h"

using namespace trnsim::test;

namespace {

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

CmdResult run_program(const std::string& name, const std::string& text,
                      const std::string& extra = "-c tiny --random-inputs") {
  auto dir = temp_dir(name);
  auto prog = write_text(dir / (name + ".tasm"), text);
  return run_cmd(trnsim_bin() + " run " + prog + " " + extra);
}

}  // namespace

TEST(Cli, RunsAndReports) {
  auto dir = temp_dir("cli_ok");
  auto prog = write_text(dir / "scale2.tasm", kScale);
  auto r = run_cmd(trnsim_bin() + " run " + prog + " -c tiny --random-inputs=3 --output-dir " +
                   (dir / "out").string() + " --stats " + (dir / "stats.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("simulated time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("instructions     3"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "y.npy"));
  std::ifstream f(dir / "stats.json");
  std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"simulated_ns\""), std::string::npos);
  EXPECT_NE(json.find("\"instructions\": 3"), std::string::npos) << json.substr(0, 400);
}

// fp8 double-row (K = 256 per matmul) runs where the config has the mode (trn2) and is
// refused by name where it does not (trn1).
// Each test its own directory: ctest runs them in parallel, and temp_dir empties it.
std::string double_row_program(const std::string& dir) {
  return write_text(temp_dir(dir) / "dr.tasm", R"(.program dr
.semaphores 2
.tensor A [128,32] fp8e4m3 input @0
.tensor B [128,80] fp8e4m3 input @4096
.tensor C [16,40] fp32 output @16384
.queue dma 0 0
dma_copy dst=sbuf[0:128, 0, fp8e4m3, [1,32]] src=hbm[128x32, @A, fp8e4m3, [1,32]] signal=s0+1
dma_copy dst=sbuf[0:128, 1024, fp8e4m3, [1,80]] src=hbm[128x80, @B, fp8e4m3, [1,80]] signal=s0+1
.queue tensor
matmul dst=psum[0:16, 0, fp32, [1,40]] stationary=sbuf[0:128, 0, fp8e4m3, [1,32]] moving=sbuf[0:128, 1024, fp8e4m3, [1,80]] double_row=1 wait=s0>=2 signal=s1+1
.queue vector
tensor_copy dst=sbuf[0:16, 4096, fp32, [1,40]] src=psum[0:16, 0, fp32, [1,40]] wait=s1>=1 signal=s1+1
.queue dma 1 0
dma_copy dst=hbm[16x40, @C, fp32, [1,40]] src=sbuf[0:16, 4096, fp32, [1,40]] wait=s1>=2
)");
}

TEST(Cli, Fp8DoubleRowRunsWithTheMode) {
  CmdResult r = run_cmd(trnsim_bin() + " run " + double_row_program("cli_double_row_trn2") +
                        " -c trn2 --random-inputs=1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("of the fp8e4m3 peak"), std::string::npos) << r.out;
}

TEST(Cli, Fp8DoubleRowRefusedWithoutTheMode) {
  CmdResult r = run_cmd(trnsim_bin() + " run " + double_row_program("cli_double_row_trn1") +
                        " -c trn1 --random-inputs=1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("instruction 0 (line 10, matmul): double_row=1 needs a tensor engine with "
                       "fp8 double-row mode (core.tensor.fp8_double_row)"),
            std::string::npos)
      << r.out;
}

TEST(Cli, UsageErrors) {
  auto r = run_cmd(trnsim_bin() + " frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown command 'frobnicate'"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " run");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no program given"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " run x.tasm --bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown option '--bogus'"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " run --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--no-functional"), std::string::npos);
}

// Argument errors of run and validate (cmd_run's parse and pre-run checks): usage
// errors (exit 2) naming the option, before any file is read.
TEST(Cli, RunArgumentErrorsNameTheOption) {
  struct Case {
    std::string args, want;
  };
  for (const Case& c : std::vector<Case>{
           {"run a.tasm b.tasm", "run: more than one program given ('a.tasm', 'b.tasm')"},
           {"run a.tasm --input x.npy", "--input expects NAME=FILE.npy, got 'x.npy'"},
           {"run a.tasm --random-inputs=abc", "--random-inputs: seed 'abc' is not a number"},
           {"run a.tasm --rtol 1", "run: unknown option '--rtol'"},
           {"run a.tasm --no-poison", "run: unknown option '--no-poison'"},
           {"run a.tasm --core", "--core needs a value"},
           {"validate m.onnx --atol=-1", "--atol: '-1' is not a non-negative number"},
           {"validate m.onnx --no-functional", "validate: --no-functional computes no outputs"}})
    expect_exit(trnsim_bin() + " " + c.args, 2, c.want);
}

TEST(Cli, MissingProgramFile) {
  auto r = run_cmd(trnsim_bin() + " run /nonexistent/p.tasm -c tiny");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("/nonexistent/p.tasm"), std::string::npos) << r.out;
}

// A directory where a file is expected: each loader says so (an input stream opens a
// directory on Linux, and reading it gave std::bad_alloc).
TEST(Cli, DirectoryInsteadOfAFile) {
  const auto dir = temp_dir("cli_dirs");
  for (const char* name : {"p.tasm", "p.tbin", "m.onnx", "c.yaml", "x.npy"})
    std::filesystem::create_directories(dir / name);
  const std::string d = dir.string() + "/";
  struct Case {
    std::string args, want;
  };
  for (const Case& c : std::vector<Case>{
           {"run " + d + "p.tasm -c tiny", d + "p.tasm: cannot open: Is a directory"},
           {"run " + d + "p.tbin -c tiny", d + "p.tbin: cannot open: Is a directory"},
           {"run " + d + "m.onnx -c tiny", d + "m.onnx: cannot open file: Is a directory"},
           {"run " + d + "p.tasm -c " + d + "c.yaml",
            d + "c.yaml: cannot open config file: Is a directory"},
           {"disasm " + d + "p.tbin", d + "p.tbin: cannot open: Is a directory"}})
    expect_exit(trnsim_bin() + " " + c.args, 1, c.want);
  auto r = run_program("dir_input", kScale, "-c tiny --input x=" + d + "x.npy");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(d + "x.npy: cannot open: Is a directory"), std::string::npos) << r.out;
}

// Output files are checked before the run, which can take hours, not when it ends.
TEST(Cli, OutputPathsAreCheckedBeforeTheRun) {
  const auto dir = temp_dir("cli_outputs");
  std::filesystem::create_directories(dir / "adir");
  write_text(dir / "afile", "x");
  const std::string d = dir.string() + "/";
  struct Case {
    std::string opt, want;
  };
  for (const Case& c : std::vector<Case>{
           {"--stats " + d + "no/s.json",
            "--stats " + d + "no/s.json: directory " + d + "no does not exist"},
           {"--trace " + d + "adir", "--trace " + d + "adir: is a directory, not a file"},
           {"--vcd " + d + "no/v.vcd", "--vcd " + d + "no/v.vcd: directory"},
           {"--stats-text " + d + "adir", "--stats-text " + d + "adir: is a directory"},
           {"--output-dir " + d + "afile", "--output-dir " + d +
                                               "afile: exists and is not a "
                                               "directory"}}) {
    auto r = run_program("outputs", kScale, "-c tiny --random-inputs " + c.opt);
    EXPECT_EQ(r.code, 1) << c.opt << "\n" << r.out;
    EXPECT_NE(r.out.find(c.want), std::string::npos) << c.opt << "\n" << r.out;
    EXPECT_EQ(r.out.find("simulated time"), std::string::npos) << "ran first:\n" << r.out;
  }
}

TEST(Cli, MalformedAssemblyNamesLineAndColumn) {
  auto r = run_program("bad_asm", replace(kScale, "op0=mul", "op0=multiply"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("bad_asm.tasm:9:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("multiply"), std::string::npos) << r.out;
}

TEST(Cli, AccessPatternOutOfBounds) {
  // tiny has 64 KiB per SBUF partition: offset 65536 is past the end.
  auto r = run_program("oob", replace(kScale, "sbuf[0:128, 256, fp32, [1,64]] src",
                                      "sbuf[0:128, 65536, fp32, [1,64]] src"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("line 9"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("65536"), std::string::npos) << r.out;
}

TEST(Cli, PartitionStartRule) {
  // 64 partitions must start at 0 or 64.
  std::string p = kScale;
  p = replace(p, "tensor_scalar dst=sbuf[0:128, 256, fp32, [1,64]] src=sbuf[0:128, 0,",
              "tensor_scalar dst=sbuf[32:96, 256, fp32, [1,64]] src=sbuf[32:96, 0,");
  auto r = run_program("pstart", p);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("partition"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("line 9"), std::string::npos) << r.out;
}

TEST(Cli, HbmOutOfRange) {
  auto r =
      run_program("hbm_oob", replace(kScale, "hbm[128x64, @y, fp32", "hbm[128x64, @y+4096, fp32"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("hbm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("line 7"), std::string::npos) << r.out;
}

TEST(Cli, RefusedDtypeCombination) {
  // The tensor engine refuses int32 matmul inputs.
  const char* prog = R"(.program mm
.semaphores 1
.queue tensor
matmul dst=psum[0:128, 0, fp32, [1,128]] stationary=sbuf[0:128, 0, int32, [1,128]] moving=sbuf[0:128, 1024, int32, [1,128]]
)";
  auto r = run_program("dtype", prog);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("int32"), std::string::npos) << r.out;
}

TEST(Cli, MatmulLimits) {
  // N = 1024 exceeds the 512 moving free size (one fp32 PSUM bank).
  const char* prog = R"(.program mm
.semaphores 1
.queue tensor
matmul dst=psum[0:128, 0, fp32, [1,1024]] stationary=sbuf[0:128, 0, bf16, [1,128]] moving=sbuf[0:128, 1024, bf16, [1,1024]]
)";
  auto r = run_program("mmlimit", prog);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("1024"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matmul"), std::string::npos) << r.out;
}

TEST(Cli, PsumBankOverflow) {
  // 512 fp32 starting at byte 1024 cross from bank 0 into bank 1.
  const char* prog = R"(.program mm
.semaphores 1
.queue tensor
matmul dst=psum[0:128, 1024, fp32, [1,512]] stationary=sbuf[0:128, 0, bf16, [1,128]] moving=sbuf[0:128, 1024, bf16, [1,512]]
)";
  auto r = run_program("bank", prog);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("bank"), std::string::npos) << r.out;
}

TEST(Cli, DeadlockReportsEveryPendingWait) {
  // The vector op waits for s1, which only the store signals after waiting for it.
  auto r =
      run_program("deadlock", replace(kScale, "wait=s0>=1 signal=s1+1", "wait=s1>=1 signal=s1+1"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("deadlock"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vector: waiting for s1 >= 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dma0 queue 0: waiting for s1 >= 1"), std::string::npos) << r.out;
}

TEST(Cli, InvalidConfig) {
  auto dir = temp_dir("badcfg");
  auto prog = write_text(dir / "p.tasm", kScale);
  auto r = run_cmd(trnsim_bin() + " run " + prog + " -c tiny --set core.tensor.clock=fast");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("core.tensor.clock"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " run " + prog + " -c tiny --set core.tensr.rows=4");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("core.tensr.rows"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " run " + prog + " -c no_such_preset");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no_such_preset"), std::string::npos) << r.out;
}

TEST(Cli, MissingAndMisshapedInputs) {
  auto dir = temp_dir("inputs");
  auto prog = write_text(dir / "p.tasm", kScale);
  auto r = run_cmd(trnsim_bin() + " run " + prog + " -c tiny");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("missing input 'x'"), std::string::npos) << r.out;
  r = run_cmd(trnsim_bin() + " run " + prog + " -c tiny --input x=/nonexistent.npy");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("/nonexistent.npy"), std::string::npos) << r.out;
  // A [2,3] array where [128,64] is expected: written by a run of another program.
  const char* mk = R"(.program mk
.semaphores 1
.tensor a [2,3] fp32 input @0
.tensor b [2,3] fp32 output @64
.queue dma 0 0
dma_copy dst=hbm[2x3, @b, fp32, [1,3]] src=hbm[2x3, @a, fp32, [1,3]]
)";
  auto mkp = write_text(dir / "mk.tasm", mk);
  auto r0 = run_cmd(trnsim_bin() + " run " + mkp + " -c tiny --random-inputs --output-dir " +
                    (dir / "o").string());
  ASSERT_EQ(r0.code, 0) << r0.out;
  r = run_cmd(trnsim_bin() + " run " + prog +
              " -c tiny --input x=" + (dir / "o" / "b.npy").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("shape [2,3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[128,64]"), std::string::npos) << r.out;
}

TEST(Cli, TimingOnlyGivesTheSameTime) {
  auto dir = temp_dir("timing_only");
  auto prog = source_path("tests/e2e/programs/matmul_gelu.tasm");
  auto a = run_cmd(trnsim_bin() + " run " + prog + " -c tiny --random-inputs --stats " +
                   (dir / "f.json").string());
  auto b = run_cmd(trnsim_bin() + " run " + prog + " -c tiny --no-functional --stats " +
                   (dir / "t.json").string());
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  auto line = [](const std::string& s) { return s.substr(s.find("simulated time"), 40); };
  EXPECT_EQ(line(a.out), line(b.out));
}

TEST(Cli, InfoAndAsmRoundTrip) {
  auto r = run_cmd(trnsim_bin() + " info -c trn2");
  ASSERT_EQ(r.code, 0) << r.out;
  // 128 x 128 PEs x 2 FLOP x 2.4 GHz = 78.6 TFLOPS bf16 per core.
  EXPECT_NE(r.out.find("78.6 TFLOPS bf16"), std::string::npos) << r.out;
  auto dir = temp_dir("asm");
  auto prog = write_text(dir / "p.tasm", kScale);
  auto bin = (dir / "p.tbin").string();
  ASSERT_EQ(run_cmd(trnsim_bin() + " asm " + prog + " -o " + bin).code, 0);
  auto d1 = run_cmd(trnsim_bin() + " disasm " + bin);
  auto d2 = run_cmd(trnsim_bin() + " disasm " + prog);
  ASSERT_EQ(d1.code, 0) << d1.out;
  EXPECT_EQ(d1.out, d2.out);
}
