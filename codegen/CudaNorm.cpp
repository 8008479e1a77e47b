//===- CudaNorm.cpp - classify the values of a specialized norm ----------===//
//
// Every value of a norm is uniform (a scalar), one per row, one per column,
// one per element, or a column sum. Row reductions cut the program into
// phases: a value that depends on k of them (its level) is known once the
// k-th phase is done. The source emitter (CudaNormSource.cpp) evaluates
// element values per phase in registers and row values once per row.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaNormInternal.h"

#include "codegen/CudaOps.h"
#include "dialect/KFuseUpdate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cstdlib>
#include <optional>

using namespace mlir;

namespace kfuse {

namespace norm {

/// How a norm's messages name the tensor at `level`.
static const char *normLevelName(ArgLevel level) {
  switch (level) {
  case ArgLevel::element:
    return "full";
  case ArgLevel::row:
    return "row";
  case ArgLevel::column:
    return "column";
  case ArgLevel::tensor:
    return "1 x 1";
  }
  return "?";
}

static const char *kindName(ValueKind kind) {
  switch (kind) {
  case ValueKind::scalar:
    return "scalar";
  case ValueKind::row:
    return "per-row";
  case ValueKind::col:
    return "per-column";
  case ValueKind::full:
    return "per-element";
  case ValueKind::columnSum:
    return "column-reduction";
  }
  return "?";
}

/// The kind of a tensor at `level`. A norm's 1 x 1 tensor (getValueLevel's
/// tensor level) is a column of a one-column norm.
static ValueKind toKind(ArgLevel level) {
  switch (level) {
  case ArgLevel::element:
    return ValueKind::full;
  case ArgLevel::row:
    return ValueKind::row;
  case ArgLevel::column:
  case ArgLevel::tensor:
    return ValueKind::col;
  }
  return ValueKind::full;
}

/// The kind of values of both kinds combined elementwise: scalars take the
/// other's kind, a row and a column value make a full one.
static ValueKind join(ValueKind a, ValueKind b) {
  if (a == b || b == ValueKind::scalar)
    return a;
  if (a == ValueKind::scalar)
    return b;
  return ValueKind::full;
}

FailureOr<std::string> emitElementExpression(Operation *op,
                                             ArrayRef<std::string> operands) {
  // emitOpExpression spells scalar ops: give it a scalar twin of `op` (same
  // name, attributes and location, element-typed operands and results).
  Block scratch;
  IRMapping mapping;
  for (Value operand : op->getOperands())
    mapping.map(operand,
                scratch.addArgument(getElementTypeOrSelf(operand.getType()),
                                    operand.getLoc()));
  Operation *twin = op->clone(mapping);
  for (OpResult result : twin->getResults())
    result.setType(getElementTypeOrSelf(result.getType()));
  // Row values are computed while the row sits in registers: the f64
  // division helpers' register pairs spill there (32 bytes in the bf16
  // LayerNorm forward at 1024 columns), and a row's few divisions cost
  // little to compile.
  FailureOr<std::string> expr =
      emitOpExpression(twin, operands, /*wide=*/false, /*plainDivision=*/true);
  twin->destroy();
  return expr;
}

namespace {

class NormAnalyzer {
public:
  NormAnalyzer(func::FuncOp func, const NormEmitOptions &options)
      : func(func), options(options) {
    program.func = func;
  }
  FailureOr<NormProgram> analyze();

private:
  LogicalResult collectArgs();
  LogicalResult classify(Operation *op);
  LogicalResult classifyWrite(WriteOp write);
  void markNeeded(Value root);

