#include "precdetect/report/html_report.h"

#include <stdexcept>
#include <string_view>

#include "precdetect/report/json_report.h"

namespace precdetect {
namespace {

// Arrays, not string_views: a constexpr string_view of a literal this long would strlen it at compile time.
constexpr char kPage[] =
#include "report_page.html.inc"
    ;
constexpr char kScript[] =
#include "report_page.js.inc"
    ;

/// '<' appears in JSON text only inside strings, where \u003c means the same: a name or message holding
/// "</script>" can then not end the data element.
std::string script_safe(std::string_view json) {
  std::string safe;
  safe.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      safe += "\\u003c";
    else
      safe += c;
  }
  return safe;
}

void fill(std::string& page, std::string_view marker, std::string_view text) {
  size_t at = page.find(marker);
  if (at == std::string::npos) throw std::logic_error("report page template lacks " + std::string(marker));
  page.replace(at, marker.size(), text);
}

}  // namespace

std::string render_html(const nlohmann::ordered_json& document) {
  std::string page(kPage, sizeof kPage - 1);
  // The data goes in last: the document's own text may hold the other marker.
  fill(page, "/*precdetect:script*/", std::string_view(kScript, sizeof kScript - 1));
  fill(page, "/*precdetect:document*/", script_safe(json_text(document, -1)));
  return page;
}

}  // namespace precdetect
