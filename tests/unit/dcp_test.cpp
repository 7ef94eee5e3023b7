// torch.distributed.checkpoint's .metadata, written here opcode by opcode as dcp.save pickles it (dataclasses as
// NEWOBJ + BUILD of their fields, torch.Size as a REDUCE; tests/e2e/test_dcp.py reads what torch itself writes),
// and how a DCP folder is discovered.
#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "precdetect/discover/discover.h"
#include "precdetect/load/dcp/dcp_metadata.h"
#include "precdetect/load/pickle/pickle_globals.h"
#include "test_util.h"

namespace precdetect {
namespace {

using namespace std::string_literals;
using testing::unicode;

const std::string kMeta = "torch.distributed.checkpoint.metadata";

std::string global(const std::string& module, const std::string& name) { return "c" + module + "\n" + name + "\n"; }

/// BININT: a little-endian int32.
std::string integer(int32_t value) {
  std::string bytes = "J";
  for (int i = 0; i < 4; ++i) bytes += static_cast<char>((static_cast<uint32_t>(value) >> (8 * i)) & 0xFF);
  return bytes;
}

/// A dataclass instance: NEWOBJ on no arguments, then BUILD with a dict of its fields.
std::string instance(const std::string& module, const std::string& name, const std::string& fields) {
  return global(module, name) + ")\x81}(" + fields + "ub";
}

/// torch.Size((dims...)).
std::string torch_size(const std::vector<int32_t>& dims) {
  std::string items;
  for (int32_t dim : dims) items += integer(dim);
  return global("torch", "Size") + "((" + items + "ttR";
}

std::string chunk(const std::vector<int32_t>& offsets, const std::vector<int32_t>& sizes) {
  return instance(kMeta, "ChunkStorageMetadata",
                  unicode("offsets") + torch_size(offsets) + unicode("sizes") + torch_size(sizes));
}

std::string tensor(const std::string& fqn, const std::vector<int32_t>& size, const std::vector<std::string>& chunks) {
  std::string list = "](";
  for (const std::string& item : chunks) list += item;
  return unicode(fqn) +
         instance(kMeta, "TensorStorageMetadata", unicode("size") + torch_size(size) + unicode("chunks") + list + "e");
}

std::string object(const std::string& fqn) { return unicode(fqn) + global(kMeta, "BytesStorageMetadata") + ")\x81"; }

/// A storage_data entry: MetadataIndex(fqn, offsets) (None for an object) -> _StorageInfo(file, offset, length).
std::string stored(const std::string& fqn, const std::optional<std::vector<int32_t>>& offsets, const std::string& file,
                   int32_t offset, int32_t length, const std::string& more = "") {
  std::string index = unicode("fqn") + unicode(fqn) + unicode("offset") + (offsets ? torch_size(*offsets) : "N");
  return instance(kMeta, "MetadataIndex", index) +
         instance("torch.distributed.checkpoint.filesystem", "_StorageInfo",
                  unicode("relative_path") + unicode(file) + unicode("offset") + integer(offset) + unicode("length") +
                      integer(length) + more);
}

std::string metadata(const std::string& entries, const std::string& storage) {
  return "\x80\x02" +
         instance(
             kMeta, "Metadata",
             unicode("state_dict_metadata") + "}(" + entries + "u" + unicode("storage_data") + "}(" + storage + "u") +
         ".";
}

DcpMetadata read(const std::string& bytes) {
  return read_dcp_metadata({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "ckpt/.metadata");
}

void expect_error(const std::string& bytes, ErrorCode code, const std::string& detail) {
  try {
    read(bytes);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find("ckpt/.metadata: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

// "w" of shape [4, 3] in two row halves, one per rank's file, and the step as an object.
const std::string kTwoRanks =
    metadata(tensor("model.w", {4, 3}, {chunk({0, 0}, {2, 3}), chunk({2, 0}, {2, 3})}) + object("step"),
             stored("model.w", std::vector<int32_t>{0, 0}, "__0_0.distcp", 0, 1577) +
                 stored("model.w", std::vector<int32_t>{2, 0}, "__1_0.distcp", 1261, 1577) +
                 stored("step", std::nullopt, "__1_0.distcp", 0, 1261));

TEST(DcpMetadata, ReadsWhereEachChunkLies) {
  DcpMetadata read_back = read(kTwoRanks);
  ASSERT_EQ(read_back.tensors.size(), 1u);
  const DcpTensor& w = read_back.tensors[0];
  EXPECT_EQ(w.fqn, "model.w");
  EXPECT_EQ(w.size, (std::vector<int64_t>{4, 3}));
  ASSERT_EQ(w.chunks.size(), 2u);
  EXPECT_EQ(w.chunks[1].offsets, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(w.chunks[1].sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.chunks[1].archive.file, "__1_0.distcp");
  EXPECT_EQ(w.chunks[1].archive.offset, 1261u);
  EXPECT_EQ(w.chunks[1].archive.length, 1577u);
  ASSERT_EQ(read_back.objects.size(), 1u);
  EXPECT_EQ(read_back.objects[0].fqn, "step");
  EXPECT_EQ(read_back.objects[0].archive.length, 1261u);
  EXPECT_EQ(read_back.files, (std::vector<std::string>{"__0_0.distcp", "__1_0.distcp"}));
}

TEST(DcpMetadata, ChunksMustTileTheirTensor) {
  auto one_tensor = [](const std::vector<int32_t>& size, const std::vector<std::vector<int32_t>>& boxes) {
    std::string chunks, storage;
    for (size_t i = 0; i < boxes.size(); i += 2) {
      chunks += chunk(boxes[i], boxes[i + 1]);
      storage += stored("w", boxes[i], "__0_0.distcp", static_cast<int32_t>(i) * 100, 100);
    }
    return metadata(tensor("w", size, {chunks}), storage);
  };
  EXPECT_EQ(read(one_tensor({4, 3}, {{0, 0}, {4, 2}, {0, 2}, {4, 1}})).tensors[0].chunks.size(), 2u);  // columns
  expect_error(one_tensor({4, 3}, {{0, 0}, {3, 3}, {2, 0}, {2, 3}}), ErrorCode::kInvalidDcp,
               "chunks at [0, 0] and [2, 0] of tensor `w` overlap");
  expect_error(one_tensor({4, 3}, {{0, 0}, {2, 3}, {3, 0}, {1, 3}}), ErrorCode::kInvalidDcp,
               "the chunks of tensor `w` cover 9 of its 12 elements: a gap");
  expect_error(one_tensor({4, 3}, {{0, 0}, {4, 3}, {4, 0}, {1, 3}}), ErrorCode::kInvalidDcp,
               "chunk at [4, 0] of tensor `w` of shape [4, 3] reaches outside it");
  expect_error(one_tensor({4, 3}, {{0}, {4}}), ErrorCode::kInvalidDcp, "another rank than the tensor");
  expect_error(one_tensor({}, {{}, {}, {}, {}}), ErrorCode::kInvalidDcp,  // a scalar stored twice
               "tensor `w` has two storage entries at offset []");
}

TEST(DcpMetadata, EntriesMustNameAStorageInTheFolder) {
  expect_error(metadata(tensor("w", {2}, {chunk({0}, {2})}), ""), ErrorCode::kInvalidDcp,
               "`w` at offset [0] has no storage entry");
  expect_error(metadata(tensor("w", {2}, {chunk({0}, {2})}), stored("w", std::vector<int32_t>{0}, "../x.distcp", 0, 9)),
               ErrorCode::kInvalidDcp, "tensor `w` is stored in `../x.distcp`, which is no file of this folder");
  auto transforms = [](const std::vector<std::string>& names) {
    std::string list = unicode("transform_descriptors") + "](";
    for (const std::string& name : names) list += unicode(name);
    return list + "e";
  };
  for (const auto& names : std::vector<std::vector<std::string>>{{"zstd"}, {"stream.zstd/2"}, {"stream.zstd/1", "x"}})
    expect_error(metadata(object("step"), stored("step", std::nullopt, "__0_0.distcp", 0, 9, transforms(names))),
                 ErrorCode::kCompressedEntry, "tensor `step` is written through the stream transforms [");
  for (const std::string& zstd : {"stream.zstd/1", "stream.zstd/1.2"}) {
    DcpMetadata read_back =
        read(metadata(object("step"), stored("step", std::nullopt, "__0_0.distcp", 0, 9, transforms({zstd}))));
    EXPECT_TRUE(read_back.objects.at(0).archive.zstd) << zstd;
  }
  EXPECT_FALSE(read(kTwoRanks).objects.at(0).archive.zstd);
}

TEST(DcpMetadata, AnythingButAMetadataObjectIsRefused) {
  expect_error("\x80\x02}."s, ErrorCode::kInvalidDcp, "the pickled object is not a " + kMeta + ".Metadata");
  expect_error(metadata(unicode("w") + integer(3), ""), ErrorCode::kInvalidDcp,
               "`w` is not a " + kMeta + ".TensorStorageMetadata");
  expect_error(kTwoRanks.substr(0, kTwoRanks.size() / 2), ErrorCode::kInvalidPickle, "");  // cut short
}

TEST(DcpMetadata, ItsClassesAreJudgedSafeAndNothingBeside) {
  for (std::string name : {"Metadata", "TensorStorageMetadata", "ChunkStorageMetadata", "MetadataIndex",
                           "BytesStorageMetadata", "TensorProperties", "_MEM_FORMAT_ENCODING", "StorageMeta"})
    EXPECT_EQ(judge_global(kMeta, name).kind, GlobalClass::kAllowed) << name;
  EXPECT_EQ(judge_global("torch.distributed.checkpoint.filesystem", "_StorageInfo").kind, GlobalClass::kAllowed);
  EXPECT_EQ(judge_global("pathlib", "PosixPath").kind, GlobalClass::kAllowed);
  EXPECT_EQ(judge_global("pathlib._local", "PosixPath").kind, GlobalClass::kAllowed);
  EXPECT_EQ(judge_global(kMeta, "os").kind, GlobalClass::kUnknown);
  EXPECT_EQ(judge_global("pathlib", "Path").kind, GlobalClass::kUnknown);
  EXPECT_EQ(judge_global("torch.distributed.checkpoint.filesystem", "FileSystemReader").kind, GlobalClass::kUnknown);
  EXPECT_EQ(judge_global("pathlib", "os.system").kind, GlobalClass::kDangerous);
}

/// One rank's metadata of a folder saved without collectives: `w`'s rows [row, row + rows), `b` whole (replicated
/// on every rank) and the step, all in the rank's own file.
std::string rank_metadata(int32_t rank, int32_t row, int32_t rows, int32_t b_size = 2) {
  std::string file = "__" + std::to_string(rank) + "_0.distcp";
  return metadata(tensor("w", {4, 3}, {chunk({row, 0}, {rows, 3})}) + tensor("b", {b_size}, {chunk({0}, {b_size})}) +
                      object("step"),
                  stored("w", std::vector<int32_t>{row, 0}, file, 0, 100) +
                      stored("b", std::vector<int32_t>{0}, file, 100, 100) +
                      stored("step", std::nullopt, file, 200, 10));
}

/// The ranks' metadata read as rank-local files (`ckpt/__N.metadata`) and joined.
DcpMetadata join(const std::vector<std::string>& ranks) {
  std::vector<DcpMetadata> read;
  std::vector<std::filesystem::path> paths;
  for (const std::string& bytes : ranks) {
    paths.emplace_back("ckpt/__" + std::to_string(paths.size()) + ".metadata");
    read.push_back(
        read_dcp_metadata({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, paths.back(), false));
  }
  return join_dcp_ranks(std::move(read), paths);
}

void expect_join_error(const std::vector<std::string>& ranks, const std::string& detail) {
  try {
    join(ranks);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidDcp) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

TEST(DcpRanks, EachRanksChunksAreJoinedAndReplicatedOnesReadOnce) {
  DcpMetadata joined = join({rank_metadata(0, 0, 1), rank_metadata(1, 1, 3)});
  ASSERT_EQ(joined.tensors.size(), 2u);
  EXPECT_EQ(joined.tensors[0].fqn, "w");
  ASSERT_EQ(joined.tensors[0].chunks.size(), 2u);
  EXPECT_EQ(joined.tensors[0].chunks[1].archive.file, "__1_0.distcp");
  EXPECT_EQ(joined.tensors[0].chunks[1].offsets, (std::vector<int64_t>{1, 0}));
  ASSERT_EQ(joined.tensors[1].chunks.size(), 1u);  // b: rank 0's copy
  EXPECT_EQ(joined.tensors[1].chunks[0].archive.file, "__0_0.distcp");
  ASSERT_EQ(joined.objects.size(), 1u);
  EXPECT_EQ(joined.objects[0].archive.file, "__0_0.distcp");
  EXPECT_EQ(joined.files, (std::vector<std::string>{"__0_0.distcp", "__1_0.distcp"}));
}

TEST(DcpRanks, OneRanksChunksNeedNotCoverTheirTensorButAllRanksMust) {
  std::string half = rank_metadata(0, 0, 2);
  EXPECT_EQ(
      read_dcp_metadata({reinterpret_cast<const std::byte*>(half.data()), half.size()}, "ckpt/__0.metadata", false)
          .tensors[0]
          .chunks.size(),
      1u);
  expect_join_error({half}, "cover 6 of its 12 elements: a gap");
  expect_join_error({rank_metadata(0, 0, 3), rank_metadata(1, 2, 2)}, "overlap");
  expect_join_error({rank_metadata(0, 0, 2), rank_metadata(1, 2, 2, 3)},
                    "ckpt/__1.metadata: tensor `b` is of shape [3] here, [2] in the metadata of a lower rank");
  std::string step_as_tensor =
      metadata(tensor("step", {1}, {chunk({0}, {1})}), stored("step", std::vector<int32_t>{0}, "__1_0.distcp", 0, 10));
  expect_join_error({rank_metadata(0, 0, 4), step_as_tensor}, "`step` is a tensor here, and no tensor");
}

class DcpFolder : public testing::TempDir {};

TEST_F(DcpFolder, SavedWithoutCollectivesIsOpenedThroughRankZerosMetadata) {
  write("ckpt/__0.metadata", rank_metadata(0, 0, 2));
  write("ckpt/__1.metadata", rank_metadata(1, 2, 2));
  write("ckpt/__0_0.distcp", "");
  write("ckpt/__1_0.distcp", "");
  ModelSource source = discover((root_ / "ckpt").string(), root_);
  EXPECT_EQ(source.files, std::vector<std::filesystem::path>{root_ / "ckpt" / "__0.metadata"});
  EXPECT_EQ(models_in((root_ / "ckpt").string(), root_), std::vector<std::string>{(root_ / "ckpt").string()});
  write("ckpt/.metadata", kTwoRanks);  // dcp.load reads the global metadata first
  EXPECT_EQ(discover((root_ / "ckpt").string(), root_).files,
            std::vector<std::filesystem::path>{root_ / "ckpt" / ".metadata"});
}

TEST_F(DcpFolder, IsOneModelOpenedThroughItsMetadata) {
  write("ckpt/.metadata", kTwoRanks);
  write("ckpt/__0_0.distcp", "");
  write("ckpt/__1_0.distcp", "");
  ModelSource source = discover((root_ / "ckpt").string(), root_);
  EXPECT_EQ(source.files, std::vector<std::filesystem::path>{root_ / "ckpt" / ".metadata"});
  EXPECT_EQ(models_in((root_ / "ckpt").string(), root_), std::vector<std::string>{(root_ / "ckpt").string()});
  EXPECT_TRUE(may_hold_model(root_ / "ckpt"));
}

TEST_F(DcpFolder, DataFilesWithoutTheirMetadataAreNamed) {
  write("ckpt/__0_0.distcp", "");
  write("ckpt/__1_0.distcp", "");
  try {
    discover((root_ / "ckpt").string(), root_);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidDcp) << e.what();
    EXPECT_NE(std::string(e.what()).find("without the .metadata"), std::string::npos) << e.what();
  }
}

TEST_F(DcpFolder, AMetadataFileAloneIsNoCheckpoint) {
  write("ckpt/.metadata", kTwoRanks);
  write("ckpt/model.safetensors", testing::safetensors_bytes("{}"));
  ModelSource source = discover((root_ / "ckpt").string(), root_);
  EXPECT_EQ(source.files, std::vector<std::filesystem::path>{root_ / "ckpt" / "model.safetensors"});
  EXPECT_TRUE(source.other_formats.empty());
}

}  // namespace
}  // namespace precdetect
