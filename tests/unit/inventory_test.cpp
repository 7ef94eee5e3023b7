// The inventory (issue 66): every file under an input listed without reading it, accounted to one model each.
#include "precdetect/discover/inventory.h"

#include <gtest/gtest.h>

#include <map>

#include "test_util.h"

namespace precdetect {
namespace {

namespace fs = std::filesystem;
using Inventorying = testing::TempDir;

std::map<std::string, const InventoryEntry*> by_name(const Inventory& inventory, const fs::path& under) {
  std::map<std::string, const InventoryEntry*> found;
  for (const InventoryEntry& entry : inventory.entries) found[entry.path.lexically_relative(under).string()] = &entry;
  return found;
}

TEST_F(Inventorying, ListsTheWholeTreeAndNamesStoresWithoutWalkingThem) {
  write("m/model.safetensors", "12345");
  write("m/sub/deeper/optimizer.pt", "x");
  write("m/.git/objects/ab/cdef", "never listed");
  write("m/.cache/huggingface/download/model.safetensors.metadata", "never listed");
  write("m/models--org--name/refs/main", "never listed");
  write("m/models--org--name/snapshots/abc/config.json", "{}");
  fs::create_symlink("model.safetensors", root_ / "m" / "alias");
  fs::create_symlink("../outside", root_ / "m" / "away");
  std::optional<Inventory> listed = list_input((root_ / "m").string(), root_);
  ASSERT_TRUE(listed);
  auto entries = by_name(*listed, root_ / "m");
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{".cache/huggingface", ".git", "alias", "away", "model.safetensors",
                                             "models--org--name/refs", "models--org--name/snapshots/abc/config.json",
                                             "sub/deeper/optimizer.pt"}));
  EXPECT_EQ(entries[".git"]->kind, EntryKind::kFolder);
  EXPECT_EQ(entries[".git"]->unread, Unread::kStore);
  EXPECT_EQ(entries[".cache/huggingface"]->kind, EntryKind::kFolder);
  EXPECT_EQ(entries["models--org--name/refs"]->kind, EntryKind::kFolder);
  EXPECT_EQ(entries["model.safetensors"]->size, 5u);
  EXPECT_EQ(entries["alias"]->kind, EntryKind::kLink);
  EXPECT_EQ(entries["alias"]->size, 5u);  // the file it lands on, inside the input
  EXPECT_FALSE(entries["alias"]->leaves);
  EXPECT_EQ(entries["away"]->link, "../outside");
  EXPECT_TRUE(entries["away"]->leaves);
  EXPECT_FALSE(entries["away"]->size);
  EXPECT_EQ(listed->unlisted, 0u);
  EXPECT_TRUE(listed->walked);
}

TEST_F(Inventorying, AHardLinkWithANameOutsideTheInputLeavesIt) {
  write("outside.bin", "secret");
  write("m/model.safetensors", "12345");
  fs::create_hard_link(root_ / "outside.bin", root_ / "m/tokenizer.json");
  fs::create_directories(root_ / "m/sub");
  fs::create_hard_link(root_ / "m/model.safetensors", root_ / "m/sub/model.safetensors");
  std::optional<Inventory> listed = list_input((root_ / "m").string(), root_);
  ASSERT_TRUE(listed);
  auto entries = by_name(*listed, root_ / "m");
  EXPECT_TRUE(entries["tokenizer.json"]->leaves);
  EXPECT_EQ(entries["tokenizer.json"]->kind, EntryKind::kFile);
  EXPECT_EQ(entries["tokenizer.json"]->names_outside, 1u);
  EXPECT_EQ(entries["tokenizer.json"]->unread, Unread::kLinkOut);
  EXPECT_EQ(entries["tokenizer.json"]->reason, "a hard link with 1 of its 2 names outside the input, never read");
  for (std::string inside : {"model.safetensors", "sub/model.safetensors"}) {
    EXPECT_FALSE(entries[inside]->leaves) << inside;
    EXPECT_EQ(entries[inside]->size, 5u) << inside;
  }
}

