//===- CudaNormSource.cpp - the kernels of a norm -------------------------===//
//
// The row kernel gives each row `threads` threads (a warp, several warps, or
// a part of a warp for short rows) and each block `rows` rows at a time, in
// a grid-stride loop over groups of rows. Thread t of a row owns the vectors
// i * threads + t of every row (i < items): 16-byte accesses, coalesced over
// the row's threads, and always the same columns, so that column sums
// accumulate per thread over all the rows the block handles (in registers,
// or in shared memory when a block has a single row slot).
//
// When the row fits in registers (CudaRows.cpp), every full-shape
// input is loaded once and the program runs in phases: a phase recomputes
// the element values its row reductions need, reduces per thread, over the
// warp with shuffles and over the row's warps through shared memory, in a
// fixed order; then the row values of that level follow, per row. The last
// phase computes and stores the outputs. Longer rows take the looped
// variant, which reads the inputs again, chunk by chunk, in each phase.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaNames.h"
#include "codegen/CudaNormInternal.h"

#include "codegen/CudaOps.h"
#include "codegen/CudaPrelude.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <fmt/format.h>

using namespace mlir;

namespace kfuse::norm {
namespace {

/// The level of norm argument `arg` in the kernel: a hyperparameter is one
/// value for the whole launch (the tensor level), a tensor its own.
ArgLevel levelOf(const ArgInfo &arg) {
  return arg.role == ArgRole::hyper ? ArgLevel::tensor : arg.level;
}

/// The locals the norm kernels' templates fix.
const llvm::StringRef kNormKernelNames[] = {
    "lane", "slot",  "group", "row",      "valid", "offset", "vec",
    "i",    "j",     "m",     "w",        "s",     "b",      "k",
    "col",  "grid",  "rows",  "partials", "total", "chunk",  "parity",
    "part", "other", "t",     "p"};

/// Identifiers of the generated source.
class NameTable : public CudaNameTable {
public:
  NameTable() : CudaNameTable(kNormKernelNames) {}
};

/// What one element loop computes: the per-thread part of row reductions,
/// stores of full outputs, or column partial sums.
struct LoopWork {
  ArrayRef<ReduceOp> reductions;
  bool writes = false;
  bool columnSums = false;
};

class SourceEmitter {
public:
  SourceEmitter(NormProgram &program, const NormEmitOptions &options)
      : program(program), options(options), plan(program.plan),
        func(program.func) {}
  LogicalResult emit();

private:
  LogicalResult nameValues();
  LogicalResult emitOps(ArrayRef<Operation *> ops, StringRef indent,
                        std::string &out);
  std::string expr(Value value);
  std::string vectorType(DType dtype);
  std::string vectorIndex() const;
  FailureOr<std::string> emitElementLoop(const LoopWork &work,
                                         StringRef indent);
  std::string emitVectorLoads(StringRef indent, ArrayRef<unsigned> inputs,
                              bool perRow);
  std::string emitColumnInputLoads(StringRef indent);
  std::string emitStageCopies(StringRef indent, StringRef row,
                              StringRef buffer);
  std::string stagedSlot(unsigned index, StringRef buffer) const;
  std::string emitRowReduction(ArrayRef<ReduceOp> reductions, unsigned phase,
                               StringRef indent);
  std::string forEachOwnedVector(StringRef indent, StringRef body);
  /// The column-sum vector `vec` of column output `position` in memory.
  std::string sumSlot(unsigned position) const {
    if (layout.sums == RowLayout::Sums::shared)
      return fmt::format("kfuse_acc[{} + vec]", position * layout.vectors);
    return fmt::format("kfuse_sum{}[vec]", position);
  }
  std::string emitColumnPartials();
  FailureOr<std::string> emitRowKernel();
  FailureOr<std::string> emitFinishKernel();

  /// The f32 -> 16-bit conversion `write` stores, when the vector holds
  /// pairs: the store then converts two elements an instruction.
  ConvertOp pairedConvert(WriteOp write) const {
    unsigned index = getWriteTarget(write).getArgNumber();
    auto convert = write.getValue().getDefiningOp<ConvertOp>();
    if (!convert || layout.vec < 2 || dtypeSize(plan.args[index].dtype) != 2 ||
        !getElementTypeOrSelf(convert.getInput().getType()).isF32())
      return nullptr;
    return convert;
  }
  /// A bf16 -> f32 conversion of an element of a vector argument, read
  /// from its 32-bit word: one shift or mask an element, where extracting
  /// the 16-bit half first costs two.
  std::optional<std::string> unpackedPairElement(Operation *op) {
    auto convert = dyn_cast<ConvertOp>(op);
    if (!convert || layout.vec < 2 ||
        !getElementTypeOrSelf(convert.getInput().getType()).isBF16() ||
        !getElementTypeOrSelf(convert.getType()).isF32() ||
        !vectorOf.contains(convert.getInput()))
      return std::nullopt;
    return fmt::format("kfuse_bf16x2_to_f32({}.w[j >> 1], j & 1)",
                       vectorOf.lookup(convert.getInput()));
  }
  bool isElementKind(Value value) const {
    ValueKind kind = program.kindOf(value);
    return kind == ValueKind::full || kind == ValueKind::col;
  }
  bool isFullInput(unsigned index) const {
    return levelOf(plan.args[index]) == ArgLevel::element &&
           plan.args[index].role == ArgRole::input;
  }

