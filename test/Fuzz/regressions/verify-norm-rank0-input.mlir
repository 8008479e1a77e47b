func.func @n(%x: tensor<f32> {kfuse.role = #kfuse.role<input>}) attributes {kfuse.norm} { return }
