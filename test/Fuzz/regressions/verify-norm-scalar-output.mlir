func.func @n(%x: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>}, %y: f32 {kfuse.role = #kfuse.role<output>}) attributes {kfuse.norm} { return }
