// RUN: kfuse-opt %s --canonicalize | FileCheck %s

// A widening convert followed by the narrowing back is the identity; a
// convert to the same type is too.
// CHECK-LABEL: func.func @round_trip
// CHECK-NOT: kfuse.convert
// CHECK: kfuse.write %arg0 to %arg0
func.func @round_trip(%p: tensor<4xbf16> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %w = kfuse.convert %p : tensor<4xbf16> to tensor<4xf32>
  %n = kfuse.convert %w : tensor<4xf32> to tensor<4xbf16>
  %s = kfuse.convert %n : tensor<4xbf16> to tensor<4xbf16>
  kfuse.write %s to %p : tensor<4xbf16>
  return
}

// Narrowing first loses bits: f32 -> bf16 -> f32 stays.
// CHECK-LABEL: func.func @lossy
// CHECK: kfuse.convert %arg0 : tensor<4xf32> to tensor<4xbf16>
// CHECK: kfuse.convert %{{.*}} : tensor<4xbf16> to tensor<4xf32>
func.func @lossy(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %n = kfuse.convert %p : tensor<4xf32> to tensor<4xbf16>
  %w = kfuse.convert %n : tensor<4xbf16> to tensor<4xf32>
  kfuse.write %w to %p : tensor<4xf32>
  return
}

// f16 and bf16 have the same width but different ranges: no fold.
// CHECK-LABEL: func.func @half_kinds
// CHECK-COUNT-2: kfuse.convert
func.func @half_kinds(%p: tensor<4xf16> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  %b = kfuse.convert %p : tensor<4xf16> to tensor<4xbf16>
  %h = kfuse.convert %b : tensor<4xbf16> to tensor<4xf16>
  kfuse.write %h to %p : tensor<4xf16>
  return
}

// A static dimension's extent folds to a constant.
// CHECK-LABEL: func.func @dim_size_static
// CHECK: %[[N:.*]] = arith.constant 4.096000e+03 : f32
// CHECK-NOT: kfuse.dim_size
// CHECK: kfuse.broadcast %[[N]]
func.func @dim_size_static(
    %x: tensor<?x4096xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x4096xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x4096xf32> -> f32
  %n_b = kfuse.broadcast %n like %x : f32, tensor<?x4096xf32>
  %s = arith.mulf %x, %n_b : tensor<?x4096xf32>
  kfuse.write %s to %y : tensor<?x4096xf32>
  return
}

// A dynamic one does not.
// CHECK-LABEL: func.func @dim_size_dynamic
// CHECK: kfuse.dim_size
func.func @dim_size_dynamic(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x?xf32> -> f32
  %n_b = kfuse.broadcast %n like %x : f32, tensor<?x?xf32>
  %s = arith.mulf %x, %n_b : tensor<?x?xf32>
  kfuse.write %s to %y : tensor<?x?xf32>
  return
}
