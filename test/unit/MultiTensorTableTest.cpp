//===- MultiTensorTableTest.cpp - multi-tensor tables and plans, no GPU ---===//
//
// Tables are built from fake device addresses (never dereferenced); coverage
// is checked arithmetically on the chunk list.
//
//===----------------------------------------------------------------------===//

#include "runtime/MultiTensorTable.h"
#include "GpuTestSupport.h"
#include "runtime/CudaDriver.h"
#include "runtime/Errors.h"
#include "runtime/Jit.h"
#include "runtime/MultiTensorPlan.h"
#include "runtime/Nvrtc.h"

#include "gtest/gtest.h"

using namespace kfuse;

namespace {

const std::vector<std::string> kAdamwTensors = {"param", "grad", "exp_avg",
                                                "exp_avg_sq"};

/// `sizes.size()` groups of four tensors at distinct 16-byte-aligned fake
/// addresses.
std::vector<TableTensor> groupsOfSizes(const std::vector<int64_t> &sizes) {
  std::vector<TableTensor> tensors;
  uint64_t address = 0x1000000;
  for (int64_t numel : sizes)
    for (int i = 0; i < 4; ++i) {
      tensors.push_back({address, numel});
      address += 0x1000000;
    }
  return tensors;
}

std::string errorOf(llvm::Error error) {
  if (!error)
    return "<no error>";
  return takeMessage(std::move(error)).second;
}

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value)
    return "<no error>";
  return errorOf(value.takeError());
}

/// Every element of every group lies in exactly one chunk, chunks of a group
/// are contiguous in the list and in order, begins are vector-aligned and no
/// chunk exceeds `chunkElements`.
void expectExactCover(const MultiTensorTable &table,
                      const std::vector<int64_t> &sizes, unsigned vectorWidth,
                      int64_t chunkElements) {
  ASSERT_EQ(table.entries.size(), sizes.size());
  int64_t total = 0;
  for (auto [entry, numel] : llvm::zip_equal(table.entries, sizes)) {
    EXPECT_EQ(entry.numel, numel);
    total += numel;
  }
  EXPECT_EQ(table.totalElements, total);
  std::vector<int64_t> covered(sizes.size(), 0);
  int32_t lastEntry = -1;
  for (const MultiTensorChunk &chunk : table.chunks) {
    ASSERT_GE(chunk.entry, 0);
    ASSERT_LT(size_t(chunk.entry), sizes.size());
    ASSERT_GE(chunk.entry, lastEntry) << "chunks of a group not contiguous";
    if (chunk.entry != lastEntry) {
      for (int32_t skipped = lastEntry + 1; skipped < chunk.entry; ++skipped)
        ASSERT_EQ(sizes[skipped], 0) << "group " << skipped << " has no chunk";
      ASSERT_EQ(chunk.begin, 0);
      lastEntry = chunk.entry;
    }
    ASSERT_EQ(chunk.begin, covered[chunk.entry]) << "gap or overlap";
    ASSERT_LT(chunk.begin, chunk.end);
    ASSERT_LE(chunk.end - chunk.begin, chunkElements);
    ASSERT_EQ(chunk.begin % vectorWidth, 0);
    covered[chunk.entry] = chunk.end;
  }
  for (auto [index, numel] : llvm::enumerate(sizes))
    EXPECT_EQ(covered[index], numel) << "group " << index;
  // What a reduction's last block computes from the table: an entry's first
  // chunk, and its chunk count from the first chunk's length.
  std::vector<int64_t> chunksOf(table.entries.size(), 0);
  for (const MultiTensorChunk &chunk : table.chunks)
    ++chunksOf[chunk.entry];
  for (auto [index, entry] : llvm::enumerate(table.entries)) {
    if (entry.numel == 0)
      continue;
    ASSERT_GE(entry.firstChunk, 0);
    ASSERT_LT(size_t(entry.firstChunk), table.chunks.size());
    const MultiTensorChunk &first = table.chunks[entry.firstChunk];
    EXPECT_EQ(first.entry, int32_t(index));
    EXPECT_EQ(first.begin, 0);
    int64_t length = first.end - first.begin;
    EXPECT_EQ((entry.numel + length - 1) / length, chunksOf[index])
        << "group " << index;
  }
}

