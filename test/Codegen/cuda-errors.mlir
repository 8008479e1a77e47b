// RUN: not kfuse compile %s --emit=cuda 2>&1 | FileCheck %s

// An elementwise op the code generator has no CUDA for is reported at the
// op, not emitted wrongly.

// CHECK: cuda-errors.mlir:[[# @LINE + 4]]:8: error: 'math.sin' op is not supported in a fused body by the CUDA code generator
func.func @wave(
    %param: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"})
    attributes {kfuse.update} {
  %s = math.sin %param : tensor<?xf32>
  kfuse.write %s to %param : tensor<?xf32>
  return
}
