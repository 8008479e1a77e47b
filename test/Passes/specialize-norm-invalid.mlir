// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=8 arg-dtypes=f32,f8}))' -split-input-file -verify-diagnostics
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize))' 2>&1 | FileCheck %s --check-prefix=COLS
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=-3}))' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=8 alignment=12}))' 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=6}))' -split-input-file 2>&1 | FileCheck %s --check-prefix=STATIC
// RUN: not kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=8 numel=8}))' -split-input-file 2>&1 | FileCheck %s --check-prefix=KINDS

// COLS: error: cols must be set to the row length (> 0), got 0
// NEGATIVE: error: cols must be set to the row length (> 0), got -3
// ALIGN: error: alignment must be a positive power of two, got 12
// KINDS: error: numel and numel-multiple apply to 1-D updates; a norm takes cols
// KINDS: error: cols applies to norms; an update's shapes come from its tensors
// STATIC: specialize-norm-invalid.mlir:{{[0-9]+}}:1: error: argument #0 has static shape 'tensor<?x8xf32>' but cols is 6

// Three tensor arguments, two dtypes.
// expected-error @+1 {{expected 3 dtypes, one per tensor argument, got 2}}
func.func @three_tensors(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %w: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}

// -----

// expected-error @+1 {{unknown dtype 'f8' in arg-dtypes; expected f32, bf16 or f16}}
func.func @two_tensors(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}

// -----

// A static column extent must be the one specialized on (the first split's
// error comes first for the other RUN lines).
// expected-error @+1 {{unknown dtype 'f8' in arg-dtypes; expected f32, bf16 or f16}}
func.func @static_extent(
    %x: tensor<?x8xf32> {kfuse.role = #kfuse.role<input>},
    %y: tensor<?x8xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  kfuse.write %x to %y : tensor<?x8xf32>
  return
}

// -----

// An update takes arg-dtypes too: one tensor argument, two dtypes.
// expected-error @+1 {{expected 1 dtypes, one per tensor argument, got 2}}
func.func @update(%p: tensor<8xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<8xf32>
  return
}