TEST_F(Inventorying, AFileInputIsItsOwnEntryAndWhatDoesNotResolveHasNone) {
  write("m/model.safetensors", "abc");
  std::optional<Inventory> listed = list_input((root_ / "m/model.safetensors").string(), root_);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->entries.size(), 1u);
  EXPECT_EQ(listed->entries[0].path, root_ / "m/model.safetensors");
  EXPECT_FALSE(list_input((root_ / "absent").string(), root_));
  EXPECT_FALSE(list_input("https://example.com/model.safetensors", root_));
}

TEST_F(Inventorying, EachEntryGoesToTheModelOfTheDeepestFolderHoldingIt) {
  for (std::string name : {"zoo/loose.pkl", "zoo/a/model.safetensors", "zoo/a/optimizer.pt", "zoo/a/ckpt/x.pt",
                           "zoo/b/one.safetensors", "zoo/b/two.safetensors", "zoo/b/evil.pkl"})
    write(name, "");
  std::optional<Inventory> listed = list_input((root_ / "zoo").string(), root_);
  ASSERT_TRUE(listed);
  // The run's models: zoo/a, then zoo/b's two independent files (one folder for both).
  std::vector<std::optional<fs::path>> folders = {root_ / "zoo/a", root_ / "zoo/b", root_ / "zoo/b"};
  std::vector<Inventory> parts = account(*listed, folders);
  ASSERT_EQ(parts.size(), 3u);
  auto names = [&](const Inventory& part) {
    std::vector<std::string> found;
    for (const InventoryEntry& entry : part.entries) found.push_back(entry.path.lexically_relative(root_).string());
    return found;
  };
  // A file no model's folder holds goes to the first model, so that it is judged and gated once.
  EXPECT_EQ(names(parts[0]), (std::vector<std::string>{"zoo/a/ckpt/x.pt", "zoo/a/model.safetensors",
                                                       "zoo/a/optimizer.pt", "zoo/loose.pkl"}));
  EXPECT_EQ(names(parts[1]),
            (std::vector<std::string>{"zoo/b/evil.pkl", "zoo/b/one.safetensors", "zoo/b/two.safetensors"}));
  EXPECT_TRUE(parts[2].entries.empty());
  for (const Inventory& part : parts) EXPECT_EQ(part.root.folder, listed->root.folder);
}

TEST_F(Inventorying, DiscoveryGivesWeightsLoaderFilesAndTrainingState) {
  write("m/model.safetensors", "");
  write("m/config.json", "{}");
  write("m/tokenizer.json", "{}");
  write("m/training_args.bin", "");
  write("m/checkpoint-5/optimizer.pt", "");
  write("m/README.md", "");
  std::optional<Inventory> listed = list_input((root_ / "m").string(), root_);
  ASSERT_TRUE(listed);
  ModelSource source = discover((root_ / "m").string(), root_);
  dispose(*listed, source);
  auto entries = by_name(*listed, root_ / "m");
  EXPECT_EQ(entries["model.safetensors"]->disposition, Disposition::kWeights);
  EXPECT_EQ(entries["config.json"]->disposition, Disposition::kLoaderFile);
  EXPECT_EQ(entries["tokenizer.json"]->disposition, Disposition::kLoaderFile);
  EXPECT_EQ(entries["training_args.bin"]->disposition, Disposition::kTrainingState);
  EXPECT_EQ(entries["checkpoint-5/optimizer.pt"]->disposition, Disposition::kTrainingState);  // by its name
  EXPECT_EQ(entries["README.md"]->disposition, Disposition::kNotRead);  // until the examination sniffs it
  InventoryCounts counts;
  counts.add(*listed);
  EXPECT_EQ(counts.files[Disposition::kTrainingState], 2u);
}

}  // namespace
}  // namespace precdetect
