//===- PlanCache.cpp - compiled updates on disk, plan and image -----------===//

#include "runtime/PlanCache.h"
#include "runtime/CacheKey.h"
#include "runtime/Log.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

#include <cstring>

namespace kfuse {

/// Bump when the encoding below changes.
static constexpr llvm::StringLiteral kPlanFormat = "kfuse-plan-6";

std::string planEntryKey(llvm::StringRef compileKey) {
  CacheKeyHasher hash;
  hash.field(kPlanFormat);
  hash.field(compilerBuildId());
  hash.field(compileKey);
  return hash.hex();
}

//===----------------------------------------------------------------------===//
// Encoding: JSON, doubles as their bit patterns (exact, and NaN and the
// infinities survive), enums as their values (checked on the way back).
//===----------------------------------------------------------------------===//

namespace {
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

Value bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return llvm::utohexstr(bits);
}

template <typename Enum> Value enumValue(Enum value) {
  return static_cast<int64_t>(value);
}

Value encodeArg(const ArgInfo &arg) {
  Object object{{"name", arg.name},
                {"role", enumValue(arg.role)},
                {"dtype", enumValue(arg.dtype)}};
  if (arg.defaultValue)
    object["default"] = bitsOf(*arg.defaultValue);
  object["level"] = enumValue(arg.level);
  return object;
}

Value encodeParam(const KernelParam &param) {
  return Object{{"kind", enumValue(param.kind)},
                {"index", param.index},
                {"dtype", enumValue(param.dtype)},
                {"read", param.read},
                {"written", param.written}};
}

Value encodeUniforms(const HostUniforms &uniforms) {
  Array program;
  for (const UniformInstr &instr : uniforms.program)
    program.push_back(
        Object{{"op", enumValue(instr.op)},
               {"operands",
                Array{instr.operands[0], instr.operands[1], instr.operands[2]}},
               {"arg", instr.arg},
               {"constant", bitsOf(instr.constant)}});
  Array fields;
  for (unsigned field : uniforms.fields)
    fields.push_back(field);
  return Object{{"program", std::move(program)}, {"fields", std::move(fields)}};
}

Value encodeKernel(const KernelInfo &kernel) {
  Array params;
  for (const KernelParam &param : kernel.params)
    params.push_back(encodeParam(param));
  Object object{{"role", enumValue(kernel.role)},
                {"name", kernel.name},
                {"location", kernel.location},
                {"params", std::move(params)},
                {"vector_width", kernel.vectorWidth},
                {"index_bits", kernel.indexBits},
                {"block_size", kernel.blockSize},
                {"body_ops", kernel.numBodyOps},
                {"phases", kernel.phases},
                {"sets_found_inf", kernel.setsFoundInf},
                {"shared_bytes", kernel.sharedBytes},
                {"rows_per_block", kernel.rowsPerBlock},
                {"max_grid_blocks", kernel.maxGridBlocks},
                {"threads_per_row", kernel.threadsPerRow},
                {"items_per_thread", kernel.itemsPerThread},
                {"launch_blocks", kernel.launchBlocks},
                {"row_in_registers", kernel.rowInRegisters},
                {"column_inputs_in_registers", kernel.columnInputsInRegisters},
                {"stages", kernel.stages},
                {"columns_per_block", kernel.columnsPerBlock}};
  if (kernel.hostUniforms)
    object["host_uniforms"] = encodeUniforms(*kernel.hostUniforms);
  return object;
}

/// Reads one JSON value back, remembering the first thing that is wrong.
class Reader {
public:
  explicit Reader(const Object &object) : object(&object) {}

