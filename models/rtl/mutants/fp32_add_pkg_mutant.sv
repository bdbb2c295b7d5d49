// MUTANT of ../fp32_add_pkg.sv for the equivalence tests, which must catch it: the
// alignment shift drops the sticky bit, so sums that need it round wrongly (one
// ulp off in some ties and subtractions). Otherwise the reference adder; built in
// place of it as the pe_array_8x8_mutant block.
/* verilator lint_off DECLFILENAME */
/* verilator lint_off UNUSEDSIGNAL */
// fp32 adder: IEEE-754 binary32 addition, round to nearest even, with the PE
// array's simplifications (docs/rtl-cosim.md, "Numerics"):
// - denormal inputs count as zero of their sign; a result below 2^-126 in magnitude
//   is flushed to zero with the sign of the exact result;
// - any NaN result is the canonical quiet NaN 0x7FC00000;
// - exact cancellation (x + -x) gives +0; (-0) + (-0) gives -0.
// Three extra bits (guard, round, sticky) below the 24-bit significand are enough for
// a correctly rounded sum: when the alignment shift drops bits (difference >= 2), a
// subtraction needs at most one left shift, so G and R stay exact.
// A function rather than a module: the PE array calls it inside its clocked blocks,
// so a verilated model evaluates it once per PE per cycle, only at the clock edge.
package fp32_add_pkg;
  function automatic logic [31:0] fp32_add(input logic [31:0] a, input logic [31:0] b);
    // One C++ function called by every PE, rather than a copy inlined in each: the
    // array's code then fits the host's instruction cache (2x faster for 8x8).
    /*verilator no_inline_task*/
    logic a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
    logic [30:0] big_mag, small_mag;
    logic big_sign, small_sign;
    logic [7:0] shift;
    logic [26:0] big_sig, small_sig;  // {hidden, fraction, G, R, S}
    logic [53:0] aligned;
    logic [26:0] small_al;
    logic [27:0] sum;
    logic [4:0] lz;
    logic [27:0] norm;
    logic signed [9:0] exp_n;
    logic [23:0] sig;
    logic guard, round_bit, sticky, round_up;
    logic [24:0] sig_r;
    logic signed [9:0] exp_r;
    a_zero = a[30:23] == 8'd0;
    b_zero = b[30:23] == 8'd0;
    a_inf = a[30:23] == 8'hFF && a[22:0] == 23'd0;
    b_inf = b[30:23] == 8'hFF && b[22:0] == 23'd0;
    a_nan = a[30:23] == 8'hFF && a[22:0] != 23'd0;
    b_nan = b[30:23] == 8'hFF && b[22:0] != 23'd0;

    // Order by magnitude: the bigger operand fixes the sign and exponent.
    if (a[30:0] >= b[30:0]) begin
      big_mag = a[30:0];
      big_sign = a[31];
      small_mag = b[30:0];
      small_sign = b[31];
    end else begin
      big_mag = b[30:0];
      big_sign = b[31];
      small_mag = a[30:0];
      small_sign = a[31];
    end
    shift = big_mag[30:23] - small_mag[30:23];
    big_sig = {1'b1, big_mag[22:0], 3'b000};
    small_sig = {1'b1, small_mag[22:0], 3'b000};
    // Align: bits shifted out of the 27-bit window fold into the sticky bit.
    aligned = {small_sig, 27'd0} >> (shift > 8'd27 ? 8'd27 : shift);
    small_al = aligned[53:27];  // BUG (deliberate): sticky dropped
    if (shift > 8'd27) small_al = 27'd0;  // BUG (deliberate)

    if (big_sign == small_sign) sum = {1'b0, big_sig} + {1'b0, small_al};
    else sum = {1'b0, big_sig} - {1'b0, small_al};

    // Normalise so that the leading one lands on bit 27 (carry) or 26. Without a
    // carry, the leading zeros below bit 26 are found by halving (16, 8, 4, 2, 1):
    // five tests instead of one per bit (a sum of 0 is handled at the end).
    exp_n = 10'(signed'({2'b00, big_mag[30:23]}));
    if (sum[27]) begin
      norm = sum;
      exp_n = exp_n + 10'sd1;
      sig = norm[27:4];
      guard = norm[3];
      round_bit = norm[2];
      sticky = norm[1] | norm[0];
    end else begin
      norm = sum;
      lz = 5'd0;
      if (norm[26:11] == 16'd0) begin
        norm = norm << 16;
        lz = lz + 5'd16;
      end
      if (norm[26:19] == 8'd0) begin
        norm = norm << 8;
        lz = lz + 5'd8;
      end
      if (norm[26:23] == 4'd0) begin
        norm = norm << 4;
        lz = lz + 5'd4;
      end
      if (norm[26:25] == 2'd0) begin
        norm = norm << 2;
        lz = lz + 5'd2;
      end
      if (!norm[26]) begin
        norm = norm << 1;
        lz = lz + 5'd1;
      end
      exp_n = exp_n - 10'(signed'({5'd0, lz}));
      sig = norm[26:3];
      guard = norm[2];
      round_bit = norm[1];
      sticky = norm[0];
    end
    round_up = guard & (round_bit | sticky | sig[0]);
    sig_r = {1'b0, sig} + {24'd0, round_up};
    exp_r = exp_n;
    if (sig_r[24]) exp_r = exp_n + 10'sd1;

    if (a_nan || b_nan || (a_inf && b_inf && a[31] != b[31])) fp32_add = 32'h7FC0_0000;
    else if (a_inf) fp32_add = a;
    else if (b_inf) fp32_add = b;
    else if (a_zero && b_zero) fp32_add = {a[31] & b[31], 31'd0};
    else if (a_zero) fp32_add = b;
    else if (b_zero) fp32_add = a;
    else if (sum == 28'd0) fp32_add = 32'd0;  // exact cancellation
    else if (exp_r >= 10'sd255) fp32_add = {big_sign, 8'hFF, 23'd0};  // overflow to inf
    else if (exp_r <= 10'sd0) fp32_add = {big_sign, 31'd0};  // flush to zero
    else fp32_add = {big_sign, exp_r[7:0], sig_r[24] ? sig_r[23:1] : sig_r[22:0]};
  endfunction
endpackage
