"""Writes an update whose param goes through a chain of N elementwise ops."""
import sys

n = int(sys.argv[1])
print('func.func @chain(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>, kfuse.name = "p"},')
print('    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>, kfuse.name = "g"}) attributes {kfuse.update} {')
print('  %v0 = arith.addf %p, %g : tensor<?xf32>')
for i in range(1, n):
    print(f'  %v{i} = arith.mulf %v{i - 1}, %g : tensor<?xf32>')
print(f'  kfuse.write %v{n - 1} to %p : tensor<?xf32>')
print('  return')
print('}')
