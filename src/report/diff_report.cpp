#include "precdetect/report/diff_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "precdetect/report/json_report.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

ordered_json number_or_null(double value) { return std::isfinite(value) ? ordered_json(value) : ordered_json(nullptr); }

/// ||B - A|| / ||A||: how far the tensor moved, relative to its size.
double relative_change(const DiffStats& s) { return std::sqrt(s.sum_sq_diff) / std::sqrt(s.sum_sq_base); }
double cosine(const DiffStats& s) { return s.dot / (std::sqrt(s.sum_sq_base) * std::sqrt(s.sum_sq_other)); }

ordered_json percentiles(const UpdateHistogram& histogram) {
  ordered_json out;
  for (int p : {25, 50, 75, 90, 99})
    out[std::to_string(p)] = histogram.total ? ordered_json(histogram.percentile(p)) : nullptr;
  return out;
}

ordered_json stats_json(const DiffStats& s) {
  return {{"numel", s.numel},
          {"identical", s.identical},
          {"allclose", s.not_close == 0},
          {"max_abs_diff", s.max_abs},
          {"mean_abs_diff", s.numel ? s.sum_abs / static_cast<double>(s.numel) : 0.0},
          {"max_rel_diff", s.max_rel},
          {"rel_frobenius_change", number_or_null(relative_change(s))},
          {"cosine", number_or_null(cosine(s))},
          {"changed", s.changed},
          {"sparsity", s.sparsity()},
          {"update_fraction", 1.0 - s.sparsity()},
          {"abs_update_percentiles", percentiles(s.abs_updates)},
          {"rel_update_percentiles", percentiles(s.rel_updates)},
          {"rel_update_below_2^-8", s.rel_updates.fraction_below(-8)},
          {"rel_update_below_2^-7", s.rel_updates.fraction_below(-7)}};
}

ordered_json mismatches_json(const std::vector<Mismatch>& mismatches) {
  ordered_json out = ordered_json::array();
  for (const Mismatch& m : mismatches) out.push_back({{"name", m.name}, {"base", m.base}, {"other", m.other}});
  return out;
}

ordered_json pair_json(const PairDiff& pair) {
  ordered_json groups = ordered_json::object(), layers = ordered_json::array(), tensors = ordered_json::array();
  for (const auto& [group, stats] : pair.groups) groups[std::string(group_name(group))] = stats_json(stats);
  for (const auto& [layer, stats] : pair.layers) {  // as scan's summary.layers: stack and index first
    ordered_json entry = {{"stack", layer.stack}, {"index", layer.index}};
    entry.update(stats_json(stats));
    layers.push_back(std::move(entry));
  }
  for (const TensorDiff& t : pair.tensors) {
    ordered_json item = {{"name", t.name},
                         {"group", group_name(t.group)},
                         {"base_dtype", dtype_name(t.base_dtype)},
                         {"other_dtype", dtype_name(t.other_dtype)},
                         {"shape", t.shape},
                         {"numeric", t.numeric},
                         {"lossless", t.outcome() != DiffOutcome::kChanged}};
    item.update(stats_json(t.stats));
    tensors.push_back(std::move(item));
  }
  // A pair that could not be read compared nothing: no outcome, never "identical".
  ordered_json error = nullptr, changed = pair.changed(), outcome = outcome_name(pair.outcome()),
               overall = stats_json(pair.overall);
  if (pair.error) {
    error = {{"code", to_string(pair.error->code)}, {"message", pair.error->message}};
    changed = outcome = overall = nullptr;
  }
  return {{"base", pair.base},
          {"other", pair.other},
          {"error", error},
          {"changed", changed},
          {"outcome", outcome},
          {"overall", overall},
          {"groups", groups},
          {"layers", layers},
          {"tensors", tensors},
          {"missing", pair.missing},
          {"extra", pair.extra},
          {"computed_from_config", pair.computed_from_config},
          {"shape_mismatch", mismatches_json(pair.shape_mismatch)},
          {"dtype_mismatch", mismatches_json(pair.dtype_mismatch)},
          {"not_compared", pair.not_compared}};
}

void append_pair_table(std::string& out, const PairDiff& pair, size_t top) {
  const DiffStats& s = pair.overall;
  out += fmt::format("{} -> {}: {} tensors compared, {}; bf16-aware sparsity {:.2f}% ({} of {} changed)\n", pair.base,
                     pair.other, pair.tensors.size(), pair.outcome(), 100 * s.sparsity(), s.changed, s.numel);
  if (!pair.missing.empty() || !pair.extra.empty() || !pair.computed_from_config.empty() ||
      !pair.shape_mismatch.empty() || !pair.dtype_mismatch.empty() || !pair.not_compared.empty())
    out += fmt::format(
        "  missing {}, extra {}, computed from config {}, shape mismatch {}, dtype mismatch {}, not compared "
        "(sparse) {}\n",
        pair.missing.size(), pair.extra.size(), pair.computed_from_config.size(), pair.shape_mismatch.size(),
        pair.dtype_mismatch.size(), pair.not_compared.size());
  std::vector<const TensorDiff*> ranked;
  for (const TensorDiff& t : pair.tensors)
    if (t.numeric) ranked.push_back(&t);
  std::sort(ranked.begin(), ranked.end(), [](const TensorDiff* a, const TensorDiff* b) {
    double ra = relative_change(a->stats), rb = relative_change(b->stats);
    return (std::isnan(ra) ? -1 : ra) > (std::isnan(rb) ? -1 : rb);
  });
  if (ranked.size() > top) ranked.resize(top);
  if (ranked.empty()) return;
  out += fmt::format("  {:<48} | {:>9} | {:>9} | {:>9} | {:>9} | {:>9}\n", "tensor", "max |d|", "rel chg", "cosine",
                     "sparsity", "outcome");
  for (const TensorDiff* t : ranked)
    out += fmt::format("  {:<48} | {:>9.3e} | {:>9.3e} | {:>9.6f} | {:>8.2f}% | {:>9}\n", t->name.substr(0, 48),
                       t->stats.max_abs, relative_change(t->stats), cosine(t->stats), 100 * t->stats.sparsity(),
                       t->outcome());
}

}  // namespace

ordered_json diff_to_json(const std::vector<PairDiff>& pairs, const DiffOptions& options) {
  ordered_json items = ordered_json::array();
  for (const PairDiff& pair : pairs) items.push_back(pair_json(pair));
  return {
      {"schema_version", kSchemaVersion},
      {"tool", {{"name", "precdetect"}, {"version", PRECDETECT_VERSION}}},
      {"options", {{"rtol", options.rtol}, {"atol", options.atol}, {"eta", options.eta}, {"bitwise", options.bitwise}}},
      {"pairs", items}};
}

std::string render_diff_table(const std::vector<PairDiff>& pairs, size_t top) {
  std::string out;
  for (const PairDiff& pair : pairs) {
    if (pair.error)
      out += fmt::format("{} -> {}: error: {}\n", pair.base, pair.other, to_string(pair.error->code));
    else
      append_pair_table(out, pair, top);
  }
  return out;
}

}  // namespace precdetect