  func::FuncOp func;
  const NormEmitOptions &options;
  NormProgram program;
  SmallVector<WriteOp> writes;
};

LogicalResult NormAnalyzer::collectArgs() {
  int64_t cols = options.cols;
  if (!options.argLevels.empty() &&
      options.argLevels.size() != func.getNumArguments())
    return func.emitOpError()
           << "has " << func.getNumArguments() << " arguments but "
           << options.argLevels.size() << " argument levels were given";
  for (BlockArgument arg : func.getArguments()) {
    unsigned index = arg.getArgNumber();
    std::string name = getArgName(func, index);
    std::optional<Role> role = getArgRole(func, index);
    if (!role ||
        (*role != Role::input && *role != Role::output && *role != Role::hyper))
      return func.emitOpError() << "argument #" << index << " '" << name
                                << "' needs the role input, output or hyper";
    ArgInfo info;
    info.name = name;
    info.role = static_cast<ArgRole>(*role);
    info.defaultValue = getArgDefault(func, index);
    Type type = arg.getType();
    if (*role == Role::hyper) {
      if (!type.isF32())
        return func.emitOpError()
               << "hyper argument #" << index << " '" << name << "' has type "
               << type << "; hyperparameters are f32 scalars";
      program.kinds[arg] = ValueKind::scalar;
    } else {
      auto tensor = dyn_cast<RankedTensorType>(type);
      std::optional<DType> dtype =
          tensor ? getStorageDType(tensor.getElementType()) : std::nullopt;
      if (!tensor || tensor.getRank() != 2 || !dtype || *dtype == DType::pred)
        return func.emitOpError()
               << "argument #" << index << " '" << name << "' has type " << type
               << "; norm tensors are 2-D of f32, bf16 or f16";
      info.dtype = *dtype;
      if (!options.argLevels.empty()) {
        info.level = options.argLevels[index];
      } else if (cols == 1 && tensor.getDimSize(1) == 1) {
        return func.emitOpError()
               << "argument #" << index << " '" << name
               << "': with one column, full and row tensors have the same "
                  "type; the argument shapes as written must be given";
      } else {
        info.level = getValueLevel(type);
      }
      // The specialized type must be the shape with the row length bound.
      int64_t rows = info.level == ArgLevel::column ? 1 : ShapedType::kDynamic;
      int64_t extent = info.level == ArgLevel::row ? 1 : cols;
      // (kfuse-specialize leaves a dynamic column extent with one
      // column; the code generator takes the row length from `cols`.)
      int64_t written = tensor.getDimSize(1);
      if (info.level == ArgLevel::tensor || tensor.getDimSize(0) != rows ||
          (written != extent && !ShapedType::isDynamic(written)))
        return func.emitOpError()
               << "argument #" << index << " '" << name << "' of type " << type
               << " is not a specialized " << normLevelName(info.level)
               << " tensor of " << cols
               << " columns (run kfuse-specialize with cols=" << cols
               << " first; the row count stays dynamic)";
      program.kinds[arg] = toKind(info.level);
    }
    program.levels[arg] = 0;
    program.plan.args.push_back(std::move(info));
  }
  return success();
}

LogicalResult NormAnalyzer::classify(Operation *op) {
  if (auto write = dyn_cast<WriteOp>(op)) {
    writes.push_back(write);
    return success();
  }
  if (op->getNumResults() != 1 || op->getNumRegions() != 0)
    return op->emitOpError()
           << "is not supported in a norm by the CUDA code generator";
  Value result = op->getResult(0);
  unsigned level = 0;
  for (Value operand : op->getOperands())
    level = std::max(level, program.levelOf(operand));
  program.levels[result] = level;
  auto setKind = [&](ValueKind kind) {
    program.kinds[result] = kind;
    return success();
  };

  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (dense && !dense.isSplat())
      return op->emitOpError() << "tensor constants must be splats in a norm";
    return setKind(ValueKind::scalar);
  }
  if (isa<DimSizeOp>(op))
    return setKind(ValueKind::scalar);
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    ValueKind input = program.kindOf(reduce.getInput());
    if (input != ValueKind::full)
      return op->emitOpError() << "reduces a " << kindName(input)
                               << " value; only per-element values are reduced";
    if (!getElementTypeOrSelf(reduce.getInput().getType()).isF32())
      return op->emitOpError() << "reduces " << reduce.getInput().getType()
                               << "; generated code reduces f32 only";
    if (reduce.getDim() == 1) {
      program.levels[result] = level + 1;
      return setKind(ValueKind::row);
    }
    if (reduce.getKind() != ReduceKind::sum)
      return op->emitOpError()
             << "column reductions (dim 0) support only <sum>, got <"
             << stringifyReduceKind(reduce.getKind()) << ">";
    return setKind(ValueKind::columnSum);
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    ValueKind value = program.kindOf(broadcast.getValue());
    ValueKind like = program.kindOf(broadcast.getLike());
    ValueKind target = like;
    if (like == ValueKind::scalar || like == ValueKind::columnSum) {
      target = toKind(getValueLevel(result.getType()));
    }
    bool widens = (value == ValueKind::row || value == ValueKind::col) &&
                  target == ValueKind::full;
    if (value != ValueKind::scalar && value != target && !widens)
      return op->emitOpError() << "broadcasts a " << kindName(value)
                               << " value to a " << kindName(target)
                               << " shape, which the code generator does not "
                                  "support";
    return setKind(value == ValueKind::scalar ? ValueKind::scalar : target);
  }
  if (auto convert = dyn_cast<ConvertOp>(op))
    return setKind(program.kindOf(convert.getInput()));