  bool has(llvm::StringRef key) const { return object->get(key); }
  const Value *get(llvm::StringRef key) {
    const Value *value = object->get(key);
    if (!value)
      fail("no '" + key + "'");
    return value;
  }
  void read(llvm::StringRef key, std::string &out) {
    if (const Value *value = get(key)) {
      if (std::optional<llvm::StringRef> text = value->getAsString())
        out = text->str();
      else
        fail("'" + key + "' is not a string");
    }
  }
  void read(llvm::StringRef key, bool &out) {
    if (const Value *value = get(key)) {
      if (std::optional<bool> flag = value->getAsBoolean())
        out = *flag;
      else
        fail("'" + key + "' is not a boolean");
    }
  }
  void read(llvm::StringRef key, int64_t &out) {
    if (const Value *value = get(key)) {
      if (std::optional<int64_t> number = value->getAsInteger())
        out = *number;
      else
        fail("'" + key + "' is not an integer");
    }
  }
  void read(llvm::StringRef key, int &out) {
    int64_t number = 0;
    read(key, number);
    if (number < INT32_MIN || number > INT32_MAX)
      fail("'" + key + "' is out of range");
    out = static_cast<int>(number);
  }
  void read(llvm::StringRef key, unsigned &out) {
    int64_t number = 0;
    read(key, number);
    if (number < 0 || number > UINT32_MAX)
      fail("'" + key + "' is out of range");
    out = static_cast<unsigned>(number);
  }
  void readDouble(llvm::StringRef key, double &out) {
    std::string text;
    read(key, text);
    uint64_t bits = 0;
    if (llvm::StringRef(text).getAsInteger(16, bits))
      fail("'" + key + "' is not a double's bits");
    std::memcpy(&out, &bits, sizeof out);
  }
  /// An enum whose values run from 0 to `last`.
  template <typename Enum>
  void readEnum(llvm::StringRef key, Enum &out, Enum last) {
    int64_t number = 0;
    read(key, number);
    if (number < 0 || number > static_cast<int64_t>(last))
      fail("'" + key + "' is out of range");
    out = static_cast<Enum>(number);
  }
  const Array *array(llvm::StringRef key) {
    const Value *value = get(key);
    if (!value)
      return nullptr;
    const Array *items = value->getAsArray();
    if (!items)
      fail("'" + key + "' is not an array");
    return items;
  }
  /// The objects of array `key`, each read by `each`.
  template <typename Fn> void objects(llvm::StringRef key, Fn each) {
    if (const Array *items = array(key))
      for (const Value &item : *items) {
        const Object *element = item.getAsObject();
        if (!element) {
          fail("an element of '" + key + "' is not an object");
          return;
        }
        Reader reader(*element);
        each(reader);
        if (!reader.error.empty())
          fail(key + ": " + reader.error);
      }
  }
  void unsignedArray(llvm::StringRef key, std::vector<unsigned> &out) {
    if (const Array *items = array(key))
      for (const Value &item : *items) {
        std::optional<int64_t> number = item.getAsInteger();
        if (!number || *number < 0 || *number > UINT32_MAX) {
          fail("an element of '" + key + "' is not an index");
          return;
        }
        out.push_back(static_cast<unsigned>(*number));
      }
  }
  void fail(const llvm::Twine &message) {
    if (error.empty())
      error = message.str();
  }

  std::string error;

private:
  const Object *object;
};

void readArg(Reader &reader, ArgInfo &arg) {
  reader.read("name", arg.name);
  reader.readEnum("role", arg.role, ArgRole::output);
  reader.readEnum("dtype", arg.dtype, DType::pred);
  if (reader.has("default")) {
    double value = 0;
    reader.readDouble("default", value);
    arg.defaultValue = value;
  }
  reader.readEnum("level", arg.level, ArgLevel::column);
}

void readUniforms(Reader &reader, HostUniforms &uniforms) {
  reader.objects("program", [&](Reader &item) {
    UniformInstr instr;
    item.readEnum("op", instr.op, UniformInstr::Op::select);
    std::vector<unsigned> operands;
    item.unsignedArray("operands", operands);
    // The host evaluates the program in order: operands come before.
    unsigned self = uniforms.program.size();
    if (operands.size() != 3 ||
        llvm::any_of(operands, [&](unsigned i) { return i > self; }))
      item.fail("bad operands");
    else
      llvm::copy(operands, instr.operands);
    item.read("arg", instr.arg);
    item.readDouble("constant", instr.constant);
    uniforms.program.push_back(instr);
  });
  reader.unsignedArray("fields", uniforms.fields);
  if (llvm::any_of(uniforms.fields,
                   [&](unsigned i) { return i >= uniforms.program.size(); }))
    reader.fail("a field names no instruction");
}

void readKernel(Reader &reader, KernelInfo &kernel) {
  reader.readEnum("role", kernel.role, KernelInfo::Role::NormColumnFinish);
  reader.read("name", kernel.name);
  reader.read("location", kernel.location);
  reader.objects("params", [&](Reader &item) {
    KernelParam param;
    item.readEnum("kind", param.kind, KernelParam::Kind::TensorValue);
    item.read("index", param.index);
    item.readEnum("dtype", param.dtype, DType::pred);
    item.read("read", param.read);
    item.read("written", param.written);
    kernel.params.push_back(param);
  });
  reader.read("vector_width", kernel.vectorWidth);
  reader.read("index_bits", kernel.indexBits);
  reader.read("block_size", kernel.blockSize);
  reader.read("body_ops", kernel.numBodyOps);
  reader.read("phases", kernel.phases);
  reader.read("sets_found_inf", kernel.setsFoundInf);
  reader.read("shared_bytes", kernel.sharedBytes);
  reader.read("rows_per_block", kernel.rowsPerBlock);
  reader.read("max_grid_blocks", kernel.maxGridBlocks);
  reader.read("threads_per_row", kernel.threadsPerRow);
  reader.read("items_per_thread", kernel.itemsPerThread);
  reader.read("launch_blocks", kernel.launchBlocks);
  reader.read("row_in_registers", kernel.rowInRegisters);
  reader.read("column_inputs_in_registers", kernel.columnInputsInRegisters);
  reader.read("stages", kernel.stages);
  reader.read("columns_per_block", kernel.columnsPerBlock);
  if (kernel.phases == 0)
    reader.fail("a kernel of no phases");
  if (reader.has("host_uniforms")) {
    const Object *object = reader.get("host_uniforms")->getAsObject();
    if (!object) {
      reader.fail("'host_uniforms' is not an object");
      return;
    }
    Reader uniformsReader(*object);
    HostUniforms uniforms;
    readUniforms(uniformsReader, uniforms);
    if (!uniformsReader.error.empty())
      reader.fail("host_uniforms: " + uniformsReader.error);
    kernel.hostUniforms = std::move(uniforms);
  }
}
} // namespace

