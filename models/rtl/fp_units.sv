// Test top exposing the PE array's arithmetic (fp32_add_pkg, bf16_mul_pkg) alone,
// so tests can check it on edge cases and randomly against the C++ numerics
// (models/cosim/systolic_reference.h) without going through the array.
module fp_units
  import fp32_add_pkg::fp32_add;
  import bf16_mul_pkg::bf16_mul;
(
    input  logic [31:0] add_a,
    input  logic [31:0] add_b,
    output logic [31:0] add_y,
    input  logic [15:0] mul_a,
    input  logic [15:0] mul_b,
    output logic [31:0] mul_y
);
  assign add_y = fp32_add(add_a, add_b);
  assign mul_y = bf16_mul(mul_a, mul_b);
endmodule
