// RUN: kfuse check %S/Inputs/layernorm-update-fwd.mlir | FileCheck %s --check-prefix=VERIFY
// RUN: kfuse compile %S/Inputs/layernorm-update-fwd.mlir --emit=cuda | FileCheck %s --check-prefix=FWD
// RUN: kfuse compile %S/Inputs/layernorm-update-fwd.mlir --emit=ptx --codegen=cuda --arch=sm_90 > /dev/null
// RUN: kfuse check %S/Inputs/layernorm-update-bwd.mlir | FileCheck %s --check-prefix=VERIFY
// RUN: kfuse compile %S/Inputs/layernorm-update-bwd.mlir --emit=cuda | FileCheck %s --check-prefix=BWD
// RUN: kfuse compile %S/Inputs/layernorm-update-bwd.mlir --emit=ptx --codegen=cuda --arch=sm_80 > /dev/null
// RUN: kfuse compile %S/Inputs/layernorm-update-fwd.mlir --emit=cuda --stats -o /dev/null | FileCheck %s --check-prefix=STATS
// RUN: kfuse compile %S/Inputs/layernorm-update-bwd.mlir --emit=cuda --stats -o /dev/null | FileCheck %s --check-prefix=STATS
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_fwd.mlir --cols=1024 --emit=cuda | FileCheck %s --check-prefix=ROWS
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_fwd.mlir --cols=1024 --emit=cuda --stats -o /dev/null | FileCheck %s --check-prefix=ROWS-STATS
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/rmsnorm_fwd.mlir --cols=4096 --input-dtype=bf16 --emit=ptx --arch=sm_80 > /dev/null
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=1024 --emit=cuda | FileCheck %s --check-prefix=ROWS-SUMS
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=4096 --emit=cuda | FileCheck %s --check-prefix=ROWS-PREFETCH
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=4096 --input-dtype=bf16 --emit=ptx --arch=sm_80 > /dev/null
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/rmsnorm_fwd.mlir --cols=12288 --emit=cuda --stats -o /dev/null | FileCheck %s --check-prefix=ROWS-WIDE
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_fwd.mlir --cols=1001 --input-dtype=bf16 --emit=ptx --arch=sm_90 > /dev/null
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=20000 --emit=cuda | FileCheck %s --check-prefix=ROWS-LOOPED-SHARED
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=40000 --emit=cuda | FileCheck %s --check-prefix=ROWS-LOOPED
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=40000 --input-dtype=bf16 --emit=ptx --arch=sm_90 > /dev/null
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_fwd.mlir --cols=100003 --emit=ptx --arch=sm_80 > /dev/null
// RUN: not env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_fwd.mlir --cols=1 --emit=cuda 2>&1 | FileCheck %s --check-prefix=ROWS-ONE
// RUN: env KFUSE_NORM_EMITTER=update KFUSE_NORM_STAGES=3 kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=2048 --input-dtype=bf16 --weight-dtype=f32 --emit=cuda | FileCheck %s --check-prefix=ROWS-THREE
// RUN: env KFUSE_NORM_EMITTER=update KFUSE_NORM_STAGES=3 kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=2048 --input-dtype=bf16 --weight-dtype=f32 --emit=ptx --arch=sm_80 > /dev/null
// RUN: env KFUSE_NORM_EMITTER=update KFUSE_NORM_STAGES=0 KFUSE_NORM_SUMS=shared kfuse compile %S/../../library/norm/layernorm_bwd.mlir --cols=4096 --emit=cuda | FileCheck %s --check-prefix=ROWS-SUMS-SHARED
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_fwd.mlir --cols=1000 --alignment=8 --emit=ptx --arch=sm_90 > /dev/null
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/layernorm_fwd.mlir --cols=12289 --input-dtype=f16 --emit=ptx --arch=sm_90 > /dev/null
// RUN: env KFUSE_NORM_EMITTER=update kfuse compile %S/../../library/norm/add_layernorm_fwd.mlir --cols=2048 --input-dtype=bf16 --emit=ptx --arch=sm_90 > /dev/null
// RUN: not kfuse compile %s --emit=cuda 2>&1 | FileCheck %s --check-prefix=BAD

