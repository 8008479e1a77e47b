// kfuse-specialize binds a 2-D update's storage dtypes like a 1-D one's,
// rows and columns kept dynamic; an element count, which a table gives
// each 2-D tensor, is refused.
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{param-dtype=bf16}))' | FileCheck %s
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{numel=6}))' 2>&1 | FileCheck %s --check-prefix=NUMEL

// CHECK-LABEL: func.func @row_scale(
// CHECK-SAME: %[[P:[a-z0-9]+]]: tensor<?x?xbf16>
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<?x?xbf16>
// CHECK-SAME: %[[R:[a-z0-9]+]]: tensor<?x1xf32>
// CHECK-SAME: kfuse.vector_width = 8
// CHECK: kfuse.convert %[[P]] : tensor<?x?xbf16> to tensor<?x?xf32>
// CHECK: kfuse.write %{{.*}} to %[[P]] : tensor<?x?xbf16>
// NUMEL: error: numel and numel-multiple apply to 1-D updates; a 2-D update's shapes come from its plan's table
func.func @row_scale(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>},
                     %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>},
                     %r: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %r_b = kfuse.broadcast %r like %p : tensor<?x1xf32>, tensor<?x?xf32>
  %d = arith.mulf %g, %r_b : tensor<?x?xf32>
  %p_new = arith.subf %p, %d : tensor<?x?xf32>
  kfuse.write %p_new to %p : tensor<?x?xf32>
  return
}
