#pragma once
/// Tolerances of `precdetect diff` (docs/diff.md).

namespace precdetect {

/// seed 004: weights below this magnitude in both checkpoints count as unchanged, whatever their ratio.
constexpr double kBothZeroBelow = 1e-10;

struct DiffOptions {
  double rtol = 1e-5;  ///< allclose: |other - base| <= atol + rtol * |base| (torch.allclose, base-relative)
  double atol = 1e-8;
  double eta = 1e-3;     ///< bf16-aware: unchanged when |b - a| <= eta * max(|a|, |b|) after casting both to bf16
  bool bitwise = false;  ///< bf16-aware: unchanged only when the bf16 bit patterns are equal (+0 == -0)
};

}  // namespace precdetect
