// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=1024 --input-dtype=bf16 --emit=cuda | FileCheck %s
// RUN: kfuse compile %library/norm/layernorm_bwd.mlir --cols=1024 --emit=cuda | FileCheck %s --check-prefix=BWD
// RUN: kfuse compile %library/optim/adamw.mlir --emit=cuda --codegen=cuda | FileCheck %s --check-prefix=UPDATE
// RUN: kfuse compile %library/optim/adamw.mlir --emit=cuda --multi-tensor | FileCheck %s --check-prefix=MULTI
// RUN: kfuse compile %library/optim/adamw.mlir --emit=ptx --codegen=ptx --arch=sm_90 | FileCheck %s --check-prefix=PTX
// RUN: kfuse compile %library/optim/adamw.mlir --emit=ptx --codegen=ptx --arch=sm_89 | FileCheck %s --check-prefix=PTX89

// Every kernel is launched as a programmatic dependent launch on sm_90 and
// later: a kernel may start while the one before it in the stream drains,
// so each kernel first waits for it (griddepcontrol.wait), before any load
// or store, then lets the next kernel launch. Older archs compile neither
// instruction.
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

// Updates too: a single-tensor kernel, a multi-tensor plan's kernel (before
// it reads the found-inf flag an earlier kernel sets) and the direct PTX.
// UPDATE: kfuse_adamw_0(
// UPDATE-NEXT: kfuse_grid_dependency_sync();
// MULTI: kfuse_adamw_multi(
// MULTI: unsigned int *done_counter) {
// MULTI-NEXT: kfuse_grid_dependency_sync();
// MULTI-NEXT: // Every block reads the same flag
// PTX: .visible .entry kfuse_adamw_0(
// PTX: .reg .f64
// PTX-EMPTY:
// PTX-NEXT: griddepcontrol.wait;
// PTX-NEXT: griddepcontrol.launch_dependents;
// PTX-NEXT: ld.param
// PTX89-NOT: griddepcontrol
