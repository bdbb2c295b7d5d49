// Top-level skeleton of a replaceable block, interface contract v1
// (docs/rtl-cosim.md). Copy it, keep the ports and the handshake rules, and put the
// implementation where the placeholder datapath is. As it stands it is a legal v1
// block: it accepts one stationary frame (held in a register), then passes each
// moving beat to the result stream, XOR-ed with the first stationary beat's low bits,
// with a one-cycle latency and the same `last` framing.
//
// Rules the adapter and the protocol checker (models/cosim/protocol_checker.h)
// rely on:
// - everything samples on the rising edge of clk; rst_n is synchronous, active low,
//   and held for at least one cycle; while it is low the block drives no valid and no
//   ready, and the environment drives no valid;
// - a beat transfers on a rising edge where valid && ready; once valid is high it
//   stays high, with data and last unchanged, until that edge;
// - a job is one stationary frame, then one moving frame, then one result frame with
//   as many beats as the moving frame; `last` marks each frame's final beat;
// - progress: the first result beat follows the last moving beat within the block's
//   documented latency bound (here 1 cycle) of cycles in which it is not
//   back-pressured.
module block_skeleton #(
    parameter int ST_W = 128,   // stationary beat width [bits]
    parameter int MV_W = 128,   // moving beat width [bits]
    parameter int RES_W = 256   // result beat width [bits]
) (
    input  logic             clk,
    input  logic             rst_n,
    input  logic             st_valid,
    output logic             st_ready,
    input  logic [ ST_W-1:0] st_data,
    input  logic             st_last,
    input  logic             mv_valid,
    output logic             mv_ready,
    input  logic [ MV_W-1:0] mv_data,
    input  logic             mv_last,
    output logic             res_valid,
    input  logic             res_ready,
    output logic [RES_W-1:0] res_data,
    output logic             res_last,
    output logic             err
);
  localparam int K = ST_W < MV_W ? ST_W : MV_W;

  typedef enum logic [1:0] {
    LOAD,
    STREAM,
    DRAIN
  } state_t;
  state_t state;
  logic first_beat;
  logic [K-1:0] key;  // placeholder datapath state
  logic out_full;
  logic [K-1:0] mixed;
  assign mixed = mv_data[K-1:0] ^ key;

  // A one-entry output register: mv_ready only when it is empty or draining.
  assign st_ready = rst_n && state == LOAD;
  assign mv_ready = rst_n && state == STREAM && (!out_full || res_ready);
  assign res_valid = rst_n && out_full;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      state <= LOAD;
      first_beat <= 1'b1;
      out_full <= 1'b0;
      err <= 1'b0;
    end else begin
      if (st_valid && st_ready) begin
        if (first_beat) key <= st_data[K-1:0];
        first_beat <= st_last;
        if (st_last) state <= STREAM;
      end
      if (res_valid && res_ready) begin
        out_full <= 1'b0;
        if (res_last) state <= LOAD;
      end
      if (mv_valid && mv_ready) begin
        out_full <= 1'b1;
        res_data <= RES_W'(mixed);
        res_last <= mv_last;
        if (mv_last) state <= DRAIN;
      end
    end
  end

  // Framing of the placeholder: nothing to check; a real block raises err (sticky
  // until reset) when a frame's length disagrees with its `last`.
  logic unused_ok;
  assign unused_ok = &{1'b0, st_data, mv_data, mixed};
endmodule
