// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=4096 --input-dtype=bf16 --emit=cuda | FileCheck %s
// RUN: kfuse compile %library/norm/layernorm_fwd.mlir --cols=128 --emit=cuda | FileCheck %s --check-prefix=WARP
// RUN: kfuse compile %library/norm/rmsnorm_fwd.mlir --cols=4096 --emit=cuda | FileCheck %s --check-prefix=RMS

// LayerNorm's sum and <variance> reduce in one phase: one barrier a row.
// Each thread sums its elements shifted by its first one, turns them into
// a count, a mean and a sum of squared deviations, and the parts merge
// (Chan) along the shuffle butterfly (every thread owns as many elements
// here: the symmetric equal-count merge), then across the row's warps in
// warp order.
// CHECK: static __device__ __forceinline__ void kfuse_merge_moments(
// CHECK: __fdividef(nb, total)
// CHECK: static __device__ __forceinline__ void kfuse_shuffle_moments(
// CHECK: __shared__ float kfuse_red[2][32];
// CHECK: // Phase 1: 2 row reduction(s).
// CHECK-NEXT: float [[SUM:s[0-9]+]] = 0.0f;
// CHECK-NEXT: float [[VAR:s[0-9]+]] = 0.0f, [[VAR]]_n = 0.0f, [[VAR]]_p = 0.0f, [[VAR]]_s = 0.0f, [[VAR]]_q = 0.0f;
// The thread's sum follows from the variance's shifted sums: no addition
// of its own per element.
// CHECK-NOT: [[SUM]] +=
// CHECK: const float v = e{{[0-9]+}};
// CHECK-NEXT: if ([[VAR]]_n == 0.0f)
// CHECK-NEXT: [[VAR]]_p = v;
// CHECK-NEXT: const float d = v - [[VAR]]_p;
// CHECK-NEXT: [[VAR]]_s += d;
// CHECK-NEXT: [[VAR]]_q = fmaf(d, d, [[VAR]]_q);
// CHECK-NEXT: [[VAR]]_n += 1.0f;
// CHECK: [[SUM]] = fmaf([[VAR]]_n, [[VAR]]_p, [[VAR]]_s);
// CHECK: float [[VAR]]_m = [[VAR]]_p;
// CHECK: [[VAR]]_q = fmaxf(fmaf(-[[VAR]]_s, shift, [[VAR]]_q), 0.0f);
// CHECK: [[SUM]] = [[SUM]] + __shfl_xor_sync(0xffffffffu, [[SUM]], m);
// CHECK-NEXT: kfuse_shuffle_equal_moments([[VAR]]_n, [[VAR]]_m, [[VAR]]_q, m);
// CHECK: kfuse_red[parity][(slot * 4 + lane / 32) * 4 + 0] = [[SUM]];
// CHECK-NEXT: kfuse_red[parity][(slot * 4 + lane / 32) * 4 + 1] = [[VAR]]_n;
// CHECK-NEXT: kfuse_red[parity][(slot * 4 + lane / 32) * 4 + 2] = [[VAR]]_m;
// CHECK-NEXT: kfuse_red[parity][(slot * 4 + lane / 32) * 4 + 3] = [[VAR]]_q;
// CHECK: __syncthreads();
// CHECK: for (int w = 1; w < 4; ++w) {
// CHECK-NEXT: [[SUM]] = [[SUM]] + part[w * 4 + 0];
// CHECK-NEXT: kfuse_merge_moments([[VAR]]_n, [[VAR]]_m, [[VAR]]_q, part[w * 4 + 1], part[w * 4 + 2], part[w * 4 + 3]);
// CHECK: [[VAR]] = [[VAR]]_q / [[VAR]]_n;
// CHECK-NOT: __syncthreads();
// CHECK-NOT: // Phase 2
// CHECK: // Outputs.

// A warp per row: the butterfly alone, no shared memory between warps.
// WARP: 32 threads per row
// WARP-NOT: kfuse_red
// WARP: kfuse_shuffle_equal_moments(
// WARP-NOT: kfuse_red
// WARP: = [[V:s[0-9]+]]_q / [[V]]_n;

// Norms without a variance carry none of its helpers.
// RMS-NOT: kfuse_merge_moments
