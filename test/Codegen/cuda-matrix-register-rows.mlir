// RUN: kfuse compile %s --emit=mlir | FileCheck %s --check-prefix=MLIR
// RUN: kfuse compile %s --emit=cuda | FileCheck %s
// RUN: kfuse compile %s --emit=ptx --codegen=cuda --arch=sm_80 | FileCheck %s --check-prefix=PTX
// RUN: kfuse compile %s --emit=ptx --codegen=cuda --arch=sm_90 --param-dtype=bf16 --state-dtype=bf16 | FileCheck %s --check-prefix=PTX
// RUN: kfuse check %s --steps=10 | FileCheck %s --check-prefix=VERIFY
// RUN: kfuse check %S/Inputs/register-rows-two-levels.mlir | FileCheck %s --check-prefix=VERIFY-TWO
// RUN: kfuse compile %S/Inputs/register-rows-two-levels.mlir --emit=cuda | FileCheck %s --check-prefix=TWO
// RUN: kfuse check %S/Inputs/register-rows-short.mlir | FileCheck %s --check-prefix=VERIFY-TWO
// RUN: kfuse compile %S/Inputs/register-rows-short.mlir --emit=cuda | FileCheck %s --check-prefix=SHORT
// RUN: kfuse check %S/Inputs/register-rows-variance.mlir | FileCheck %s --check-prefix=VERIFY-VARIANCE
// RUN: kfuse compile %S/Inputs/register-rows-variance.mlir --emit=cuda | FileCheck %s --check-prefix=VARIANCE
// RUN: kfuse compile %S/Inputs/register-rows-variance.mlir --emit=ptx --codegen=cuda --arch=sm_80 > /dev/null
// RUN: kfuse check %S/Inputs/register-rows-long-variance.mlir | FileCheck %s --check-prefix=VERIFY-VARIANCE
// RUN: kfuse compile %S/Inputs/register-rows-long-variance.mlir --emit=cuda | FileCheck %s --check-prefix=LONG
// RUN: kfuse compile %S/Inputs/register-rows-long-variance.mlir --emit=ptx --codegen=cuda --arch=sm_90 > /dev/null
// RUN: kfuse check %S/Inputs/register-rows-uneven-variance.mlir | FileCheck %s --check-prefix=VERIFY-VARIANCE
// RUN: kfuse compile %S/Inputs/register-rows-uneven-variance.mlir --emit=cuda | FileCheck %s --check-prefix=UNEVEN
// RUN: kfuse compile %S/Inputs/register-rows-uneven-variance.mlir --emit=ptx --codegen=cuda --arch=sm_80 > /dev/null
// RUN: kfuse check %S/Inputs/register-rows-long-two-levels.mlir | FileCheck %s --check-prefix=VERIFY-TWO
// RUN: kfuse compile %S/Inputs/register-rows-long-two-levels.mlir --emit=cuda | FileCheck %s --check-prefix=LEVELS
// RUN: kfuse check %S/Inputs/register-rows-column-inputs.mlir | FileCheck %s --check-prefix=VERIFY-VARIANCE
// RUN: kfuse compile %S/Inputs/register-rows-column-inputs.mlir --emit=cuda | FileCheck %s --check-prefix=COLUMNS
// RUN: kfuse compile %S/Inputs/register-rows-column-inputs.mlir --emit=ptx --codegen=cuda --arch=sm_90 > /dev/null
// RUN: sed -e 's/?x?x/?x768x/g' -e 's/1x?x/1x768x/g' %S/../../library/optim/adafactor.mlir > %t.adafactor.mlir
// RUN: kfuse check %t.adafactor.mlir | FileCheck %s --check-prefix=VERIFY-VARIANCE
// RUN: kfuse compile %t.adafactor.mlir --emit=cuda | FileCheck %s --check-prefix=ADAFACTOR
// RUN: kfuse compile %t.adafactor.mlir --emit=ptx --codegen=cuda --arch=sm_80 > /dev/null

// Rows of a static length (a multiple of 32, at most 8192 elements) are held
// in registers where a phase reduces them, spread over the threads of a block
// as a norm's rows are (codegen/CudaRows.h): the reduction is fused with the
// math around it, and its result is used in the same pass over memory. Here,
// momentum stored as integers of a per-block scale, one block of 256
// elements a row (8-bit block-wise quantization, with the state in f32):
//
//   m     = beta * q_old * scale_old + (1 - beta) * g
//   scale = max |m| over the block / 127
//   q     = round(m / scale)               (ties to even)
//   p     = p - lr * q * scale
//
// Row 0 of a tensor is elements 0 to 255, so the same kernel serves any
// tensor whose size is a multiple of 256, viewed as rows of 256.

