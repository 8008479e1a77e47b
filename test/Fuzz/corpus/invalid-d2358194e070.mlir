func.func @fused_no_tensor(%s: f32) {
  kfuse.fused(%s) : (f32) -> () {
  ^bb0(%a: f32):
    kfuse.yield
  }
  return
}
