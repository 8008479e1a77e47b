// The passes that do not transform 2-D updates yet (params as matrices,
// states per row or column) give an error at the function, never a rewrite.
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-master-weights))' -verify-diagnostics
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-clip-grad-norm))' -verify-diagnostics

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