func.func @block_rounded_momentum(
    %param: tensor<?x256xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: tensor<?x256xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %q: tensor<?x256xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "codes"},
    %scale: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "scale"},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "lr", kfuse.default = 1.0e-2 : f32},
    %beta: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta", kfuse.default = 0.9 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %levels = arith.constant 127.0 : f32
  %scale_e = kfuse.broadcast %scale like %q : tensor<?x1xf32>, tensor<?x256xf32>
  %m_old = arith.mulf %q, %scale_e : tensor<?x256xf32>
  %beta_e = kfuse.broadcast %beta like %q : f32, tensor<?x256xf32>
  %one_minus = arith.subf %one, %beta : f32
  %one_minus_e = kfuse.broadcast %one_minus like %q : f32, tensor<?x256xf32>
  %kept = arith.mulf %m_old, %beta_e : tensor<?x256xf32>
  %added = arith.mulf %grad, %one_minus_e : tensor<?x256xf32>
  %m = arith.addf %kept, %added : tensor<?x256xf32>
  %m_abs = math.absf %m : tensor<?x256xf32>
  %absmax = kfuse.reduce <max> %m_abs dim 1 : tensor<?x256xf32> -> tensor<?x1xf32>
  %levels_r = kfuse.broadcast %levels like %absmax : f32, tensor<?x1xf32>
  %new_scale = arith.divf %absmax, %levels_r : tensor<?x1xf32>
  %new_scale_e = kfuse.broadcast %new_scale like %q : tensor<?x1xf32>, tensor<?x256xf32>
  %ratio = arith.divf %m, %new_scale_e : tensor<?x256xf32>
  %new_q = math.roundeven %ratio : tensor<?x256xf32>
  %m_stored = arith.mulf %new_q, %new_scale_e : tensor<?x256xf32>
  %lr_e = kfuse.broadcast %lr like %q : f32, tensor<?x256xf32>
  %delta = arith.mulf %lr_e, %m_stored : tensor<?x256xf32>
  %new_param = arith.subf %param, %delta : tensor<?x256xf32>
  kfuse.write %new_param to %param : tensor<?x256xf32>
  kfuse.write %new_q to %q : tensor<?x256xf32>
  kfuse.write %new_scale to %scale : tensor<?x1xf32>
  return
}

// One region: the reduction of each row is inside it, not a phase boundary.
// MLIR:      kfuse.fused
// MLIR:        %[[ABS:.*]] = math.absf
// MLIR-NEXT:   %[[MAX:.*]] = kfuse.reduce <max> %[[ABS]] dim 1 : f32 -> f32
// MLIR-NEXT:   arith.divf %[[MAX]]
// MLIR-NOT:  kfuse.fused

// One kernel: each lane copies its vectors of the row into shared memory
// (cp.async; it reads back only its own, so no barrier), adds its elements to
// its part of the row's maximum in a first call of the element function, the
// row's lanes combine their parts, and a second call takes the total and
// stores. The launch bounds keep three blocks of eight rows resident.
// CHECK:       1 kernel(s)
// CHECK:       {{^}}kfuse_block_rounded_momentum_multi_element(const {{.*}} &u, float codes_in, float scale_in, float grad_in, float param_in, float row_total0, float &codes_out, float &scale_out, float &param_out, float &row_part0) {
// CHECK:         row_part0 = kfuse_maximumf(row_part0, v{{[0-9]+}});
// CHECK:       __launch_bounds__(256, 3)
// CHECK:       Rows of 256 elements in registers (inputs staged in shared memory): 32 thread(s) a row, 2 vector(s) of 4 a thread, 8 row(s) a block.
// CHECK:       const int kfuse_slot = threadIdx.x / 32;
// CHECK:       const unsigned codes_stage = kfuse_stages + 0u + (kfuse_slot * 64 + kfuse_lane) * 16u;
// CHECK:       for (long long rb = r0 + kfuse_slot; rb < r1; rb += 8) {
// CHECK-NEXT:    const long long r = rb;
// CHECK:           kfuse_stage<kfuse_f32x4>(codes_stage + k * 512u, reinterpret_cast<const kfuse_f32x4 *>(codes) + (kfuse_valid ? r * 64 + k * 32 + kfuse_lane : 0), kfuse_valid);
// CHECK:         kfuse_stage_wait<0>();
// CHECK:         float row_part0 = __int_as_float(0xff800000);
// CHECK:         const kfuse_f32x4 codes_e = kfuse_unstage<kfuse_f32x4>(codes_stage + k * 512u);
// CHECK:         kfuse_block_rounded_momentum_multi_element(u, {{.*}}, 0.0f, {{.*}}, row_part0);
// CHECK:         row_part0 = kfuse_maximumf(row_part0, __shfl_xor_sync(0xffffffffu, row_part0, m));
// CHECK-NEXT:    }
// CHECK-NEXT:    row_total0 = row_part0;
// CHECK:         kfuse_block_rounded_momentum_multi_element(u, {{.*}}, row_total0, {{.*}}, kfuse_unused);
// CHECK:         reinterpret_cast<kfuse_f32x4 *>(codes)[r * 64 + k * 32 + kfuse_lane] = codes_w;
// CHECK:         if (kfuse_lane == 0)
// CHECK-NEXT:      scale[r] = scale_w;
// Unaligned tensors take the same rows one element at a time.
// CHECK:       Rows of 256 elements in registers: 32 thread(s) a row, 8 vector(s) of 1 a thread, 8 row(s) a block.

