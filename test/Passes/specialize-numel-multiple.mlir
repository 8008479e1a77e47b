// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{numel-multiple=8}))' | FileCheck %s --check-prefix=DYNAMIC
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{numel=1024 numel-multiple=8}))' | FileCheck %s --check-prefix=STATIC
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize))' | FileCheck %s --check-prefix=PLAIN
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{numel-multiple=6}))' 2>&1 | FileCheck %s --check-prefix=POWER
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{numel=1020 numel-multiple=8}))' 2>&1 | FileCheck %s --check-prefix=NOT-MULTIPLE

// A dynamic count keeps what it is a multiple of; a known count makes it
// redundant; without the option the attribute is absent.
// DYNAMIC-LABEL: func.func @scale
// DYNAMIC-SAME: kfuse.numel_multiple = 8 : i64
// STATIC-LABEL: func.func @scale
// STATIC-SAME: tensor<1024xf32>
// STATIC-NOT: kfuse.numel_multiple
// PLAIN-LABEL: func.func @scale
// PLAIN-NOT: kfuse.numel_multiple

// POWER: error: numel-multiple must be a positive power of two, got 6
// NOT-MULTIPLE: specialize-numel-multiple.mlir:{{[0-9]+}}:1: error: numel 1020 is not a multiple of numel-multiple 8
func.func @scale(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                 %lr: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %lr_v = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %q = arith.mulf %lr_v, %p : tensor<?xf32>
  kfuse.write %q to %p : tensor<?xf32>
  return
}