  NormProgram &program;
  const NormEmitOptions &options;
  KernelPlan &plan;
  func::FuncOp func;
  RowLayout layout;
  NameTable names;
  int64_t cols = 0;
  /// Spellings of values: literals, locals, and per-element accesses of
  /// arguments (valid inside an element loop).
  DenseMap<Value, std::string> spelled;
  /// Per full or column argument: the vector holding its current elements
  /// (element j is `.v[j]`).
  DenseMap<Value, std::string> vectorOf;
  /// Per argument: the kernel parameter and the local it is read into
  /// (for a staged full input: its shared-memory address in the current
  /// buffer, and the vector read back from it in `stagedNames`).
  std::vector<std::string> paramNames, localNames, outputNames, stagedNames;
  /// Per staged full input: the shared-memory address of its buffers.
  llvm::DenseMap<unsigned, std::string> stageBases, copyTargets;
  std::vector<unsigned> stagedInputs;
  RegisterDemand demand;
  /// Per column output: its accumulator array.
  std::vector<std::string> accumulators;
  llvm::StringSet<> vectorTypeNames;
  std::string vectorTypeDefs;
  unsigned reductionSlots = 0; // most floats of one phase's row reductions
};

/// The <variance> of `reductions` over the same input as the <sum> `reduce`,
/// if any: the thread's sum then follows from the variance's shifted sums
/// (sum = s + n * p) instead of an addition per element.
static ReduceOp varianceSharingInput(ReduceOp reduce,
                                     ArrayRef<ReduceOp> reductions) {
  if (reduce.getKind() != ReduceKind::sum)
    return nullptr;
  for (ReduceOp other : reductions)
    if (other.getKind() == ReduceKind::variance &&
        other.getInput() == reduce.getInput())
      return other;
  return nullptr;
}

std::string SourceEmitter::vectorType(DType dtype) {
  unsigned bytes = layout.vec * dtypeSize(dtype);
  std::string name = fmt::format("kfuse_{}x{}", dtypeName(dtype), layout.vec);
  if (vectorTypeNames.insert(name).second) {
    // 16-bit vectors also read as 32-bit words, for paired conversions.
    std::string members =
        fmt::format("{} v[{}];", getCudaStorageType(dtype), layout.vec);
    if (dtypeSize(dtype) == 2 && layout.vec >= 2)
      members = fmt::format("union {{\n    {}\n    unsigned int w[{}];\n  }};",
                            members, layout.vec / 2);
    vectorTypeDefs += fmt::format("struct alignas({}) {} {{\n  {}\n}};\n",
                                  std::min(bytes, 16u), name, members);
  }
  return name;
}

std::string SourceEmitter::vectorIndex() const {
  if (layout.inRegisters)
    return fmt::format("i * {} + lane", layout.threads);
  return fmt::format("(chunk * {} + i) * {} + lane", layout.items,
                     layout.threads);
}

std::string SourceEmitter::expr(Value value) {
  if (auto broadcast = value.getDefiningOp<BroadcastOp>())
    return expr(broadcast.getValue());
  return spelled.lookup(value);
}

/// A C++ literal of a scalar or splat constant.
static FailureOr<std::string> getLiteral(arith::ConstantOp constant) {
  Attribute value = constant.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    value = dense.getSplatValue<Attribute>();
  if (auto number = dyn_cast<FloatAttr>(value);
      number && getCudaScalarType(number.getType()))
    return formatFloatLiteral(number.getValue());
  if (auto flag = dyn_cast<IntegerAttr>(value);
      flag && flag.getType().isInteger(1))
    return std::string(flag.getValue().isZero() ? "false" : "true");
  return constant.emitOpError()
         << "constant " << constant.getValue() << " is not supported";
}

LogicalResult SourceEmitter::nameValues() {
  for (auto [index, arg] : llvm::enumerate(plan.args)) {
    paramNames.push_back(names.unique(arg.name, /*fromUser=*/true));
    stagedNames.emplace_back();
    std::string local;
    Value value = func.getArgument(index);
    switch (levelOf(arg)) {
    case ArgLevel::element:
      local = names.unique(paramNames.back() + "_v");
      vectorOf[value] = local + "[i]";
      if (layout.stages > 0 && arg.role == ArgRole::input) {
        stagedNames.back() = names.unique(paramNames.back() + "_l");
        stageBases[index] = names.unique(paramNames.back() + "_stage");
        copyTargets[index] = names.unique(paramNames.back() + "_to");
        vectorOf[value] = stagedNames.back();
      }
      spelled[value] = vectorOf[value] + ".v[j]";
      break;
    case ArgLevel::column:
      local = names.unique(paramNames.back() + "_c");
      vectorOf[value] = layout.columnInputsInRegisters ? local + "[i]" : local;
      spelled[value] = vectorOf[value] + ".v[j]";
      break;
    case ArgLevel::row:
    case ArgLevel::tensor:
      local = names.unique(paramNames.back() +
                           (levelOf(arg) == ArgLevel::row ? "_r" : "_f"));
      spelled[value] = local;
      break;
    }
    localNames.push_back(local);
    outputNames.push_back(arg.role == ArgRole::output &&
                                  levelOf(arg) == ArgLevel::element
                              ? names.unique(paramNames.back() + "_w")
                              : "");
  }
  unsigned next = 0;
  for (Operation *op : program.ops) {
    if (op->getNumResults() != 1 || isa<BroadcastOp>(op))
      continue;
    Value result = op->getResult(0);
    if (!program.needed.contains(result))
      continue;
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      FailureOr<std::string> literal = getLiteral(constant);
      if (failed(literal))
        return failure();
      spelled[result] = *literal;
      continue;
    }
    if (auto dim = dyn_cast<DimSizeOp>(op)) {
      if (!dim.getType().isF32())
        return op->emitOpError() << "has result type " << dim.getType()
                                 << "; generated code computes in f32 only";
      if (dim.getDim() == 1) {
        spelled[result] = formatFloatLiteral(llvm::APFloat(float(cols)));
        continue;
      }
    }
    const char *prefix = "e";
    if (isa<ReduceOp>(op))
      prefix = "s";
    else if (program.kindOf(result) == ValueKind::row)
      prefix = "r";
    else if (program.kindOf(result) == ValueKind::scalar)
      prefix = "c";
    spelled[result] = names.unique(fmt::format("{}{}", prefix, next++));
  }
  for (const ColumnOutput &output : program.columnOutputs)
    accumulators.push_back(
        names.unique(fmt::format("acc_{}", paramNames[output.arg])));
  return success();
}

/// `const T name = expression;` for each of `ops`, in order.
LogicalResult SourceEmitter::emitOps(ArrayRef<Operation *> ops,
                                     StringRef indent, std::string &out) {
  for (Operation *op : ops) {
    Value result = op->getResult(0);
    std::string expression;
    if (auto dim = dyn_cast<DimSizeOp>(op)) {
      expression = "(float)rows";
    } else if (std::optional<std::string> pair = unpackedPairElement(op)) {
      expression = std::move(*pair);
    } else {
      SmallVector<std::string> operands;
      for (Value operand : op->getOperands())
        operands.push_back(expr(operand));
      FailureOr<std::string> text = emitElementExpression(op, operands);
      if (failed(text))
        return failure();
      expression = std::move(*text);
    }
    out += fmt::format("{}const {} {} = {};\n", indent.str(),
                       getCudaScalarType(getElementTypeOrSelf(result.getType()))
                           .value_or("float"),
                       spelled.lookup(result), expression);
  }
  return success();
}

/// Loads of the thread's vectors (all items of the current chunk) of
/// `inputs` into their register arrays: full inputs of the current row
/// (`perRow`, zeros past the rows), or column inputs.
std::string SourceEmitter::emitVectorLoads(StringRef indent,
                                           ArrayRef<unsigned> inputs,
                                           bool perRow) {
  std::string out;
  if (inputs.empty())
    return out;
  for (unsigned index : inputs)
    out += fmt::format("{}{} {}[{}];\n", indent.str(),
                       vectorType(plan.args[index].dtype), localNames[index],
                       layout.items);
  out += fmt::format("{0}#pragma unroll\n"
                     "{0}for (int i = 0; i < {1}; ++i) {{\n"
                     "{0}  const int vec = {2};\n",
                     indent.str(), layout.items, vectorIndex());
  SmallVector<std::string> conditions;
  if (perRow)
    conditions.push_back("valid");
  if (!layout.exact())
    conditions.push_back(fmt::format("vec < {}", layout.vectors));
  std::string guard = llvm::join(conditions, " && ");
  for (unsigned index : inputs) {
    std::string type = vectorType(plan.args[index].dtype);
    std::string load =
        fmt::format("reinterpret_cast<const {} *>({}{})[vec]", type,
                    paramNames[index], perRow ? " + offset" : "");
    if (guard.empty())
      out += fmt::format("{}  {}[i] = {};\n", indent.str(), localNames[index],
                         load);
    else
      out += fmt::format("{}  {}[i] = {} ? {} : {}{{}};\n", indent.str(),
                         localNames[index], guard, load, type);
  }
  out += indent.str() + "}\n";
  return out;
}

/// Loads of the thread's vectors of every column input the norm reads, once
/// for all the rows the thread handles.
std::string SourceEmitter::emitColumnInputLoads(StringRef indent) {
  SmallVector<unsigned> inputs;
  for (auto [index, arg] : llvm::enumerate(plan.args))
    if (levelOf(arg) == ArgLevel::column && arg.role == ArgRole::input &&
        program.needed.contains(func.getArgument(index)))
      inputs.push_back(index);
  return emitVectorLoads(indent, inputs, /*perRow=*/false);
}

/// The shared-memory address of row slot `slot` of staged input `index` in
/// buffer `buffer`.
std::string SourceEmitter::stagedSlot(unsigned index, StringRef buffer) const {
  uint64_t slotBytes =
      layout.slotVectors() * layout.vec * dtypeSize(plan.args[index].dtype);
  return fmt::format("{} + ({} * {} + slot) * {}u", stageBases.lookup(index),
                     buffer.str(), layout.rows, slotBytes);
}

/// cp.async copies of the staged inputs of `row` (a local holding the row
/// index) into buffer `buffer`, zero-filled past the rows or the row's end.
/// Each thread copies the vectors it later reads back, so no barrier is
/// needed: the wait makes a thread's own copies visible to it.
std::string SourceEmitter::emitStageCopies(StringRef indent, StringRef row,
                                           StringRef buffer) {
  std::string out = fmt::format("{0}{{\n"
                                "{0}  const bool fill = {1} < rows;\n"
                                "{0}  const long long from = fill ? {1} * {2} "
                                ": 0;\n",
                                indent.str(), row.str(), cols);
  for (unsigned index : stagedInputs)
    out += fmt::format("{}  const unsigned {} = {};\n", indent.str(),
                       copyTargets.lookup(index), stagedSlot(index, buffer));
  std::string guard =
      layout.exact() ? "fill" : fmt::format("fill && vec < {}", layout.vectors);
  out += fmt::format("{0}  #pragma unroll\n"
                     "{0}  for (int i = 0; i < {1}; ++i) {{\n"
                     "{0}    const int vec = {2};\n",
                     indent.str(), layout.items, vectorIndex());
  for (unsigned index : stagedInputs) {
    std::string type = vectorType(plan.args[index].dtype);
    out += fmt::format(
        "{0}    kfuse_stage<{1}>({2} + vec * {3}, reinterpret_cast<const "
        "{1} *>({4} + from) + vec, {5});\n",
        indent.str(), type, copyTargets.lookup(index),
        layout.vec * dtypeSize(plan.args[index].dtype), paramNames[index],
        guard);
  }
  out += indent.str() + "  }\n" + indent.str() + "  kfuse_stage_commit();\n" +
         indent.str() + "}\n";
  return out;
}

FailureOr<std::string> SourceEmitter::emitElementLoop(const LoopWork &work,
                                                      StringRef indent) {
  // The element values the work needs, and the inputs they read.
  SmallVector<Value> roots;
  for (ReduceOp reduce : work.reductions)
    roots.push_back(reduce.getInput());
  if (work.writes)
    for (WriteOp write : program.elementWrites) {
      ConvertOp convert = pairedConvert(write);
      roots.push_back(convert ? convert.getInput() : write.getValue());
    }
  if (work.columnSums)
    for (const ColumnOutput &output : program.columnOutputs)
      roots.push_back(output.reduce->getOperand(0));
  DenseSet<Operation *> elementOps;
  SetVector<unsigned> fullInputs, colInputs;
  DenseSet<Value> visited;
  while (!roots.empty()) {
    Value value = roots.pop_back_val();
    if (!visited.insert(value).second || !isElementKind(value))
      continue;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      (levelOf(plan.args[arg.getArgNumber()]) == ArgLevel::element ? fullInputs
                                                                   : colInputs)
          .insert(arg.getArgNumber());
      continue;
    }
    Operation *op = value.getDefiningOp();
    llvm::append_range(roots, op->getOperands());
    if (!isa<BroadcastOp, arith::ConstantOp>(op))
      elementOps.insert(op);
  }
  SmallVector<Operation *> ordered;
  for (Operation *op : program.ops)
    if (elementOps.contains(op))
      ordered.push_back(op);