TEST(MultiTensorTableTest, CoversGroupsOfMixedSizes) {
  std::vector<int64_t> sizes = {1, 3, 64, 65, 1000, 4096, 4097, 250000};
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(groupsOfSizes(sizes), kAdamwTensors, 4, 1024);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  expectExactCover(*table, sizes, 4, 1024);
  // ceil(n / 1024) chunks a group.
  EXPECT_EQ(table->chunks.size(), 1u + 1 + 1 + 1 + 1 + 4 + 5 + 245);
  for (const MultiTensorEntry &entry : table->entries) {
    EXPECT_EQ(entry.aligned, 1);
    for (unsigned i = 4; i < kMaxTensorArgs; ++i)
      EXPECT_EQ(entry.pointers[i], 0u);
  }
  EXPECT_EQ(table->entries[2].pointers[1], 0x1000000u + 9 * 0x1000000u);
}

TEST(MultiTensorTableTest, ZeroSizeGroupsGiveNoChunks) {
  std::vector<int64_t> sizes = {0, 100, 0, 0, 5, 0};
  std::vector<TableTensor> tensors = groupsOfSizes(sizes);
  tensors[0].address = 0; // null is fine for an empty tensor
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(tensors, kAdamwTensors, 4, 64);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  expectExactCover(*table, sizes, 4, 64);
  ASSERT_EQ(table->chunks.size(), 3u);
  EXPECT_EQ(table->chunks[0].entry, 1);
  EXPECT_EQ(table->chunks[2].entry, 4);

  llvm::Expected<MultiTensorTable> empty =
      buildMultiTensorTable(groupsOfSizes({0, 0}), kAdamwTensors, 4);
  ASSERT_TRUE(bool(empty)) << errorOf(empty.takeError());
  EXPECT_TRUE(empty->chunks.empty());
  EXPECT_EQ(empty->entries.size(), 2u);
}

TEST(MultiTensorTableTest, TensorOverTwoToThe31Elements) {
  int64_t big = (int64_t(1) << 31) + 5;
  std::vector<int64_t> sizes = {7, big, 9};
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(groupsOfSizes(sizes), kAdamwTensors, 4);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  expectExactCover(*table, sizes, 4, kDefaultChunkElements);
  // 7 and 9 elements: one chunk each; 2^31 + 5: 2^31 / chunk full chunks
  // and one of 5.
  EXPECT_EQ(table->chunks.size(),
            1u + size_t((int64_t(1) << 31) / kDefaultChunkElements) + 1 + 1);
  const MultiTensorChunk &last = table->chunks[table->chunks.size() - 2];
  EXPECT_EQ(last.entry, 1);
  EXPECT_EQ(last.begin, int64_t(1) << 31);
  EXPECT_EQ(last.end, big);
}

TEST(MultiTensorTableTest, HundredThousandTinyTensors) {
  std::vector<int64_t> sizes(100000);
  for (size_t i = 0; i < sizes.size(); ++i)
    sizes[i] = int64_t(i % 13); // zeros included
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(groupsOfSizes(sizes), kAdamwTensors, 4);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  expectExactCover(*table, sizes, 4, kDefaultChunkElements);
  size_t nonEmpty = 0;
  for (int64_t numel : sizes)
    nonEmpty += numel > 0;
  EXPECT_EQ(table->chunks.size(), nonEmpty);
}

TEST(MultiTensorTableTest, ChunkSizeRoundsUpToTheVectorWidth) {
  std::vector<int64_t> sizes = {5000, 1003};
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(groupsOfSizes(sizes), kAdamwTensors, 8, 1001);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  expectExactCover(*table, sizes, 8, 1008);
  EXPECT_EQ(table->chunks[0].end, 1008);
  EXPECT_EQ(table->chunks.size(), 5u + 1);
}

TEST(MultiTensorTableTest, MisalignedPointerClearsAligned) {
  std::vector<TableTensor> tensors = groupsOfSizes({100, 100, 100});
  tensors[4 + 2].address += 4; // group 1, exp_avg: 4-byte aligned only
  tensors[8 + 0].address += 8; // group 2, param: 8-byte aligned only
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(tensors, kAdamwTensors, 4);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  EXPECT_EQ(table->entries[0].aligned, 1);
  EXPECT_EQ(table->entries[1].aligned, 0);
  EXPECT_EQ(table->entries[2].aligned, 0);
  EXPECT_EQ(table->entries[1].pointers[2], tensors[6].address);
}