// A norm written as an update: 'input' and 'output' arguments beside (or
// instead of) params, grads and states, in the one pipeline. The forward's
// rows are staged in shared memory as the norm kernel's are (the same layout
// and launch bounds: library/norm/layernorm_fwd.mlir at 1024 columns), its
// row statistics reduced in registers and its weight and bias read per
// column, in one multi-tensor kernel; the backward's dweight and dbias are
// column sums, each thread's over its rows, then the block's row slots, then
// the chunks in a later phase of the same cooperative launch.

// VERIFY: check: 4 passed, 0 failed
// VERIFY: emit: OK

// FWD:      1 kernel(s)
// FWD:      __launch_bounds__(256, 2)
// FWD:      Rows of 1024 elements in registers (inputs staged in shared memory): 32 thread(s) a row, 8 vector(s) of 4 a thread, 8 row(s) a block.
// FWD:      kfuse_stage<kfuse_f32x4>(x__stage + k * 512u, reinterpret_cast<const kfuse_f32x4 *>(x_) + (kfuse_valid ? r * 256 + k * 32 + kfuse_lane : 0), kfuse_valid);
// FWD:      const kfuse_f32x4 x__e = kfuse_unstage<kfuse_f32x4>(x__stage + k * 512u);
// FWD:      const kfuse_f32x4 weight_e = kfuse_ldcg_vector(reinterpret_cast<const kfuse_f32x4 *>(weight) + k * 32 + kfuse_lane);
// FWD:      reinterpret_cast<kfuse_f32x4 *>(y)[r * 256 + k * 32 + kfuse_lane] = y_w;
// FWD:      if (kfuse_lane == 0)
// FWD-NEXT:   mean[r] = mean_w;

// A block's rows staged in 32 KiB of dynamic shared memory (eight rows of x
// forward, four of x and dy backward), two blocks an SM, and ptxas (NVRTC's,
// sm_90) fits that without spilling.
// STATS: "launch_blocks":2,"name":"kfuse_layernorm_{{fwd_multi|bwd_phases}}","registers":{{[1-9][0-9]*}},"shared_bytes":32768,"spills":0,

// BWD:      Rows of 1024 elements in registers (inputs staged in shared memory): 64 thread(s) a row, 4 vector(s) of 4 a thread, 4 row(s) a block.
// BWD:      col_partials[(entry->col_partial_base + (c - entry->first_chunk) * cols + (k * 64 + kfuse_lane) * 4 + j) * 2 + 0] = col_acc0[k][j];
// BWD:      dweight[x] = dweight_cw;
// BWD-NEXT: dbias[x] = dbias_cw;
// BWD:      __launch_bounds__(256, 2)
// BWD:      kfuse_grid_barrier(barrier);