  std::string out;
  std::string body = indent.str() + "  ";
  if (!layout.inRegisters) {
    SmallVector<unsigned> inputs(fullInputs.begin(), fullInputs.end());
    llvm::sort(inputs);
    out += fmt::format("{0}#pragma unroll 1\n"
                       "{0}for (int chunk = 0; chunk < {1}; ++chunk) {{\n",
                       indent.str(), layout.chunks);
    out += emitVectorLoads(body, inputs, /*perRow=*/true);
  } else {
    body = indent.str();
  }
  std::string inner = body + "  ";
  out += fmt::format("{0}#pragma unroll\n"
                     "{0}for (int i = 0; i < {1}; ++i) {{\n"
                     "{0}  const int vec = {2};\n",
                     body, layout.items, vectorIndex());
  if (!layout.exact()) {
    out += fmt::format("{}if (vec < {}) {{\n", inner, layout.vectors);
    inner += "  ";
  }
  SmallVector<unsigned> colList;
  if (!layout.columnInputsInRegisters)
    colList.assign(colInputs.begin(), colInputs.end());
  llvm::sort(colList);
  for (unsigned index : colList)
    out += fmt::format("{0}const {1} {2} = reinterpret_cast<const {1} "
                       "*>({3})[vec];\n",
                       inner, vectorType(plan.args[index].dtype),
                       localNames[index], paramNames[index]);
  if (layout.stages > 0) {
    // Staged inputs are read back from shared memory in every phase.
    SmallVector<unsigned> staged(fullInputs.begin(), fullInputs.end());
    llvm::sort(staged);
    for (unsigned index : staged) {
      std::string type = vectorType(plan.args[index].dtype);
      out += fmt::format("{0}const {1} {2} = kfuse_unstage<{1}>({3} + vec * "
                         "{4});\n",
                         inner, type, stagedNames[index], localNames[index],
                         layout.vec * dtypeSize(plan.args[index].dtype));
    }
  }
  SmallVector<WriteOp> writes;
  if (work.writes)
    writes.assign(program.elementWrites.begin(), program.elementWrites.end());
  for (WriteOp write : writes) {
    unsigned index = getWriteTarget(write).getArgNumber();
    out += fmt::format("{}{} {};\n", inner, vectorType(plan.args[index].dtype),
                       outputNames[index]);
    if (pairedConvert(write))
      out += fmt::format("{}float {}_f[{}];\n", inner, outputNames[index],
                         layout.vec);
  }
  bool sumsInMemory = layout.sums != RowLayout::Sums::registers;
  if (work.columnSums && sumsInMemory)
    for (auto [position, acc] : llvm::enumerate(accumulators))
      out += fmt::format("{}{} {} = {};\n", inner, vectorType(DType::f32), acc,
                         sumSlot(position));
  out += fmt::format("{0}#pragma unroll\n"
                     "{0}for (int j = 0; j < {1}; ++j) {{\n",
                     inner, layout.vec);
  std::string lane = inner + "  ";
  if (failed(emitOps(ordered, lane, out)))
    return failure();
  for (ReduceOp reduce : work.reductions) {
    std::string acc = spelled.lookup(reduce->getResult(0));
    std::string value = expr(reduce.getInput());
    switch (reduce.getKind()) {
    case ReduceKind::sum:
      if (!varianceSharingInput(reduce, work.reductions))
        out += fmt::format("{}{} += {};\n", lane, acc, value);
      break;
    case ReduceKind::max:
      out +=
          fmt::format("{0}{1} = kfuse_maximumf({1}, {2});\n", lane, acc, value);
      break;
    case ReduceKind::mean:
      llvm_unreachable("the verifier keeps means out of norms");
    case ReduceKind::variance:
      // Sums of the elements shifted by the thread's first one: the
      // cancellation in q - s^2 / n is then bounded by the thread's count.
      out += fmt::format("{0}{{\n"
                         "{0}  const float v = {2};\n"
                         "{0}  if ({1}_n == 0.0f)\n"
                         "{0}    {1}_p = v;\n"
                         "{0}  const float d = v - {1}_p;\n"
                         "{0}  {1}_s += d;\n"
                         "{0}  {1}_q = fmaf(d, d, {1}_q);\n"
                         "{0}  {1}_n += 1.0f;\n"
                         "{0}}}\n",
                         lane, acc, value);
      break;
    }
  }
  for (WriteOp write : writes) {
    unsigned index = getWriteTarget(write).getArgNumber();
    if (ConvertOp convert = pairedConvert(write))
      out += fmt::format("{}{}_f[j] = {};\n", lane, outputNames[index],
                         expr(convert.getInput()));
    else
      out += fmt::format("{}{}.v[j] = {};\n", lane, outputNames[index],
                         expr(write.getValue()));
  }
  if (work.columnSums)
    for (auto [output, acc] :
         llvm::zip_equal(program.columnOutputs, accumulators))
      out += fmt::format("{0}if (valid)\n{0}  {1}{2}.v[j] += {3};\n", lane, acc,
                         sumsInMemory ? "" : "[i]",
                         expr(output.reduce->getOperand(0)));
  out += inner + "}\n";
  for (WriteOp write : writes) {
    if (!pairedConvert(write))
      continue;
    unsigned index = getWriteTarget(write).getArgNumber();
    out += fmt::format(
        "{0}#pragma unroll\n"
        "{0}for (int j = 0; j < {1}; ++j)\n"
        "{0}  {2}.w[j] = kfuse_f32x2_to_{3}x2({2}_f[2 * j], {2}_f[2 * j + "
        "1]);\n",
        inner, layout.vec / 2, outputNames[index],
        dtypeName(plan.args[index].dtype));
  }
  if (work.columnSums && sumsInMemory)
    for (auto [position, acc] : llvm::enumerate(accumulators))
      out += fmt::format("{}{} = {};\n", inner, sumSlot(position), acc);
  for (WriteOp write : writes) {
    unsigned index = getWriteTarget(write).getArgNumber();
    out += fmt::format("{0}if (valid)\n"
                       "{0}  reinterpret_cast<{1} *>({2} + offset)[vec] = "
                       "{3};\n",
                       inner, vectorType(plan.args[index].dtype),
                       paramNames[index], outputNames[index]);
  }
  if (!layout.exact())
    out += body + "  }\n";
  out += body + "}\n";
  if (!layout.inRegisters)
    out += indent.str() + "}\n";
  return out;
}

