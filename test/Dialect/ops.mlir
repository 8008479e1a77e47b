// RUN: kfuse-opt %s | kfuse-opt | FileCheck %s
// RUN: kfuse-opt %s --mlir-print-op-generic | kfuse-opt | FileCheck %s

// CHECK-LABEL: func.func @sgd
// CHECK-SAME: kfuse.role = #kfuse.role<param>
// CHECK-SAME: kfuse.role = #kfuse.role<grad>
// CHECK-SAME: kfuse.default = 0.00999999977 : f32, kfuse.name = "lr", kfuse.role = #kfuse.role<hyper>
// CHECK-SAME: attributes {kfuse.update}
func.func @sgd(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
               %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
               %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32})
    attributes {kfuse.update} {
  // CHECK: %[[LRV:.*]] = kfuse.broadcast %{{.*}} like %[[P:.*]] : f32, tensor<?xf32>
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %d = arith.mulf %lrv, %g : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  // CHECK: kfuse.write %{{.*}} to %{{.*}} : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  return
}

// A region of a 2-D update: a value per row and one per column enter at
// the element's row and column; a result of one row's shape is per row.
// CHECK-LABEL: func.func @rows_and_columns
func.func @rows_and_columns(%x: tensor<?x?xf32>, %r: tensor<?x1xf32>,
                            %c: tensor<1x?xf32>) {
  // CHECK: kfuse.fused(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x?xf32>, tensor<?x1xf32>, tensor<1x?xf32>) -> (tensor<?x?xf32>, tensor<?x1xf32>)
  %y:2 = kfuse.fused(%x, %r, %c) : (tensor<?x?xf32>, tensor<?x1xf32>, tensor<1x?xf32>) -> (tensor<?x?xf32>, tensor<?x1xf32>) {
  ^bb0(%xe: f32, %re: f32, %ce: f32):
    %rc = arith.mulf %re, %ce : f32
    %s = arith.addf %xe, %rc : f32
    %r2 = arith.mulf %re, %re : f32
    kfuse.yield %s, %r2 : f32, f32
  }
  return
}

// A region of rows held in registers: the element's row reduced inside it.
// CHECK-LABEL: func.func @row_in_registers
func.func @row_in_registers(%x: tensor<?x256xf32>) {
  %y = kfuse.fused(%x) : (tensor<?x256xf32>) -> tensor<?x256xf32> {
  ^bb0(%e: f32):
    // CHECK: kfuse.reduce <max> %{{.*}} dim 1 : f32 -> f32
    %a = math.absf %e : f32
    %m = kfuse.reduce <max> %a dim 1 : f32 -> f32
    %q = arith.divf %e, %m : f32
    kfuse.yield %q : f32
  }
  return
}