TEST(MultiTensorTableTest, MismatchedNumelNamesGroupAndArguments) {
  std::vector<TableTensor> tensors = groupsOfSizes({100, 100});
  tensors[4 + 1].numel = 99;
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, kAdamwTensors, 4)),
            "tensor group 1: 'grad' has 99 elements but 'param' has 100");
}

TEST(MultiTensorTableTest, NullPointerIsAnError) {
  std::vector<TableTensor> tensors = groupsOfSizes({10, 10, 10});
  tensors[8 + 2].address = 0;
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, kAdamwTensors, 4)),
            "tensor group 2: 'exp_avg' is a null pointer with 10 elements");
}

TEST(MultiTensorTableTest, BadShapesAndSizesAreErrors) {
  std::vector<TableTensor> tensors = groupsOfSizes({10});
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, kAdamwTensors, 0)),
            "vector width 0; expected at least 1");
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, kAdamwTensors, 4, 0)),
            "chunk size 0; expected a positive element count");
  tensors.pop_back();
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, kAdamwTensors, 4)),
            "3 tensors do not make whole groups of 4");
  std::vector<std::string> nine(9, "t");
  EXPECT_NE(errorOf(buildMultiTensorTable(tensors, nine, 4))
                .find("at most 8 tensors a group"),
            std::string::npos);
  tensors = groupsOfSizes({-1});
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, kAdamwTensors, 4)),
            "tensor group 0: 'param' has negative numel -1");
}

TEST(MultiTensorTableTest, TooManyChunksFailBeforeAllocating) {
  // 2^31 chunks of one element: one more than an int32 entry index allows.
  std::vector<int64_t> sizes = {int64_t(1) << 31};
  std::string message =
      errorOf(buildMultiTensorTable(groupsOfSizes(sizes), kAdamwTensors, 1, 1));
  EXPECT_NE(message.find("2147483648 chunks"), std::string::npos) << message;
  EXPECT_NE(message.find("at most 2^31-1"), std::string::npos) << message;
}

//===----------------------------------------------------------------------===//
// Plan validation: specializeMultiTensor and MultiTensorPlan::create
//===----------------------------------------------------------------------===//

std::string adamwPath() {
  return std::string(KFUSE_SOURCE_DIR) + "/library/optim/adamw.mlir";
}

/// AdamW groups as a caller passes them: four tensors, six hypers a group.
std::vector<LaunchArg> adamwGroups(const std::vector<int64_t> &sizes,
                                   DType param = DType::f32,
                                   DType state = DType::f32) {
  std::vector<LaunchArg> args;
  uintptr_t address = 0x1000000;
  for (int64_t numel : sizes) {
    for (DType dtype : {param, param, state, state}) {
      args.push_back({reinterpret_cast<const void *>(address), numel, dtype});
      address += 0x1000000;
    }
    for (double value : {1e-3, 0.9, 0.999, 1e-8, 1e-2, 0.0})
      args.push_back({nullptr, 0, DType::f32, value});
  }
  return args;
}

std::unique_ptr<Update> loadAdamw() {
  llvm::Expected<std::unique_ptr<Update>> update =
      Update::createFromFile(adamwPath());
  if (!update) {
    ADD_FAILURE() << errorOf(update.takeError());
    return nullptr;
  }
  return std::move(*update);
}

TEST(MultiTensorTableTest, TensorLevelStateIsOneUnalignedFloat) {
  // NovoGrad's groups: param, grad, exp_avg and the running norm, a view of
  // one float of a per-group array (any 4-byte address).
  const std::vector<std::string> names = {"param", "grad", "exp_avg",
                                          "exp_avg_sq"};
  const ArgLevel perTensor[] = {ArgLevel::element, ArgLevel::element,
                                ArgLevel::element, ArgLevel::tensor};
  std::vector<TableTensor> tensors = groupsOfSizes({100, 5000});
  for (int group = 0; group < 2; ++group)
    tensors[group * 4 + 3] = {0x9000004 + 4u * group, 1};
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(tensors, names, 4, 1024, perTensor);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  expectExactCover(*table, {100, 5000}, 4, 1024);
  EXPECT_EQ(table->entries[1].aligned, 1);
  EXPECT_EQ(table->entries[1].pointers[3], 0x9000008u);

  tensors[4 + 3].numel = 5000;
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, names, 4, 1024, perTensor)),
            "tensor group 1: 'exp_avg_sq' is a state at the tensor level: one "
            "f32 a group, got 5000 elements");
  // Without the flag, the same groups are tensors of unequal counts.
  tensors[4 + 3].numel = 1;
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, names, 4, 1024)),
            "tensor group 0: 'exp_avg_sq' has 1 elements but 'param' has 100");
}

