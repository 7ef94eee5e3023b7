#include "precdetect/quantize/grid_tables.h"

#include <fmt/format.h>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

constexpr int64_t kTableValues = int64_t{1} << 16;  // a tile's tables stay in the cache beside its codes
constexpr int64_t kMaxRowTable = int64_t{1} << 22;  // so that every table offset fits 32 bits

/// One span per group where every group is one run of consecutive columns, in order, each starting at a word where
/// a word's codes run along a row (GPTQ's and AWQ's usual groups; not act-order's); else none.
std::vector<Span> group_spans(const std::vector<int32_t>& groups, const GridCodes& codes) {
  const int64_t per_word = codes.codes_along_rows() ? 1 : codes.codes_per_word();
  std::vector<Span> spans;
  for (size_t column = 0; column < groups.size(); ++column) {
    if (column > 0 && groups[column] == groups[column - 1]) continue;
    if (groups[column] != static_cast<int32_t>(spans.size()) || static_cast<int64_t>(column) % per_word != 0) return {};
    if (!spans.empty()) spans.back().last_column = static_cast<int64_t>(column);
    spans.push_back(
        Span{static_cast<int64_t>(column), static_cast<int64_t>(groups.size()), groups[column], groups[column] + 1});
  }
  return spans;
}

/// Whether every run of a word's codes along a row, from column 0 on, lies in one group.
bool groups_of_whole_words(const std::vector<int32_t>& groups, const GridCodes& codes) {
  const auto per_word = static_cast<size_t>(codes.codes_per_word());
  for (size_t column = 0; column < groups.size(); ++column)
    if (groups[column] != groups[column - column % per_word]) return false;
  return true;
}

}  // namespace

Tiles::Tiles(const GridCodes& codes, int bits, int64_t rows, const std::vector<int32_t>& groups, int32_t group_count)
    : levels_(size_t{1} << bits), grid_rows_(rows) {
  // A row's tables of every group past kMaxRowTable values (groups of a column or two: a few MB of codes asking
  // for GBs of tables) are split a group to a tile where groups are runs of columns, else refused.
  const bool wide = static_cast<int64_t>(group_count) << bits > kMaxRowTable;
  if (codes.transposed() || wide) spans_ = group_spans(groups, codes);
  if (wide && spans_.empty())
    throw Error(
        ErrorCode::kSizeMismatch,
        fmt::format("{} groups of {}-bit codes scattered over the columns: a row's tables ({} values) exceed {}",
                    group_count, bits, static_cast<int64_t>(group_count) << bits, kMaxRowTable));
  lookup_ = !spans_.empty()                                                     ? GroupLookup::kTile
            : !codes.codes_along_rows() && groups_of_whole_words(groups, codes) ? GroupLookup::kWord
                                                                                : GroupLookup::kColumn;
  if (spans_.empty()) spans_.push_back(Span{0, static_cast<int64_t>(groups.size()), 0, group_count});
  const int64_t span_groups = spans_.size() == 1 ? std::max(group_count, 1) : 1;  // a grid of no columns has none
  rows_ = std::clamp<int64_t>(kTableValues / (span_groups << bits), 1, std::max<int64_t>(rows, 1));
  const int64_t multiple = codes.codes_along_rows() ? codes.codes_per_word() : 1;  // a band starts at a word
  rows_ = (rows_ + multiple - 1) / multiple * multiple;
  bands_ = (rows + rows_ - 1) / rows_;
}

size_t Tiles::table_size() const {
  int32_t most_groups = 0;
  for (const Span& span : spans_) most_groups = std::max(most_groups, span.last_group - span.first_group);
  return group_start(most_groups, 0);
}

}  // namespace precdetect