  ValueKind kind = ValueKind::scalar;
  for (Value operand : op->getOperands()) {
    ValueKind operandKind = program.kindOf(operand);
    if (operandKind == ValueKind::columnSum)
      return op->emitOpError()
             << "uses the result of a column reduction, which is complete "
                "only after every row; it can only be converted and written";
    kind = join(kind, operandKind);
  }
  if (isa<RankedTensorType>(result.getType()) &&
      !op->hasTrait<OpTrait::Elementwise>())
    return op->emitOpError()
           << "is not elementwise; the norm code generator supports "
              "elementwise arith and math ops, kfuse.broadcast, "
              "kfuse.convert, kfuse.reduce and kfuse.dim_size";
  return setKind(kind);
}

LogicalResult NormAnalyzer::classifyWrite(WriteOp write) {
  unsigned index = getWriteTarget(write).getArgNumber();
  const ArgInfo &target = program.plan.args[index];
  ValueKind kind = program.kindOf(write.getValue());
  switch (target.level) {
  case ArgLevel::element:
    if (kind == ValueKind::columnSum)
      break;
    program.elementWrites.push_back(write);
    return success();
  case ArgLevel::row:
    if (kind != ValueKind::scalar && kind != ValueKind::row)
      break;
    program.rowWrites.push_back(write);
    return success();
  case ArgLevel::column: {
    if (kind != ValueKind::columnSum)
      return write.emitOpError()
             << "writes a " << kindName(kind) << " value to column output '"
             << target.name
             << "'; column outputs take a column reduction (kfuse.reduce "
                "dim 0), converted at most";
    ColumnOutput output;
    output.write = write;
    output.arg = index;
    Value value = write.getValue();
    while (auto convert = value.getDefiningOp<ConvertOp>()) {
      output.converts.insert(output.converts.begin(), convert);
      value = convert.getInput();
    }
    output.reduce = value.getDefiningOp<ReduceOp>();
    program.columnOutputs.push_back(std::move(output));
    return success();
  }
  case ArgLevel::tensor:
    break;
  }
  return write.emitOpError()
         << "writes a " << kindName(kind) << " value to "
         << normLevelName(target.level) << " output '" << target.name << "'";
}

void NormAnalyzer::markNeeded(Value root) {
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!program.needed.insert(value).second)
      continue;
    if (Operation *op = value.getDefiningOp())
      llvm::append_range(worklist, op->getOperands());
  }
}

FailureOr<NormProgram> NormAnalyzer::analyze() {
  if (!isNorm(func))
    return func.emitOpError() << "is not a norm (no 'kfuse.norm' attribute)";
  if (!llvm::hasSingleElement(func.getBody()))
    return func.emitOpError() << "must have a single block";
  if (options.cols <= 0)
    return func.emitOpError()
           << "needs the row length it was specialized on (cols > 0), got "
           << options.cols;
  KernelPlan &plan = program.plan;
  plan.kind = KernelKind::norm;
  plan.name = func.getSymName().str();
  plan.cols = options.cols;
  if (auto width =
          func->getAttrOfType<IntegerAttr>(KFuseDialect::kVectorWidthAttrName))
    program.vectorWidth = width.getInt();
  if (program.vectorWidth == 0 || program.vectorWidth > 8 ||
      !llvm::isPowerOf2_32(program.vectorWidth) ||
      options.cols % program.vectorWidth != 0)
    return func.emitOpError()
           << "has vector width " << program.vectorWidth
           << ", which must be a power of two of at most 8 that divides the "
           << options.cols << " columns";
  if (failed(collectArgs()))
    return failure();

  for (Operation &op : func.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 0)
        return ret.emitOpError() << "returns values; a norm returns none";
      continue;
    }
    program.ops.push_back(&op);
    if (failed(classify(&op)))
      return failure();
  }
  for (WriteOp write : writes)
    if (failed(classifyWrite(write)))
      return failure();

  for (WriteOp write :
       llvm::concat<WriteOp>(program.elementWrites, program.rowWrites))
    markNeeded(write.getValue());
  for (const ColumnOutput &output : program.columnOutputs)
    markNeeded(output.reduce->getOperand(0));
  for (Operation *op : program.ops) {
    auto reduce = dyn_cast<ReduceOp>(op);
    if (!reduce || reduce.getDim() != 1 ||
        !program.needed.contains(reduce.getResult()))
      continue;
    unsigned level = program.levelOf(reduce.getResult());
    if (program.phases.size() < level)
      program.phases.resize(level);
    program.phases[level - 1].push_back(reduce);
  }
  return std::move(program);
}

} // namespace

FailureOr<NormProgram> analyzeNorm(func::FuncOp func,
                                   const NormEmitOptions &options) {
  return NormAnalyzer(func, options).analyze();
}

} // namespace norm