TEST(MultiTensorTableTest, MatrixChunksHoldWholeRows) {
  // Adafactor's groups: param and grad rows x cols, a state per row and one
  // per column.
  const std::vector<std::string> names = {"param", "grad", "row_var",
                                          "col_var"};
  const ArgLevel levels[] = {ArgLevel::element, ArgLevel::element,
                             ArgLevel::row, ArgLevel::column};
  const int64_t shapes[][2] = {
      {100, 768}, {3, 50}, {1000, 64}, {0, 7}, {130, 200}};
  std::vector<TableTensor> tensors;
  std::vector<int64_t> cols;
  uint64_t address = 0x10000000;
  for (auto [rows, width] : shapes) {
    for (int64_t numel : {rows * width, rows * width, rows, width}) {
      tensors.push_back({address, numel});
      address += 0x1000000;
    }
    cols.push_back(width);
  }
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(tensors, names, 4, 2048, levels, cols);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  // A 2-D chunk aims at kMatrixChunkScale x 2048 = 12288 elements: 12288 /
  // 768 is 16 rows, raised to 32; 12288 / 64 is 192 rows, cut to 128;
  // 12288 / 200 rounds up to 62 rows; a tensor of 3 rows is one chunk.
  static_assert(kMatrixChunkScale == 6, "the counts below assume it");
  const int64_t rowsPerChunk[] = {32, 32, 128, 1, 62};
  int64_t rowBase = 0, colPartials = 0;
  size_t chunk = 0;
  for (auto [group, shape] : llvm::enumerate(shapes)) {
    const MultiTensorEntry &entry = table->entries[group];
    EXPECT_EQ(entry.cols, shape[1]);
    EXPECT_EQ(entry.rowBase, rowBase);
    EXPECT_EQ(entry.colPartialBase, colPartials);
    EXPECT_EQ(entry.firstChunk, int32_t(chunk));
    for (int64_t row = 0; row < shape[0]; row += rowsPerChunk[group]) {
      ASSERT_LT(chunk, table->chunks.size());
      const MultiTensorChunk &piece = table->chunks[chunk++];
      EXPECT_EQ(piece.entry, int32_t(group));
      EXPECT_EQ(piece.begin, row * shape[1]);
      EXPECT_EQ(piece.end,
                std::min(row + rowsPerChunk[group], shape[0]) * shape[1]);
      colPartials += shape[1];
    }
    rowBase += shape[0];
  }
  EXPECT_EQ(chunk, table->chunks.size());
  EXPECT_EQ(table->totalRows, rowBase);
  EXPECT_EQ(table->totalColPartials, colPartials);

  tensors[4 + 2].numel = 50;
  EXPECT_EQ(
      errorOf(buildMultiTensorTable(tensors, names, 4, 16384, levels, cols)),
      "tensor group 1: 'row_var' has 50 elements but the rows of "
      "'param' number 3");
  tensors[4 + 2].numel = 3;
  tensors[4 + 3].numel = 3;
  EXPECT_EQ(
      errorOf(buildMultiTensorTable(tensors, names, 4, 16384, levels, cols)),
      "tensor group 1: 'col_var' has 3 elements but the row length is "
      "50");
  tensors[4 + 3].numel = 50;
  cols[1] = 7;
  EXPECT_EQ(
      errorOf(buildMultiTensorTable(tensors, names, 4, 16384, levels, cols)),
      "tensor group 1: row length 7 does not divide the 150 elements "
      "of 'param'; a 2-D group needs a positive row length");
  cols[1] = 50;
  EXPECT_EQ(errorOf(buildMultiTensorTable(tensors, names, 4, 16384, levels)),
            "tensor group 0: 'row_var' holds a value per row or per column, "
            "which needs each group's row length");
}

