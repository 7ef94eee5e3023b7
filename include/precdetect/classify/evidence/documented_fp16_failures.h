#pragma once
/// Documented fp16 failures as verdict evidence: architectures and models whose authors, or the frameworks that
/// serve them, wrote down that they break in fp16 (src/classify/fp16_failures.json, each entry with its primary
/// source; docs/method.md, "Documented fp16 failures"). A match is an fp16 risk of the kind `documented`; an
/// entry's `keep_in_fp32` is the remedy its source applies, which the advice's keep list quotes.

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "precdetect/classify/model_identity.h"

namespace precdetect {

struct Fp16Failure {
  std::string id;
  /// What names the models, any one of which matches: config.json's model_type (or text_config's), an entry of
  /// its architectures, a hub id (a trailing `*` matches a prefix).
  std::vector<std::string> model_types, architectures, ids;
  nlohmann::json config = nlohmann::json::object();  ///< config.json fields that must all hold besides
  /// Module names the source keeps in fp32 (transformers' `_keep_in_fp32_modules` patterns); empty: none is given,
  /// fp16 is ruled out.
  std::vector<std::string> keep_in_fp32;
  std::string says, source, quote;
};

/// The built-in list, src/classify/fp16_failures.json, embedded at build time.
const std::vector<Fp16Failure>& documented_fp16_failures();

/// Parses a list in that file's form; throws Error(kInvalidRegistry) naming `origin` when an entry lacks an id, a
/// source, a quote or anything that names models.
std::vector<Fp16Failure> parse_fp16_failures(const std::string& text, const std::string& origin);

/// The entries that match `identity`, in the list's order.
std::vector<const Fp16Failure*> find_fp16_failures(std::span<const Fp16Failure> failures,
                                                   const ModelIdentity& identity);

}  // namespace precdetect
