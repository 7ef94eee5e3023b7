#include "precdetect/classify/stat.h"

#include "precdetect/analyze/cast_safety.h"

namespace precdetect {
namespace {

std::optional<double> if_values(const ModelSummary& s, double value) {
  return s.has_values ? std::optional(value) : std::nullopt;
}
std::optional<double> if_norms(const ModelSummary& s, double value) {
  return s.has_nonzero_norm ? std::optional(value) : std::nullopt;
}
double count(uint64_t value) { return static_cast<double>(value); }

}  // namespace

const std::array<StatDef, 12> kStats = {{
    {Stat::kAbsMin, "abs_min", [](const ModelSummary& s) { return if_values(s, s.abs_min); },
     "smallest magnitude of any parameter, zeros included"},
    {Stat::kAbsMax, "abs_max", [](const ModelSummary& s) { return if_values(s, s.abs_max); },
     "largest magnitude of any parameter"},
    {Stat::kNormMin, "norm_min", [](const ModelSummary& s) { return if_norms(s, s.norm_min); },
     "smallest non-zero L2 norm of a parameter tensor"},
    {Stat::kNormMax, "norm_max", [](const ModelSummary& s) { return if_norms(s, s.norm_max); },
     "largest L2 norm of a parameter tensor"},
    {Stat::kNans, "nans", [](const ModelSummary& s) { return std::optional(count(s.totals.nans)); },
     "NaN values among the parameters"},
    {Stat::kInfs, "infs", [](const ModelSummary& s) { return std::optional(count(s.totals.infs)); },
     "infinite values among the parameters"},
    {Stat::kParameters, "parameters", [](const ModelSummary& s) { return std::optional(count(s.parameters)); },
     "number of parameter values"},
    {Stat::kAbove1e2, "above_1e2", [](const ModelSummary& s) { return std::optional(count(s.totals.above_1e2)); },
     "finite values with |x| > 100, the threshold of stas00's notebook"},
    {Stat::kFp16Overflow, "fp16_overflow",
     [](const ModelSummary& s) { return std::optional(count(s.totals.above_fp16_max)); },
     "finite values with |x| > 65504: inf in fp16"},
    {Stat::kSquareOverflow, "square_overflow",
     [](const ModelSummary& s) { return std::optional(count(square_overflow(s.totals))); },
     "finite values with |x| >= 256: their square overflows fp16"},
    {Stat::kBf16ExactFraction, "bf16_exact_fraction",
     [](const ModelSummary& s) { return s.totals.bf16_exact_fraction(); },
     "fraction of F32/F64 values exact in bf16 (none: the model has no F32/F64 value)"},
    {Stat::kFp16ExactFraction, "fp16_exact_fraction",
     [](const ModelSummary& s) { return s.totals.fp16_exact_fraction(); },
     "fraction of F32/F64 values exact in fp16 (none: the model has no F32/F64 value)"},
}};

static_assert(kStats.size() == static_cast<size_t>(Stat::kFp16ExactFraction) + 1,
              "one kStats entry per Stat, in the enum's order (kFp16ExactFraction is the last)");

const StatDef& stat_def(Stat stat) { return kStats[static_cast<size_t>(stat)]; }

std::optional<Stat> parse_stat(std::string_view key) {
  for (const StatDef& def : kStats)
    if (def.key == key) return def.id;
  return std::nullopt;
}

std::string_view op_symbol(Op op) {
  switch (op) {
    case Op::kGreater:
      return ">";
    case Op::kGreaterEqual:
      return ">=";
    case Op::kLess:
      return "<";
    case Op::kLessEqual:
      return "<=";
  }
  return ">";
}

std::optional<Op> parse_op(std::string_view symbol) {
  for (Op op : {Op::kGreater, Op::kGreaterEqual, Op::kLess, Op::kLessEqual})
    if (op_symbol(op) == symbol) return op;
  return std::nullopt;
}

bool holds(double observed, Op op, double threshold) {
  switch (op) {
    case Op::kGreater:
      return observed > threshold;
    case Op::kGreaterEqual:
      return observed >= threshold;
    case Op::kLess:
      return observed < threshold;
    case Op::kLessEqual:
      return observed <= threshold;
  }
  return false;
}

}  // namespace precdetect
