//===- KFuseOps.td - kfuse operations ----------------------*- tablegen -*-===//

#ifndef KFUSE_OPS_TD
#define KFUSE_OPS_TD

include "dialect/KFuseDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/BuiltinTypes.td"

// A scalar or a 1-D tensor of floats: storage and compute values.
def KFuse_FloatScalarOrTensor
    : AnyTypeOf<[AnyFloat, RankedTensorOf<[AnyFloat]>]>;

def KFuse_BroadcastOp : KFuse_Op<"broadcast", [Pure, InferTypeOpAdaptor]> {
  let summary = "broadcast a scalar, row or column value to a tensor's shape";
  let description = [{
    Produces a tensor of the shape of `like` whose elements repeat `value`:
    a scalar is repeated everywhere, a tensor is repeated along its
    dimensions of extent 1 (a `tensor<?x1xf32>` of row statistics becomes
    one value per element of its row). It is how hyperparameters enter
    whole-tensor math; the result's element type is the value's element
    type, whatever the element type of `like`.

    ```mlir
    %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xbf16>
    %mean_b = kfuse.broadcast %mean like %x : tensor<?x1xf32>, tensor<?x?xf32>
    ```
    yield a `tensor<?xf32>` and a `tensor<?x?xf32>`.
  }];
  let arguments = (ins AnyTypeOf<[AnyFloat, I1, RankedTensorOf<[AnyType]>]>:$value,
                       RankedTensorOf<[AnyType]>:$like);
  let results = (outs RankedTensorOf<[AnyType]>:$result);
  let assemblyFormat = [{
    $value `like` $like attr-dict `:` type($value) `,` type($like)
  }];
  let hasVerifier = 1;
}

