#include "precdetect/kernel/diff_stats.h"

#include <algorithm>
#include <cmath>

namespace precdetect {

void UpdateHistogram::merge(const UpdateHistogram& other) {
  for (const auto& [bin, count] : other.bins) bins[bin] += count;
  zeros += other.zeros;
  total += other.total;
}

double UpdateHistogram::percentile(double p) const {
  auto rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total)));
  if (rank <= zeros) return 0.0;
  uint64_t seen = zeros;
  for (const auto& [bin, count] : bins) {
    seen += count;
    if (seen >= rank) return std::ldexp(1.0, bin);
  }
  return bins.empty() ? 0.0 : std::ldexp(1.0, bins.rbegin()->first);
}

double UpdateHistogram::fraction_below(int exponent) const {
  if (total == 0) return 0.0;
  uint64_t below = zeros;
  for (const auto& [bin, count] : bins)
    if (bin <= exponent) below += count;  // bin e holds [2^(e-1), 2^e): all below 2^exponent when e <= exponent
  return static_cast<double>(below) / static_cast<double>(total);
}

void DiffStats::merge(const DiffStats& other) {
  numel += other.numel;
  identical = identical && other.identical;
  not_close += other.not_close;
  max_abs = std::max(max_abs, other.max_abs);
  sum_abs += other.sum_abs;
  max_rel = std::max(max_rel, other.max_rel);
  sum_sq_diff += other.sum_sq_diff;
  sum_sq_base += other.sum_sq_base;
  sum_sq_other += other.sum_sq_other;
  dot += other.dot;
  changed += other.changed;
  abs_updates.merge(other.abs_updates);
  rel_updates.merge(other.rel_updates);
}

}  // namespace precdetect