// The compiler keeps one copy of the math both calls share: one rounding
// per element a lane holds (8), in each of the two loops.
// PTX-COUNT-16: cvt.rni.f32.f32
// PTX-NOT:      cvt.rni.f32.f32

// Ten steps: a code rounded either way at a near tie is left out of the
// comparison, and the run goes on from the reference's code.
// VERIFY: 2-D update 'block_rounded_momentum', 10 steps,
// VERIFY: check: 4 passed, 0 failed
// VERIFY: emit: OK

// A reduction of values that need another row's total: three calls, the
// second taking the first total, the last both.
// VERIFY-TWO: check: 4 passed, 0 failed
// VERIFY-TWO: emit: OK
// TWO:       Rows of 128 elements in registers (inputs staged in shared memory): 32 thread(s) a row, 1 vector(s) of 4 a thread, 8 row(s) a block.
// TWO:       kfuse_row_normalized_multi_element(u, {{.*}}, 0.0f, 0.0f, {{.*}}, row_part0, kfuse_unused);
// TWO:       row_total0 = row_part0;
// TWO:       kfuse_row_normalized_multi_element(u, {{.*}}, row_total0, 0.0f, {{.*}}, kfuse_unused, row_part1);
// TWO:       row_total1 = row_part1;
// TWO:       kfuse_row_normalized_multi_element(u, {{.*}}, row_total0, row_total1, {{.*}}, kfuse_unused, kfuse_unused);

// A row's sum and variance in one stage: each lane's moments of its 24
// elements, merged over the row's lanes (equal counts: Chan's symmetric step).
// VERIFY-VARIANCE: check: 4 passed, 0 failed
// VERIFY-VARIANCE: emit: OK
// VARIANCE:      struct kfuse_moments {
// VARIANCE:      kfuse_row_standardized_multi_element({{.*}}, float &row_part0, kfuse_moments &row_part1) {
// VARIANCE:        kfuse_moments_add(row_part1, grad_in);
// VARIANCE:      Rows of 768 elements in registers (inputs staged in shared memory): 32 thread(s) a row, 6 vector(s) of 4 a thread, 8 row(s) a block.
// VARIANCE:        kfuse_moments row_part1 = {};
// VARIANCE:        kfuse_row_standardized_multi_element(u, {{.*}}, 0.0f, 0.0f, {{.*}}, row_part0, row_part1);
// VARIANCE:        kfuse_moments_done(row_part1, row_part1_n, row_part1_m, row_part1_q);
// VARIANCE:          kfuse_shuffle_equal_moments(row_part1_n, row_part1_m, row_part1_q, m);
// VARIANCE:        row_total1 = row_part1_n > 0.0f ? row_part1_q / row_part1_n : 0.0f;
// VARIANCE:        kfuse_row_standardized_multi_element(u, {{.*}}, row_total0, row_total1, {{.*}}, kfuse_unused, kfuse_unused_moments);

// Rows of 32: a row is 8 threads, a warp 4 rows, the butterfly within the 8.
// SHORT:      Rows of 32 elements in registers (inputs staged in shared memory): 8 thread(s) a row, 1 vector(s) of 4 a thread, 32 row(s) a block.
// SHORT-NEXT: const int kfuse_lane = threadIdx.x % 8;
// SHORT-NEXT: const int kfuse_slot = threadIdx.x / 8;
// SHORT:      for (long long rb = r0 + (kfuse_slot & ~3); rb < r1;
// SHORT-NEXT:      rb += 32) {
// SHORT-NEXT:   const long long r = rb + (kfuse_slot & 3);
// SHORT:      for (int m = 4; m > 0; m >>= 1) {
// SHORT-NEXT:   row_part0 = row_part0 + __shfl_xor_sync(0xffffffffu, row_part0, m);

