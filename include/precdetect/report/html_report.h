#pragma once
/// --report FILE.html: one self-contained page per scan. The page is a viewer of the JSON document it carries:
/// its script (src/report/html/page.js, bundled with Vega at build time) draws the verdict, the evidence and the
/// charts from that document, with no network access.

#include <nlohmann/json.hpp>
#include <string>

namespace precdetect {

/// The page for `document` (what to_json(ScanReport) or --output writes).
std::string render_html(const nlohmann::ordered_json& document);

}  // namespace precdetect
