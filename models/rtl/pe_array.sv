// Weight-stationary R x C PE array tile: the reference RTL block of the tensor
// engine (interface contract v1, docs/rtl-cosim.md).
//
// A job is: R stationary beats (weight row i on beat i, `st_last` on beat R-1), then
// S moving beats (one vector of R bf16, element r enters array row r; `mv_last` on
// the final one), then S result beats (one vector of C fp32 sums, `res_last` on the
// final one). Result j, column c = sum over r of w[r][c] * x_j[r], accumulated in
// fp32 down the column, row 0 first, from +0: ((0 + p0) + p1) + ... + p(R-1).
// Numerics (bf16_mul_pkg.sv, fp32_add_pkg.sv): exact products, sums rounded to
// nearest even, denormals flushed to zero, NaN always 0x7FC00000.
//
// Pipeline: x_j[r] enters row r r cycles after x_j[0] (input skew) and moves one PE
// right per cycle; partial sums move one PE down per cycle. The last row's sum is
// not registered: it goes through the output deskew, so column C-1's result leaves
// combinationally. Result j is valid R + C - 2 cycles after moving beat j's
// handshake, hence a job takes R (load) + S (stream) + R + C - 2 (drain) =
// 2R + C + S - 2 cycles, the fold formula, from the first stationary handshake to
// the last result handshake inclusive.
//
// Back-pressure: while a valid result is refused (res_valid && !res_ready) the whole
// pipeline holds (including mv_ready, which is low), so a job takes the fold formula
// plus exactly the number of refused cycles. Weights load only after the previous
// job's last result (no background load).
module pe_array
  import fp32_add_pkg::fp32_add;
  import bf16_mul_pkg::bf16_mul;
#(
    parameter int R = 8,
    parameter int C = 8
) (
    input  logic             clk,
    input  logic             rst_n,      // synchronous, active low
    // Stationary stream: one weight row (C bf16, column c at [16c +: 16]) per beat.
    input  logic             st_valid,
    output logic             st_ready,
    input  logic [C*16-1:0]  st_data,
    input  logic             st_last,
    // Moving stream: one vector (R bf16, row r at [16r +: 16]) per beat.
    input  logic             mv_valid,
    output logic             mv_ready,
    input  logic [R*16-1:0]  mv_data,
    input  logic             mv_last,
    // Result stream: one vector (C fp32, column c at [32c +: 32]) per beat.
    output logic             res_valid,
    input  logic             res_ready,
    output logic [C*32-1:0]  res_data,
    output logic             res_last,
    output logic             err          // sticky: st_last not on beat R-1
);
  localparam int L = R + C - 2;  // moving handshake -> result valid, in cycles
  localparam int RW = R > 1 ? $clog2(R) : 1;

  typedef enum logic [1:0] {
    LOAD,
    STREAM,
    DRAIN
  } state_t;
  state_t state;
  logic [RW-1:0] row;  // next weight row to load
  logic [15:0] w[R][C];
  logic [L-1:0] vpipe, lpipe;  // valid and last of the vector at each pipeline depth
  logic en, st_fire, mv_fire, res_fire;

  assign res_valid = rst_n && vpipe[L-1];
  assign res_last = lpipe[L-1];
  assign en = !(res_valid && !res_ready);
  assign st_ready = rst_n && state == LOAD;
  assign mv_ready = rst_n && state == STREAM && en;
  assign st_fire = st_valid && st_ready;
  assign mv_fire = mv_valid && mv_ready;
  assign res_fire = res_valid && res_ready;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      state <= LOAD;
      row <= '0;
      vpipe <= '0;
      lpipe <= '0;
      err <= 1'b0;
    end else begin
      if (st_fire) begin
        for (int c = 0; c < C; c++) w[row][c] <= st_data[16*c+:16];
        if (st_last != (32'(row) == R - 1)) err <= 1'b1;
        if (32'(row) == R - 1) begin
          row <= '0;
          state <= STREAM;
        end else begin
          row <= row + 1'b1;
        end
      end
      if (mv_fire && mv_last) state <= DRAIN;
      if (res_fire && res_last) state <= LOAD;
      if (en) begin
        vpipe <= {vpipe[L-2:0], mv_fire};
        lpipe <= {lpipe[L-2:0], mv_fire && mv_last};
      end
    end
  end

  // x entering each row at column 0: row 0 straight from the port, row r through an
  // r-stage skew line.
  logic [15:0] row_in[R];
  assign row_in[0] = mv_data[15:0];
  for (genvar r = 1; r < R; r++) begin : g_skew
    logic [15:0] line[r];
    always_ff @(posedge clk)
      if (en) begin
        line[0] <= mv_data[16*r+:16];
        for (int k = 1; k < r; k++) line[k] <= line[k-1];
      end
    assign row_in[r] = line[r-1];
  end

  // vin[k]: the vector at pipeline depth k is real, i.e. was handshaked k enabled
  // cycles ago (vin[0]: this cycle). PE (r, c) works on depth r + c.
  logic [L:0] vin;
  assign vin = {vpipe, mv_fire};

  // The PE grid. x_at/p_at are each PE's operands this cycle (moving value, partial
  // sum from above); rows 0..R-2 register their sum for the row below, the last row
  // feeds the output deskew. The arithmetic runs inside the clocked blocks, so it is
  // evaluated at the clock edge only, and only for a real vector: a PE holds its sum
  // while it has none (filling, draining, loading weights), which changes no result,
  // since a real vector only ever meets sums of the same vector.
  logic [15:0] x_at[R][C];
  logic [31:0] p_at[R][C];
  logic [15:0] xq[R][C-1];   // x moving right
  logic [31:0] psq[R-1][C];  // partial sums moving down
  for (genvar r = 0; r < R; r++) begin : g_row
    for (genvar c = 0; c < C; c++) begin : g_col
      if (c == 0) begin : g_xl
        assign x_at[r][c] = row_in[r];
      end else begin : g_xr
        assign x_at[r][c] = xq[r][c-1];
      end
      if (r == 0) begin : g_pt
        assign p_at[r][c] = 32'd0;  // +0 enters the top of every column
      end else begin : g_pd
        assign p_at[r][c] = psq[r-1][c];
      end
      if (c < C - 1) begin : g_xq
        always_ff @(posedge clk) if (en) xq[r][c] <= x_at[r][c];
      end
      if (r < R - 1) begin : g_psq
        always_ff @(posedge clk)
          if (en && vin[r+c]) psq[r][c] <= fp32_add(p_at[r][c], bf16_mul(w[r][c], x_at[r][c]));
      end
    end
  end

  // Output deskew: column c's sum is ready C-1-c cycles before column C-1's, which
  // leaves combinationally (from registers only).
  for (genvar c = 0; c < C; c++) begin : g_out
    if (c == C - 1) begin : g_last
      assign res_data[32*c+:32] = fp32_add(p_at[R-1][c], bf16_mul(w[R-1][c], x_at[R-1][c]));
    end else begin : g_delay
      logic [31:0] line[C-1-c];
      always_ff @(posedge clk)
        if (en) begin
          if (vin[R-1+c]) line[0] <= fp32_add(p_at[R-1][c], bf16_mul(w[R-1][c], x_at[R-1][c]));
          for (int k = 1; k < C - 1 - c; k++) line[k] <= line[k-1];
        end
      assign res_data[32*c+:32] = line[C-2-c];
    end
  end

  // Elaboration check: the pipeline needs at least two rows and two columns.
  if (R < 2 || C < 2) begin : g_bad_params
    $error("pe_array needs R >= 2 and C >= 2");
  end
endmodule