/// Combines the per-thread parts of `reductions` over the row's threads:
/// a shuffle butterfly within the warp (every lane ends with the same bits),
/// then the row's warps through shared memory, summed in warp order.
std::string SourceEmitter::emitRowReduction(ArrayRef<ReduceOp> reductions,
                                            unsigned phase, StringRef indent) {
  std::string out;
  auto isVariance = [](ReduceOp reduce) {
    return reduce.getKind() == ReduceKind::variance;
  };
  for (ReduceOp reduce : reductions)
    if (ReduceOp variance = varianceSharingInput(reduce, reductions))
      out += fmt::format("{0}{1} = fmaf({2}_n, {2}_p, {2}_s);\n", indent.str(),
                         spelled.lookup(reduce->getResult(0)),
                         spelled.lookup(variance->getResult(0)));
  // A variance's thread part: count, mean and sum of squared deviations.
  for (ReduceOp reduce : llvm::make_filter_range(reductions, isVariance))
    out += fmt::format("{0}float {1}_m = {1}_p;\n"
                       "{0}if ({1}_n > 0.0f) {{\n"
                       "{0}  const float shift = {1}_s / {1}_n;\n"
                       "{0}  {1}_m = {1}_p + shift;\n"
                       "{0}  {1}_q = fmaxf(fmaf(-{1}_s, shift, {1}_q), 0.0f);\n"
                       "{0}}}\n",
                       indent.str(), spelled.lookup(reduce->getResult(0)));
  SmallVector<RowPart> parts;
  for (ReduceOp reduce : reductions)
    parts.push_back({reduce.getKind(), spelled.lookup(reduce->getResult(0))});
  std::string region = program.phases.size() == 1 ? std::string("parity")
                                                  : std::to_string(phase);
  out += emitRowCombine(parts, layout, "lane", "slot",
                        fmt::format("kfuse_red[{}]", region), reductionSlots,
                        indent);
  for (ReduceOp reduce : llvm::make_filter_range(reductions, isVariance))
    out += fmt::format("{0}{1} = {1}_q / {1}_n;\n", indent.str(),
                       spelled.lookup(reduce->getResult(0)));
  return out;
}