FailureOr<KernelPlan> emitNormCuda(func::FuncOp norm,
                                   const NormEmitOptions &options) {
  FailureOr<norm::NormProgram> program = norm::analyzeNorm(norm, options);
  if (failed(program) || failed(norm::emitNormSource(*program, options)))
    return failure();
  return std::move(program->plan);
}

/// The value of environment variable `name` when it is a positive number
/// below 2^20, else 0.
static unsigned positiveEnvironment(const char *name) {
  const char *text = std::getenv(name);
  unsigned value = 0;
  if (!text || llvm::StringRef(text).getAsInteger(10, value) ||
      value >= (1u << 20))
    return 0;
  return value;
}

/// KFUSE_NORM_STAGES, when set to 0, 1 or 2.
static std::optional<unsigned> stagesEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_STAGES");
  unsigned value = 0;
  if (!text || llvm::StringRef(text).getAsInteger(10, value) || value > 4)
    return std::nullopt;
  return value;
}

/// KFUSE_NORM_SUMS, when set to `registers` or `shared`.
static NormEmitOptions::ColumnSums columnSumsEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_SUMS");
  if (!text)
    return NormEmitOptions::ColumnSums::automatic;
  return llvm::StringSwitch<NormEmitOptions::ColumnSums>(text)
      .Case("registers", NormEmitOptions::ColumnSums::registers)
      .Case("shared", NormEmitOptions::ColumnSums::shared)
      .Default(NormEmitOptions::ColumnSums::automatic);
}

/// KFUSE_NORM_COLUMNS=registers holds the column inputs in registers.
static NormEmitOptions::ColumnInputs columnInputsEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_COLUMNS");
  return text && llvm::StringRef(text) == "registers"
             ? NormEmitOptions::ColumnInputs::registers
             : NormEmitOptions::ColumnInputs::reload;
}

/// KFUSE_NORM_EMITTER=update generates the row kernel with the register-row
/// loop of 2-D updates.
static bool throughUpdateEmitterEnvironment() {
  const char *text = std::getenv("KFUSE_NORM_EMITTER");
  return text && llvm::StringRef(text) == "update";
}

/// The knobs' key as the environment sets them now.
static std::string readTuningKey() {
  std::optional<unsigned> stages = stagesEnvironment();
  NormEmitOptions::ColumnSums sums = columnSumsEnvironment();
  return "stages=" + (stages ? std::to_string(*stages) : std::string("-")) +
         ";min_threads=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_MIN_THREADS_PER_SM")) +
         ";launch_blocks=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_LAUNCH_BLOCKS")) +
         ";max_elements=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_MAX_ELEMENTS")) +
         ";block=" +
         std::to_string(positiveEnvironment("KFUSE_NORM_BLOCK_SIZE")) +
         ";sums=" + std::to_string(static_cast<int>(sums)) + ";columns=" +
         std::to_string(static_cast<int>(columnInputsEnvironment())) +
         (throughUpdateEmitterEnvironment() ? ";emitter=update" : "");
}

bool normLiveKnobs() {
  static const bool live = [] {
    const char *text = std::getenv("KFUSE_NORM_LIVE_KNOBS");
    return text && llvm::StringRef(text) == "1";
  }();
  return live;
}

const std::string &normTuningKey() {
  // Six getenv calls cost more than the rest of an in-memory cache hit, so
  // the knobs are read once, unless a measuring process asks to change them
  // as it goes.
  if (normLiveKnobs()) {
    thread_local std::string key;
    key = readTuningKey();
    return key;
  }
  static const std::string key = readTuningKey();
  return key;
}

NormEmitOptions getNormEmitOptions(mlir::func::FuncOp norm, int64_t cols) {
  NormEmitOptions options;
  options.cols = cols;
  // Measurement overrides (bench/bench_norm.py sweeps them); part of the
  // runtime's cache key through normTuningKey().
  if (unsigned value = positiveEnvironment("KFUSE_NORM_MIN_THREADS_PER_SM"))
    options.minThreadsPerSM = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_LAUNCH_BLOCKS"))
    options.launchMinBlocksPerSM = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_MAX_ELEMENTS"))
    options.maxElementsPerThread = value;
  if (unsigned value = positiveEnvironment("KFUSE_NORM_BLOCK_SIZE"))
    options.targetBlockSize = value;
  if (std::optional<unsigned> stages = stagesEnvironment())
    options.stages = *stages;
  options.columnSums = columnSumsEnvironment();
  options.columnInputs = columnInputsEnvironment();
  options.throughUpdateEmitter = throughUpdateEmitterEnvironment();
  if (norm)
    for (mlir::Type type : norm.getArgumentTypes())
      options.argLevels.push_back(getValueLevel(type));
  return options;
}

} // namespace kfuse
