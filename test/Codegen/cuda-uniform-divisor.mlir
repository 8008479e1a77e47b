// RUN: kfuse compile %s --emit=cuda --multi-tensor | FileCheck %s
// RUN: kfuse compile %s --emit=cuda | FileCheck %s --check-prefix=SINGLE

// A multi-tensor kernel divides elements by a uniform value (here a bias
// correction) through its reciprocal, made once per thread in the uniforms
// (kfuse_recip_of), not for every element; a division by an element stays
// kfuse_div_rn. The quotients are the same bit for bit (ExactMathTest).

// CHECK-LABEL: // The multi-tensor kernel of @bias_corrected
// CHECK: struct kfuse_bias_corrected_multi_uniforms {
// CHECK-NEXT: float [[C:v[0-9]+]];
// CHECK-NEXT: kfuse_recip [[C]]_rcp;
// CHECK-NEXT: };
// CHECK: const float [[HAT:v[0-9]+]] = kfuse_div_rn_by(state_in, u.[[C]]_rcp);
// CHECK: kfuse_div_rn(grad_in, [[HAT]])
// CHECK: const kfuse_bias_corrected_multi_uniforms u = {(float)[[C]], kfuse_recip_of((float)[[C]])};

// A single-tensor kernel's uniforms may be computed on the host as f32
// fields: it divides with kfuse_div_rn.
// SINGLE-LABEL: // Kernel 0 of @bias_corrected
// SINGLE-NOT: kfuse_recip
// SINGLE: kfuse_div_rn(state_in,
// SINGLE-NOT: kfuse_recip
func.func @bias_corrected(
    %param: f32 {kfuse.role = #kfuse.role<param>, kfuse.name = "param"},
    %grad: f32 {kfuse.role = #kfuse.role<grad>, kfuse.name = "grad"},
    %state: f32 {kfuse.role = #kfuse.role<state>, kfuse.name = "state"},
    %beta: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "beta", kfuse.default = 0.9 : f32},
    %step: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.name = "step", kfuse.default = 1.0 : f32})
    attributes {kfuse.update} {
  %one = arith.constant 1.0 : f32
  %power = math.powf %beta, %step : f32
  %correction = arith.subf %one, %power : f32
  %hat = arith.divf %state, %correction : f32
  %ratio = arith.divf %grad, %hat : f32
  %p_new = arith.subf %param, %ratio : f32
  kfuse.write %p_new to %param : f32
  return
}
