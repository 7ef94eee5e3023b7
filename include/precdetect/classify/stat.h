#pragma once
/// The model statistics a rule may test, defined once: each with its name in rules files and evidence, how it is
/// read off a model's summary, and what it means (docs/rules.md prints the same descriptions).

#include <array>
#include <optional>
#include <string_view>

#include "precdetect/analyze/summary.h"

namespace precdetect {

enum class Stat {
  kAbsMin,
  kAbsMax,
  kNormMin,
  kNormMax,
  kNans,
  kInfs,
  kParameters,
  kAbove1e2,
  kFp16Overflow,
  kSquareOverflow,
  kBf16ExactFraction,
  kFp16ExactFraction,
};

struct StatDef {
  Stat id;
  std::string_view key;  ///< its name in rules files and in the evidence
  /// Its value on a model's parameters; nullopt when the model has none (no floating values, no F32/F64 value).
  std::optional<double> (*read)(const ModelSummary&);
  std::string_view description;
};

/// Every statistic, in the order of the enum.
extern const std::array<StatDef, 12> kStats;

const StatDef& stat_def(Stat stat);
/// The statistic a rules file names; nullopt for an unknown name.
std::optional<Stat> parse_stat(std::string_view key);

/// A condition's comparison.
enum class Op { kGreater, kGreaterEqual, kLess, kLessEqual };

/// ">", ">=", "<", "<=".
std::string_view op_symbol(Op op);
std::optional<Op> parse_op(std::string_view symbol);
bool holds(double observed, Op op, double threshold);

}  // namespace precdetect
