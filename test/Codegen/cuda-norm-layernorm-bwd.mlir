// RUN: env KFUSE_NORM_STAGES=0 kfuse compile %library/norm/layernorm_bwd.mlir --cols=1024 --emit=cuda | FileCheck %s
// RUN: env KFUSE_NORM_STAGES=0 KFUSE_NORM_SUMS=shared kfuse compile %library/norm/layernorm_bwd.mlir --cols=4096 --emit=cuda | FileCheck %s --check-prefix=SHARED
// RUN: kfuse compile %library/norm/layernorm_bwd.mlir --cols=65536 --emit=cuda | FileCheck %s --check-prefix=LOOPED
// RUN: env KFUSE_NORM_STAGES=0 KFUSE_NORM_SUMS=shared kfuse compile %library/norm/layernorm_bwd.mlir --cols=4096 --stats -o /dev/null | FileCheck %s --check-prefix=STATS
// RUN: kfuse compile %library/norm/layernorm_bwd.mlir --cols=4096 --emit=cuda | FileCheck %s --check-prefix=STAGED
// RUN: kfuse compile %library/norm/layernorm_bwd.mlir --cols=4096 --stats -o /dev/null | FileCheck %s --check-prefix=STAGED-STATS

// The library's LayerNorm backward: dx needs two row sums, in one phase;
// dweight and dbias are column sums, accumulated per block over its rows
// and added over the blocks by the finish kernel in a fixed order.

// f32 rows of 1024: two warps a row, four rows a block; every thread owns
// the same 16 columns of each row, so the column sums stay in its registers
// and the row slots of a block add them up in slot order at the end.
// CHECK-LABEL: // The row kernel of @layernorm_bwd
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(256, 2)
// CHECK-NEXT: kfuse_layernorm_bwd_rows(const float *__restrict__ dy, const float *__restrict__ x, const float *__restrict__ mean, const float *__restrict__ rstd, const float *__restrict__ weight, float *__restrict__ dx, float *__restrict__ dweight, float *__restrict__ dbias, long long rows, float *__restrict__ partials) {
// CHECK: kfuse_f32x4 acc_dweight[4] = {};
// CHECK-NEXT: kfuse_f32x4 acc_dbias[4] = {};
// CHECK: const float mean_r = valid ? mean[row] : (float)0;
// CHECK-NEXT: const float rstd_r = valid ? rstd[row] : (float)0;
// CHECK: // Phase 1: 2 row reduction(s).
// CHECK: for (int m = 16; m > 0; m >>= 1) {
// CHECK-NEXT: [[A:s[0-9]+]] = [[A]] + __shfl_xor_sync(0xffffffffu, [[A]], m);
// CHECK-NEXT: [[B:s[0-9]+]] = [[B]] + __shfl_xor_sync(0xffffffffu, [[B]], m);
// CHECK: = [[A]] / 1024.0f;
// CHECK-NEXT: = [[B]] / 1024.0f;
// CHECK: // Outputs.
// CHECK: if (valid)
// CHECK-NEXT: acc_dweight[i].v[j] += e{{[0-9]+}};
// CHECK-NEXT: if (valid)
// CHECK-NEXT: acc_dbias[i].v[j] += dy_v[i].v[j];
// CHECK: reinterpret_cast<kfuse_f32x4 *>(dx + offset)[vec] = dx_w;
// CHECK: __shared__ kfuse_f32x4 kfuse_colsum[256];
// CHECK: for (int s = 1; s < 4; ++s) {
// CHECK: acc_dweight[i].v[j] += other.v[j];
// CHECK: kfuse_f32x4 *part = reinterpret_cast<kfuse_f32x4 *>(partials + ((long long)0 * gridDim.x + blockIdx.x) * 1024);
// CHECK: part[vec] = acc_dweight[i];
// CHECK: kfuse_f32x4 *part = reinterpret_cast<kfuse_f32x4 *>(partials + ((long long)1 * gridDim.x + blockIdx.x) * 1024);
// CHECK: part[vec] = acc_dbias[i];

