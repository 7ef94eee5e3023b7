// HDF5's client side: what precdetect checks of the description the helper program precdetect-hdf5 gives it
// (load/hdf5/hdf5.cpp), with a stand-in helper that describes whatever a test asks, as a helper running libhdf5 on
// a damaged file might. Files h5py wrote are read through the real helper in tests/e2e/test_formats.py.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "precdetect/core/error.h"
#include "precdetect/load/hdf5/hdf5.h"
#include "test_util.h"

namespace precdetect {
namespace {

/// A folder holding a precdetect-hdf5 that answers `describe` with `description` (and `read` by failing), named
/// by PRECDETECT_HELPERS while the test runs.
class StandInHelper : public testing::TempDir {
 protected:
  void SetUp() override {
    TempDir::SetUp();
    ::setenv("PRECDETECT_HELPERS", root_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("PRECDETECT_HELPERS");
    TempDir::TearDown();
  }

  /// The helper prints `description` for `describe`; `script` replaces its whole body when given.
  void answer(const std::string& description, const std::string& script = "") {
    write("description.json", description);
    write("precdetect-hdf5",
          "#!/bin/sh\n" + (script.empty() ? "[ \"$1\" = describe ] && exec cat \"$(dirname \"$0\")/description.json\"\n"
                                            "exit 1\n"
                                          : script));
    std::filesystem::permissions(root_ / "precdetect-hdf5", std::filesystem::perms::owner_all);
  }

  /// read_hdf5 of a 64-byte file named m.h5.
  Checkpoint read() {
    Checkpoint checkpoint;
    checkpoint.files.push_back(memory_source(std::string(64, '\0'), "m.h5"));
    read_hdf5(checkpoint, 0);
    return checkpoint;
  }

  /// (code, message) of read()'s error.
  std::pair<ErrorCode, std::string> error() {
    try {
      read();
    } catch (const Error& e) {
      return {e.code(), e.what()};
    }
    return {ErrorCode::kInternal, "no error"};
  }
};

/// One dataset's description, as precdetect-hdf5 writes it.
std::string dataset(const std::string& name, const std::string& shape, uint64_t stored, const std::string& address,
                    const std::string& dtype = "F32") {
  return R"({"name": ")" + name + R"(", "type_class": 1, "dtype": ")" + dtype + R"(", "shape": )" + shape +
         R"(, "big_endian": false, "stored": )" + std::to_string(stored) + R"(, "address": )" + address + "}";
}

std::string walk(const std::string& datasets, int userblock = 0) {
  return R"({"userblock": )" + std::to_string(userblock) + R"(, "datasets": [)" + datasets + "]}";
}

TEST_F(StandInHelper, AContiguousDatasetIsReadWhereTheHelperSaysItLies) {
  answer(walk(dataset("dense/kernel:0", "[2, 3]", 24, "40") + R"(, {"name": "flags", "type_class": 8})"));
  Checkpoint checkpoint = read();
  ASSERT_EQ(checkpoint.tensors.size(), 1u);
  const TensorRecord& kernel = checkpoint.tensors[0];
  EXPECT_EQ(kernel.name, "dense/kernel:0");
  EXPECT_EQ(kernel.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(kernel.offset, 40u);
  EXPECT_EQ(kernel.nbytes, 24u);
  ASSERT_EQ(checkpoint.warnings.size(), 1u);  // the enum is listed, never read as numbers
  EXPECT_EQ(checkpoint.warnings[0].code, WarningCode::kDtypesNotRead);
  EXPECT_NE(checkpoint.warnings[0].message().find("flags (HDF5 type class 8)"), std::string::npos)
      << checkpoint.warnings[0].message();
}

TEST_F(StandInHelper, BytesPastTheFileAreRefusedBeforeAnyIsViewed) {
  answer(walk(dataset("w", "[2, 3]", 24, "48")));
  EXPECT_EQ(error(), std::pair(ErrorCode::kOffsetPastEnd,
                               std::string("m.h5: dataset `w`: 24 bytes at 48 lie past the HDF5 file's 64 bytes")));
  answer(walk(dataset("w", "[2]", 8, "18446744073709551612")));
  EXPECT_EQ(error(), std::pair(ErrorCode::kOffsetPastEnd,
                               std::string("m.h5: dataset `w`: 8 bytes at 18446744073709551612 lie past the HDF5 "
                                           "file's 64 bytes")));
}

TEST_F(StandInHelper, ShapesThatOverflowAreNamed) {
  answer(walk(dataset("w", "[4294967296, 4294967296]", 0, "null")));
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5, std::string("m.h5: dataset `w`: element count overflows")));
  answer(walk(dataset("w", "[9223372036854775808]", 0, "null")));
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5, std::string("m.h5: dataset `w`: element count overflows")));
  answer(walk(dataset("w", "[4611686018427387904]", 0, "null")));
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5, std::string("m.h5: dataset `w`: byte size overflows")));
}

