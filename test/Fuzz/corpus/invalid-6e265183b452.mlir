func.func @unknown_attr() attributes {kfuse.fast} {
  return
}
