#pragma once
/// A model's inventory as the outputs show it: every file accounted to it with its disposition and verdict (JSON
/// `models[].inventory`, docs/json-schema.md), and the counts the table and Markdown print under their rows.

#include <nlohmann/json.hpp>
#include <string>

#include "precdetect/discover/inventory.h"
#include "precdetect/report/report.h"

namespace precdetect {

/// `{"files": [{"file", "kind", "size", "link", "disposition", "verdict", "reason"}], "counts": {disposition: n},
/// "not_read": {why: n}, "unlisted": n}`; null for a model without an inventory (remote, in memory).
nlohmann::ordered_json inventory_json(const ModelReport& model);

/// "files: 6 judged (1 weight file, 3 loader files, 2 on their own); 2 not read (1 document, 1 image)\n", or ""
/// when no model had an inventory.
std::string files_line(const InventoryCounts& counts);

}  // namespace precdetect
