// RUN: kfuse-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{argument #0 with role 'grad' must be a 1-D or 2-D tensor of floats, got 'f32'}}
func.func @scalar_grad(%g: f32 {kfuse.role = #kfuse.role<grad>}) {
  return
}

// -----

// expected-error @+1 {{argument #0 with role 'hyper' must be a float scalar, got 'tensor<4xf32>'}}
func.func @tensor_hyper(%h: tensor<4xf32> {kfuse.role = #kfuse.role<hyper>}) {
  return
}

// -----

// expected-error @+1 {{argument #0 'kfuse.role' must be a #kfuse.role attribute, got "param"}}
func.func @string_role(%p: tensor<4xf32> {kfuse.role = "param"}) {
  return
}

// -----

// expected-error @+1 {{argument #0 has a default but only 'hyper' arguments take defaults}}
func.func @default_on_tensor(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>, kfuse.default = 1.0 : f32}) {
  return
}

// -----

// expected-error @+1 {{argument #1 of type 'tensor<8xf32>' does not have the shape of argument #0 ('tensor<4xf32>'); every tensor of an update has one shape}}
func.func @shape_mismatch(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                          %g: tensor<8xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{argument #1 has no kfuse.role}}
func.func @missing_role(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                        %g: tensor<4xf32>)
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{param argument #0 ('param') is never written}}
func.func @unwritten_param(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "param"})
    attributes {kfuse.update} {
  return
}

// -----

// expected-error @+1 {{an update needs at least one 'param' or 'output' argument}}
func.func @no_param(%g: tensor<4xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  return
}

// -----

// expected-error @+1 {{an update returns no values; write params and states with kfuse.write}}
func.func @returns(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>}) -> tensor<4xf32>
    attributes {kfuse.update} {
  return %p : tensor<4xf32>
}

// -----

// expected-error @+1 {{'kfuse.update' may only be attached to a func.func}}
module attributes {kfuse.update} {
}

// -----

func.func @write_grad(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                      %g: tensor<4xf32> {kfuse.role = #kfuse.role<grad>})
    attributes {kfuse.update} {
  kfuse.write %g to %p : tensor<4xf32>
  // expected-error @+1 {{target argument #1 has role 'grad'; only 'param', 'state', 'model' and 'output' arguments are written}}
  kfuse.write %p to %g : tensor<4xf32>
  return
}

// -----

// A state written but not declared: the target has no role.
func.func @undeclared_state(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>},
                            %s: tensor<4xf32>) {
  // expected-error @+1 {{target argument #1 has no kfuse.role; declare it as a 'state' to write it}}
  kfuse.write %p to %s : tensor<4xf32>
  return
}

// -----

func.func @write_non_argument(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>}) {
  %n = arith.addf %p, %p : tensor<4xf32>
  // expected-error @+1 {{target must be an argument of the enclosing function}}
  kfuse.write %p to %n : tensor<4xf32>
  return
}

// -----

func.func @write_twice(%p: tensor<4xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update} {
  // expected-note @+1 {{first written here}}
  kfuse.write %p to %p : tensor<4xf32>
  // expected-error @+1 {{writes argument #0 a second time}}
  kfuse.write %p to %p : tensor<4xf32>
  return
}

// -----

func.func @write_type(%p: tensor<4xbf16> {kfuse.role = #kfuse.role<param>}, %v: tensor<4xf32>) {
  // expected-error @+1 {{all of {value, target} have same type}}
  "kfuse.write"(%v, %p) : (tensor<4xf32>, tensor<4xbf16>) -> ()
  return
}

// -----

func.func @convert_rank(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %c = "kfuse.convert"(%x) : (tensor<4xf32>) -> bf16
  return
}

// -----

func.func @fused_arg_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{body argument #0 has type 'bf16' but input #0 needs 'f32'}}
  %r = kfuse.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%e: bf16):
    %c = kfuse.convert %e : bf16 to f32
    kfuse.yield %c : f32
  }
  return
}

// -----

func.func @fused_shapes(%x: tensor<4xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{input #1 of type 'tensor<8xf32>' does not have the shape of the first tensor}}
  %r = kfuse.fused(%x, %y) : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    kfuse.yield %a : f32
  }
  return
}

// -----

func.func @fused_ranks(%x: tensor<?x?xf32>, %y: tensor<?xf32>) {
  // expected-error @+1 {{input #1 of type 'tensor<?xf32>' does not have the shape of the first tensor}}
  %r = kfuse.fused(%x, %y) : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32> {
  ^bb0(%a: f32, %b: f32):
    kfuse.yield %a : f32
  }
  return
}

// -----

func.func @fused_rows(%x: tensor<4x?xf32>, %r: tensor<8x1xf32>) {
  // expected-error @+1 {{input #1 of type 'tensor<8x1xf32>' does not have the shape of the first tensor}}
  %y = kfuse.fused(%x, %r) : (tensor<4x?xf32>, tensor<8x1xf32>) -> tensor<4x?xf32> {
  ^bb0(%a: f32, %b: f32):
    kfuse.yield %a : f32
  }
  return
}

// -----

func.func @fused_yield_type(%x: tensor<4xf32>) {
  %r = kfuse.fused(%x) : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: f32):
    // expected-error @+1 {{'kfuse.yield' op operand #0 has type 'f32' but result #0 has element type 'bf16'}}
    kfuse.yield %a : f32
  }
  return
}