/// `body` (lines indented for `indent` + 4) for each vector of the row the
/// thread owns: `vec` is its index in the row.
std::string SourceEmitter::forEachOwnedVector(StringRef indent,
                                              StringRef body) {
  std::string out;
  std::string loopIndent = indent.str();
  if (!layout.inRegisters) {
    out += fmt::format("{0}#pragma unroll 1\n"
                       "{0}for (int chunk = 0; chunk < {1}; ++chunk) {{\n",
                       indent.str(), layout.chunks);
    loopIndent += "  ";
  }
  out += fmt::format("{0}#pragma unroll\n"
                     "{0}for (int i = 0; i < {1}; ++i) {{\n"
                     "{0}  const int vec = {2};\n",
                     loopIndent, layout.items, vectorIndex());
  if (layout.exact())
    out += body.str() + loopIndent + "}\n";
  else
    out += fmt::format("{0}  if (vec < {1}) {{\n{2}{0}  }}\n{0}}}\n",
                       loopIndent, layout.vectors, body.str());
  if (!layout.inRegisters)
    out += indent.str() + "}\n";
  return out;
}

/// The end of the row kernel with column reductions: the block's row slots
/// add their accumulators in slot order, then slot 0 stores one partial per
/// column and reduction.
std::string SourceEmitter::emitColumnPartials() {
  std::string out;
  std::string accType = vectorType(DType::f32);
  // Bodies are indented for the non-exact layout's `if`; the exact one
  // keeps them two spaces deeper, which is harmless.
  if (layout.rows > 1) {
    out += fmt::format("  // The row slots of the block add up in slot "
                       "order.\n"
                       "  __shared__ {} kfuse_colsum[{}];\n",
                       accType, layout.vectors);
    for (const std::string &acc : accumulators)
      out += emitSlotOrderCombine(
          layout.rows, "slot", "s",
          forEachOwnedVector(
              "      ",
              fmt::format("          kfuse_colsum[vec] = {}[i];\n", acc)),
          forEachOwnedVector(
              "      ",
              fmt::format("          const {0} other = kfuse_colsum[vec];\n"
                          "#pragma unroll\n"
                          "          for (int j = 0; j < {1}; ++j)\n"
                          "            {2}[i].v[j] += other.v[j];\n",
                          accType, layout.vec, acc)),
          "  ");
  }
  out += "  // One partial per column and reduction: partials[(r * grid + "
         "block) * cols + col].\n"
         "  if (slot == 0) {\n";
  for (auto [position, acc] : llvm::enumerate(accumulators)) {
    std::string source = layout.sums == RowLayout::Sums::registers
                             ? acc + "[i]"
                             : sumSlot(position);
    out += fmt::format("    {{\n"
                       "      {0} *part = reinterpret_cast<{0} *>(partials + "
                       "((long long){1} * gridDim.x + blockIdx.x) * {2});\n",
                       accType, position, cols);
    out += forEachOwnedVector(
        "      ", fmt::format("          part[vec] = {};\n", source));
    out += "    }\n";
  }
  out += "  }\n";
  return out;
}

