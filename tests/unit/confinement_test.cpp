#include "precdetect/core/confinement.h"

#include <gtest/gtest.h>

#include <functional>

#include "precdetect/core/error.h"
#include "precdetect/load/archive_member.h"
#include "precdetect/net/text_file.h"
#include "test_util.h"

namespace precdetect {
namespace {

namespace fs = std::filesystem;

/// The model folder `model/` beside a canary the model must never reach, every open done once by openat2 and once
/// by the component walk (the parameter), which must agree.
class Confinement : public testing::TempDir, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    TempDir::SetUp();
    use_openat2_for_tests(GetParam());
    write("outside.txt", "CANARY");
    write("outside/c.bin", "CANARY");
    write("model/a.bin", "inside");
    write("model/sub/b.bin", "deeper");
    fs::create_symlink("a.bin", root_ / "model/link_in");
    fs::create_symlink("../outside.txt", root_ / "model/link_out");
    fs::create_symlink(root_ / "outside.txt", root_ / "model/absolute_out");
    fs::create_symlink(root_ / "model/sub/b.bin", root_ / "model/absolute_in");
    fs::create_symlink("../outside", root_ / "model/folder_out");
    fs::create_symlink("sub/../../outside.txt", root_ / "model/sub_climbs_out");
    fs::create_symlink("../model/a.bin", root_ / "model/climbs_back_in");  // out of the folder and straight back
    fs::create_symlink("../model/../outside.txt", root_ / "model/back_in_then_out");
    fs::create_symlink("..", root_ / "model/parent");
  }
  void TearDown() override {
    use_openat2_for_tests(true);
    TempDir::TearDown();
  }

  /// What reading `path` confined to the model folder gives: its text, or the error's code and message.
  std::pair<std::string, std::string> read(const fs::path& path, const ModelRoot& root) {
    Confined confined(root);
    try {
      return {read_text_file(path, "test file"), ""};
    } catch (const Error& e) {
      return {std::string(to_string(e.code())), e.what()};
    }
  }
  std::pair<std::string, std::string> read(const std::string& relative) {
    return read(root_ / "model" / relative, model_root_of(root_ / "model", true));
  }
};

TEST_P(Confinement, OpensWhatResolvesInsideTheModel) {
  EXPECT_EQ(read("a.bin").first, "inside");
  EXPECT_EQ(read("sub/b.bin").first, "deeper");
  EXPECT_EQ(read("link_in").first, "inside");
  EXPECT_EQ(read("absolute_in").first, "deeper");  // an absolute link that leads back inside
  EXPECT_EQ(read("sub/../a.bin").first, "inside");
  EXPECT_EQ(read("climbs_back_in").first, "inside");  // what a path reaches counts, not the way
  EXPECT_EQ(read("sub/../climbs_back_in").first, "inside");
  EXPECT_EQ(read("missing.bin").first, "not_found");
}

TEST_P(Confinement, NeverOpensWhatLeavesIt) {
  for (std::string link : {"link_out", "absolute_out", "folder_out/c.bin", "sub_climbs_out", "../outside.txt",
                           "back_in_then_out", "parent/outside.txt", "parent/model/../outside.txt"}) {
    auto [code, message] = read(link);
    EXPECT_EQ(code, "path_escape") << link;
    EXPECT_EQ(message.find("CANARY"), std::string::npos) << link;
    EXPECT_NE(message.find("resolves outside the model's folder"), std::string::npos) << message;
  }
  // The message names the link and where it points.
  EXPECT_NE(read("link_out").second.find("model/link_out -> ../outside.txt"), std::string::npos);
  EXPECT_NE(read("absolute_out").second.find("-> " + (root_ / "outside.txt").string()), std::string::npos);
  // A path spelled outside the model's folder altogether.
  EXPECT_EQ(read(root_ / "outside.txt", model_root_of(root_ / "model", true)).first, "path_escape");
}

TEST_P(Confinement, FollowsTheFileTheUserTypedButNothingElse) {
  ModelRoot root = model_root_of(root_ / "model/link_out", false);
  EXPECT_EQ(read(root_ / "model/link_out", root).first, "CANARY");  // the user chose it
  EXPECT_EQ(read(root_ / "model/absolute_out", root).first, "path_escape");
}

TEST_P(Confinement, RelativeSpellingsOfTheModelFolder) {
  fs::path cwd = fs::current_path();
  fs::current_path(root_);
  EXPECT_EQ(read("model/a.bin", model_root_of("model", true)).first, "inside");
  EXPECT_EQ(read("./model/link_out", model_root_of("./model/", true)).first, "path_escape");
  fs::current_path(root_ / "model");
  EXPECT_EQ(read("a.bin", model_root_of(".", true)).first, "inside");
  EXPECT_EQ(read("link_out", model_root_of("a.bin", false)).first, "path_escape");
  fs::current_path(cwd);
}

