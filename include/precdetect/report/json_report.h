#pragma once
/// The JSON document (schema_version 1, docs/json-schema.md).

#include <nlohmann/json.hpp>

#include "precdetect/report/report.h"

namespace precdetect {

inline constexpr int kSchemaVersion = 1;

/// The whole document: {"schema_version", "tool", "models": [...]}. Keys keep the documented order.
nlohmann::ordered_json to_json(const ScanReport& report);

}  // namespace precdetect
