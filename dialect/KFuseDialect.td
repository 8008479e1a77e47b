//===- KFuseDialect.td - kfuse dialect definition ----------*- tablegen -*-===//
//
// The kfuse dialect describes memory-bound training updates (optimizer steps)
// as whole-tensor elementwise math over operands with roles.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_DIALECT_TD
#define KFUSE_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def KFuse_Dialect : Dialect {
  let name = "kfuse";
  let cppNamespace = "::kfuse";
  let summary = "Fusable optimizer updates over tensors with roles";
  let description = [{
    An optimizer update is a `func.func` carrying the `kfuse.update` unit
    attribute. Its arguments carry a `kfuse.role`: `param`, `grad` and `state`
    arguments are 1-D tensors of one shape (or 2-D, below), `hyper`
    arguments are scalars. The
    body is whole-tensor elementwise math in `arith` and `math`; the dialect
    adds only what those lack: scalar broadcast (`kfuse.broadcast`), storage
    to compute casts (`kfuse.convert`), the in-place update of params and
    states (`kfuse.write`) and the fused region (`kfuse.fused`).

    An update may also be written in element form: its `param`, `grad`,
    `state` and `model` arguments are float scalars, one element of each
    tensor, and hypers mix with them freely, with no broadcast. Every kfuse
    tool lifts it onto tensors when it loads it (`kfuse-lift-element-form`);
    the library's optimizers are written this way.

    ```mlir
    func.func @sgd_elements(%p: f32 {kfuse.role = #kfuse.role<param>},
                            %g: f32 {kfuse.role = #kfuse.role<grad>},
                            %lr: f32 {kfuse.role = #kfuse.role<hyper>})
        attributes {kfuse.update} {
      %d = arith.mulf %lr, %g : f32
      %np = arith.subf %p, %d : f32
      kfuse.write %np to %p : f32
      return
    }
    ```

    The passes mark an update with unit attributes the code generator
    reads: `kfuse.multi_tensor` (one kernel over a table of tensor groups,
    kfuse-horizontal), `kfuse.found_inf` (skip steps with non-finite grads,
    kfuse-grad-scaling) and `kfuse.grid_barrier` (the reduction phases in
    one cooperative launch, kfuse-schedule-phases); the norm pipeline marks
    a norm it emits through the update code generator `kfuse.row_kernel`
    (blocks of whole rows under a norm's launch, which hold longer rows than
    a table's chunks: see isRowLocalReduce).

    An update's tensors may instead be 2-D, for an optimizer that keeps
    statistics of a param's rows and columns (Adafactor's factored second
    moment): params, grads and models are `tensor<?x?xT>`, a state is one
    value per element (the same shape), per row (`tensor<?x1xT>`) or per
    column (`tensor<1x?xT>`), and a value per tensor is a `tensor<1x1xT>`,
    as in a norm below; inputs and outputs take the same levels, so a
    norm written as an update (no params) is one too. They run as multi-tensor plans whose chunks hold
    whole rows (the row length comes from the table); the interpreter and
    `kfuse check` run them too.

    ```mlir
    func.func @row_decay(%p: tensor<?x?xf32> {kfuse.role = #kfuse.role<param>},
                         %g: tensor<?x?xf32> {kfuse.role = #kfuse.role<grad>},
                         %r: tensor<?x1xf32> {kfuse.role = #kfuse.role<state>})
        attributes {kfuse.update} {
      %sq = arith.mulf %g, %g : tensor<?x?xf32>
      %row = kfuse.reduce <sum> %sq dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
      %r_new = arith.addf %r, %row : tensor<?x1xf32>
      %r_b = kfuse.broadcast %r_new like %p : tensor<?x1xf32>, tensor<?x?xf32>
      %step = arith.divf %g, %r_b : tensor<?x?xf32>
      %p_new = arith.subf %p, %step : tensor<?x?xf32>
      kfuse.write %p_new to %p : tensor<?x?xf32>
      kfuse.write %r_new to %r : tensor<?x1xf32>
      return
    }
    ```

    A normalization is a `func.func` carrying `kfuse.norm`. Its tensors are
    2-D: `tensor<?x?xT>` holds one element per (row, column),
    `tensor<?x1xT>` one value per row (mean, rstd) and `tensor<1x?xT>` one
    per column (weight, bias). `kfuse.reduce` sums over rows or columns,
    `kfuse.broadcast` expands a row or column value to the full shape and
    `kfuse.dim_size` gives a dimension's extent as a scalar. `input`
    arguments are read, `output` arguments written once.

    ```mlir
    func.func @sgd(%p: tensor<?xf32> {kfuse.role = #kfuse.role<param>},
                   %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>},
                   %lr: f32 {kfuse.role = #kfuse.role<hyper>})
        attributes {kfuse.update} {
      %lrv = kfuse.broadcast %lr like %p : f32, tensor<?xf32>
      %d = arith.mulf %lrv, %g : tensor<?xf32>
      %np = arith.subf %p, %d : tensor<?xf32>
      kfuse.write %np to %p : tensor<?xf32>
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::func::FuncDialect"];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    static constexpr llvm::StringLiteral kUpdateAttrName = "kfuse.update";
    static constexpr llvm::StringLiteral kRoleAttrName = "kfuse.role";
    static constexpr llvm::StringLiteral kNameAttrName = "kfuse.name";
    static constexpr llvm::StringLiteral kDefaultAttrName = "kfuse.default";
    static constexpr llvm::StringLiteral kLevelAttrName = "kfuse.level";
    static constexpr llvm::StringLiteral kVectorWidthAttrName = "kfuse.vector_width";
    static constexpr llvm::StringLiteral kIndexBitsAttrName = "kfuse.index_bits";
    static constexpr llvm::StringLiteral kAlignmentAttrName = "kfuse.alignment";
    static constexpr llvm::StringLiteral kNumelMultipleAttrName = "kfuse.numel_multiple";
    static constexpr llvm::StringLiteral kMultiTensorAttrName = "kfuse.multi_tensor";
    static constexpr llvm::StringLiteral kFoundInfAttrName = "kfuse.found_inf";
    static constexpr llvm::StringLiteral kGridBarrierAttrName = "kfuse.grid_barrier";
    static constexpr llvm::StringLiteral kNormAttrName = "kfuse.norm";
    static constexpr llvm::StringLiteral kRowKernelAttrName = "kfuse.row_kernel";
  }];
}

def KFuse_Role : I32EnumAttr<"Role", "role of an update operand", [
    I32EnumAttrCase<"param", 0>,
    I32EnumAttrCase<"grad", 1>,
    I32EnumAttrCase<"state", 2>,
    I32EnumAttrCase<"hyper", 3>,
    I32EnumAttrCase<"model", 4>,
    I32EnumAttrCase<"input", 5>,
    I32EnumAttrCase<"output", 6>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::kfuse";
}

def KFuse_RoleAttr : EnumAttr<KFuse_Dialect, KFuse_Role, "role"> {
  let summary = "role of an update operand";
  let description = [{
    `param` tensors are read and written in place, `grad` tensors are read
    only, `state` tensors (optimizer moments) may be read and written,
    `hyper` scalars are uniform over all elements, and `model` tensors are
    written only: the low-precision model copy of f32 master weights.
    `input` tensors are read only and `output` tensors written exactly once,
    never read: a norm's arguments, and an update's beside (or instead of)
    params and grads, so that a norm can be written as a 2-D update.

    ```mlir
    %g: tensor<?xf32> {kfuse.role = #kfuse.role<grad>}
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def KFuse_Level : I32EnumAttr<"Level", "level a state lives at", [
    I32EnumAttrCase<"tensor", 0>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::kfuse";
}

def KFuse_LevelAttr : EnumAttr<KFuse_Dialect, KFuse_Level, "level"> {
  let summary = "level of a state argument that is not per element";
  let description = [{
    A `state` argument marked `kfuse.level = #kfuse.level<tensor>` holds one
    f32 per tensor instead of one per element: NovoGrad's running norm of
    the grad. It is an f32 scalar in both forms of an update, read as the
    tensor's value and written with a scalar `kfuse.write` of a value that
    is uniform over the tensor (math on hypers, reductions over the tensor
    and such states). A multi-tensor plan binds one f32 per tensor group.

    ```mlir
    %v: f32 {kfuse.role = #kfuse.role<state>, kfuse.level = #kfuse.level<tensor>}
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def KFuse_ReduceKind : I32EnumAttr<"ReduceKind", "row or column reduction", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"variance", 2>,
    I32EnumAttrCase<"mean", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::kfuse";
}

def KFuse_ReduceKindAttr : EnumAttr<KFuse_Dialect, KFuse_ReduceKind,
                                    "reduce_kind"> {
  let summary = "the combining function of a kfuse.reduce";
  let description = [{
    `sum` adds the elements, `max` takes the largest, `variance` is the
    mean squared deviation from the elements' mean (the biased variance:
    divided by the count, as LayerNorm uses it), computed in one pass.
    `mean` is the sum divided by the count, for a whole tensor in an update
    (Cautious's mask mean); a norm divides a sum by `kfuse.dim_size`.

    ```mlir
    %s = kfuse.reduce <sum> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
    %v = kfuse.reduce <variance> %x dim 1 : tensor<?x?xf32> -> tensor<?x1xf32>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

class KFuse_Op<string mnemonic, list<Trait> traits = []>
    : Op<KFuse_Dialect, mnemonic, traits>;

#endif // KFUSE_DIALECT_TD