TEST(MultiTensorPlanTest, SpecializesOnDTypesOnly) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> groups =
      adamwGroups({100, 7, 0, 1 << 20}, DType::bf16, DType::f32);
  groups[10].data =
      static_cast<const char *>(groups[10].data) + 2; // misaligned
  llvm::Expected<Specialization> spec =
      specializeMultiTensor(update->args(), groups, 4);
  ASSERT_TRUE(bool(spec)) << errorOf(spec.takeError());
  EXPECT_EQ(spec->paramDType, DType::bf16);
  EXPECT_EQ(spec->gradDType, DType::bf16);
  EXPECT_EQ(spec->stateDType, DType::f32);
  EXPECT_EQ(spec->numel, -1);
  EXPECT_EQ(spec->alignment, 16u);
}

TEST(MultiTensorPlanTest, DifferentDTypesAcrossGroupsAreAnError) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> groups = adamwGroups(std::vector<int64_t>(9, 64));
  for (int i = 0; i < 2; ++i)
    groups[7 * 10 + i].dtype = DType::bf16; // group 7's param and grad
  EXPECT_EQ(errorOf(specializeMultiTensor(update->args(), groups, 9)),
            "tensor group 7: param 'param' is bf16 but group 0's is f32; "
            "make one plan per dtype");
  // Two states of two dtypes are fine when every group has them so.
  groups = adamwGroups(std::vector<int64_t>(3, 64));
  for (int group = 0; group < 3; ++group)
    groups[group * 10 + 3].dtype = DType::f16;
  llvm::Expected<Specialization> spec =
      specializeMultiTensor(update->args(), groups, 3);
  ASSERT_TRUE(bool(spec)) << errorOf(spec.takeError());
  EXPECT_EQ(spec->argDTypes[2], DType::f32);
  EXPECT_EQ(spec->argDTypes[3], DType::f16);
  groups[2 * 10 + 3].dtype = DType::f32;
  EXPECT_EQ(errorOf(specializeMultiTensor(update->args(), groups, 3)),
            "tensor group 2: state 'exp_avg_sq' is f32 but group 0's is f16; "
            "make one plan per dtype");
}

TEST(MultiTensorPlanTest, GroupErrorsNameTheGroup) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> groups = adamwGroups({64, 64, 64});
  groups[2 * 10 + 3].numel = 63;
  EXPECT_EQ(errorOf(specializeMultiTensor(update->args(), groups, 3)),
            "tensor group 2: 'exp_avg_sq' has 63 elements but 'param' has 64");
  groups = adamwGroups({64, 64});
  groups[10 + 1].data = nullptr;
  EXPECT_EQ(errorOf(specializeMultiTensor(update->args(), groups, 2)),
            "tensor group 1: 'grad' is a null pointer with 64 elements");
  EXPECT_EQ(errorOf(specializeMultiTensor(update->args(), {}, 0)),
            "a multi-tensor plan needs at least one tensor group");
  groups = adamwGroups({64, 64});
  EXPECT_EQ(errorOf(specializeMultiTensor(update->args(), groups, 3)),
            "expected 3 groups of 10 arguments, got 20 arguments");
  // Hyper slots are ignored, even when they carry a pointer.
  groups[10 + 4].data = reinterpret_cast<const void *>(0x10);
  EXPECT_TRUE(bool(specializeMultiTensor(update->args(), groups, 2)));
}

TEST(MultiTensorPlanTest, GatherFollowsTensorArgOrder) {
  std::vector<LaunchArg> groups = adamwGroups({5, 6});
  std::vector<TableTensor> tensors =
      gatherTableTensors(groups, 10, {3, 0, 1, 2});
  ASSERT_EQ(tensors.size(), 8u);
  EXPECT_EQ(tensors[0].address, reinterpret_cast<uintptr_t>(groups[3].data));
  EXPECT_EQ(tensors[1].address, reinterpret_cast<uintptr_t>(groups[0].data));
  EXPECT_EQ(tensors[4].address, reinterpret_cast<uintptr_t>(groups[13].data));
  EXPECT_EQ(tensors[7].numel, 6);
}

using kfuse::testing::haveGpu;

TEST(MultiTensorPlanTest, CreateWithoutGpuReportsNoDriver) {
  if (haveGpu())
    GTEST_SKIP() << "a CUDA driver is present";
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> groups = adamwGroups({1000, 24});
  std::vector<double> hypers(10, 0.0);
  for (bool gradScaling : {false, true}) {
    MultiTensorPlanOptions options;
    options.gradScaling = gradScaling;
    llvm::Expected<std::unique_ptr<MultiTensorPlan>> plan =
        MultiTensorPlan::create(*update, groups, 2, hypers, options);
    ASSERT_FALSE(bool(plan));
    auto [code, message] = takeMessage(plan.takeError());
    EXPECT_TRUE(code == ErrorCode::NoDriver || code == ErrorCode::NoDevice)
        << message;
    EXPECT_TRUE(message.rfind("no CUDA driver", 0) == 0 ||
                message.rfind("no CUDA device", 0) == 0)
        << message;
  }
}

