// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=1024 --input-dtype=bf16 --emit=cuda | FileCheck %s
// RUN: kfuse compile %library/norm/layernorm_bwd.mlir --cols=1024 --emit=cuda | FileCheck %s --check-prefix=BWD

// Norms are launched as programmatic dependent launches on sm_90 and later:
// a kernel may start while the one before it in the stream drains, so each
// kernel first waits for it (griddepcontrol.wait), before any load or store,
// then lets the next kernel launch. Older archs compile neither instruction.
// CHECK: static __device__ __forceinline__ void kfuse_grid_dependency_sync() {
// CHECK-NEXT: #if __CUDA_ARCH__ >= 900
// CHECK-NEXT: asm volatile("griddepcontrol.wait;" ::: "memory");
// CHECK-NEXT: asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
// CHECK-NEXT: #endif
// CHECK-NEXT: }
// CHECK: kfuse_layernorm_fwd_rows(
// CHECK-NEXT: kfuse_grid_dependency_sync();
// CHECK-NEXT: const float eps_f = (float)eps;

// The backward's two kernels both wait: the finish kernel reads the row
// kernel's partials.
// BWD: kfuse_layernorm_bwd_rows(
// BWD-NEXT: kfuse_grid_dependency_sync();
// BWD: kfuse_layernorm_bwd_finish(
// BWD-NEXT: kfuse_grid_dependency_sync();
