// Helpers shared by shape inference (ops.cpp) and the interpreter kernels
// (compiler/interp/kernels_index.cpp) of the index/resampling ops, whose canonical
// IR form (register_ops_index in ops.cpp) is:
//  Resize(X){mode="nearest", coordinate_transformation_mode="half_pixel",
//    nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75, exclude_outside=0,
//    extrapolation_value=0, sizes: the output shape, scales=[] (empty: sizes/in),
//    roi=[] (tf_crop_and_resize: starts..., ends...)}; the front end turns the
//    scales/sizes/roi inputs and Upsample / opset-10 Resize into this.
//  TopK(X){axis=-1, k, largest=1, sorted=1} -> Values, Indices (int64).
//  Einsum(X...){equation}. GridSample(X, grid){align_corners=0, mode="bilinear",
//    padding_mode="zeros"} (4-D). RoiAlign(X, rois, batch_indices){mode="avg",
//    coordinate_transformation_mode="half_pixel", output_height=1, output_width=1,
//    sampling_ratio=0, spatial_scale=1}. LRN{alpha, beta, bias, size}.
//  Shrink{bias=0, lambd=0.5}. EyeLike{dtype?, k=0}. Det. BitShift{direction}.
//  MaxUnpool(X, I){kernel_shape, strides, pads, output_shape=[]}.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/types.h"

namespace trnsim::ir {

// A parsed Einsum equation over concrete input shapes. Every subscript letter and
// every dim an ellipsis covers is a label; labels index `label_size`.
struct EinsumSpec {
  std::vector<int64_t> label_size;
  std::vector<std::vector<int>> in_labels;  // per input, per dim
  std::vector<int> out_labels;              // per output dim
};

// Parses `equation` ("ij,jk->ik", "...ii->...i", implicit "ij,jk") for inputs of
// `shapes`. Ellipsis dims broadcast (numpy rules); a letter must have one size.
// Without "->" the output is the ellipsis dims, then the letters used exactly once
// in ASCII order. Throws CompileError naming the problem.
EinsumSpec parse_einsum(const std::string& equation, const std::vector<Shape>& shapes);

// MaxUnpool's output shape before output_shape: (in - 1) * stride + kernel - pads.
class Node;
Shape max_unpool_inferred(const Node& n);

}  // namespace trnsim::ir
