#include "precdetect/report/exponent_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace precdetect {
namespace {

constexpr int kBarWidth = 40;     // characters for the largest bin
constexpr int kMaxEmptyRows = 3;  // longer runs of empty binades are drawn as one row

/// A bar of `eighths` / 8 characters, drawn with the eighth blocks.
std::string bar(int eighths) {
  static constexpr std::array<const char*, 8> kPartial = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  std::string out;
  for (int full = 0; full < eighths / 8; ++full) out += "█";
  return out + kPartial[static_cast<size_t>(eighths % 8)];
}

/// What a cast to fp16 does to values in [2^e, 2^(e+1)).
std::string fp16_zone(int exponent) {
  if (exponent >= 16) return "fp16: Inf";
  if (exponent == 15) return "fp16: above 65504 -> Inf";
  if (exponent >= 8) return "fp16 normal; x*x overflows";
  if (exponent >= -14) return "fp16 normal";
  if (exponent >= -24) return "fp16 subnormal: precision lost";
  return "fp16: flushed to zero";
}

std::string exponent_label(int bin) {
  if (bin == 0) return "<2^-126";
  if (bin == ExponentHistogram::kBins - 1) return ">=2^128";
  return fmt::format("2^{}", bin - ExponentHistogram::kBias);
}

}  // namespace

std::string render_exponent_chart(const ExponentHistogram& histogram, const std::string& indent) {
  const auto& counts = histogram.counts;
  auto first = std::find_if(counts.begin(), counts.end(), [](uint64_t c) { return c != 0; });
  if (first == counts.end()) return "";
  auto last = std::find_if(counts.rbegin(), counts.rend(), [](uint64_t c) { return c != 0; }).base() - 1;
  // Log scale: a handful of outliers next to billions of ordinary values must still show.
  double top = std::log10(static_cast<double>(*std::max_element(first, last + 1)) + 1.0);
  std::string out = fmt::format("{}{:>8} | {:<{}} | {:>13} | {}\n", indent, "|x| in", "values (log scale)", kBarWidth,
                                "count", "cast to fp16");
  for (auto it = last;; --it) {  // largest magnitudes first, like a y axis
    int bin = static_cast<int>(it - counts.begin());
    auto empty_end = std::find_if(std::make_reverse_iterator(it + 1), std::make_reverse_iterator(first),
                                  [](uint64_t c) { return c != 0; });
    auto empty = static_cast<int>(empty_end - std::make_reverse_iterator(it + 1));
    if (empty > kMaxEmptyRows) {  // a long gap (a few tiny outliers far below the rest) is one row
      out += fmt::format("{}{:>8} | ({} empty binades: {} to {})\n", indent, "...", empty,
                         exponent_label(bin - empty + 1), exponent_label(bin));
      it -= empty - 1;
      continue;
    }
    double scaled = std::log10(static_cast<double>(*it) + 1.0) / top;
    auto eighths = static_cast<int>(std::lround(scaled * kBarWidth * 8));
    if (*it != 0) eighths = std::max(eighths, 1);
    out += fmt::format("{}{:>8} | {:<{}} | {:>13} | {}\n", indent, exponent_label(bin), bar(eighths), kBarWidth, *it,
                       fp16_zone(bin - ExponentHistogram::kBias));
    if (it == first) break;
  }
  return out;
}

}  // namespace precdetect