std::string encodePlanEntry(const KernelPlan &plan, llvm::StringRef imageKey,
                            int driverVersion) {
  Array args, kernels, temporaries, tensorArgs;
  for (const ArgInfo &arg : plan.args)
    args.push_back(encodeArg(arg));
  for (const KernelInfo &kernel : plan.kernels)
    kernels.push_back(encodeKernel(kernel));
  for (DType dtype : plan.temporaries)
    temporaries.push_back(enumValue(dtype));
  for (unsigned index : plan.tensorArgs)
    tensorArgs.push_back(index);
  Array listTotals, columnOutputs;
  for (unsigned index : plan.columnOutputs)
    columnOutputs.push_back(index);
  for (const auto &[name, index] : plan.listTotals)
    listTotals.push_back(Object{{"name", name}, {"index", index}});
  Object entry{{"format", kPlanFormat},
               {"image_key", imageKey},
               {"driver_version", driverVersion},
               {"kind", enumValue(plan.kind)},
               {"name", plan.name},
               {"args", std::move(args)},
               {"kernels", std::move(kernels)},
               {"temporaries", std::move(temporaries)},
               {"numel", plan.numel},
               {"numel_multiple", plan.numelMultiple},
               {"alignment", plan.alignment},
               {"source", plan.source},
               {"ptx", plan.ptx},
               {"ptx_unsupported", plan.ptxUnsupported},
               {"multi_tensor", plan.multiTensor},
               {"tensor_args", std::move(tensorArgs)},
               {"step_arg", plan.stepArg},
               {"checks_found_inf", plan.checksFoundInf},
               {"num_reductions", plan.numReductions},
               {"matrix", plan.matrix},
               {"num_row_reductions", plan.numRowReductions},
               {"num_col_reductions", plan.numColReductions},
               {"list_totals", std::move(listTotals)},
               {"cols", plan.cols},
               {"column_outputs", std::move(columnOutputs)}};
  std::string bytes;
  llvm::raw_string_ostream(bytes) << Value(std::move(entry));
  return bytes;
}