// -----

func.func @fused_yield_count(%x: tensor<4xf32>) {
  %r = kfuse.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32):
    // expected-error @+1 {{yields 2 values but the fused op has 1 results}}
    kfuse.yield %a, %a : f32, f32
  }
  return
}

// -----

func.func @fused_tensor_body(%x: tensor<4xf32>, %t: tensor<4xf32>) {
  %r = kfuse.fused(%x, %t) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    // expected-error @+1 {{'arith.constant' op has a value of type 'tensor<4xf32>' in a kfuse.fused body, which is scalar}}
    %z = arith.constant dense<0.0> : tensor<4xf32>
    kfuse.yield %a : f32
  }
  return
}

// -----

func.func @fused_no_tensor(%s: f32) {
  // expected-error @+1 {{needs at least one tensor input or result to define its elements}}
  kfuse.fused(%s) : (f32) -> () {
  ^bb0(%a: f32):
    kfuse.yield
  }
  return
}

// -----

func.func @yield_outside(%x: f32) {
  // expected-error @+1 {{expects parent op 'kfuse.fused'}}
  kfuse.yield %x : f32
}

// -----

// expected-error @+1 {{'kfuse.index_bits' must be 32 or 64, got 16}}
func.func @index_bits() attributes {kfuse.index_bits = 16 : i64} {
  return
}

// -----

// expected-error @+1 {{'kfuse.vector_width' must be a positive power of two}}
func.func @vector_width() attributes {kfuse.vector_width = 3 : i64} {
  return
}

// -----

// expected-error @+1 {{'kfuse.numel_multiple' must be a positive power of two}}
func.func @numel_multiple() attributes {kfuse.numel_multiple = 12 : i64} {
  return
}

// -----

// expected-error @+1 {{unknown kfuse attribute 'kfuse.fast'}}
func.func @unknown_attr() attributes {kfuse.fast} {
  return
}

// -----

// expected-error @+1 {{'kfuse.found_inf' needs a hyper argument named 'inv_scale'}}
func.func @found_inf_without_scale(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>})
    attributes {kfuse.update, kfuse.found_inf} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{'kfuse.multi_tensor' must be a unit attribute on an update}}
func.func @multi_not_update() attributes {kfuse.multi_tensor} {
  return
}

// -----