// Rows of 4096: 128 threads a row (four warps), two rows a block. The warps'
// parts meet in shared memory, in two regions that alternate by row; the
// loop over rows is uniform over the block.
// LONG:      Rows of 4096 elements in registers (inputs staged in shared memory): 128 thread(s) a row, 8 vector(s) of 4 a thread, 2 row(s) a block.
// LONG:      __shared__ float kfuse_row_red[2][32];
// LONG-NEXT: int kfuse_parity = 0;
// LONG-NEXT: for (long long rb = r0; rb < r1; rb += 2) {
// LONG-NEXT:   const long long r = rb + kfuse_slot;
// LONG:      if (kfuse_lane % 32 == 0) {
// LONG-NEXT:   kfuse_row_red[kfuse_parity][(kfuse_slot * 4 + kfuse_lane / 32) * 4 + 0] = row_part0;
// LONG:      __syncthreads();
// LONG:      const float *part = &kfuse_row_red[kfuse_parity][kfuse_slot * 16];
// LONG:      for (int w = 1; w < 4; ++w) {
// LONG-NEXT:   row_part0 = row_part0 + part[w * 4 + 0];
// LONG-NEXT:   kfuse_merge_moments(row_part1_n, row_part1_m, row_part1_q, part[w * 4 + 1], part[w * 4 + 2], part[w * 4 + 3]);
// LONG:      kfuse_parity ^= 1;
// LONG-NEXT: }
// LONG-NEXT: __syncthreads();

// Rows of 1312 (328 vectors): 64 threads of 6 vectors, the slots past the
// row's end idle; the lanes' moments then merge by lane order, not as equal
// counts.
// UNEVEN:      Rows of 1312 elements in registers (inputs staged in shared memory): 64 thread(s) a row, 6 vector(s) of 4 a thread, 4 row(s) a block.
// UNEVEN:        if (k * 64 + kfuse_lane < 328)
// UNEVEN-NEXT:     kfuse_stage<kfuse_f32x4>(grad_stage + k * 1024u, reinterpret_cast<const kfuse_f32x4 *>(grad) + (kfuse_valid ? r * 328 + k * 64 + kfuse_lane : 0), kfuse_valid);
// UNEVEN:        kfuse_shuffle_moments(row_part1_n, row_part1_m, row_part1_q, m, (kfuse_lane & m) != 0);

// Two levels over rows of two warps: a region of scratch per level, no
// parity.
// LEVELS:      Rows of 2048 elements in registers (inputs staged in shared memory): 64 thread(s) a row, 8 vector(s) of 4 a thread, 4 row(s) a block.
// LEVELS:      __shared__ float kfuse_row_red[2][8];
// LEVELS-NOT:  kfuse_parity
// LEVELS:      kfuse_row_red[0][(kfuse_slot * 2 + kfuse_lane / 32) * 1 + 0] = row_part0;
// LEVELS:      kfuse_row_red[1][(kfuse_slot * 2 + kfuse_lane / 32) * 1 + 0] = row_part1;

// Values per column (1 x 768, the same shape in every group) read beside
// rows in registers: a thread loads its columns' vectors, the same in every
// row, where each call reads them (held over the row, they would take the
// registers its elements need).
// COLUMNS:      Rows of 768 elements in registers (inputs staged in shared memory): 32 thread(s) a row, 6 vector(s) of 4 a thread, 8 row(s) a block.
// COLUMNS:      const kfuse_f32x4 gain_e = kfuse_ldcg_vector(reinterpret_cast<const kfuse_f32x4 *>(gain) + k * 32 + kfuse_lane);


// Adafactor with rows of 768: the row sums of g^2 in registers, and in the
// same pass the column sums, each thread adding its columns over the rows
// it holds, the block's row slots in slot order, one partial a chunk; the
// sum of the new row states over the tensor once per row, by its first
// thread.
// ADAFACTOR:      Rows of 768 elements in registers (inputs staged in shared memory): 32 thread(s) a row, 6 vector(s) of 4 a thread, 8 row(s) a block.
// ADAFACTOR:      __shared__ float kfuse_col_red[768];
// ADAFACTOR:      if (kfuse_lane == 0) {
// ADAFACTOR-NEXT:   const int k = 0, j = 0;
// ADAFACTOR:      for (int kfuse_s = 1; kfuse_s < 8; ++kfuse_s) {
// ADAFACTOR:        kfuse_col_red[(k * 32 + kfuse_lane) * 4 + j] = col_acc0[k][j];
// ADAFACTOR:        col_acc0[k][j] = kfuse_sum_op(col_acc0[k][j], kfuse_col_red[(k * 32 + kfuse_lane) * 4 + j]);
// ADAFACTOR:      if (kfuse_slot == 0) {
// ADAFACTOR:        col_partials[(entry->col_partial_base + (c - entry->first_chunk) * cols + (k * 32 + kfuse_lane) * 4 + j) * 1 + 0] = col_acc0[k][j];