TEST_F(StandInHelper, ADtypeThatIsNoneOfOursIsNamed) {
  answer(walk(dataset("w", "[2]", 8, "0", "F33")));
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5,
                               std::string("m.h5: dataset `w`: precdetect-hdf5 named dtype `F33`, which precdetect "
                                           "does not know")));
}

TEST_F(StandInHelper, ChunksNeverInflateToMoreThanTheFileCanHold) {
  // 24 bytes declared, none stored: a dataset never written, whose fill value precdetect does not invent.
  answer(walk(dataset("w", "[2, 3]", 0, "null")));
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5,
                               std::string("m.h5: dataset `w` declares 24 bytes but stores 0: it was never written")));
  // 4 MiB from 2 stored bytes: past deflate's 1032-to-1.
  answer(walk(dataset("w", "[1048576]", 2, "null")));
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5,
                               std::string("m.h5: dataset `w` declares 4194304 bytes but stores 2: more than the "
                                           "file's chunks can hold")));
  answer(walk(dataset("w", "[16]", 65, "null")));  // more stored than the file has
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5,
                               std::string("m.h5: dataset `w` declares 64 bytes but stores 65: more than the file's "
                                           "chunks can hold")));
}

TEST_F(StandInHelper, AChunkedDatasetIsReadThroughTheHelperWhenViewedAndMustFillItsBytes) {
  std::string described = walk(dataset("w", "[4]", 10, "null"));
  answer(described,
         "[ \"$1\" = describe ] && exec cat \"$(dirname \"$0\")/description.json\"\n"
         "[ \"$1 $3 $4\" = \"read w 16\" ] && exec printf 0123456789abcdef\nexit 1\n");
  Checkpoint checkpoint = read();
  const TensorRecord& w = checkpoint.tensors.at(0);
  EXPECT_EQ(w.nbytes, 16u);
  std::span<const std::byte> bytes = checkpoint.files[0]->view(w.offset, w.nbytes);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "0123456789abcdef");
  // A helper that writes fewer bytes than the dataset declares.
  answer(described, "[ \"$1\" = describe ] && exec cat \"$(dirname \"$0\")/description.json\"\nprintf 0123\n");
  Checkpoint short_read = read();
  const TensorRecord& cut = short_read.tensors.at(0);
  try {
    short_read.files[0]->view(cut.offset, cut.nbytes);
    FAIL() << "viewed 16 bytes of 4";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidHdf5);
    EXPECT_EQ(std::string(e.what()),
              "m.h5: precdetect-hdf5, reading dataset `w`, wrote other than the 16 bytes expected");
  }
}

TEST_F(StandInHelper, TheHelpersOwnErrorIsThrownAgainAndItsEndIsNamed) {
  answer("", "printf '" + std::to_string(static_cast<int>(ErrorCode::kInvalidHdf5)) +
                 "\\tm.h5: HDF5 cannot open it: bad superblock\\n' >&2\nexit 2\n");
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5, std::string("m.h5: HDF5 cannot open it: bad superblock")));
  answer("", "kill -SEGV $$\n");
  EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5,
                               std::string("m.h5: precdetect-hdf5, reading the file's structure, crashed (signal 11: "
                                           "Segmentation fault)")));
  answer("", "exit 3\n");
  EXPECT_EQ(error(),
            std::pair(ErrorCode::kInvalidHdf5,
                      std::string("m.h5: precdetect-hdf5, reading the file's structure, exited with status 3")));
}

TEST_F(StandInHelper, AnExitOfTwoWithoutOneOfOurCodesIsAFailureLikeAnyOther) {
  // libhdf5's own diagnostics on standard error, or a code past the table: never read as a named error (atoi took
  // "HDF5-DIAG" for 0, not_found)
  const std::string failed = "m.h5: precdetect-hdf5, reading the file's structure, exited with status 2";
  for (std::string errors : {"HDF5-DIAG: Error detected\\tin H5F.c\\n", "999\\tm.h5: no such code\\n",
                             "-1\\tm.h5: below the table\\n", "12abc\\tm.h5: digits and more\\n"}) {
    answer("", "printf '" + errors + "' >&2\nexit 2\n");
    EXPECT_EQ(error(), std::pair(ErrorCode::kInvalidHdf5, failed)) << errors;
  }
}

}  // namespace
}  // namespace precdetect
