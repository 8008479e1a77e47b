func.func @broadcast_rank(%x: tensor<?x?xf32>, %v: tensor<?xf32>) {
  %b = kfuse.broadcast %v like %x : tensor<?xf32>, tensor<?x?xf32>
  return
}