TEST_P(Confinement, AHuggingFaceSnapshotReachesItsRepositorysBlobs) {
  fs::path repository = root_ / "hub/models--org--name";
  write("hub/models--org--name/blobs/0123", "blob");
  fs::create_directories(repository / "snapshots/abc");
  fs::create_symlink("../../blobs/0123", repository / "snapshots/abc/model.safetensors");
  fs::create_symlink("../../../../outside.txt", repository / "snapshots/abc/evil.json");
  ModelRoot root = model_root_of(repository / "snapshots/abc", true);
  EXPECT_EQ(root.folder, fs::canonical(repository));
  EXPECT_EQ(read(repository / "snapshots/abc/model.safetensors", root).first, "blob");
  EXPECT_EQ(read(repository / "snapshots/abc/evil.json", root).first, "path_escape");
}

TEST_P(Confinement, EscapeOfNamesTheLinkWithoutFollowingIt) {
  ModelRoot root = model_root_of(root_ / "model", true);
  EXPECT_FALSE(escape_of(root, root_ / "model/link_in"));
  EXPECT_FALSE(escape_of(root, root_ / "model/absolute_in"));
  std::optional<EscapingLink> out = escape_of(root, root_ / "model/folder_out");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->link, fs::canonical(root_ / "model") / "folder_out");
  EXPECT_EQ(out->target, "../outside");
}

TEST_P(Confinement, AHardLinkIsReadOnlyWhenAllItsNamesLieInsideTheModel) {
  fs::create_hard_link(root_ / "outside.txt", root_ / "model/hard_out");
  fs::create_hard_link(root_ / "model/a.bin", root_ / "model/sub/hard_in");
  fs::create_symlink("hard_out", root_ / "model/to_hard_out");
  auto [code, message] = read("hard_out");
  EXPECT_EQ(code, "path_escape");
  EXPECT_NE(message.find("hard_out: test file is a hard link of 2 names, 1 of them beneath the model's folder"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("CANARY"), std::string::npos);
  EXPECT_EQ(read("to_hard_out").first, "path_escape");  // reached through a link that stays inside
  EXPECT_EQ(read("sub/hard_in").first, "inside");       // both names inside: one file of the model
  EXPECT_EQ(read("a.bin").first, "inside");
  // The user typed it: followed, as a symbolic link the user typed is.
  EXPECT_EQ(read(root_ / "model/hard_out", model_root_of(root_ / "model/hard_out", false)).first, "CANARY");
  // A third name outside: the pair inside now holds a file from outside too (each root counts afresh).
  fs::create_hard_link(root_ / "model/a.bin", root_ / "outside/third");
  EXPECT_EQ(read("a.bin").first, "path_escape");
  EXPECT_NE(read("sub/hard_in").second.find("a hard link of 3 names, 2 of them beneath"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Openat2AndWalk, Confinement, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "openat2" : "component_walk"; });

TEST_P(Confinement, AModelFileOutsideAnyScopeIsNeverOpened) {
  as_model_.reset();  // no model's reading under way: no root to open beneath
  try {
    read_text_file(root_ / "model/a.bin", "config.json");
    FAIL() << "opened with no confinement";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("config.json opened outside any model's confinement"), std::string::npos);
  }
}

TEST_P(Confinement, AFileTheUserNamedIsOpenedAsNamed) {
  as_model_.reset();
  EXPECT_EQ(read_text_file(root_ / "model/link_out", "rules file", TextOrigin::kUserFile), "CANARY");
  EXPECT_EQ(read_text_file(root_ / "model/link_out", "input list (--from)", TextOrigin::kList), "CANARY");
}

TEST(ArchiveMember, NamesThatLeaveTheExtractionFolder) {
  for (std::string_view name : {"/etc/cron.d/x", "../x", "a/../../x", "a\\..\\..\\x", "C:x", "\\x"})
    EXPECT_TRUE(member_name_escape(name)) << name;
  for (std::string_view name : {"model_weights.ckpt", "./model_config.yaml", "a/../b", "a/b/../../c", "..x/y"})
    EXPECT_FALSE(member_name_escape(name)) << name;
}

TEST(ArchiveMember, LinksThatLeaveTheExtractionFolder) {
  EXPECT_TRUE(link_member_escape("a", "/etc/passwd", false));
  EXPECT_TRUE(link_member_escape("a", "../x", false));
  EXPECT_FALSE(link_member_escape("d/a", "../x", false));  // from d/: lands in the folder itself
  EXPECT_TRUE(link_member_escape("d/a", "../../x", false));
  EXPECT_TRUE(link_member_escape("d/a", "../x", true));  // a hard link is named from the archive's root
  EXPECT_FALSE(link_member_escape("d/a", "d/b", true));
}

}  // namespace
}  // namespace precdetect