// expected-error @+1 {{model argument #1 ('copy') is never written}}
func.func @unwritten_model(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                           %c: tensor<?xf32> {kfuse.role = #kfuse.role<model>, kfuse.name = "copy"})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

func.func @read_model(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                      %c: tensor<?xf32> {kfuse.role = #kfuse.role<model>})
    attributes {kfuse.update} {
  // expected-error @+1 {{'arith.addf' op reads model argument #1, which is written only}}
  %s = arith.addf %p, %c : tensor<?xf32>
  kfuse.write %s to %p : tensor<?xf32>
  kfuse.write %p to %c : tensor<?xf32>
  return
}

// -----

// An update reduces a 1-D tensor to a scalar, not to a tensor.
func.func @reduce_rank(%x: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  // expected-error @+1 {{'kfuse.reduce' op result type 'tensor<1xf32>' must be the input's element type 'f32'}}
  %s = kfuse.reduce <sum> %x dim 0 : tensor<?xf32> -> tensor<1xf32>
  kfuse.write %x to %x : tensor<?xf32>
  return
}

// -----

func.func @reduce_tensor_dim(%x: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  // expected-error @+1 {{'kfuse.reduce' op dim must be 0 for a 1-D tensor or an element, got 1}}
  %s = kfuse.reduce <sum> %x dim 1 : tensor<?xf32> -> f32
  kfuse.write %x to %x : tensor<?xf32>
  return
}

// -----

func.func @reduce_scalar_in_tensor_form(%x: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %lr: f32 {kfuse.role = #kfuse.role<hyper>}) attributes {kfuse.update} {
  // expected-error @+1 {{'kfuse.reduce' op reduces a scalar outside an element-form update}}
  %s = kfuse.reduce <sum> %lr dim 0 : f32 -> f32
  kfuse.write %x to %x : tensor<?xf32>
  return
}

// -----

func.func @reduce_to_scalar_outside_update(%v: tensor<?xf32>) {
  // expected-error @+1 {{'kfuse.reduce' op reduces a 'tensor<?xf32>' to a scalar, which only an update does}}
  %s = kfuse.reduce <max> %v dim 0 : tensor<?xf32> -> f32
  return
}

// -----

func.func @reduce_dim(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                      %y: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  // expected-error @+1 {{'kfuse.reduce' op dim must be 0 (over rows) or 1 (over columns), got 2}}
  %s = kfuse.reduce <sum> %x dim 2 : tensor<?x?xf32> -> tensor<?x1xf32>
  kfuse.write %s to %y : tensor<?x1xf32>
  return
}

// -----

func.func @reduce_shape(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                        %y: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  // expected-error @+1 {{'kfuse.reduce' op result type 'tensor<1x?xf32>' must keep the input's shape with dimension 1 of extent 1: expected 'tensor<?x1xf32>'}}
  %s = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<1x?xf32>
  %t = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  kfuse.write %t to %y : tensor<?x1xf32>
  return
}

// -----

func.func @reduce_type(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                       %y: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  // expected-error @+1 {{'kfuse.reduce' op result element type 'f16' differs from the input's 'f32'}}
  %s = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf16>
  %t = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  kfuse.write %t to %y : tensor<?x1xf32>
  return
}

// -----

func.func @broadcast_extent(%x: tensor<?x?xf32>, %v: tensor<?x4xf32>) {
  // expected-error @+1 {{'kfuse.broadcast' op dimension 1 of the value has extent 4; a broadcast dimension must be 1 or match the target's (?)}}
  %b = kfuse.broadcast %v like %x : tensor<?x4xf32>, tensor<?x?xf32>
  return
}

// -----

func.func @broadcast_rank(%x: tensor<?x?xf32>, %v: tensor<?xf32>) {
  // expected-error @+1 {{'kfuse.broadcast' op value of rank 1 cannot be broadcast like a tensor of rank 2}}
  %b = kfuse.broadcast %v like %x : tensor<?xf32>, tensor<?x?xf32>
  return
}

// -----

func.func @dim_size_range(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                          %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  // expected-error @+1 {{'kfuse.dim_size' op dim 2 is out of range for a tensor of rank 2}}
  %n = kfuse.dim_size %x dim 2 : tensor<?x?xf32> -> f32
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}

// -----

// expected-error @+1 {{argument #0 with role 'input' must be a 2-D tensor of floats, got 'tensor<?xf32>'}}
func.func @input_rank(%x: tensor<?xf32> {kfuse.role = #kfuse.role<input>}) {
  return
}

// -----

// expected-error @+1 {{argument #1 has role 'param'; a norm takes 'input', 'output' and 'hyper' arguments}}
func.func @norm_param(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                      %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.norm} {
  return
}

// -----

// expected-error @+1 {{argument #1 of type 'tensor<?x8xf32>' disagrees with the other arguments on dimension 1; each dimension is 1 or the common extent}}
func.func @norm_extents(%x: tensor<?x4xf32> {kfuse.role = #kfuse.role<input>},
                        %y: tensor<?x8xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  return
}

// -----

// expected-error @+1 {{a norm needs a tensor argument with a full (rows x columns) shape}}
func.func @norm_no_full(%x: tensor<?x1xf32> {kfuse.role = #kfuse.role<input>},
                        %y: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  kfuse.write %x to %y : tensor<?x1xf32>
  return
}

// -----

// expected-error @+1 {{output argument #1 ('y') is never written}}
func.func @norm_unwritten(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                          %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "y"}) attributes {kfuse.norm} {
  return
}

// -----

func.func @norm_reads_output(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                             %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  // expected-error @+1 {{'arith.addf' op reads output argument #1, which is written only}}
  %s = arith.addf %x, %y : tensor<?x?xf32>
  kfuse.write %s to %y : tensor<?x?xf32>
  return
}

// -----

func.func @norm_writes_input(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                             %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  // expected-error @+1 {{'kfuse.write' op target argument #0 has role 'input'; a norm writes only 'output' arguments}}
  kfuse.write %x to %x : tensor<?x?xf32>
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}

// -----

// expected-error @+1 {{a function is an update or a norm, not both}}
func.func @both(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update, kfuse.norm} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

func.func @reduce_kind(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>},
                       %m: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} {
  // expected-error @+2 {{expected ::kfuse::ReduceKind to be one of: sum, max, variance, mean}}
  // expected-error @+1 {{failed to parse KFuse_ReduceKindAttr parameter 'value'}}
  %s = kfuse.reduce <median> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  kfuse.write %s to %m : tensor<?x1xf32>
  return
}

// -----

// The whole-function rules of an update and of a norm check each argument's
// type before they read its shape: MLIR verifies kfuse.update and kfuse.norm
// before the argument attributes.

// expected-error @+1 {{argument #1 is a scalar and argument #0 a tensor; an update's params, grads, states and models are all tensors, or all scalars (element form)}}
func.func @update_mixed_forms(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %g: f32 {kfuse.role = #kfuse.role<grad>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{argument #1 with role 'grad' must be a 1-D or 2-D tensor of floats, or a float scalar in element form, got 'i32'}}
func.func @update_integer_grad(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %g: i32 {kfuse.role = #kfuse.role<grad>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{argument #0 with role 'param' must be a 1-D or 2-D tensor of floats, or a float scalar in element form, got 'index'}}
func.func @update_index_param(%p: index {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  return
}

// -----

// expected-error @+1 {{argument #0 with role 'state' must be a 1-D or 2-D tensor of floats, or a float scalar in element form, got 'none'}}
func.func @update_none_state(%s: none {kfuse.role = #kfuse.role<state>}, %p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{argument #0 with role 'param' must be a 1-D or 2-D tensor of floats, or a float scalar in element form, got 'complex<f32>'}}
func.func @update_complex_param(%p: complex<f32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  return
}

// -----

// expected-error @+1 {{argument #1 with role 'state' must be a 1-D or 2-D tensor of floats, or a float scalar in element form, got 'tensor<*xf32>'}}
func.func @update_unranked_state(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %s: tensor<*xf32> {kfuse.role = #kfuse.role<state>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{argument #1 with role 'hyper' must be a float scalar, got 'i64'}}
func.func @update_integer_hyper(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %lr: i64 {kfuse.role = #kfuse.role<hyper>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// An update's inputs and outputs follow its rank.
// expected-error @+1 {{argument #1 of type 'tensor<?x?xf32>' and argument #0 of type 'tensor<?xf32>' differ in rank; an update's tensors are all 1-D or all 2-D}}
func.func @update_norm_role(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{argument #0 with role 'input' must be a 2-D tensor of floats, got 'tensor<f32>'}}
func.func @norm_rank0_input(%x: tensor<f32> {kfuse.role = #kfuse.role<input>}) attributes {kfuse.norm} { return }

// -----

// expected-error @+1 {{argument #0 with role 'output' must be a 2-D tensor of floats, got 'f32'}}
func.func @norm_scalar_output(%y: f32 {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} { return }

// -----

// expected-error @+1 {{argument #1 with role 'hyper' must be a float scalar, got 'tensor<?x?xf32>'}}
func.func @norm_tensor_hyper(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>}, %eps: tensor<?x?xf32> {kfuse.role = #kfuse.role<hyper>}) attributes {kfuse.norm} { return }

// -----

// A default past the range of its type parses as infinity.
// expected-error @+1 {{argument #1 'kfuse.default' must be finite, got INF (a 'f32' literal past its range reads as infinity)}}
func.func @default_overflows(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.default = 1.0e39 : f32}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{argument #1 'kfuse.default' 1.000000e+39 is out of the range of 'f32'}}
func.func @default_out_of_range(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>}, %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.default = 1.0e39 : f64}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// A mean over the list is not generated; its sum is.
func.func @mean_over_list(%x: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  // expected-error @+1 {{'kfuse.reduce' op takes the mean over the list, which is not generated; reduce the sum over the list}}
  %s = kfuse.reduce <mean> %x dim 0 over list : tensor<?xf32> -> f32
  kfuse.write %x to %x : tensor<?xf32>
  return
}

// -----

func.func @mean_of_rows(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{'kfuse.reduce' op takes a mean over the rows or columns of a 'tensor<?x?xf32>'; divide the sum by kfuse.dim_size instead}}
  %m = kfuse.reduce <mean> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  return
}

// -----

func.func @rows_over_list(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{'kfuse.reduce' op reduces a 'tensor<?x?xf32>' over the list; only a 1-D tensor or an element reduces over a parameter list}}
  %m = kfuse.reduce <sum> %x dim 1 over list : tensor<?x?xf32> -> tensor<?x1xf32>
  return
}

// -----

func.func @named_reduce_per_tensor(%x: tensor<?xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  // expected-error @+1 {{'kfuse.reduce' op 'kfuse.name' names an argument, or a kfuse.reduce over the list with a string}}
  %s = kfuse.reduce <sum> %x dim 0 {kfuse.name = "norm"} : tensor<?xf32> -> f32
  kfuse.write %x to %x : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1 at the tensor level must be an f32 'state' of an update, got role 'hyper' and type 'f32'}}
func.func @level_on_hyper(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                          %lr: f32 {kfuse.role = #kfuse.role<hyper>, kfuse.level = #kfuse.level<tensor>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1 at the tensor level must be an f32 'state' of an update, got role 'state' and type 'tensor<?xf32>'}}
func.func @level_on_tensor(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                           %v: tensor<?xf32> {kfuse.role = #kfuse.role<state>, kfuse.level = #kfuse.level<tensor>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1 at the tensor level must be an f32 'state' of an update, got role 'state' and type 'bf16'}}
func.func @level_bf16(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                      %v: bf16 {kfuse.role = #kfuse.role<state>, kfuse.level = #kfuse.level<tensor>})
    attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 at the tensor level must be an f32 'state' of an update, got role 'input' and type 'tensor<?x?xf32>'}}
func.func @level_on_norm(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.level = #kfuse.level<tensor>},
                         %y: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>})
    attributes {kfuse.norm} {
  kfuse.write %x to %y : tensor<?x?xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #1 'kfuse.level' must be a #kfuse.level attribute, got "tensor"}}
func.func @level_string(%p: f32 {kfuse.role = #kfuse.role<param>},
                        %v: f32 {kfuse.role = #kfuse.role<state>, kfuse.level = "tensor"})
    attributes {kfuse.update} {
  kfuse.write %p to %p : f32
  return
}

// -----

// 2-D updates: params as matrices, states per element, row or column.

// expected-error @+1 {{argument #1 of type 'tensor<?xf32>' and argument #0 of type 'tensor<?x?xf32>' differ in rank; an update's tensors are all 1-D or all 2-D}}
func.func @matrix_update_mixed_rank(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>}, %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?x?xf32>
  return
}

// -----

// expected-error @+1 {{state argument #1 ('row_var') of type 'tensor<?x2xf32>' fits no level of the params' 'tensor<?x?xf32>': a state is per element (the same shape), per row (rows x 1) or per column (1 x columns)}}
func.func @matrix_update_state_level(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>}, %v: tensor<?x2xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "row_var"}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?x?xf32>
  return
}

// -----

// expected-error @+1 {{argument #1 of type 'tensor<?x1xf32>' does not have the shape of argument #0 ('tensor<?x?xf32>'); every tensor of an update has one shape, but for a 2-D update's states per row or column}}
func.func @matrix_update_grad_per_row(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>}, %g: tensor<?x1xf32> {kfuse.role = #kfuse.role<grad>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?x?xf32>
  return
}

// -----

// expected-error @+1 {{argument #0 of type 'tensor<?x1xf32>' has an extent of 1; a 2-D update's params are rows x columns with neither fixed to 1}}
func.func @matrix_update_column_param(%p: tensor<?x1xf32> {kfuse.role = #kfuse.role<param>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?x1xf32>
  return
}

// -----

// expected-error @+1 {{state argument #1 ('col_var') of type 'tensor<1x8xf32>' fits no level of the params' 'tensor<4x6xf32>'}}
func.func @matrix_update_static_columns(%p: tensor<4x6xf32> {kfuse.role = #kfuse.role<param>}, %v: tensor<1x8xf32> {kfuse.role = #kfuse.role<state>, kfuse.name = "col_var"}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<4x6xf32>
  return
}

// -----

// A scalar state beside a 2-D param is a mix of forms, not a state level.
// expected-error @+1 {{argument #1 is a scalar and argument #0 a tensor; an update's params, grads, states and models are all tensors, or all scalars (element form)}}
func.func @matrix_update_scalar_state(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>}, %s: f32 {kfuse.role = #kfuse.role<state>}) attributes {kfuse.update} {
  kfuse.write %p to %p : tensor<?x?xf32>
  return
}

// -----

// In a region, a reduction is of the element over its row (rows held in
// registers): dim 1, a sum or a maximum.
func.func @fused_reduce_over_rows(%x: tensor<?x256xf32>) {
  %y = kfuse.fused(%x) : (tensor<?x256xf32>) -> tensor<?x256xf32> {
  ^bb0(%e: f32):
    // expected-error @+1 {{'kfuse.reduce' op in a kfuse.fused body reduces the element's row: dim 1, sum, max or variance, not over the list}}
    %s = kfuse.reduce <sum> %e dim 0 : f32 -> f32
    kfuse.yield %s : f32
  }
  return
}

// -----

func.func @fused_reduce_mean(%x: tensor<?x256xf32>) {
  %y = kfuse.fused(%x) : (tensor<?x256xf32>) -> tensor<?x256xf32> {
  ^bb0(%e: f32):
    // expected-error @+1 {{'kfuse.reduce' op in a kfuse.fused body reduces the element's row: dim 1, sum, max or variance, not over the list}}
    %s = kfuse.reduce <mean> %e dim 1 : f32 -> f32
    kfuse.yield %s : f32
  }
  return
}

// -----

// An update's output is written only.
func.func @update_reads_output(%x: tensor<?x64xf32> {kfuse.role = #kfuse.role<input>}, %y: tensor<?x64xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.update} {
  // expected-error @+1 {{reads output argument #1, which is written only}}
  %s = arith.addf %x, %y : tensor<?x64xf32>
  kfuse.write %s to %y : tensor<?x64xf32>
  return
}

// -----

// An update's 2-D inputs and outputs hold a value per element, row or column.
// expected-error @+1 {{input argument #1 ('w') of type 'tensor<2x64xf32>' fits no level of the params' 'tensor<?x64xf32>': an input is per element (the same shape), per row (rows x 1) or per column (1 x columns)}}
func.func @update_input_level(%x: tensor<?x64xf32> {kfuse.role = #kfuse.role<input>}, %w: tensor<2x64xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "w"}, %y: tensor<?x64xf32> {kfuse.role = #kfuse.role<output>}) attributes {kfuse.update} {
  kfuse.write %x to %y : tensor<?x64xf32>
  return
}
