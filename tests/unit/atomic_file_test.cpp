// Output files appear whole or not at all, even when the user presses Ctrl-C while one is being written.
#include "precdetect/app/atomic_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("precdetect-atomic-{}", ::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  size_t files_in_dir() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir_), {}));
  }
  std::filesystem::path dir_;
};

TEST_F(AtomicFile, ReplacesTheFileWholeAndLeavesNothingElse) {
  std::filesystem::path path = dir_ / "report.json";
  std::ofstream(path) << "old";
  write_file_atomically(path, "{\"new\": true}\n");
  std::stringstream content;
  content << std::ifstream(path).rdbuf();
  EXPECT_EQ(content.str(), "{\"new\": true}\n");
  EXPECT_EQ(files_in_dir(), 1u);
}

TEST_F(AtomicFile, AFolderThatIsMissingIsANamedErrorAndLeavesNothing) {
  try {
    write_file_atomically(dir_ / "missing" / "report.json", "{}");
    FAIL() << "wrote into a missing folder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("missing/report.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(files_in_dir(), 0u);
}

TEST_F(AtomicFile, CtrlCWhileWritingLeavesNoFileBehind) {
  std::filesystem::path path = dir_ / "report.json";
  std::string content(512 << 20, 'x');  // long enough to be interrupted while it is written and flushed
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    write_file_atomically(path, content);
    ::_exit(0);
  }
  std::filesystem::path temp = path;
  temp += fmt::format(".tmp-{}", child);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(temp) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  ::kill(child, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished before it could be interrupted; status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_EQ(files_in_dir(), 0u) << "a partial file was left behind";
}

}  // namespace
}  // namespace precdetect
