// A factored second moment as Adafactor keeps it, written as a norm: row
// and column means of g * g, and their outer product over the row means'
// mean. The interpreter runs it; the row schedule cannot (a column sum is
// finished by a second kernel, after every row), so it must not pass check.
func.func @factored(
    %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<input>, kfuse.name = "x"},
    %row: tensor<?x1xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "row"},
    %col: tensor<1x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "col"},
    %v: tensor<?x?xf32> {kfuse.role = #kfuse.role<output>, kfuse.name = "v"})
    attributes {kfuse.norm} {
  %g2 = arith.mulf %g, %g : tensor<?x?xf32>
  %r = kfuse.reduce <sum> %g2 dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
  %c = kfuse.reduce <sum> %g2 dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
  %r_b = kfuse.broadcast %r like %g : tensor<?x1xf32>, tensor<?x?xf32>
  %c_b = kfuse.broadcast %c like %g : tensor<1x?xf32>, tensor<?x?xf32>
  %outer = arith.mulf %r_b, %c_b : tensor<?x?xf32>
  kfuse.write %r to %row : tensor<?x1xf32>
  kfuse.write %c to %col : tensor<1x?xf32>
  kfuse.write %outer to %v : tensor<?x?xf32>
  return
}