// CHECK-LABEL: func.func @mixed
func.func @mixed(%p: tensor<8xbf16> {kfuse.role = #kfuse.role<param>},
                 %m: tensor<8xf32> {kfuse.role = #kfuse.role<state>},
                 %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update, kfuse.vector_width = 8 : i64, kfuse.index_bits = 32 : i64, kfuse.alignment = 16 : i64} {
  // CHECK: %[[R:.*]]:2 = kfuse.fused(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<8xbf16>, tensor<8xf32>, f32) -> (tensor<8xbf16>, tensor<8xf32>)
  %r:2 = kfuse.fused(%p, %m, %lr) : (tensor<8xbf16>, tensor<8xf32>, f32) -> (tensor<8xbf16>, tensor<8xf32>) {
  // CHECK: ^bb0(%[[PE:.*]]: bf16, %[[ME:.*]]: f32, %[[LR:.*]]: f32):
  ^bb0(%pe: bf16, %me: f32, %lre: f32):
    // CHECK: %[[PC:.*]] = kfuse.convert %[[PE]] : bf16 to f32
    %pc = kfuse.convert %pe : bf16 to f32
    %d = arith.mulf %lre, %me : f32
    %n = arith.subf %pc, %d : f32
    // CHECK: %[[N:.*]] = kfuse.convert %{{.*}} : f32 to bf16
    %nb = kfuse.convert %n : f32 to bf16
    // CHECK: kfuse.yield %[[N]], %[[ME]] : bf16, f32
    kfuse.yield %nb, %me : bf16, f32
  }
  // CHECK: kfuse.write %[[R]]#0 to %{{.*}} : tensor<8xbf16>
  kfuse.write %r#0 to %p : tensor<8xbf16>
  kfuse.write %r#1 to %m : tensor<8xf32>
  return
}

// A tensor convert outside a region, and a predicate broadcast.
// CHECK-LABEL: func.func @convert_and_select
func.func @convert_and_select(%p: tensor<4xf16> {kfuse.role = #kfuse.role<param>},
                              %flag: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %zero = arith.constant 0.0 : f32
  %c = arith.cmpf ogt, %flag, %zero : f32
  // CHECK: kfuse.convert %{{.*}} : tensor<4xf16> to tensor<4xf32>
  %pc = kfuse.convert %p : tensor<4xf16> to tensor<4xf32>
  // CHECK: kfuse.broadcast %{{.*}} like %{{.*}} : i1, tensor<4xf32>
  %cv = kfuse.broadcast %c like %pc : i1, tensor<4xf32>
  %neg = arith.negf %pc : tensor<4xf32>
  %s = arith.select %cv, %pc, %neg : tensor<4xi1>, tensor<4xf32>
  %sb = kfuse.convert %s : tensor<4xf32> to tensor<4xf16>
  kfuse.write %sb to %p : tensor<4xf16>
  return
}

// CHECK-LABEL: func.func @norm_ops
// CHECK-SAME: attributes {kfuse.norm}
// CHECK: kfuse.dim_size %{{.*}} dim 1 : tensor<?x?xf32> -> f32
// CHECK: kfuse.reduce <sum> %{{.*}} dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
// CHECK: kfuse.reduce <max> %{{.*}} dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
// CHECK: kfuse.reduce <variance> %{{.*}} dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
// CHECK: kfuse.broadcast %{{.*}} like %{{.*}} : tensor<?x1xf32>, tensor<?x?xf32>
// CHECK: kfuse.broadcast %{{.*}} like %{{.*}} : tensor<1x?xf32>, tensor<?x?xf32>
// CHECK: kfuse.write %{{.*}} to %{{.*}} : tensor<?x1xf32>
func.func @norm_ops(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %w: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>},
    %s: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>},
    %m: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x?xf32> -> f32
  %sum = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %max = kfuse.reduce <max> %x dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %var = kfuse.reduce <variance> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %sum_b = kfuse.broadcast %sum like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %w_b = kfuse.broadcast %w like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %t = arith.mulf %sum_b, %w_b : tensor<?x?xf32>
  kfuse.write %t to %y : tensor<?x?xf32>
  %sum_var = arith.addf %sum, %var : tensor<?x1xf32>
  kfuse.write %sum_var to %s : tensor<?x1xf32>
  kfuse.write %max to %m : tensor<1x?xf32>
  return
}

// A state at the tensor level is an f32 scalar in the tensor form too.
// CHECK-LABEL: func.func @tensor_level_state
// CHECK-SAME: %{{.*}}: f32 {kfuse.level = #kfuse.level<tensor>, kfuse.role = #kfuse.role<state>}
// CHECK: kfuse.write %{{.*}} to %{{.*}} : f32
func.func @tensor_level_state(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                              %v: f32 {kfuse.role = #kfuse.role<state>, kfuse.level = #kfuse.level<tensor>})
    attributes {kfuse.update} {
  %sq = arith.mulf %p, %p : tensor<?xf32>
  %s = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
  %v_new = arith.addf %v, %s : f32
  kfuse.write %p to %p : tensor<?xf32>
  kfuse.write %v_new to %v : f32
  return
}

// A 2-D update: the param a matrix, a state per row and one per column,
// a value per tensor as 1 x 1.
// CHECK-LABEL: func.func @matrix_update
// CHECK-SAME: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>}
// CHECK-SAME: tensor<1x?xf32> {kfuse.role = #kfuse.role<state>}
// CHECK: kfuse.reduce <sum> %{{.*}} dim 0 : tensor<?x1xf32> -> tensor<1x1xf32>
func.func @matrix_update(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>},
                         %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>},
                         %r: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>},
                         %c: tensor<1x?xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %sq = arith.mulf %g, %g : tensor<?x?xf32>
  %rows = kfuse.reduce <sum> %sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %cols = kfuse.reduce <sum> %sq dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %total = kfuse.reduce <sum> %rows dim 0 : tensor<?x1xf32> -> tensor<1x1xf32>
  %total_b = kfuse.broadcast %total like %p : tensor<1x1xf32>, tensor<?x?xf32>
  %p_new = arith.subf %p, %total_b : tensor<?x?xf32>
  kfuse.write %p_new to %p : tensor<?x?xf32>
  kfuse.write %rows to %r : tensor<?x1xf32>
  kfuse.write %cols to %c : tensor<1x?xf32>
  return
}
