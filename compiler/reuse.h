// Compiling a stack of repeated blocks (compiler/repeat.h) once.
//
// The graph is cut into pieces: the nodes before the stack, each block, the nodes
// after it. Each piece is lowered as a graph of its own (extract_segment: what it
// reads from earlier pieces are its inputs, what later ones read its outputs). The
// first block runs through the tile passes once; every later block is only lowered
// (for its weights and tensor names) and, when its kernel has the first block's ops,
// tiles and tensor shapes, takes the first block's scheduled and synchronised ops
// with its own tensors. Pieces that differ run the passes on their own.
//
// The pieces are linked into one kernel: a value passed between pieces is one HBM
// tensor; each queue's ops are the pieces' ops in order; semaphores become one per
// queue, a piece's waits offset by the signals earlier pieces made. Between two
// pieces is a barrier (every block uses the same SBUF addresses, so nothing of
// block i may overlap block i + 1): each queue's last op of a piece signals, a nop
// on the sync engine waits for all of them, and each queue's first op of the next
// piece waits for that nop. Values cross a boundary through HBM (keep_on_chip sees
// one piece at a time).
//
// HBM: each piece runs alloc_hbm (its scratch tensors share bytes within the piece;
// tensors no op touches leave it). The linked program lays out inputs, outputs and
// constants apart, then places each piece's scratch as one region live in that
// piece and each value passed between pieces as a block live from the piece that
// writes it to the last that reads it: a block reuses the bytes of blocks whose
// pieces all come before its first, which the barriers already order.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "compiler/compile.h"
#include "compiler/repeat.h"

namespace trnsim::compiler {

// Whether compile_partitioned compiles a repeated block once (default on; the CLI's
// --no-reuse turns it off for the process).
void set_reuse_blocks(bool on);
bool reuse_blocks();

// The program of `g` (lowered as `generate` would take it) with the blocks of `rb`
// compiled once; std::nullopt when the stack cannot be linked this way (a graph
// output that no node computes, more queues than semaphores): the caller compiles
// the whole graph. Pass figures go to *stats (a reused block's counted per use),
// plus "repeat.compiled_blocks" and "repeat.reused_blocks". Each piece borrows its
// constants' data from `g` while it is lowered (LentSegment); `g` is whole again on
// return.
std::optional<isa::Program> generate_reusing_blocks(ir::Graph& g, const RepeatedBlocks& rb,
                                                    const CompileOnnxOptions& o,
                                                    std::string* dump_text,
                                                    std::map<std::string, double>* stats,
                                                    ProgramRoofline* roofline);

}  // namespace trnsim::compiler
