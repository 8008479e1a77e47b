// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{param-dtype=f8}))' -split-input-file -verify-diagnostics
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{alignment=12}))' 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{numel=7}))' 2>&1 | FileCheck %s --check-prefix=NUMEL

// ALIGN: error: alignment must be a positive power of two, got 12
// NUMEL: error: argument #0 has static shape 'tensor<8xf32>' but numel is 7

// expected-error @+1 {{unknown dtype 'f8' for param-dtype; expected f32, bf16 or f16}}
func.func @update(%p: tensor<8xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<8xf32>
  return
}
