// bf16 x bf16 -> fp32 multiplier. The 8-bit significands give a 16-bit product,
// which fp32's 24 bits hold exactly: no rounding. Same special-value rules as
// fp32_add (docs/rtl-cosim.md, "Numerics"): denormal inputs count as zero, a product
// below 2^-126 is flushed to zero (sign = sign(a) ^ sign(b)), a product at or above
// 2^128 is infinity, NaNs (including 0 x inf) are the canonical 0x7FC00000.
// A function for the same reason as fp32_add.
package bf16_mul_pkg;
  function automatic logic [31:0] bf16_mul(input logic [15:0] a, input logic [15:0] b);
    /*verilator no_inline_task*/  // as fp32_add: one function for every PE
    logic sign, a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
    logic [15:0] prod;
    logic signed [9:0] exp_p;
    sign = a[15] ^ b[15];
    a_zero = a[14:7] == 8'd0;
    b_zero = b[14:7] == 8'd0;
    a_inf = a[14:7] == 8'hFF && a[6:0] == 7'd0;
    b_inf = b[14:7] == 8'hFF && b[6:0] == 7'd0;
    a_nan = a[14:7] == 8'hFF && a[6:0] != 7'd0;
    b_nan = b[14:7] == 8'hFF && b[6:0] != 7'd0;
    prod = {8'd0, 1'b1, a[6:0]} * {8'd0, 1'b1, b[6:0]};
    // Biased exponent of the product; +1 when the significand product is in [2, 4).
    exp_p = 10'(signed'({2'b00, a[14:7]})) + 10'(signed'({2'b00, b[14:7]})) - 10'sd127 +
        (prod[15] ? 10'sd1 : 10'sd0);

    if (a_nan || b_nan || (a_inf && b_zero) || (b_inf && a_zero)) bf16_mul = 32'h7FC0_0000;
    else if (a_inf || b_inf) bf16_mul = {sign, 8'hFF, 23'd0};
    else if (a_zero || b_zero) bf16_mul = {sign, 31'd0};
    else if (exp_p >= 10'sd255) bf16_mul = {sign, 8'hFF, 23'd0};
    else if (exp_p <= 10'sd0) bf16_mul = {sign, 31'd0};
    else if (prod[15]) bf16_mul = {sign, exp_p[7:0], prod[14:0], 8'd0};
    else bf16_mul = {sign, exp_p[7:0], prod[13:0], 9'd0};
  endfunction
endpackage
