// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-schedule-phases))' | FileCheck %s
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-schedule-phases,kfuse-fuse-elementwise))' | FileCheck %s --check-prefix=FUSED
// RUN: kfuse-opt %s --pass-pipeline='builtin.module(func.func(kfuse-schedule-phases{grid-barrier}))' | FileCheck %s --check-prefix=BARRIER

// LAMB's shape: phase 0 computes the moments (stored) and the direction r,
// reduces ||p||^2 and ||r||^2; phase 1 needs r. r is not kept: phase 1
// recomputes it from the stored moments (read back) and p. The op written
// after the reductions that needs none of them moves to phase 0.
// CHECK-LABEL: func.func @trust_ratio
// CHECK-SAME: (%[[P:[^:]*]]: tensor<?xf32> {{.*}}, %[[G:[^:]*]]: tensor<?xf32> {{.*}}, %[[M:[^:]*]]: tensor<?xf32>
// CHECK: %[[NM:.*]] = arith.addf %[[M]], %[[G]] : tensor<?xf32>
// CHECK: %[[R:.*]] = arith.mulf %[[NM]], %[[P]] : tensor<?xf32>
// CHECK: %[[RSQ:.*]] = arith.mulf %[[R]], %[[R]] : tensor<?xf32>
// CHECK: %[[LATE:.*]] = arith.mulf %[[G]], %[[G]] : tensor<?xf32>
// CHECK: kfuse.reduce <sum> %[[RSQ]]
// CHECK: kfuse.reduce <sum> %[[LATE]]
// CHECK: %[[R1:.*]] = arith.mulf %[[NM]], %[[P]] : tensor<?xf32>
// CHECK: arith.mulf %{{.*}}, %[[R1]] : tensor<?xf32>
// CHECK: kfuse.write %{{.*}} to %[[P]]
// CHECK-NEXT: kfuse.write %[[NM]] to %[[M]]

// Two regions: the second reads the stored moment (a result of the first
// that is written) and no temporary of r.
// FUSED: %[[F0:.*]]:3 = kfuse.fused
// FUSED: kfuse.reduce <sum> %[[F0]]#1
// FUSED: kfuse.reduce <sum> %[[F0]]#2
// FUSED: %[[F1:.*]] = kfuse.fused(%[[F0]]#0, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?xf32>, tensor<?xf32>, f32, f32) -> tensor<?xf32>
// FUSED: kfuse.write %[[F1]]
// FUSED: kfuse.write %[[F0]]#0
func.func @trust_ratio(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
    %m: tensor<?xf32> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %m_new = arith.addf %m, %g : tensor<?xf32>
  %r = arith.mulf %m_new, %p : tensor<?xf32>
  %r_sq = arith.mulf %r, %r : tensor<?xf32>
  %norm_sq = kfuse.reduce <sum> %r_sq dim 0 : tensor<?xf32> -> f32
  %g_sq = arith.mulf %g, %g : tensor<?xf32>
  %g_norm_sq = kfuse.reduce <sum> %g_sq dim 0 : tensor<?xf32> -> f32
  %ratio = arith.divf %norm_sq, %g_norm_sq : f32
  %ratio_v = kfuse.broadcast %ratio like %p : f32, tensor<?xf32>
  %delta = arith.mulf %ratio_v, %r : tensor<?xf32>
  %p_new = arith.subf %p, %delta : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  kfuse.write %m_new to %m : tensor<?xf32>
  return
}