TEST(MultiTensorPlanTest, BadGroupsFailBeforeTheDriver) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  std::vector<LaunchArg> groups = adamwGroups({1000, 24});
  groups[10].dtype = DType::bf16;
  llvm::Expected<std::unique_ptr<MultiTensorPlan>> plan =
      MultiTensorPlan::create(*update, groups, 2, std::vector<double>(10));
  ASSERT_FALSE(bool(plan));
  auto [code, message] = takeMessage(plan.takeError());
  EXPECT_EQ(code, ErrorCode::InvalidArgument);
  EXPECT_EQ(message, "tensor group 1: param 'param' is bf16 but group 0's is "
                     "f32; make one plan per dtype");
  plan = MultiTensorPlan::create(*update, adamwGroups({4}), 1,
                                 std::vector<double>(3));
  EXPECT_EQ(errorOf(std::move(plan)),
            "expected 10 initial hyperparameter values (one per argument), "
            "got 3");
}

TEST(MultiTensorPlanTest, CacheKeyTellsMultiTensorApart) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  Specialization spec;
  PipelineOptions plain, multi, scaled;
  multi.multiTensor = true;
  scaled.multiTensor = true;
  scaled.gradScaling = true;
  std::string a = compileCacheKey(update->text(), spec, "sm_90", plain);
  std::string b = compileCacheKey(update->text(), spec, "sm_90", multi);
  std::string c = compileCacheKey(update->text(), spec, "sm_90", scaled);
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_NE(a, c);
}

TEST(MultiTensorPlanTest, SingleLaunchRefusesMultiTensorOptions) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  PipelineOptions multi;
  multi.multiTensor = true;
  std::vector<LaunchArg> args = adamwGroups({16});
  std::string message = errorOf(update->launch(args, nullptr, multi));
  EXPECT_NE(message.find("MultiTensorPlan"), std::string::npos) << message;
}

/// The parameters of `.entry name(...)` in `ptx`, by PTX type (".u64").
std::vector<std::string> ptxEntryParams(llvm::StringRef ptx,
                                        llvm::StringRef name) {
  std::vector<std::string> types;
  size_t at = ptx.find((".entry " + name + "(").str());
  if (at == llvm::StringRef::npos)
    return types;
  llvm::StringRef params = ptx.drop_front(at);
  params = params.take_until([](char c) { return c == ')'; });
  while (true) {
    size_t param = params.find(".param ");
    if (param == llvm::StringRef::npos)
      break;
    params = params.drop_front(param + 7);
    types.push_back(params.take_until([](char c) { return c == ' '; }).str());
  }
  return types;
}

