func.func @yield_outside(%x: f32) {
  kfuse.yield %x : f32
}