def KFuse_ReduceOp : KFuse_Op<"reduce", [Pure]> {
  let summary = "sum, maximum or variance over the rows, the columns or the "
                "whole of a tensor";
  let description = [{
    Combines the elements of a 2-D tensor along dimension `dim`, keeping
    that dimension with extent 1: `dim 1` reduces each row to one value
    (`tensor<?x?xf32>` to `tensor<?x1xf32>`), `dim 0` each column
    (`tensor<?x?xf32>` to `tensor<1x?xf32>`). Sums accumulate in the
    element type; the generated code combines in a fixed order, so a result
    has the same bits every run.

    `variance` needs no mean computed first: the generated code keeps each
    thread's count, mean and sum of squared deviations (its elements shifted
    by its first one, which bounds the cancellation) and merges them with
    Chan's formula, so LayerNorm's mean and variance take one reduction
    phase instead of two.

    ```mlir
    %row_sum = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
    %row_var = kfuse.reduce <variance> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
    %col_sum = kfuse.reduce <sum> %dy dim 0 : tensor<?x?xf32> -> tensor<1x?xf32>
    ```

    In a 2-D update whose rows have a static length (a multiple of 32, at
    most 8192 elements, and at most 16384 over all its tensors of whole rows),
    a sum, maximum or variance over each row is reduced in registers: the
    generated code spreads a row over threads of a block as a norm's rows
    are, and the result is used in the same pass over memory, not in a later
    phase.
    A row is then a block of a block-wise scheme, such as the absolute
    maximum that scales a quantized state. kfuse-fuse-elementwise moves the
    reduction into the region that computes its input, where it reduces the
    element over its row (`f32 -> f32`, dim 1).

    ```mlir
    %absmax = kfuse.reduce <max> %m_abs dim 1 : tensor<?x256xf32> -> tensor<?x1xf32>
    ```

    In an update, a 1-D tensor reduces over dimension 0 to a float scalar:
    one value per tensor (per tensor of a multi-tensor list), uniform over
    its elements, such as LAMB's norms of the param and of the update
    direction. In an element-form update the input is the element, and the
    result is the reduction over its tensor.

    ```mlir
    %norm_sq = kfuse.reduce <sum> %p_sq dim 0 : tensor<?xf32> -> f32
    ```

    With `over list` the scalar is one value for the whole parameter list
    a multi-tensor plan runs over (for one tensor, the same as per tensor),
    such as the global grad norm of clipping. Updates with reductions run in
    phases (kfuse-schedule-phases): a reduced value is known from the next
    phase on.

    ```mlir
    %grad_norm_sq = kfuse.reduce <sum> %g_sq dim 0 over list : f32 -> f32
    ```
  }];
  let arguments = (ins KFuse_ReduceKindAttr:$kind,
                       KFuse_FloatScalarOrTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       UnitAttr:$list);
  let results = (outs KFuse_FloatScalarOrTensor:$result);
  let assemblyFormat = [{
    $kind $input `dim` $dim (`over` `list` $list^)? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def KFuse_DimSizeOp : KFuse_Op<"dim_size", [Pure]> {
  let summary = "the extent of a tensor dimension as a float scalar";
  let description = [{
    The number of elements of `input` along `dim`, as a float: the `n` of a
    mean. Once specialization makes the dimension static it folds to a
    constant.

    ```mlir
    %n = kfuse.dim_size %x dim 1 : tensor<?x?xf32> -> f32
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyType]>:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs AnyFloat:$result);
  let assemblyFormat = [{
    $input `dim` $dim attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def KFuse_ConvertOp : KFuse_Op<"convert", [Pure, SameOperandsAndResultShape]> {
  let summary = "convert between storage and compute element types";
  let description = [{
    Converts each element to the result's float type, rounding to nearest
    even when narrowing. Storage dtypes (bf16, f16) are converted to f32 for
    compute on load and back on store; `kfuse-specialize` inserts these.

    ```mlir
    %c = kfuse.convert %p : tensor<?xbf16> to tensor<?xf32>
    ```
  }];
  let arguments = (ins KFuse_FloatScalarOrTensor:$input);
  let results = (outs KFuse_FloatScalarOrTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def KFuse_WriteOp : KFuse_Op<"write", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["value", "target"]>]> {
  let summary = "update a param or state tensor in place";
  let description = [{
    Writes `value` into the storage of `target`, a function argument with
    role `param`, `state` or `model` (updates) or `output` (norms). Every
    read of an argument sees its value before the step: the writes take
    effect when the function returns.
    The value's element type must be the target's storage element type.
    In an element-form update the value and the target are scalars: one
    element of the tensor.

    ```mlir
    kfuse.write %new_p to %p : tensor<?xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnyFloat, RankedTensorOf<[AnyFloat]>]>:$value,
                       AnyTypeOf<[AnyFloat, RankedTensorOf<[AnyFloat]>]>:$target);
  let assemblyFormat = "$value `to` $target attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def KFuse_FusedOp : KFuse_Op<"fused", [IsolatedFromAbove, SingleBlock,
    RecursiveMemoryEffects]> {
  let summary = "a fused elementwise region: one kernel";
  let description = [{
    Applies its scalar body to every element of its tensor operands. Tensor
    operands enter the body as one element each, scalar operands as they are;
    `kfuse.yield` gives one element of each tensor result. All tensor operands
    and results have one shape; in a 2-D update, a tensor with one column
    (`tensor<?x1xf32>`) holds a value per row and one with one row a value
    per column, which the body sees at its element's row or column, and a
    result of such a shape is computed once per row or per column. The
    region is isolated from above: everything
    it reads is an operand, so it maps directly to a kernel's parameters.

    ```mlir
    %r = kfuse.fused (%p, %g, %lr) : (tensor<?xf32>, tensor<?xf32>, f32)
        -> tensor<?xf32> {
    ^bb0(%pe: f32, %ge: f32, %lre: f32):
      %d = arith.mulf %lre, %ge : f32
      %n = arith.subf %pe, %d : f32
      kfuse.yield %n : f32
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs);
  let results = (outs Variadic<RankedTensorOf<[AnyType]>>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The block argument that stands for the element of input `i`.
    mlir::BlockArgument getBodyArgument(unsigned i) {
      return getBody().front().getArgument(i);
    }
    /// The yield that ends the body.
    YieldOp getYield();
    /// Number of elementwise operations in the body (its fusion size).
    unsigned getNumBodyOps();
  }];
}

def KFuse_YieldOp : KFuse_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"FusedOp">]> {
  let summary = "yield the result elements of a fused region";
  let description = [{
    Ends a `kfuse.fused` body with one scalar for each result, of the
    result's element type.

    ```mlir
    kfuse.yield %n, %m : f32, f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // KFUSE_OPS_TD
