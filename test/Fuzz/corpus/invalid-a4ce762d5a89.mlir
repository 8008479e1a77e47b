func.func @broadcast_extent(%x: tensor<?x?xf32>, %v: tensor<?x4xf32>) {
  %b = kfuse.broadcast %v like %x : tensor<?x4xf32>, tensor<?x?xf32>
  return
}
