#include "precdetect/report/csv_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "precdetect/analyze/cast_safety.h"

namespace precdetect {
namespace {

/// RFC 4180: a field holding a comma, quote or line break is quoted, its quotes doubled.
std::string field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

/// Shortest round-trip form of a double; "inf" for infinity (as in the JSON).
std::string number(double value) { return std::isinf(value) ? "inf" : fmt::format("{}", value); }

std::vector<std::string> header() {
  std::vector<std::string> columns = {"model", "tensor", "dtype",     "shape",          "numel", "group",
                                      "layer", "role",   "abs_min",   "abs_max",        "norm",  "zeros",
                                      "nans",  "infs",   "above_1e2", "square_overflow"};
  for (const NarrowFormat& format : kNarrowFormats)
    for (const char* what : {"overflow", "underflow", "subnormal"})
      columns.push_back(fmt::format("{}_{}", format.name, what));
  columns.insert(columns.end(), {"bf16_exact", "fp16_exact"});
  return columns;
}

std::vector<std::string> row(const ModelReport& model, const TensorReport& tensor) {
  const std::optional<Layer>& layer = tensor.layer;
  std::vector<std::string> cells = {model.input,
                                    tensor.name,
                                    std::string(dtype_name(tensor.dtype)),
                                    fmt::format("{}", fmt::join(tensor.shape, "x")),
                                    fmt::format("{}", tensor.numel),
                                    std::string(group_name(tensor.group)),
                                    layer ? fmt::format("{}.{}", layer->stack, layer->index) : "",
                                    std::string(role_name(tensor.role))};
  const TensorStats* s = tensor.stats ? &*tensor.stats : nullptr;
  bool values = s && s->has_values();
  auto count = [&](uint64_t n) { return s ? fmt::format("{}", n) : std::string(); };
  cells.push_back(values ? number(s->abs_min) : "");
  cells.push_back(values ? number(s->abs_max) : "");
  cells.push_back(s ? number(s->norm()) : "");
  cells.push_back(count(s ? s->zeros : 0));
  cells.push_back(count(s ? s->nans : 0));
  cells.push_back(count(s ? s->infs : 0));
  cells.push_back(count(s ? s->above_1e2 : 0));
  cells.push_back(count(s ? square_overflow(*s) : 0));
  for (const NarrowFormat& format : kNarrowFormats) {
    FormatFit fit = s ? format_fit(*s, format) : FormatFit{};
    for (uint64_t n : {fit.overflow, fit.underflow, fit.subnormal}) cells.push_back(count(n));
  }
  auto fraction = [](std::optional<double> value) { return value ? number(*value) : std::string(); };
  cells.push_back(fraction(s ? s->bf16_exact_fraction() : std::nullopt));
  cells.push_back(fraction(s ? s->fp16_exact_fraction() : std::nullopt));
  return cells;
}

std::string line(const std::vector<std::string>& cells) {
  std::vector<std::string> quoted;
  std::transform(cells.begin(), cells.end(), std::back_inserter(quoted), field);
  return fmt::format("{}\r\n", fmt::join(quoted, ","));
}

}  // namespace

std::string render_csv(const ScanReport& report) {
  std::string out = line(header());
  for (const ModelReport& model : report.models)
    for (const TensorReport& tensor : model.tensors) out += line(row(model, tensor));
  return out;
}

}  // namespace precdetect