TEST(MultiTensorPlanTest, GeneratedKernelsTakeTheLaunchedSignature) {
  std::unique_ptr<Update> update = loadAdamw();
  ASSERT_TRUE(update);
  struct Case {
    DType param;
    bool gradScaling;
  };
  for (Case c : {Case{DType::f32, false}, Case{DType::f32, true},
                 Case{DType::bf16, false}}) {
    SCOPED_TRACE(std::string(dtypeName(c.param)) +
                 (c.gradScaling ? " grad scaling" : ""));
    llvm::Expected<Specialization> spec = specializeMultiTensor(
        update->args(), adamwGroups({100, 3}, c.param, DType::f32), 2);
    ASSERT_TRUE(bool(spec)) << errorOf(spec.takeError());
    PipelineOptions options;
    options.multiTensor = true;
    options.gradScaling = c.gradScaling;
    llvm::Expected<KernelPlan> plan =
        compileToPlan(update->text(), "adamw.mlir", *spec, options);
    ASSERT_TRUE(bool(plan)) << errorOf(plan.takeError());
    EXPECT_EQ(
        errorOf(checkMultiTensorPlan(*plan, update->args(), c.gradScaling)),
        "<no error>");
    ASSERT_EQ(plan->args.size(), 10u + c.gradScaling);
    if (c.gradScaling) {
      EXPECT_EQ(plan->args.back().name, "inv_scale");
      EXPECT_EQ(plan->args.back().role, ArgRole::hyper);
      EXPECT_EQ(plan->args.back().defaultValue.value_or(0), 1.0);
    }
    EXPECT_EQ(plan->stepArg, 9);
    unsigned ps = dtypeSize(c.param);
    EXPECT_EQ(plan->bytesPerElement(), 3 * ps + 16 + (c.gradScaling ? ps : 0));

    // What the runtime passes: six 8-byte values to the update kernel,
    // five to the scan (codegen/KernelPlan.h).
    NvrtcOptions nvrtc;
    nvrtc.arch = "sm_90";
    nvrtc.ptxOnly = true;
    llvm::Expected<NvrtcResult> compiled =
        compileWithNvrtc(plan->source, "adamw.cu", nvrtc);
    ASSERT_TRUE(bool(compiled)) << errorOf(compiled.takeError());
    unsigned scans = 0;
    for (const KernelInfo &kernel : plan->kernels) {
      bool scan = kernel.role == KernelInfo::Role::FoundInfScan;
      scans += scan;
      std::vector<std::string> params =
          ptxEntryParams(compiled->ptx, kernel.name);
      EXPECT_EQ(params, std::vector<std::string>(scan ? 5 : 6, ".u64"))
          << kernel.name;
    }
    EXPECT_EQ(scans, c.gradScaling ? 1u : 0u);
  }
}

TEST(MultiTensorPlanTest, MatrixPlanCarriesLevelsAndItsWorkspaces) {
  // Adafactor's factored form over a 3 x 8 and a 100 x 64 matrix.
  llvm::Expected<std::unique_ptr<Update>> update = Update::createFromFile(
      std::string(KFUSE_SOURCE_DIR) + "/library/optim/adafactor.mlir");
  ASSERT_TRUE(bool(update)) << errorOf(update.takeError());
  ASSERT_TRUE((*update)->isMatrix());
  std::vector<LaunchArg> groups;
  std::vector<int64_t> cols;
  uintptr_t address = 0x1000000;
  for (auto [rows, width] : {std::pair<int64_t, int64_t>{3, 8}, {100, 64}}) {
    for (int64_t numel : {rows * width, rows * width, rows, width}) {
      groups.push_back({reinterpret_cast<const void *>(address), numel});
      address += 0x1000000;
    }
    for (unsigned hyper = 0; hyper < 7; ++hyper)
      groups.push_back({nullptr, 0, DType::f32, 1.0});
    cols.push_back(width);
  }
  llvm::Expected<Specialization> spec =
      specializeMultiTensor((*update)->args(), groups, 2, cols);
  ASSERT_TRUE(bool(spec)) << errorOf(spec.takeError());
  // Without the row lengths the states per row cannot be told apart.
  EXPECT_EQ(
      errorOf(specializeMultiTensor((*update)->args(), groups, 2).takeError()),
      "tensor group 0: 'row_var' holds a value per row or per column, "
      "which needs each group's row length");

  llvm::Expected<KernelPlan> plan =
      compileToPlan((*update)->text(), "adafactor.mlir", *spec, {});
  ASSERT_TRUE(bool(plan)) << errorOf(plan.takeError());
  EXPECT_EQ(errorOf(checkMultiTensorPlan(*plan, (*update)->args(), false)),
            "<no error>");
  EXPECT_TRUE(plan->matrix);
  ASSERT_EQ(plan->args.size(), 11u);
  EXPECT_EQ(plan->args[0].level, ArgLevel::element);
  EXPECT_EQ(plan->args[2].level, ArgLevel::row);
  EXPECT_EQ(plan->args[3].level, ArgLevel::column);
  // g^2 per row and per column; p^2, the new rows and u^2 per tensor.
  EXPECT_EQ(plan->numRowReductions, 1u);
  EXPECT_EQ(plan->numColReductions, 1u);
  EXPECT_EQ(plan->numReductions, 3u);
  ASSERT_EQ(plan->kernels.size(), 1u);
  EXPECT_EQ(plan->kernels[0].phases, 4u);

  // What the runtime passes to the cooperative kernel: the table, hypers,
  // found_inf, done counter, the reduction workspace, the row totals and
  // column partials, and the barrier (codegen/KernelPlan.h).
  NvrtcOptions nvrtc;
  nvrtc.arch = "sm_90";
  nvrtc.ptxOnly = true;
  llvm::Expected<NvrtcResult> compiled =
      compileWithNvrtc(plan->source, "adafactor.cu", nvrtc);
  ASSERT_TRUE(bool(compiled)) << errorOf(compiled.takeError());
  EXPECT_EQ(ptxEntryParams(compiled->ptx, plan->kernels[0].name),
            std::vector<std::string>(12, ".u64"));

  std::vector<std::string> names;
  std::vector<ArgLevel> levels;
  for (unsigned index : plan->tensorArgs) {
    names.push_back(plan->args[index].name);
    levels.push_back(plan->args[index].level);
  }
  llvm::Expected<MultiTensorTable> table =
      buildMultiTensorTable(gatherTableTensors(groups, 11, plan->tensorArgs),
                            names, 4, kDefaultChunkElements, levels, cols);
  ASSERT_TRUE(bool(table)) << errorOf(table.takeError());
  EXPECT_EQ(table->totalRows, 103);
  // One chunk of 3 rows, then chunks of 128 rows: one for 100.
  EXPECT_EQ(table->totalColPartials, 8 + 64);
}

