// The passes that do not transform 2-D updates yet (params as matrices,
// states per row or column) give an error at the function, never a rewrite:
// master weights, and clipping by a norm reduced in the plan (a caller's
// norm is elementwise and works).
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-master-weights))' -verify-diagnostics
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-clip-grad-norm))' 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-clip-grad-norm{external-norm}))' | FileCheck %s --check-prefix=EXTERNAL

// CLIP: matrix-update-invalid.mlir:{{[0-9]+}}:1: error: kfuse-clip-grad-norm: 'row_sums' is a 2-D update; it clips by a norm the caller computes (external-norm), not one reduced in the plan yet
// EXTERNAL-LABEL: func.func @row_sums
// EXTERNAL-SAME: kfuse.name = "max_grad_norm"
// EXTERNAL-SAME: kfuse.name = "global_grad_norm"
// EXTERNAL: arith.minimumf
// EXTERNAL: kfuse.broadcast %{{.*}} like %{{.*}} : f32, tensor<?x?xf32>

// expected-error @+1 {{'row_sums' is a 2-D update (params as matrices, states per row or per column), which kfuse-}}
func.func @row_sums(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>},
                    %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>},
                    %r: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %sq = arith.mulf %g, %g : tensor<?x?xf32>
  %rows = kfuse.reduce <sum> %sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %r_b = kfuse.broadcast %rows like %p : tensor<?x1xf32>, tensor<?x?xf32>
  %p_new = arith.subf %p, %r_b : tensor<?x?xf32>
  kfuse.write %p_new to %p : tensor<?x?xf32>
  kfuse.write %rows to %r : tensor<?x1xf32>
  return
}