FailureOr<std::string> SourceEmitter::emitRowKernel() {
  SmallVector<std::string> params = getRowKernelParams(
      plan.args, [&](unsigned index) { return paramNames[index]; });

  std::string out = fmt::format(
      "// The row kernel of @{}, from {}.\n"
      "extern \"C\" __global__ void __launch_bounds__({}, {})\n{}({}) {{\n",
      plan.name, plan.rowKernel().location, layout.blockSize(),
      layout.launchBlocks, plan.rowKernel().name, llvm::join(params, ", "));
  out += "  kfuse_grid_dependency_sync();\n";
  // Uniform values, once per thread.
  for (auto [index, arg] : llvm::enumerate(plan.args))
    if (levelOf(arg) == ArgLevel::tensor &&
        program.needed.contains(func.getArgument(index)))
      out += fmt::format("  const float {} = (float){};\n", localNames[index],
                         paramNames[index]);
  SmallVector<Operation *> scalarOps;
  for (Operation *op : program.ops)
    if (op->getNumResults() == 1 && program.needed.contains(op->getResult(0)) &&
        program.kindOf(op->getResult(0)) == ValueKind::scalar &&
        !isa<BroadcastOp, arith::ConstantOp>(op) &&
        !(isa<DimSizeOp>(op) && cast<DimSizeOp>(op).getDim() == 1))
      scalarOps.push_back(op);
  if (failed(emitOps(scalarOps, "  ", out)))
    return failure();

  if (layout.rows > 1)
    out += fmt::format("  const int lane = threadIdx.x % {0};\n"
                       "  const int slot = threadIdx.x / {0};\n",
                       layout.threads);
  else
    out += "  const int lane = threadIdx.x;\n"
           "  const int slot = 0;\n";
  unsigned phases = program.phases.size();
  for (ArrayRef<ReduceOp> phase : program.phases) {
    SmallVector<RowPart> parts;
    for (ReduceOp reduce : phase)
      parts.push_back({reduce.getKind(), ""});
    reductionSlots = std::max(reductionSlots, getRowPartFloats(parts));
  }
  bool crossWarp = phases > 0 && layout.warpsPerRow() > 1;
  if (crossWarp) {
    // One region per phase; a single phase alternates two by iteration, so
    // a fast warp never overwrites what a slow one still reads.
    out += fmt::format("  __shared__ float kfuse_red[{}][{}];\n",
                       std::max(phases, 2u),
                       layout.rows * layout.warpsPerRow() * reductionSlots);
    if (phases == 1)
      out += "  int parity = 0;\n";
  }
  // Dynamic shared memory: the column sums first, then the stages.
  if (layout.sums == RowLayout::Sums::shared || layout.stages > 0)
    out += "  extern __shared__ __align__(16) unsigned char kfuse_smem[];\n";
  if (layout.stages > 0) {
    uint64_t offset = layout.sums == RowLayout::Sums::shared
                          ? columnSumBytes(layout, demand)
                          : 0;
    out += fmt::format("  const unsigned kfuse_stages = "
                       "kfuse_shared_address(kfuse_smem);\n");
    for (unsigned index : stagedInputs) {
      out += fmt::format("  const unsigned {} = kfuse_stages + {}u;\n",
                         stageBases[index], offset);
      offset += uint64_t(layout.stages) * layout.rows * layout.slotVectors() *
                layout.vec * dtypeSize(plan.args[index].dtype);
    }
  }
  if (layout.sums != RowLayout::Sums::registers) {
    // Each column has one owner thread: no synchronization needed.
    if (layout.sums == RowLayout::Sums::shared)
      out += fmt::format("  {0} *const kfuse_acc = reinterpret_cast<{0} "
                         "*>(kfuse_smem);\n",
                         vectorType(DType::f32));
    else
      for (unsigned position = 0; position < accumulators.size(); ++position)
        out += fmt::format("  {0} *kfuse_sum{1} = reinterpret_cast<{0} "
                           "*>(partials + ((long long){1} * gridDim.x + "
                           "blockIdx.x) * {2});\n",
                           vectorType(DType::f32), position, cols);
    for (unsigned position = 0; position < accumulators.size(); ++position)
      out += forEachOwnedVector("  ", fmt::format("      {} = {}{{}};\n",
                                                  sumSlot(position),
                                                  vectorType(DType::f32)));
  } else {
    for (const std::string &acc : accumulators)
      out += fmt::format("  {} {}[{}] = {{}};\n", vectorType(DType::f32), acc,
                         layout.items);
  }

  if (layout.columnInputsInRegisters)
    out += emitColumnInputLoads("  ");
  unsigned stages = layout.stages;
  if (stages >= 2) {
    // The first stages - 1 row groups are copied in before the loop; each
    // iteration copies the one stages - 1 groups ahead into the buffer the
    // previous iteration read while it computes.
    out += "  int stage = 0;\n";
    for (unsigned ahead = 0; ahead + 1 < stages; ++ahead)
      out += emitStageCopies(
          "  ",
          ahead == 0
              ? fmt::format("(blockIdx.x * {}ll + slot)", layout.rows)
              : fmt::format("((blockIdx.x + {} * gridDim.x) * {}ll + slot)",
                            ahead, layout.rows),
          std::to_string(ahead));
  }
  out += fmt::format("  for (long long group = blockIdx.x; group * {0} < rows; "
                     "group += gridDim.x) {{\n"
                     "    const long long row = group * {0} + slot;\n"
                     "    const bool valid = row < rows;\n"
                     "    const long long offset = row * {1};\n",
                     layout.rows, cols);
  if (layout.stages == 1) {
    out += emitStageCopies("    ", "row", "0");
    out += "    kfuse_stage_wait<0>();\n";
  } else if (stages >= 2) {
    // The buffer the previous iteration read: with two, the other one.
    std::string previous =
        stages == 2 ? std::string("(stage ^ 1)")
                    : fmt::format("(stage == 0 ? {} : stage - 1)", stages - 1);
    out += emitStageCopies(
        "    ",
        fmt::format("(row + gridDim.x * {}ll)", (stages - 1) * layout.rows),
        previous);
    out += fmt::format("    kfuse_stage_wait<{}>();\n", stages - 1);
  }
  for (unsigned index : stagedInputs)
    out += fmt::format("    const unsigned {} = {};\n", localNames[index],
                       stagedSlot(index, stages >= 2 ? "stage" : "0"));
  if (layout.inRegisters && layout.stages == 0) {
    SmallVector<unsigned> inputs;
    for (unsigned index = 0; index < plan.args.size(); ++index)
      if (isFullInput(index) &&
          program.needed.contains(func.getArgument(index)))
        inputs.push_back(index);
    out += emitVectorLoads("    ", inputs, /*perRow=*/true);
  }
  for (auto [index, arg] : llvm::enumerate(plan.args))
    if (levelOf(arg) == ArgLevel::row && arg.role == ArgRole::input &&
        program.needed.contains(func.getArgument(index))) {
      const char *type = getCudaStorageType(arg.dtype);
      out += fmt::format("    const {0} {1} = valid ? {2}[row] : ({0})0;\n",
                         type, localNames[index], paramNames[index]);
    }
  auto rowOps = [&](unsigned level) {
    SmallVector<Operation *> ops;
    for (Operation *op : program.ops)
      if (op->getNumResults() == 1 &&
          program.needed.contains(op->getResult(0)) &&
          program.kindOf(op->getResult(0)) == ValueKind::row &&
          program.levelOf(op->getResult(0)) == level &&
          !isa<BroadcastOp, arith::ConstantOp, ReduceOp>(op))
        ops.push_back(op);
    return ops;
  };
  if (failed(emitOps(rowOps(0), "    ", out)))
    return failure();
  for (auto [phase, reductions] : llvm::enumerate(program.phases)) {
    out += fmt::format("    // Phase {}: {} row reduction(s).\n", phase + 1,
                       reductions.size());
    for (ReduceOp reduce : reductions) {
      std::string acc = spelled.lookup(reduce->getResult(0));
      if (reduce.getKind() == ReduceKind::variance)
        out += fmt::format("    float {0} = 0.0f, {0}_n = 0.0f, {0}_p = 0.0f, "
                           "{0}_s = 0.0f, {0}_q = 0.0f;\n",
                           acc);
      else
        out += fmt::format("    float {} = {};\n", acc,
                           reduce.getKind() == ReduceKind::sum
                               ? "0.0f"
                               : "__uint_as_float(0xff800000u)");
    }
    FailureOr<std::string> loop = emitElementLoop({reductions}, "    ");
    if (failed(loop))
      return failure();
    out += *loop;
    out += emitRowReduction(reductions, phase, "    ");
    if (failed(emitOps(rowOps(phase + 1), "    ", out)))
      return failure();
  }
  if (!program.elementWrites.empty() || !program.columnOutputs.empty()) {
    out += "    // Outputs.\n";
    LoopWork work;
    work.writes = true;
    work.columnSums = true;
    FailureOr<std::string> loop = emitElementLoop(work, "    ");
    if (failed(loop))
      return failure();
    out += *loop;
  }
  if (!program.rowWrites.empty()) {
    out += "    if (valid && lane == 0) {\n";
    for (WriteOp write : program.rowWrites) {
      unsigned index = getWriteTarget(write).getArgNumber();
      out += fmt::format("      {}[row] = {};\n", paramNames[index],
                         expr(write.getValue()));
    }
    out += "    }\n";
  }
  if (crossWarp && phases == 1)
    out += "    parity ^= 1;\n";
  if (stages == 2)
    out += "    stage ^= 1;\n";
  else if (stages > 2)
    out +=
        fmt::format("    stage = stage == {} ? 0 : stage + 1;\n", stages - 1);
  out += "  }\n";
  if (stages >= 2)
    out += "  kfuse_stage_wait<0>(); // the last, empty prefetches\n";
  if (!accumulators.empty() && layout.sums != RowLayout::Sums::global)
    out += emitColumnPartials();
  out += "}\n";
  return out;
}