// A moment stored as bf16 is read back as stored: the later phase converts
// the written bf16 value, not the f32 one before rounding.
// CHECK-LABEL: func.func @bf16_state
// CHECK: %[[NEW:.*]] = arith.addf
// CHECK: %[[STORED:.*]] = kfuse.convert %[[NEW]] : tensor<?xf32> to tensor<?xbf16>
// CHECK: kfuse.reduce
// CHECK: %[[BACK:.*]] = kfuse.convert %[[STORED]] : tensor<?xbf16> to tensor<?xf32>
// CHECK: arith.mulf %{{.*}}, %[[BACK]]
func.func @bf16_state(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
    %m: tensor<?xbf16> {kfuse.role = #kfuse.role<state>})
    attributes {kfuse.update} {
  %m_f32 = kfuse.convert %m : tensor<?xbf16> to tensor<?xf32>
  %m_new = arith.addf %m_f32, %p : tensor<?xf32>
  %stored = kfuse.convert %m_new : tensor<?xf32> to tensor<?xbf16>
  %sq = arith.mulf %m_new, %m_new : tensor<?xf32>
  %sum = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
  %sum_v = kfuse.broadcast %sum like %p : f32, tensor<?xf32>
  %scaled = arith.mulf %sum_v, %m_new : tensor<?xf32>
  kfuse.write %scaled to %p : tensor<?xf32>
  kfuse.write %stored to %m : tensor<?xbf16>
  return
}

// A reduction whose input is ready in phase 0 but whose result is needed
// only in phase 2 is accumulated in phase 1, which reads the param anyway:
// phase 0 then reads the grad alone (LAMB's ||p|| after a global grad
// norm). With grid-barrier, an update of several phases is marked for one
// cooperative launch.
// FUSED-LABEL: func.func @deferred_norm
// FUSED: kfuse.fused(%arg1) : (tensor<?xf32>) -> tensor<?xf32>
// FUSED: kfuse.reduce <sum> %{{.*}} dim 0 over list
// FUSED: %[[P1:.*]]:2 = kfuse.fused(%arg0, %arg1, %{{.*}})
// FUSED: kfuse.reduce <sum> %[[P1]]#0 dim 0
// FUSED: kfuse.reduce <sum> %[[P1]]#1 dim 0
// BARRIER-LABEL: func.func @deferred_norm
// BARRIER-SAME: attributes {kfuse.grid_barrier, kfuse.update}
// BARRIER-LABEL: func.func @one_phase
// BARRIER-SAME: attributes {kfuse.update}
func.func @deferred_norm(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %g_sq = arith.mulf %g, %g : tensor<?xf32>
  %g_norm_sq = kfuse.reduce <sum> %g_sq dim 0 over list : tensor<?xf32> -> f32
  %p_sq = arith.mulf %p, %p : tensor<?xf32>
  %p_norm_sq = kfuse.reduce <sum> %p_sq dim 0 : tensor<?xf32> -> f32
  %scale = kfuse.broadcast %g_norm_sq like %g : f32, tensor<?xf32>
  %u0 = arith.mulf %g, %scale : tensor<?xf32>
  %u = arith.addf %u0, %p : tensor<?xf32>
  %u_sq = arith.mulf %u, %u : tensor<?xf32>
  %u_norm_sq = kfuse.reduce <sum> %u_sq dim 0 : tensor<?xf32> -> f32
  %ratio = arith.divf %p_norm_sq, %u_norm_sq : f32
  %ratio_v = kfuse.broadcast %ratio like %p : f32, tensor<?xf32>
  %d = arith.mulf %ratio_v, %u : tensor<?xf32>
  %p_new = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}

func.func @one_phase(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %p_new = arith.subf %p, %g : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}

// Scalar math on a reduction reaches its use along 2^40 paths here (each
// value used twice by the next): the phase that needs it is found once per
// value, not once per path.
// CHECK-LABEL: func.func @scalar_ladder
// CHECK: kfuse.reduce <sum>
func.func @scalar_ladder(
    %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"})
    attributes {kfuse.update} {
  %sq = arith.mulf %g, %g : tensor<?xf32>
  %s0 = kfuse.reduce <sum> %sq dim 0 : tensor<?xf32> -> f32
  %s1 = arith.addf %s0, %s0 : f32
  %s2 = arith.addf %s1, %s1 : f32
  %s3 = arith.addf %s2, %s2 : f32
  %s4 = arith.addf %s3, %s3 : f32
  %s5 = arith.addf %s4, %s4 : f32
  %s6 = arith.addf %s5, %s5 : f32
  %s7 = arith.addf %s6, %s6 : f32
  %s8 = arith.addf %s7, %s7 : f32
  %s9 = arith.addf %s8, %s8 : f32
  %s10 = arith.addf %s9, %s9 : f32
  %s11 = arith.addf %s10, %s10 : f32
  %s12 = arith.addf %s11, %s11 : f32
  %s13 = arith.addf %s12, %s12 : f32
  %s14 = arith.addf %s13, %s13 : f32
  %s15 = arith.addf %s14, %s14 : f32
  %s16 = arith.addf %s15, %s15 : f32
  %s17 = arith.addf %s16, %s16 : f32
  %s18 = arith.addf %s17, %s17 : f32
  %s19 = arith.addf %s18, %s18 : f32
  %s20 = arith.addf %s19, %s19 : f32
  %s21 = arith.addf %s20, %s20 : f32
  %s22 = arith.addf %s21, %s21 : f32
  %s23 = arith.addf %s22, %s22 : f32
  %s24 = arith.addf %s23, %s23 : f32
  %s25 = arith.addf %s24, %s24 : f32
  %s26 = arith.addf %s25, %s25 : f32
  %s27 = arith.addf %s26, %s26 : f32
  %s28 = arith.addf %s27, %s27 : f32
  %s29 = arith.addf %s28, %s28 : f32
  %s30 = arith.addf %s29, %s29 : f32
  %s31 = arith.addf %s30, %s30 : f32
  %s32 = arith.addf %s31, %s31 : f32
  %s33 = arith.addf %s32, %s32 : f32
  %s34 = arith.addf %s33, %s33 : f32
  %s35 = arith.addf %s34, %s34 : f32
  %s36 = arith.addf %s35, %s35 : f32
  %s37 = arith.addf %s36, %s36 : f32
  %s38 = arith.addf %s37, %s37 : f32
  %s39 = arith.addf %s38, %s38 : f32
  %s40 = arith.addf %s39, %s39 : f32
  %v = kfuse.broadcast %s40 like %p : f32, tensor<?xf32>
  %d = arith.mulf %v, %g : tensor<?xf32>
  %p_new = arith.subf %p, %d : tensor<?xf32>
  kfuse.write %p_new to %p : tensor<?xf32>
  return
}
