// --verify: SHA-256 of files against the HF cache's blob names or a sha256sum manifest.
#include "precdetect/app/verify.h"

#include <gtest/gtest.h>

#include <fstream>

#include "precdetect/core/error.h"
#include "test_util.h"

namespace precdetect {
namespace {
namespace fs = std::filesystem;

// FIPS 180-2's examples.
constexpr const char* kAbc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr const char* kEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

class Verify : public testing::TempDir {
 protected:
  fs::path file(const std::string& name, const std::string& content) {
    fs::create_directories((root_ / name).parent_path());
    std::ofstream(root_ / name, std::ios::binary) << content;
    return root_ / name;
  }
};

TEST_F(Verify, Sha256OfKnownContents) {
  EXPECT_EQ(sha256_of_file(file("abc", "abc")), kAbc);
  EXPECT_EQ(sha256_of_file(file("empty", "")), kEmpty);
  std::string million(1'000'000, 'a');  // past one read chunk
  EXPECT_EQ(sha256_of_file(file("a", million)), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_F(Verify, AnHfCacheFileIsCheckedAgainstItsBlobsName) {
  fs::path repo = root_ / "models--org--name";
  file(fs::path("models--org--name") / "blobs" / kAbc, "abc");
  fs::create_directories(repo / "snapshots" / "rev");
  fs::create_symlink(fs::path("..") / ".." / "blobs" / kAbc, repo / "snapshots" / "rev" / "model.safetensors");
  std::string linked = (repo / "snapshots" / "rev" / "model.safetensors").string();
  EXPECT_EQ(expected_sha256(linked, {}), kAbc);
  EXPECT_TRUE(verify_files({linked}, {}).empty());
  std::ofstream(repo / "blobs" / kAbc, std::ios::binary) << "abd";  // damaged after download
  std::vector<GateFailure> failures = verify_files({linked}, {});
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].file, linked);  // the result points at the file, not at its model (SARIF, GitLab)
  EXPECT_EQ(failures[0].gate, Gate::kVerify);
  const std::string& reason = failures[0].reason;
  EXPECT_NE(reason.find(linked + ": SHA-256 "), std::string::npos) << reason;
  EXPECT_NE(reason.find(std::string("differs from the expected ") + kAbc), std::string::npos) << reason;
}

TEST_F(Verify, AManifestNamesFilesRelativeToItselfAndAFileWithoutAHashFails) {
  fs::path weights = file("model/weights.bin", "abc");
  fs::path other = file("model/other.bin", "");
  fs::path manifest = file("model/SHA256SUMS", std::string(kAbc) + "  weights.bin\n" + kEmpty + " *other.bin\n");
  Manifest read = read_manifest(manifest);
  EXPECT_EQ(read.size(), 2u);
  EXPECT_TRUE(verify_files({weights.string(), other.string()}, read).empty());
  std::vector<GateFailure> failures = verify_files({file("model/third.bin", "x").string()}, read);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].reason.find("third.bin: no SHA-256 to check it against"), std::string::npos)
      << failures[0].reason;
}

TEST_F(Verify, AMalformedManifestIsANamedErrorWithItsLine) {
  fs::path manifest = file("SHA256SUMS", std::string(kAbc) + "  a\nnot a hash  b\n");
  try {
    read_manifest(manifest);
    FAIL() << "read a malformed manifest";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("SHA256SUMS: line 2: not `SHA256  PATH`"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace precdetect