FailureOr<std::string> SourceEmitter::emitFinishKernel() {
  SmallVector<ColumnFinishOutput> outputs;
  for (const ColumnOutput &output : program.columnOutputs) {
    std::string value = "total";
    for (ConvertOp convert : output.converts) {
      FailureOr<std::string> text = emitElementExpression(convert, {value});
      if (failed(text))
        return failure();
      value = std::move(*text);
    }
    outputs.push_back({getCudaStorageType(plan.args[output.arg].dtype),
                       paramNames[output.arg], std::move(value)});
  }
  return emitColumnFinishKernel(plan.name, *plan.finishKernel(), cols, outputs);
}

LogicalResult SourceEmitter::emit() {
  cols = plan.cols;
  if (cols > INT32_MAX)
    return func.emitError() << "rows of " << cols
                            << " columns are too long; column indices are "
                               "32-bit in generated code";
  demand = RegisterDemand();
  SmallVector<unsigned> fullInputs;
  for (auto [index, arg] : llvm::enumerate(plan.args)) {
    if (arg.role != ArgRole::input ||
        !program.needed.contains(func.getArgument(index)))
      continue;
    if (levelOf(arg) == ArgLevel::element) {
      ++demand.fullInputs;
      demand.fullInputBytes += dtypeSize(arg.dtype);
      demand.narrowestInputBytes =
          std::min(demand.narrowestInputBytes, dtypeSize(arg.dtype));
      demand.widestInputBytes =
          std::max(demand.widestInputBytes, dtypeSize(arg.dtype));
      fullInputs.push_back(index);
    } else if (levelOf(arg) == ArgLevel::column) {
      ++demand.colInputs;
    }
  }
  demand.columnSums = program.columnOutputs.size();
  layout = chooseRowLayout(cols, program.vectorWidth, demand, options);
  if (layout.stages > 0)
    stagedInputs.assign(fullInputs.begin(), fullInputs.end());
  std::string base = sanitizeIdentifier(plan.name);
  KernelInfo rows;
  setRowKernelLaunch(rows, layout);
  rows.name = names.unique(fmt::format("kfuse_{}_rows", base));
  rows.location = formatLocation(func.getLoc());
  rows.sharedBytes =
      (layout.sums == RowLayout::Sums::shared ? columnSumBytes(layout, demand)
                                              : 0) +
      layout.stages * stageBytes(layout, demand);
  for (const ColumnOutput &output : program.columnOutputs)
    plan.columnOutputs.push_back(output.arg);
  plan.kernels.push_back(std::move(rows));
  if (!plan.columnOutputs.empty()) {
    if (options.finishColumnsPerBlock == 0 ||
        options.finishBlockSize % options.finishColumnsPerBlock != 0)
      return func.emitError() << "finish blocks of " << options.finishBlockSize
                              << " threads do not split into slices of "
                              << options.finishColumnsPerBlock << " columns";
    KernelInfo finish;
    finish.role = KernelInfo::Role::NormColumnFinish;
    finish.name = names.unique(fmt::format("kfuse_{}_finish", base));
    finish.location = plan.kernels.front().location;
    finish.blockSize = options.finishBlockSize;
    finish.columnsPerBlock = options.finishColumnsPerBlock;
    plan.kernels.front().maxGridBlocks = options.maxColumnReductionGrid;
    plan.kernels.push_back(std::move(finish));
  }
  if (failed(nameValues()))
    return failure();
  FailureOr<std::string> rowKernel = emitRowKernel();
  if (failed(rowKernel))
    return failure();
  std::string kernels = *rowKernel;
  if (!plan.columnOutputs.empty()) {
    FailureOr<std::string> finish = emitFinishKernel();
    if (failed(finish))
      return failure();
    kernels += "\n" + *finish;
  }
  bool usesVariance =
      llvm::any_of(program.phases, [](ArrayRef<ReduceOp> phase) {
        return llvm::any_of(phase, [](ReduceOp reduce) {
          return reduce.getKind() == ReduceKind::variance;
        });
      });
  plan.source = fmt::format(
      "// Generated by kfuse from @{}: {} columns, vector width {}, {} "
      "threads per row ({} vector(s) each{}), {} row(s) per block.\n"
      "// Self-contained: compiles with NVRTC without headers.\n\n"
      "{}\n{}\n{}",
      plan.name, cols, layout.vec, layout.threads, layout.items,
      layout.stages > 0 ? fmt::format(", staged in shared memory, {} buffer(s)",
                                      layout.stages)
      : layout.inRegisters
          ? std::string(", in registers")
          : fmt::format(" in each of {} chunks, looped", layout.chunks),
      layout.rows,
      getCudaPrelude().str() +
          (layout.stages > 0 ? "\n" + getStagingPrelude().str()
                             : std::string()) +
          (usesVariance ? getMomentsPrelude().str() : std::string()),
      vectorTypeDefs, getCudaUniformMathFunctions(kernels) + kernels);
  return success();
}

} // namespace

LogicalResult emitNormSource(NormProgram &program,
                             const NormEmitOptions &options) {
  return SourceEmitter(program, options).emit();
}

} // namespace kfuse::norm
