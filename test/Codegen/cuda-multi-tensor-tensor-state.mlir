// RUN: kfuse compile %s --emit=cuda --separate-phases | FileCheck %s
// RUN: kfuse compile %s --emit=ptx --codegen=cuda --arch=sm_80 --separate-phases | FileCheck %s --check-prefix=PTX
// RUN: kfuse compile %s --emit=ptx --codegen=cuda --arch=sm_90 | FileCheck %s --check-prefix=PTX
// RUN: kfuse compile %s --emit=cuda -o %t.cu --stats | FileCheck %s --check-prefix=STATS

// A state at the tensor level (NovoGrad's running norm): one f32 per tensor,
// at its own pointer of each table entry. Phase 1 reads the old value once
// per chunk (through L2) and computes the new one from it and the tensor's
// total; every chunk uses it, and the last block to finish the tensor's
// chunks in that phase, when all of them have read the old value, stores
// it. It moves no bytes per element.

// CHECK-LABEL: // Reduction phase 1 of the multi-tensor kernels of @running_norm
// CHECK: kfuse_running_norm_phase1(const kfuse_entry *__restrict__ entries,
// CHECK: const double beta = hypers[3];
// CHECK: const float [[TOTAL:total[0-9]+]] = __ldcg(&totals[(chunk.entry + 1) * 1 + 0]);
// CHECK-NEXT: const float [[OLD:v]] = __ldcg(reinterpret_cast<const float *>(entry->pointers[2]));
// CHECK: const double [[NEW:s[0-9]+]] = s{{[0-9]+}} + s{{[0-9]+}};
// CHECK: if (kfuse_last_of_tensor) {
// CHECK-NEXT: __threadfence();
// CHECK-NEXT: if (threadIdx.x == 0)
// CHECK-NEXT: *reinterpret_cast<float *>(entry->pointers[2]) = (float)[[NEW]];
// CHECK-NEXT: if (threadIdx.x == 0)
// CHECK-NEXT: arrivals[chunk.entry + 1] = 0;

// PTX: .entry

// g read twice, p read and written, v not counted: 16 bytes per element.
// STATS: "bytes_per_element":16
func.func @running_norm(
    %p: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},
    %g: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "g"},
    %v: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "v", kfuse.level = #kfuse.level<tensor>},
    %beta: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta", kfuse.default = 0.9 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %g_sq = arith.mulf %g, %g : f32
  %n_sq = kfuse.reduce <sum> %g_sq dim 0 : f32 -> f32
  %n = math.sqrt %n_sq : f32
  %keep = arith.mulf %beta, %v : f32
  %rest = arith.subf %one, %beta : f32
  %add = arith.mulf %rest, %n : f32
  %v_new = arith.addf %keep, %add : f32
  %step = arith.divf %g, %v_new : f32
  %p_new = arith.subf %p, %step : f32
  kfuse.write %p_new to %p : f32
  kfuse.write %v_new to %v : f32
  return
}