// An input is read only.
func.func @writes_input(
    %x: tensor<?x64xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %y: tensor<?x64xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"})
    attributes {kfuse.update} {
  %two = arith.addf %x, %x : tensor<?x64xf32>
  kfuse.write %two to %y : tensor<?x64xf32>
  // A library norm of one phase, with KFUSE_NORM_EMITTER=update: its row kernel
// is the register-row loop above, called with the norm's pointers and row
// count (the norm launch ABI, codegen/KernelPlan.h), every gridDim.x-th group
// of rows a block; its layout and launch bounds are the norm emitter's.
// ROWS:      // The element function of @layernorm_fwd's rows
// ROWS:      extern "C" __global__ void __launch_bounds__(256, 2)
// ROWS-NEXT: kfuse_layernorm_fwd_rows(const float *__restrict__ x_, const float *__restrict__ weight, const float *__restrict__ bias, float *__restrict__ y, float *__restrict__ mean, float *__restrict__ rstd, double eps, long long rows, float *__restrict__ partials) {
// ROWS:      const long long r0 = blockIdx.x * 8ll, r1 = rows;
// ROWS:      Rows of 1024 elements in registers (inputs staged in shared memory): 32 thread(s) a row, 8 vector(s) of 4 a thread, 8 row(s) a block.
// ROWS:      for (long long rb = r0 + kfuse_slot; rb < r1; rb += gridDim.x * 8ll) {
// ROWS-STATS: "norm":"layernorm_fwd"
// ROWS-STATS-SAME: "per_kernel":[{"name":"kfuse_layernorm_fwd_rows","registers":{{[1-9][0-9]*}},"spills":0,
// ROWS-STATS-SAME: "rows_per_block":8,"shared_bytes":32768,"stages":1,"threads_per_row":32
// The backward: each block's column sums, its row slots added in slot order,
// stored as the norm ABI's partials (per reduction and block), and the norm's
// finish kernel for the second phase, which stores them.
// ROWS-SUMS:      kfuse_layernorm_bwd_rows(const float *__restrict__ dy, const float *__restrict__ x_, const float *__restrict__ mean, const float *__restrict__ rstd, const float *__restrict__ weight, float *__restrict__ dx, float *__restrict__ {{.*}}, float *__restrict__ {{.*}}, long long rows, float *__restrict__ partials) {
// ROWS-SUMS:      partials[((long long)0 * gridDim.x + blockIdx.x) * 1024 + (k * 64 + kfuse_lane) * 4 + j] = col_acc0[k][j];
// ROWS-SUMS:      partials[((long long)1 * gridDim.x + blockIdx.x) * 1024 + (k * 64 + kfuse_lane) * 4 + j] = col_acc1[k][j];
// ROWS-SUMS:      kfuse_layernorm_bwd_finish(const float *__restrict__ partials, int grid, float *__restrict__ out_dweight, float *__restrict__ out_dbias) {
// ROWS-SUMS:      out_dweight[col] = total;
// ROWS-SUMS:      out_dbias[col] = total;
// One row a block: the next row is copied into the other buffer while this
// one is computed, as the norm emitter's prefetch does.
// ROWS-PREFETCH:      const unsigned dy_stage = kfuse_stages + 32768u + (kfuse_slot * 1024 + kfuse_lane) * 16u;
// ROWS-PREFETCH:      int kfuse_read_stage = 0;
// ROWS-PREFETCH:        const long long kfuse_ahead = r0 + kfuse_slot;
// ROWS-PREFETCH:        kfuse_stage_commit();
// ROWS-PREFETCH:      for (long long rb = r0; rb < r1; rb += gridDim.x * 1ll) {
// ROWS-PREFETCH:        const long long kfuse_ahead = r + 1 * (gridDim.x * 1ll);
// ROWS-PREFETCH:        const unsigned kfuse_fill = (kfuse_read_stage ^ 1) * 16384u;
// ROWS-PREFETCH:        kfuse_stage<kfuse_f32x4>(dy_stage + kfuse_fill + k * 4096u, reinterpret_cast<const kfuse_f32x4 *>(dy) + (kfuse_ahead_valid ? (kfuse_ahead) * 1024 + k * 256 + kfuse_lane : 0), kfuse_ahead_valid);
// ROWS-PREFETCH:        kfuse_stage_wait<1>();
// ROWS-PREFETCH:      const unsigned kfuse_buffer = kfuse_read_stage * 16384u;
// ROWS-PREFETCH:      const kfuse_f32x4 dy_e = kfuse_unstage<kfuse_f32x4>(dy_stage + kfuse_buffer + k * 4096u);
// ROWS-PREFETCH:      kfuse_read_stage ^= 1;
// ROWS-PREFETCH:    kfuse_stage_wait<0>(); // the last, empty prefetches
// A long forward row without column sums: the norm's wide layout, 64
// elements a thread in registers, unstaged.
// ROWS-WIDE: "block_size":192,
// ROWS-WIDE-SAME: "items_per_thread":16,
// ROWS-WIDE-SAME: "stages":0,
// A row longer than a block holds is looped over: each call loads its
// vectors again, and a column has one owner thread, which adds the block's
// rows in shared memory where the sums fit there, then stores them...
// ROWS-LOOPED-SHARED:      extern __shared__ __align__(16) unsigned char kfuse_smem[];
// ROWS-LOOPED-SHARED:      float *const col_acc1 = reinterpret_cast<float *>(kfuse_smem + 0) + 20000;
// ROWS-LOOPED-SHARED:      #pragma unroll 2
// ROWS-LOOPED-SHARED-NEXT: for (int k = 0; k < 10; ++k) {
// ROWS-LOOPED-SHARED:        const kfuse_f32x4 x__e = kfuse_ldcg_vector(reinterpret_cast<const kfuse_f32x4 *>(x_) + r * 5000 + k * 512 + kfuse_lane);
// ROWS-LOOPED-SHARED:        col_acc0[(k * 512 + kfuse_lane) * 4 + j], col_acc1[(k * 512 + kfuse_lane) * 4 + j]
// ROWS-LOOPED-SHARED:        (partials + ((long long)1 * gridDim.x + blockIdx.x) * 20000)[(k * 512 + kfuse_lane) * 4 + j] = col_acc1[(k * 512 + kfuse_lane) * 4 + j];
// ...else in the block's slice of the partials.
// ROWS-LOOPED-NOT: kfuse_smem
// ROWS-LOOPED:      float *const col_acc0 = partials + ((long long)0 * gridDim.x + blockIdx.x) * 40000;
// ROWS-LOOPED:        col_acc0[(k * 512 + kfuse_lane) * 4 + j] = 0.0f;
// ROWS-LOOPED:      for (int k = 0; k < 20; ++k) {
// ROWS-LOOPED:        col_acc0[(k * 512 + kfuse_lane) * 4 + j], col_acc1[(k * 512 + kfuse_lane) * 4 + j]
// ROWS-ONE: layernorm_fwd.mlir:{{[0-9]+}}:{{[0-9]+}}: error: a norm over rows of one column is generated by the norm emitter only; unset KFUSE_NORM_EMITTER=update
// Three buffers, two row groups (of two rows) ahead.
// ROWS-THREE:      int kfuse_read_stage = 0;
// ROWS-THREE:        const long long kfuse_ahead = r0 + kfuse_slot;
// ROWS-THREE:        const long long kfuse_ahead = r0 + kfuse_slot + 1 * (gridDim.x * 2ll);
// ROWS-THREE:        kfuse_stage<{{.*}}>({{.*}} + 8192u + k * {{[0-9]+}}u,
// ROWS-THREE:        const long long kfuse_ahead = r + 2 * (gridDim.x * 2ll);
// ROWS-THREE:        const unsigned kfuse_fill = (kfuse_read_stage == 0 ? 2 : kfuse_read_stage - 1) * 8192u;
// ROWS-THREE:        kfuse_stage_wait<2>();
// ROWS-THREE:      kfuse_read_stage = kfuse_read_stage == 2 ? 0 : kfuse_read_stage + 1;
// Sums forced into shared memory with rows in registers.
// ROWS-SUMS-SHARED:      float *const col_acc1 = reinterpret_cast<float *>(kfuse_smem + 0) + 4096;
// ROWS-SUMS-SHARED:      dx_w.v[j], col_acc0[(k * 256 + kfuse_lane) * 4 + j], col_acc1[(k * 256 + kfuse_lane) * 4 + j]
// ROWS-SUMS-SHARED:      (partials + ((long long)1 * gridDim.x + blockIdx.x) * 4096)[(k * 256 + kfuse_lane) * 4 + j] = col_acc1[(k * 256 + kfuse_lane) * 4 + j];

// BAD: error: 'kfuse.write' op writes input argument #0 ('x'), which is read only
  kfuse.write %two to %x : tensor<?x64xf32>
  return
}