// The finish kernel: 32 columns a block (blockIdx.y picks the output), 8
// slices of the partial rows, 16 loads of a slice in flight (zeros past the
// grid), the slices added in order through shared memory.
// CHECK-LABEL: // The column sums of @layernorm_bwd
// CHECK: extern "C" __global__ void __launch_bounds__(256)
// CHECK-NEXT: kfuse_layernorm_bwd_finish(const float *__restrict__ partials, int grid, float *__restrict__ dweight, float *__restrict__ dbias) {
// CHECK-NEXT: kfuse_grid_dependency_sync();
// CHECK-NEXT: __shared__ float kfuse_slices[8][32];
// CHECK-NEXT: const int column = threadIdx.x % 32;
// CHECK-NEXT: const int slice = threadIdx.x / 32;
// CHECK-NEXT: const int col = blockIdx.x * 32 + column;
// CHECK: if (col < 1024) {
// CHECK-NEXT: const float *p = partials + (long long)blockIdx.y * grid * 1024 + col;
// CHECK-NEXT: for (int b0 = slice; b0 < grid; b0 += 128) {
// CHECK-NEXT: float t[16];
// CHECK: const int b = b0 + k * 8;
// CHECK-NEXT: t[k] = b < grid ? p[(long long)b * 1024] : 0.0f;
// CHECK: total += t[k];
// CHECK: kfuse_slices[slice][column] = total;
// CHECK-NEXT: __syncthreads();
// CHECK-NEXT: if (slice != 0 || col >= 1024)
// CHECK-NEXT: return;
// CHECK-NEXT: total = kfuse_slices[0][column];
// CHECK: for (int s = 1; s < 8; ++s)
// CHECK-NEXT: total += kfuse_slices[s][column];
// CHECK-NEXT: switch (blockIdx.y) {
// CHECK-NEXT: case 0:
// CHECK-NEXT: dweight[col] = total;
// CHECK: case 1:
// CHECK-NEXT: dbias[col] = total;

// Rows of 4096: one row a block, so each column has one owner thread, and
// KFUSE_NORM_SUMS=shared puts its sums in dynamic shared memory (2 x 16 KiB),
// freeing registers. The code generator does so by itself only where the
// sums do not fit in registers.
// SHARED: extern __shared__ __align__(16) unsigned char kfuse_smem[];
// SHARED-NEXT: kfuse_f32x4 *const kfuse_acc = reinterpret_cast<kfuse_f32x4 *>(kfuse_smem);
// SHARED: kfuse_acc[1024 + vec] = kfuse_f32x4{};
// SHARED: kfuse_f32x4 acc_dweight = kfuse_acc[0 + vec];
// SHARED: kfuse_acc[0 + vec] = acc_dweight;
// SHARED-NOT: kfuse_colsum
// SHARED: part[vec] = kfuse_acc[0 + vec];
// STATS: "block_size":256
// STATS-SAME: "column_outputs":2
// STATS-SAME: "kernels":2
// STATS-SAME: "max_grid_blocks":1024
// STATS-SAME: "spills":0
// STATS-SAME: "spills":0
// STATS-SAME: "rows_per_block":1,"shared_bytes":32768,"stages":0,"threads_per_row":256

// Staged by default: dy and x in two buffers each, read back in the phases;
// the column sums in the owner threads' registers.
// STAGED: 256 threads per row (4 vector(s) each, staged in shared memory, 2 buffer(s))
// STAGED: const unsigned dy_stage = kfuse_stages + 0u;
// STAGED-NEXT: const unsigned x_stage = kfuse_stages + 32768u;
// STAGED-NEXT: kfuse_f32x4 acc_dweight[4] = {};
// STAGED-NEXT: kfuse_f32x4 acc_dbias[4] = {};
// STAGED: kfuse_stage<kfuse_f32x4>(dy_to + vec * 16, reinterpret_cast<const kfuse_f32x4 *>(dy + from) + vec, fill);
// STAGED-NEXT: kfuse_stage<kfuse_f32x4>(x_to + vec * 16, reinterpret_cast<const kfuse_f32x4 *>(x + from) + vec, fill);
// STAGED: const kfuse_f32x4 dy_l = kfuse_unstage<kfuse_f32x4>(dy_v + vec * 16);
// STAGED-NEXT: const kfuse_f32x4 x_l = kfuse_unstage<kfuse_f32x4>(x_v + vec * 16);
// STAGED: acc_dbias[i].v[j] += dy_l.v[j];
// STAGED-NOT: kfuse_acc
// STAGED: part[vec] = acc_dweight[i];
// STAGED-STATS: "rows_per_block":1,"shared_bytes":65536,"stages":2,"threads_per_row":256

// Rows of 65536 do not fit in registers: the looped variant reads the row
// again in each phase, and keeps the sums in the block's own partials.
// LOOPED: // Generated by kfuse from @layernorm_bwd: 65536 columns, vector width 4, 512 threads per row (2 vector(s) each in each of 16 chunks, looped), 1 row(s) per block.
// LOOPED: kfuse_f32x4 *kfuse_sum0 = reinterpret_cast<kfuse_f32x4 *>(partials + ((long long)0 * gridDim.x + blockIdx.x) * 65536);
// LOOPED: // Phase 1: 2 row reduction(s).
// LOOPED-NEXT: float
// LOOPED-NEXT: float
// LOOPED-NEXT: #pragma unroll 1
// LOOPED-NEXT: for (int chunk = 0; chunk < 16; ++chunk) {
// LOOPED-NEXT: kfuse_f32x4 dy_v[2];
// LOOPED: kfuse_sum0[vec] = acc_dweight;
// LOOPED-NOT: part[vec]
// LOOPED: kfuse_layernorm_bwd_finish
