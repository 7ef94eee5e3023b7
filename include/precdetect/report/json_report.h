#pragma once
/// The JSON document (schema_version kSchemaVersion, docs/json-schema.md).

#include <nlohmann/json.hpp>
#include <string>

#include "precdetect/report/report.h"

namespace precdetect {

inline constexpr int kSchemaVersion = 14;

/// The whole document: {"schema_version", "tool", "models": [...]}. Keys keep the documented order.
nlohmann::ordered_json to_json(const ScanReport& report);

/// The document around already-rendered "models" items (what `precdetect merge` reassembles).
nlohmann::ordered_json scan_document(nlohmann::ordered_json models);

/// A document's text (`indent` -1: one line), ending in a newline. Paths and library messages need not be
/// UTF-8: invalid bytes become U+FFFD rather than aborting the dump.
std::string json_text(const nlohmann::ordered_json& document, int indent);

/// One item of "models".
nlohmann::ordered_json model_json(const ModelReport& model);

/// A --jsonl line of one model: {"type": "model", then model_json's fields}.
nlohmann::ordered_json model_line_json(const ModelReport& model);

/// The last line of --jsonl: {"type": "summary", "summary": {"models", "scanned", "failed", "gate_failures",
/// "labels"}}.
nlohmann::ordered_json batch_summary_json(const ScanReport& report);

}  // namespace precdetect
