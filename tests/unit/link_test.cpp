// A link's parts (quantize/link.h): every field is in the cache's key, so that no field a scheme adds can change
// without the key; the tensors a link reads and the scales among them are its PartNames, wherever they sit.
#include "precdetect/quantize/link.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "precdetect/analyze/stats_cache.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/quantize/scheme.h"
#include "test_util.h"

namespace precdetect {
/// A nested field's type, with linkage: counting the fields of Parts, whose std::optional<Layout> is initialized from
/// link_fields::AnyField, instantiates the optional's constructor, which names AnyField's conversion to Layout;
/// clang refuses that conversion (declared, never defined) for a type of an anonymous namespace.
namespace link_test {
struct Layout {
  bool transposed = false;
  int offset = 0;
  static constexpr auto fields() { return std::tuple{&Layout::transposed, &Layout::offset}; }
};
}  // namespace link_test

namespace {

using link_test::Layout;

enum class Kind { kOne, kTwo };

/// Parts with a field of every kind a scheme's parts may hold.
struct Parts {
  PartName scale;
  PartName zeros;
  std::string codes = "w._data";
  int bits = 4;
  int64_t group = 32;
  Kind kind = Kind::kOne;
  Layout layout;
  std::optional<Layout> nested = Layout{};
  std::vector<int64_t> block = {1, 8};

  static constexpr auto fields() {
    return std::tuple{&Parts::scale, &Parts::zeros,  &Parts::codes,  &Parts::bits, &Parts::group,
                      &Parts::kind,  &Parts::layout, &Parts::nested, &Parts::block};
  }
  nlohmann::ordered_json describe() const { return scaled_by_json(scale.name, std::pair{int64_t{1}, group}); }
};

/// Another scheme's parts, which a link holding Parts is not.
struct OtherParts {
  PartName scale;
  static constexpr auto fields() { return std::tuple{&OtherParts::scale}; }
  nlohmann::ordered_json describe() const { return scaled_by_json(scale.name, std::pair{int64_t{1}, int64_t{1}}); }
};

/// Parts with a field that fields() leaves out.
struct Unlisted {
  PartName scale;
  int bits = 4;
  static constexpr auto fields() { return std::tuple{&Unlisted::scale}; }
};

const QuantScheme kScheme{.name = "a scheme"}, kOther{.name = "another scheme"};

Parts parts() { return {.scale = {.name = "w.scale", .multiplies = true}, .zeros = {.name = "w.zeros"}}; }

/// `value` changed, whatever its type.
template <typename T>
void change(T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    value = !value;
  } else if constexpr (std::is_same_v<T, std::string>) {
    value += "'";
  } else if constexpr (std::is_enum_v<T>) {
    value = static_cast<T>(static_cast<int>(value) + 1);
  } else if constexpr (std::is_arithmetic_v<T>) {
    value += 1;
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    value.push_back(1);
  } else if constexpr (std::is_same_v<T, std::optional<Layout>>) {
    value.reset();
  }
}

/// Calls `visit(changed parts, what changed)` once for each field of Parts, and each field of the structs it holds.
template <typename Visit>
void each_field_changed(Visit visit) {
  std::apply(
      [&](auto... field) {
        auto one = [&](auto member) {
          using Field = std::remove_cvref_t<decltype(Parts{}.*member)>;
          if constexpr (requires { Field::fields(); }) {
            std::apply(
                [&](auto... inner) {
                  ((visit(
                       [&] {
                         Parts changed = parts();
                         change(changed.*member.*inner);
                         return changed;
                       }(),
                       "a nested field")),
                   ...);
                },
                Field::fields());
          } else {
            Parts changed = parts();
            change(changed.*member);
            visit(changed, "a field");
          }
        };
        (one(field), ...);
      },
      Parts::fields());
}

TEST(Link, EveryFieldOfItsPartsIsInTheKey) {
  static_assert(lists_every_field<Parts>());
  const std::string key = Link(kScheme, parts()).key();
  std::set<std::string> keys = {key};
  size_t changes = 0;
  each_field_changed([&](const Parts& changed, const char* what) {
    ++changes;
    std::string other = Link(kScheme, changed).key();
    EXPECT_NE(other, key) << what << " changed and the key did not";
    keys.insert(other);
  });
  EXPECT_EQ(changes, 12U);  // 9 fields, the nested Layout's two, the optional's engagement
  EXPECT_EQ(keys.size(), changes + 1);
  EXPECT_NE(Link(kOther, parts()).key(), key);  // the scheme is part of it
}

TEST(Link, AFieldLeftOutOfFieldsIsFound) {
  EXPECT_FALSE(lists_every_field<Unlisted>());
  EXPECT_TRUE(lists_every_field<PartName>());
  EXPECT_TRUE(lists_every_field<Layout>());
}

TEST(Link, ItsTensorsAreItsPartNames) {
  const Link link(kScheme, parts());
  EXPECT_EQ(link.tensors(), (std::vector<std::string>{"w.scale", "w.zeros"}));
  EXPECT_EQ(link.multipliers(), std::vector<std::string>{"w.scale"});
  EXPECT_EQ(link.scale(), "w.scale");
  Parts symmetric = parts();
  symmetric.zeros.name.clear();  // a part the link does not have
  EXPECT_EQ(Link(kScheme, symmetric).tensors(), std::vector<std::string>{"w.scale"});
  EXPECT_EQ(link.describe().dump(), R"({"tensor":"w.scale","block":[1,32]})");
  EXPECT_TRUE(link.holds<Parts>());
  EXPECT_FALSE(link.holds<OtherParts>());
  EXPECT_THROW(link.parts<OtherParts>(), std::logic_error);
}

class LinkCacheTest : public testing::TempDir {};

TEST_F(LinkCacheTest, AWeightLinkedOtherwiseIsACacheMiss) {
  write("w.bin", "codes");
  Checkpoint checkpoint;
  checkpoint.files.push_back(map_file(root_ / "w.bin"));
  const std::string file = StatsCache::file_identity(checkpoint, 0);
  const TensorRecord codes{.name = "w", .dtype = DType::U8, .shape = {5}, .numel = 5, .nbytes = 5};
  auto cache = StatsCache::open(root_ / "stats.sqlite");
  ASSERT_TRUE(cache);
  const Link link(kScheme, parts());
  cache->store(file, codes, TensorStats{.numel = 10}, &link);
  EXPECT_EQ(cache->find(file, codes, &link), TensorStats{.numel = 10});
  EXPECT_EQ(cache->find(file, codes), std::nullopt);  // the codes read as stored are other values
  each_field_changed([&](const Parts& changed, const char* what) {
    const Link other(kScheme, changed);
    EXPECT_EQ(cache->find(file, codes, &other), std::nullopt) << what;
  });
}

}  // namespace
}  // namespace precdetect