TEST(MultiTensorPlanTest, MatrixPlanScansGradsInItsFirstPhase) {
  // GradScaler (and maximize, a multiplier of -1) on Adafactor's matrices:
  // inv_scale multiplies every grad read, and the first phase, which reads
  // every grad and writes nothing, sets found_inf; the later phases skip.
  llvm::Expected<std::unique_ptr<Update>> update = Update::createFromFile(
      std::string(KFUSE_SOURCE_DIR) + "/library/optim/adafactor.mlir");
  ASSERT_TRUE(bool(update)) << errorOf(update.takeError());
  Specialization spec;
  spec.numel = -1;
  PipelineOptions options;
  options.gradScaling = true;
  for (bool gridBarrier : {true, false}) {
    options.gridBarrier = gridBarrier;
    llvm::Expected<KernelPlan> plan =
        compileToPlan((*update)->text(), "adafactor.mlir", spec, options);
    ASSERT_TRUE(bool(plan)) << errorOf(plan.takeError());
    EXPECT_TRUE(plan->matrix);
    EXPECT_TRUE(plan->checksFoundInf);
    EXPECT_EQ(
        errorOf(checkMultiTensorPlan(*plan,
                                     planArgInfos((*update)->args(),
                                                  /*masterWeights=*/false),
                                     /*gradScaling=*/true)),
        "<no error>");
    // The scan kernel first, for a step in parts; then the phases.
    ASSERT_EQ(plan->kernels.size(), gridBarrier ? 2u : 5u);
    EXPECT_EQ(plan->kernels[0].role, KernelInfo::Role::FoundInfScan);
    EXPECT_TRUE(plan->kernels[1].setsFoundInf);
    EXPECT_EQ(plan->args.back().name, "inv_scale");
    EXPECT_NE(
        plan->source.find("kfuse_nonfinite |= !kfuse_finite_f32(grad_in)"),
        std::string::npos);
    NvrtcOptions nvrtc;
    nvrtc.arch = "sm_90";
    nvrtc.ptxOnly = true;
    llvm::Expected<NvrtcResult> compiled =
        compileWithNvrtc(plan->source, "adafactor.cu", nvrtc);
    EXPECT_TRUE(bool(compiled)) << errorOf(compiled.takeError());
  }
}

} // namespace

TEST(MultiTensorPlanArgsTest, MasterWeightsAppendOneModelCopyPerParam) {
  std::vector<ArgInfo> update = {
      {"param", ArgRole::param, DType::f32, std::nullopt},
      {"grad", ArgRole::grad, DType::f32, std::nullopt},
      {"exp_avg", ArgRole::state, DType::f32, std::nullopt},
      {"lr", ArgRole::hyper, DType::f32, 1e-3}};
  EXPECT_EQ(planArgInfos(update, /*masterWeights=*/false).size(), 4u);
  std::vector<ArgInfo> withCopies = planArgInfos(update, true);
  ASSERT_EQ(withCopies.size(), 5u);
  EXPECT_EQ(withCopies[4].name, "param_model");
  EXPECT_EQ(withCopies[4].role, ArgRole::model);
  EXPECT_FALSE(withCopies[4].defaultValue.has_value());
}
