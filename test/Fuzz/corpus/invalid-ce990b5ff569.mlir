func.func @index_bits() attributes {kfuse.index_bits = 16 : i64} {
  return
}
