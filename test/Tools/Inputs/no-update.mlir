func.func @plain(%x: f32) {
  return
}
