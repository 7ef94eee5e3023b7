#pragma once
/// The verdict in words, as the table and the Markdown print it: "bf16|fp32 (0.93) fp16-risk: range, overflow
/// in 2 tensors (conv2_BN.running_var 4.970e+05, ...)"; "bf16 (0.95) from training_args.bin: bf16=True".

#include <string>

#include "precdetect/classify/verdict.h"
#include "precdetect/report/report.h"

namespace precdetect {

/// The label and the confidence, then the candidates a conflict left open beside it: "bf16|fp32 (0.93)",
/// "fp16 (0.50; not ruled out: bf16, fp32)"; an unknown verdict rules nothing out and lists none.
std::string label_text(const Verdict& verdict);

/// What beside the ranges speaks: " from training_args.bin: bf16=True" when records decided (the first; "(+N
/// records)" more), " documented bf16 for EleutherAI/pythia-1b (high, by hub_id)" when a registry entry matched,
/// and the kinds of conflict ("; conflict: ranges_disagree"); "" when neither.
std::string basis_text(const Verdict& verdict);

/// What an adapter's verdict speaks for: " adapter (peft) of gpt2", " ... (base scanned: PATH)", " adapter
/// (kohya), no base named"; "" for a model.
std::string adapter_text(const ModelReport& model);

/// Each kind of fp16 risk reason with its first tensor: "range, overflow in 2 tensors (...)"; "" when none.
std::string risk_reasons_text(const Verdict& verdict);

/// "" when there is no fp16 risk; else " fp16-risk: " and the reasons.
std::string risk_text(const Verdict& verdict);

/// The whole verdict cell, as the table and the Markdown print it: the label and what speaks for it, the safety
/// (" UNSAFE pickle: posix.system", " unverified"), " GATE FAILED"; "error: CODE" for a model not read; "safety only:
/// safe", "headers only: unverified" where no values were read (--safety-only, --headers-only).
std::string model_verdict_text(const ModelReport& model);

}  // namespace precdetect
