// Output files: a regular file appears whole or not at all, even when the writer is interrupted or killed while it
// writes; a link stays a link; a device, a FIFO or a descriptor is written as it is, never replaced.
#include "precdetect/core/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {
namespace fs = std::filesystem;

std::string read_whole(const fs::path& path) {
  std::stringstream content;
  content << std::ifstream(path, std::ios::binary).rdbuf();
  return content.str();
}

class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("precdetect-output-{}", ::getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> names_in(const fs::path& folder) const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
  /// The error write_output_file throws for `path`, which must be an io_error naming it.
  std::string write_error(const fs::path& path) {
    try {
      write_output_file(path, "{}");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "wrote " << path;
    return "";
  }
  /// Starts a child that writes `content` to `path`; returns once the child is writing its temporary file.
  pid_t start_writing(const fs::path& path, const std::string& content) {
    pid_t child = ::fork();
    if (child == 0) {
      write_output_file(path, content);
      ::_exit(0);
    }
    fs::path temp = path;
    temp += fmt::format(".tmp-{}", child);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(temp) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    return child;
  }
  fs::path dir_;
};

TEST_F(OutputFile, ReplacesTheFileWholeKeepsItsPermissionsAndLeavesNothingElse) {
  fs::path path = dir_ / "report.json";
  std::ofstream(path) << "old";
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(resolve_output_target(path).kind, OutputTarget::Kind::kFile);
  write_output_file(path, "{\"new\": true}\n");
  EXPECT_EQ(read_whole(path), "{\"new\": true}\n");
  EXPECT_EQ(fs::status(path).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"report.json"});
}

TEST_F(OutputFile, AFolderThatIsMissingIsANamedErrorAndLeavesNothing) {
  write_error(dir_ / "missing" / "report.json");
  EXPECT_TRUE(names_in(dir_).empty());
}

TEST_F(OutputFile, AFolderIsANamedErrorAndIsLeftAlone) {
  fs::create_directory(dir_ / "reports");
  EXPECT_NE(write_error(dir_ / "reports").find("Is a directory"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(dir_ / "reports"));
}

TEST_F(OutputFile, ALinkStaysALinkAndItsTargetIsReplacedInItsOwnFolder) {
  fs::create_directories(dir_ / "kept" / "reports");
  fs::create_directory(dir_ / "links");
  std::ofstream(dir_ / "kept" / "reports" / "latest.json") << "old";
  // A chain of two relative links, each resolved from its own folder.
  fs::create_symlink("../kept/reports/latest.json", dir_ / "kept" / "current.json");
  fs::create_symlink("../kept/current.json", dir_ / "links" / "report.json");
  OutputTarget target = resolve_output_target(dir_ / "links" / "report.json");
  EXPECT_EQ(target.kind, OutputTarget::Kind::kFile);
  EXPECT_EQ(target.path, fs::canonical(dir_ / "kept" / "reports") / "latest.json");

  write_output_file(dir_ / "links" / "report.json", "new");
  EXPECT_TRUE(fs::is_symlink(dir_ / "links" / "report.json"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "kept" / "current.json"));
  EXPECT_EQ(read_whole(dir_ / "kept" / "reports" / "latest.json"), "new");
  EXPECT_EQ(names_in(dir_ / "kept" / "reports"), std::vector<std::string>{"latest.json"});
  EXPECT_EQ(names_in(dir_ / "links"), std::vector<std::string>{"report.json"});
}

TEST_F(OutputFile, ADanglingLinkCreatesItsTarget) {
  fs::create_symlink("new.json", dir_ / "report.json");
  write_output_file(dir_ / "report.json", "new");
  EXPECT_TRUE(fs::is_symlink(dir_ / "report.json"));
  EXPECT_EQ(read_whole(dir_ / "new.json"), "new");
}

TEST_F(OutputFile, LinksThatLoopAreANamedError) {
  fs::create_symlink("b", dir_ / "a");
  fs::create_symlink("a", dir_ / "b");
  EXPECT_NE(write_error(dir_ / "a").find("Too many levels of symbolic links"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink(dir_ / "a"));
}

TEST_F(OutputFile, ACharacterDeviceIsWrittenInPlaceNeverReplaced) {
  fs::path null = dir_ / "null";
  if (::mknod(null.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod needs root: " << std::strerror(errno);
  EXPECT_EQ(resolve_output_target(null).kind, OutputTarget::Kind::kInPlace);
  write_output_file(null, std::string(1 << 20, 'x'));
  struct stat status {};
  ASSERT_EQ(::lstat(null.c_str(), &status), 0);
  EXPECT_TRUE(S_ISCHR(status.st_mode));
  EXPECT_EQ(status.st_rdev, ::makedev(1, 3));
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"null"});
}

TEST_F(OutputFile, AFifoWithAReaderReceivesTheWholeDocument) {
  fs::path fifo = dir_ / "results";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string content(3 << 20, '\0');  // many times a pipe's buffer
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>('a' + i % 26);
  std::string received;
  std::thread reader([&] { received = read_whole(fifo); });
  write_output_file(fifo, content);
  reader.join();
  EXPECT_EQ(received, content);
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"results"});
}

TEST_F(OutputFile, ThisProcesssDescriptorsAreWrittenThroughTheDescriptor) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  for (std::string path : {fmt::format("/proc/self/fd/{}", pipe_ends[1]), fmt::format("/dev/fd/{}", pipe_ends[1])}) {
    OutputTarget target = resolve_output_target(path);
    EXPECT_EQ(target.kind, OutputTarget::Kind::kDescriptor) << path;
    EXPECT_EQ(target.descriptor, pipe_ends[1]) << path;
    write_output_file(path, "doc\n");
    char buffer[8] = {};
    EXPECT_EQ(::read(pipe_ends[0], buffer, sizeof(buffer)), 4) << path;
    EXPECT_STREQ(buffer, "doc\n");
  }
  EXPECT_EQ(resolve_output_target("/dev/stdout").descriptor, STDOUT_FILENO);
  EXPECT_EQ(resolve_output_target("/dev/stderr").descriptor, STDERR_FILENO);
  ::close(pipe_ends[0]);
  ::close(pipe_ends[1]);
}

TEST_F(OutputFile, CtrlCWhileWritingLeavesTheOldFileAndNothingElse) {
  fs::path path = dir_ / "report.json";
  std::ofstream(path) << "old";
  pid_t child = start_writing(path, std::string(512 << 20, 'x'));  // long enough to be interrupted mid-write
  ::kill(child, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished before it could be interrupted; status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_EQ(read_whole(path), "old");
  EXPECT_EQ(names_in(dir_), std::vector<std::string>{"report.json"}) << "a partial file was left behind";
}

TEST_F(OutputFile, KilledMidWriteTheFileIsTheOldOneNeverATornOne) {
  fs::path path = dir_ / "report.json";
  std::string old_content(8 << 20, 'o');
  std::ofstream(path) << old_content;
  pid_t child = start_writing(path, std::string(512 << 20, 'n'));
  ::kill(child, SIGKILL);  // no handler runs: the temporary stays, the target must not be touched
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished before it could be killed; status " << status;
  EXPECT_EQ(read_whole(path), old_content);
  EXPECT_EQ(names_in(dir_), (std::vector<std::string>{"report.json", fmt::format("report.json.tmp-{}", child)}));

  write_output_file(path, "new");  // and a finished write is the whole new file
  EXPECT_EQ(read_whole(path), "new");
}

}  // namespace
}  // namespace precdetect
