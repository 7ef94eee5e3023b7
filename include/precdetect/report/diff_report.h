#pragma once
/// Renderers for `precdetect diff`: the JSON document (docs/diff.md) and the table.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "precdetect/diff/checkpoint_diff.h"

namespace precdetect {

/// {"schema_version", "tool", "options", "pairs": [{"base", "other", "error", "changed", "overall", "groups",
/// "layers", "tensors", "missing", "extra", "computed_from_config", "shape_mismatch", "dtype_mismatch"}]}
nlohmann::ordered_json diff_to_json(const std::vector<PairDiff>& pairs, const DiffOptions& options);

/// Per pair: a summary line, then the `top` most-changed tensors (by relative Frobenius change).
std::string render_diff_table(const std::vector<PairDiff>& pairs, size_t top);

}  // namespace precdetect
