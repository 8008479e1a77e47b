// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=4096 arg-dtypes=bf16,f32,bf16,bf16,f32,f32},canonicalize))' | FileCheck %s --check-prefix=BF16
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=1000},canonicalize))' | FileCheck %s --check-prefix=F32
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=1001 arg-dtypes=f16,f16,f16,f16,f32,f32}))' | FileCheck %s --check-prefix=ODD
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=4096 alignment=8}))' | FileCheck %s --check-prefix=ALIGN8
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{cols=1},canonicalize))' | FileCheck %s --check-prefix=ONE

// bf16 full tensors and bias, an f32 weight, 4096 columns: every column
// extent static, a convert after each 16-bit read and before each 16-bit
// write, dim_size folded to 4096, 8 bf16 per 16-byte vector.
// BF16-LABEL: func.func @layernorm_fwd
// BF16-SAME: (%[[X:.*]]: tensor<?x4096xbf16> {{.*}}, %[[W:.*]]: tensor<1x4096xf32> {{.*}}, %[[B:.*]]: tensor<1x4096xbf16> {{.*}}, %[[Y:.*]]: tensor<?x4096xbf16> {{.*}}, %[[MEAN:.*]]: tensor<?x1xf32> {{.*}}, %[[RSTD:.*]]: tensor<?x1xf32> {{.*}}, %[[EPS:.*]]: f32
// BF16-SAME: kfuse.alignment = 16 : i64, kfuse.norm, kfuse.vector_width = 8 : i64
// BF16-DAG: %[[N:.*]] = arith.constant 4.096000e+03 : f32
// BF16-DAG: %[[XC:.*]] = kfuse.convert %[[X]] : tensor<?x4096xbf16> to tensor<?x4096xf32>
// BF16-DAG: %[[BC:.*]] = kfuse.convert %[[B]] : tensor<1x4096xbf16> to tensor<1x4096xf32>
// BF16-NOT: kfuse.dim_size
// BF16: %[[SUM:.*]] = kfuse.reduce <sum> %[[XC]] dim 1 : tensor<?x4096xf32> -> tensor<?x1xf32>
// BF16: kfuse.broadcast %[[N]] like %[[SUM]] : f32, tensor<?x1xf32>
// BF16: kfuse.broadcast %[[W]] like %[[XC]] : tensor<1x4096xf32>, tensor<?x4096xf32>
// BF16: kfuse.broadcast %[[BC]] like %[[XC]] : tensor<1x4096xf32>, tensor<?x4096xf32>
// BF16: %[[OUT:.*]] = arith.addf {{.*}} : tensor<?x4096xf32>
// BF16: %[[STORE:.*]] = kfuse.convert %[[OUT]] : tensor<?x4096xf32> to tensor<?x4096xbf16>
// BF16: kfuse.write %[[STORE]] to %[[Y]] : tensor<?x4096xbf16>
// BF16: kfuse.write {{.*}} to %[[MEAN]] : tensor<?x1xf32>
// BF16-NOT: kfuse.convert

// No dtypes: all f32, nothing converted; 1000 f32 columns start rows on 16
// bytes.
// F32-LABEL: func.func @layernorm_fwd
// F32-SAME: tensor<?x1000xf32>
// F32-SAME: tensor<1x1000xf32>
// F32-SAME: kfuse.vector_width = 4 : i64
// F32-NOT: kfuse.convert
// F32: arith.constant 1.000000e+03 : f32
// F32-NOT: kfuse.dim_size

// 1001 f16 columns: rows start on odd 2-byte offsets, one element per access.
// ODD-LABEL: func.func @layernorm_fwd
// ODD-SAME: tensor<?x1001xf16>
// ODD-SAME: kfuse.vector_width = 1 : i64

// Pointers aligned to 8 bytes only: scalar accesses.
// ALIGN8-LABEL: func.func @layernorm_fwd
// ALIGN8-SAME: kfuse.alignment = 8 : i64, kfuse.norm, kfuse.vector_width = 1 : i64

// One column: a static 1 would make full tensors look per-row, so the column
// extent stays dynamic (the code generator takes it from its options).
// ONE-LABEL: func.func @layernorm_fwd
// ONE-SAME: tensor<?x?xf32>
// ONE-SAME: tensor<1x?xf32>
// ONE-SAME: kfuse.vector_width = 1 : i64
// ONE: kfuse.dim_size

func.func @layernorm_fwd(
    %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %weight: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "weight"},
    %bias: tensor<1x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "bias"},
    %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"},
    %mean: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "mean"},
    %rstd: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "rstd"},
    %eps: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "eps"})
    attributes {kfuse.norm} {
  %n = kfuse.dim_size %x dim 1 : tensor<?x?xf32> -> f32
  %sum = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %n_r = kfuse.broadcast %n like %sum : f32, tensor<?x1xf32>
  %mu = arith.divf %sum, %n_r : tensor<?x1xf32>
  %mu_b = kfuse.broadcast %mu like %x : tensor<?x1xf32>, tensor<?x?xf32>
  %xc = arith.subf %x, %mu_b : tensor<?x?xf32>
  %xc_sq = arith.mulf %xc, %xc : tensor<?x?xf32>
  %ssq = kfuse.reduce <sum> %xc_sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %var = arith.divf %ssq, %n_r : tensor<?x1xf32>
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
