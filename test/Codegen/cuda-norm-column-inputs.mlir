// RUN: env KFUSE_NORM_COLUMNS=registers kfuse compile %s --cols=4096 --input-dtype=bf16 --emit=cuda | FileCheck %s
// RUN: env KFUSE_NORM_COLUMNS=registers kfuse compile %s --cols=4096 --input-dtype=bf16 --emit=cuda --stats -o /dev/null | FileCheck %s --check-prefix=STATS
// RUN: kfuse compile %s --cols=4096 --input-dtype=bf16 --emit=cuda | FileCheck %s --check-prefix=RELOAD
// RUN: kfuse compile %s --cols=4096 --input-dtype=bf16 --emit=cuda --stats -o /dev/null | FileCheck %s --check-prefix=RELOAD-STATS
// RUN: env KFUSE_NORM_COLUMNS=registers kfuse compile %s --cols=1000 --emit=cuda | FileCheck %s --check-prefix=ODD

// Where the weight and bias of a LayerNorm live. By default each phase of
// each row loads the thread's vectors of them where it reads them (RELOAD).
// KFUSE_NORM_COLUMNS=registers has each thread load them once, before the
// row loop (bf16 rows of 4096: 128 threads of 4 vectors, two rows a block),
// and keep them in registers for all its rows.

// CHECK: const unsigned x_stage = kfuse_stages + 0u;
// CHECK-NEXT: kfuse_bf16x8 weight_c[4];
// CHECK-NEXT: kfuse_bf16x8 bias_c[4];
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int i = 0; i < 4; ++i) {
// CHECK-NEXT: const int vec = i * 128 + lane;
// CHECK-NEXT: weight_c[i] = reinterpret_cast<const kfuse_bf16x8 *>(weight)[vec];
// CHECK-NEXT: bias_c[i] = reinterpret_cast<const kfuse_bf16x8 *>(bias)[vec];
// CHECK-NEXT: }
// CHECK-NEXT: for (long long group = blockIdx.x; group * 2 < rows; group += gridDim.x) {
// CHECK: // Outputs.
// CHECK-NOT: reinterpret_cast<const kfuse_bf16x8 *>(weight)
// CHECK: = kfuse_bf16x2_to_f32(weight_c[i].w[j >> 1], j & 1);
// CHECK-NEXT: = kfuse_bf16x2_to_f32(bias_c[i].w[j >> 1], j & 1);

// STATS: "column_inputs_in_registers":true
// RELOAD-STATS: "column_inputs_in_registers":false

// RELOAD-NOT: weight_c[
// RELOAD: // Outputs.
// RELOAD: const kfuse_bf16x8 weight_c = reinterpret_cast<const kfuse_bf16x8 *>(weight)[vec];
// RELOAD-NEXT: const kfuse_bf16x8 bias_c = reinterpret_cast<const kfuse_bf16x8 *>(bias)[vec];

// 250 vectors over 32 threads of 8: the slots past the row load zeros.
// ODD: kfuse_f32x4 weight_c[8];
// ODD-NEXT: kfuse_f32x4 bias_c[8];
// ODD: const int vec = i * 32 + lane;
// ODD-NEXT: weight_c[i] = vec < 250 ? reinterpret_cast<const kfuse_f32x4 *>(weight)[vec] : kfuse_f32x4{};
// ODD-NEXT: bias_c[i] = vec < 250 ? reinterpret_cast<const kfuse_f32x4 *>(bias)[vec] : kfuse_f32x4{};
// ODD: for (long long group = blockIdx.x;
// ODD: = e{{[0-9]+}} * weight_c[i].v[j];
// ODD-NEXT: = e{{[0-9]+}} + bias_c[i].v[j];

func.func @layernorm_fwd(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %weight: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %bias: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "bias"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"},
    %mean: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "mean"},
    %rstd: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "rstd"},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps", kfuse.default = 1.0e-5 : f32})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x?xf32> -> f32
  %sum = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %sum : f32, tensor<?x1xf32>
  %mu = arith.divf %sum, %n_r : tensor<?x1xf32>
  %mu_b = kfuse.broadcast %mu like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %xc = arith.subf %x, %mu_b : tensor<?x?xf32>
  %var = kfuse.reduce <variance> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %eps_r = kfuse.broadcast %eps like %var : f32, tensor<?x1xf32>
  %var_eps = arith.addf %var, %eps_r : tensor<?x1xf32>
  %rs = math.rsqrt %var_eps : tensor<?x1xf32>
  %rs_b = kfuse.broadcast %rs like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %xhat = arith.mulf %xc, %rs_b : tensor<?x?xf32>
  %w_b = kfuse.broadcast %weight like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %b_b = kfuse.broadcast %bias like %x : tensor<1x?xf32>, tensor<?x?xf32>
  %scaled = arith.mulf %xhat, %w_b : tensor<?x?xf32>
  %out = arith.addf %scaled, %b_b : tensor<?x?xf32>
  kfuse.write %out to %y : tensor<?x?xf32>
  kfuse.write %mu to %mean : tensor<?x1xf32>
  kfuse.write %rs to %rstd : tensor<?x1xf32>
  return
}