llvm::Expected<PlanEntry> decodePlanEntry(llvm::StringRef bytes) {
  auto invalid = [](const llvm::Twine &why) {
    return llvm::createStringError("not a " + kPlanFormat + " entry: " + why);
  };
  llvm::Expected<Value> parsed = llvm::json::parse(bytes);
  if (!parsed)
    return invalid(llvm::toString(parsed.takeError()));
  const Object *object = parsed->getAsObject();
  if (!object)
    return invalid("not an object");
  Reader reader(*object);
  std::string format;
  reader.read("format", format);
  if (reader.error.empty() && format != kPlanFormat)
    return invalid("format '" + format + "'");

  PlanEntry entry;
  KernelPlan &plan = entry.plan;
  reader.read("image_key", entry.imageKey);
  reader.read("driver_version", entry.driverVersion);
  reader.readEnum("kind", plan.kind, KernelKind::norm);
  reader.read("name", plan.name);
  reader.objects("args", [&](Reader &item) {
    ArgInfo arg;
    readArg(item, arg);
    plan.args.push_back(std::move(arg));
  });
  reader.objects("kernels", [&](Reader &item) {
    KernelInfo kernel;
    readKernel(item, kernel);
    plan.kernels.push_back(std::move(kernel));
  });
  std::vector<unsigned> temporaries;
  reader.unsignedArray("temporaries", temporaries);
  for (unsigned dtype : temporaries) {
    if (dtype > static_cast<unsigned>(DType::pred))
      reader.fail("a temporary's dtype is out of range");
    plan.temporaries.push_back(static_cast<DType>(dtype));
  }
  reader.read("numel", plan.numel);
  reader.read("numel_multiple", plan.numelMultiple);
  reader.read("alignment", plan.alignment);
  reader.read("source", plan.source);
  reader.read("ptx", plan.ptx);
  reader.read("ptx_unsupported", plan.ptxUnsupported);
  reader.read("multi_tensor", plan.multiTensor);
  reader.unsignedArray("tensor_args", plan.tensorArgs);
  reader.read("step_arg", plan.stepArg);
  reader.read("checks_found_inf", plan.checksFoundInf);
  reader.read("num_reductions", plan.numReductions);
  reader.read("matrix", plan.matrix);
  reader.read("num_row_reductions", plan.numRowReductions);
  reader.read("num_col_reductions", plan.numColReductions);
  reader.read("cols", plan.cols);
  reader.unsignedArray("column_outputs", plan.columnOutputs);
  reader.objects("list_totals", [&](Reader &item) {
    std::pair<std::string, unsigned> total;
    item.read("name", total.first);
    item.read("index", total.second);
    if (total.second >= plan.numReductions)
      item.fail("a list total's index is out of range");
    plan.listTotals.push_back(std::move(total));
  });
  // What the runtime indexes with: argument and temporary indices.
  for (const KernelInfo &kernel : plan.kernels) {
    for (const KernelParam &param : kernel.params) {
      size_t bound = param.kind == KernelParam::Kind::Temporary
                         ? plan.temporaries.size()
                         : plan.args.size();
      if (param.index >= bound)
        reader.fail("kernel '" + kernel.name + "' names argument " +
                    llvm::Twine(param.index) + " of " + llvm::Twine(bound));
    }
    if (kernel.hostUniforms)
      for (const UniformInstr &instr : kernel.hostUniforms->program)
        if (instr.op == UniformInstr::Op::arg && instr.arg >= plan.args.size())
          reader.fail("kernel '" + kernel.name +
                      "' reads a uniform from a missing argument");
  }
  for (unsigned index : plan.tensorArgs)
    if (index >= plan.args.size())
      reader.fail("a tensor argument index is out of range");
  for (unsigned index : plan.columnOutputs)
    if (index >= plan.args.size())
      reader.fail("a column output index is out of range");
  if (plan.stepArg < -1 || plan.stepArg >= int(plan.args.size()))
    reader.fail("'step_arg' is out of range");
  if (!reader.error.empty())
    return invalid(reader.error);
  return entry;
}

std::optional<CachedPlan> lookupPlan(DiskCache &cache, llvm::StringRef planKey,
                                     llvm::function_ref<int()> driverVersion,
                                     std::string &warning, bool wantCubin) {
  auto start = std::chrono::steady_clock::now();
  CacheLookup found = cache.lookup(planKey);
  if (!found.hit()) {
    if (found.miss != CacheMiss::Absent)
      warning = found.reason;
    return std::nullopt;
  }
  llvm::Expected<PlanEntry> entry = decodePlanEntry(found.payload);
  if (!entry) {
    warning = "plan cache entry " + cache.entryPath(planKey) + ": " +
              llvm::toString(entry.takeError()) + "; recompiling";
    return std::nullopt;
  }
  // Made for another driver: a miss, and the compile replaces it.
  if (entry->driverVersion != driverVersion())
    return std::nullopt;
  // An evicted image is a plain miss; a corrupt one is the image's warning.
  std::optional<CompiledImage> image =
      lookupImage(cache, entry->imageKey, wantCubin, warning);
  if (!image)
    return std::nullopt;
  image->diskMs = compileMsSince(start);
  return CachedPlan{std::move(entry->plan), std::move(*image)};
}

void storePlan(DiskCache &cache, llvm::StringRef planKey,
               const KernelPlan &plan, llvm::StringRef imageKey,
               int driverVersion) {
  CacheStoreStatus stored =
      cache.store(planKey, encodePlanEntry(plan, imageKey, driverVersion));
  if (!stored)
    logWarning(stored.warning);
}

} // namespace kfuse
