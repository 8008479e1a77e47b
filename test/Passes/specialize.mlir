// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{param-dtype=bf16 state-dtype=f32 numel=1000}))' | FileCheck %s --check-prefix=BF16
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize))' | FileCheck %s --check-prefix=F32
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{param-dtype=f16 grad-dtype=f32 alignment=4 numel=4294967296}))' | FileCheck %s --check-prefix=F16
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-specialize{arg-dtypes=f32,bf16,f16 param-dtype=f16}))' | FileCheck %s --check-prefix=ARGS

// bf16 params and grads, f32 states, 1000 elements: every shape static,
// converts after reads and before writes, 16-byte vectors of 8 elements.
// BF16-LABEL: func.func @sgd_momentum
// BF16-SAME: (%[[P:.*]]: tensor<1000xbf16> {{.*}}, %[[G:.*]]: tensor<1000xbf16> {{.*}}, %[[M:.*]]: tensor<1000xf32> {{.*}}, %[[LR:.*]]: f32
// BF16-SAME: kfuse.alignment = 16 : i64, kfuse.index_bits = 32 : i64, kfuse.update, kfuse.vector_width = 8 : i64
// BF16-DAG: %[[PC:.*]] = kfuse.convert %[[P]] : tensor<1000xbf16> to tensor<1000xf32>
// BF16-DAG: %[[GC:.*]] = kfuse.convert %[[G]] : tensor<1000xbf16> to tensor<1000xf32>
// BF16: kfuse.broadcast %[[LR]] like %[[PC]] : f32, tensor<1000xf32>
// BF16: %[[NEWM:.*]] = arith.addf {{.*}} : tensor<1000xf32>
// BF16: %[[NEWP:.*]] = arith.subf %[[PC]], {{.*}} : tensor<1000xf32>
// BF16: %[[STORE:.*]] = kfuse.convert %[[NEWP]] : tensor<1000xf32> to tensor<1000xbf16>
// BF16: kfuse.write %[[STORE]] to %[[P]] : tensor<1000xbf16>
// BF16: kfuse.write %[[NEWM]] to %[[M]] : tensor<1000xf32>

// All f32 and no element count: nothing to convert, shapes stay dynamic,
// 64-bit indexing, 4 f32 per 16-byte vector.
// F32-LABEL: func.func @sgd_momentum
// F32-SAME: tensor<?xf32>
// F32-SAME: kfuse.index_bits = 64 : i64, kfuse.update, kfuse.vector_width = 4 : i64
// F32-NOT: kfuse.convert

// f16 params, f32 grads and states, 4-byte alignment, 2^32 elements: one
// element per thread and iteration, 64-bit indices.
// F16-LABEL: func.func @sgd_momentum
// F16-SAME: tensor<4294967296xf16>
// F16-SAME: tensor<4294967296xf32>
// F16-SAME: kfuse.alignment = 4 : i64, kfuse.index_bits = 64 : i64, kfuse.update, kfuse.vector_width = 1 : i64

// A dtype per tensor argument (arg-dtypes wins over the role shorthands):
// f32 params, bf16 grads, an f16 state; 16-byte vectors of 2-byte elements.
// ARGS-LABEL: func.func @sgd_momentum
// ARGS-SAME: (%[[P:.*]]: tensor<?xf32> {{.*}}, %[[G:.*]]: tensor<?xbf16> {{.*}}, %[[M:.*]]: tensor<?xf16> {{.*}}, %{{.*}}: f32
// ARGS-SAME: kfuse.vector_width = 8 : i64
// ARGS-NOT: kfuse.convert %[[P]]
// ARGS-DAG: kfuse.convert %[[G]] : tensor<?xbf16> to tensor<?xf32>
// ARGS-DAG: %[[MC:.*]] = kfuse.convert %[[M]] : tensor<?xf16> to tensor<?xf32>
// ARGS: %[[STORE:.*]] = kfuse.convert %{{.*}} : tensor<?xf32> to tensor<?xf16>
// ARGS: kfuse.write %[[STORE]] to %[[M]] : tensor<?xf16>

func.func @sgd_momentum(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
    %m: tensor<?xf32> {kfuse.role = #kfuse.role<state>},
    %lr: f32 {kfuse.role = #kfuse.role<hyper>},
    %mu: f32 {kfuse.role = #kfuse.role<hyper>})
    attributes {kfuse.update} {
  %muv = kfuse.broadcast %mu like %p : f32, tensor<?xf32>
  %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
  %mm = arith.mulf %m, %muv : tensor<?xf32>
  %nm = arith.addf %mm, %g : tensor<?xf32>
  %d = arith.mulf %lrv, %nm : tensor<?xf32>
  %np = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %np to %p : tensor<?xf32>
  kfuse.write %nm to %m : tensor<?xf32>
  return
}

// Functions that are neither updates nor norms are left alone.
// F32-LABEL: func.func @not_an_update
// F32-NOT: kfuse.vector_width
func.func @not_an_update(%x: tensor<?xf32>) {
  return
}
