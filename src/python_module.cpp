// precdetect._core: the scanner in-process for the Python API (python/precdetect/api.py). Options arrive as the
// command line's arguments, so that the CLI's one definition of every option (app/cli) validates them alike;
// results leave as the --json documents, which the Python side wraps. The GIL is released while files are read;
// check() keeps it (below).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>  // torch.Tensor <-> at::Tensor

#include <string>
#include <vector>

#include "precdetect/app/check.h"
#include "precdetect/app/cli.h"
#include "precdetect/app/diff.h"
#include "precdetect/app/scan.h"
#include "precdetect/core/error.h"
#include "precdetect/load/live_tensors.h"
#include "precdetect/report/diff_report.h"
#include "precdetect/report/html_report.h"
#include "precdetect/report/json_report.h"

namespace py = pybind11;

namespace {

/// The code a usage error carries in Python (precdetect.Error.code); the scanner's own errors carry theirs.
constexpr const char* kUsageCode = "usage";

/// Raised to Python as precdetect.Error(code, message).
struct PythonError {
  std::string code, message;
};

precdetect::CommandLine parse(const char* command, const std::vector<std::string>& args) {
  std::vector<const char*> argv{"precdetect", command};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  precdetect::CommandLine line = precdetect::parse_command_line(static_cast<int>(argv.size()), argv.data());
  if (line.exit_code != 0 || (!line.scan && !line.diff)) {
    std::string text = line.err.empty() ? line.out : line.err;
    throw PythonError{kUsageCode, text.substr(0, text.find('\n'))};  // not CLI11's "Run with --help" line
  }
  return line;
}

/// Runs `work` without the GIL, turning the scanner's errors into PythonError.
template <typename Work>
std::string unlocked(Work&& work) {
  try {
    py::gil_scoped_release release;
    return work();
  } catch (const precdetect::Error& e) {
    throw PythonError{std::string(precdetect::to_string(e.code())), e.what()};
  }
}

std::string scan(const std::vector<std::string>& args) {
  precdetect::ScanOptions options = *parse("scan", args).scan;
  return unlocked([&] { return precdetect::json_text(precdetect::to_json(precdetect::scan_all(options)), 2); });
}

std::string diff(const std::vector<std::string>& args) {
  precdetect::DiffCommand command = *parse("diff", args).diff;
  return unlocked([&] {
    return precdetect::json_text(precdetect::diff_to_json(precdetect::diff_all(command), command.tolerances), 2);
  });
}

/// The --json document of a check of live `tensors`: (name, tensor, role) with role "model" or "buffer" as the module
/// says, or "" for a state dict's entry. Unlike scan, check holds the GIL while it reads: the tensors are read in
/// place, and a Python thread that resized or freed one meanwhile would pull memory from under the kernel; with
/// the GIL held it waits until the check is done.
std::string check(const std::vector<std::string>& args, const std::string& name, const std::string& format,
                  const std::vector<std::tuple<std::string, at::Tensor, std::string>>& tensors,
                  const std::vector<std::string>& not_tensors, const std::string& config) {
  std::vector<std::string> with_input = args;
  with_input.insert(with_input.end(), {"--", name});  // the parser wants an input; the check has none
  precdetect::ScanOptions options = *parse("scan", with_input).scan;
  std::vector<precdetect::LiveTensor> live;
  for (const auto& [tensor_name, values, role] : tensors) {
    std::optional<precdetect::TensorRole> given;
    if (role == "model") given = precdetect::TensorRole::kModel;
    if (role == "buffer") given = precdetect::TensorRole::kBuffer;
    live.push_back({tensor_name, values, given});
  }
  try {
    precdetect::RuleSet rules = options.rules ? precdetect::load_rules(*options.rules) : precdetect::default_rules();
    precdetect::Registry registry =
        options.registry ? precdetect::load_registry(*options.registry) : precdetect::default_registry();
    precdetect::ModelReport report = precdetect::check_live_model(
        precdetect::open_live_model(std::move(live), not_tensors),
        {.name = name, .format = format, .config = nlohmann::json::parse(config)}, options, {rules, registry});
    return precdetect::json_text(precdetect::to_json(precdetect::ScanReport{.models = {std::move(report)}}), 2);
  } catch (const precdetect::Error& e) {
    throw PythonError{std::string(precdetect::to_string(e.code())), e.what()};
  }
}

std::string html(const std::string& document) {
  return precdetect::render_html(nlohmann::ordered_json::parse(document));
}

}  // namespace

PYBIND11_MODULE(_core, module) {
  module.doc() = "precdetect's scanner in-process; use precdetect.scan and precdetect.diff";
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const PythonError& e) {
      py::object error = py::module_::import("precdetect.errors").attr("Error")(e.code, e.message);
      PyErr_SetObject(py::type::handle_of(error).ptr(), error.ptr());
    }
  });
  module.def("scan", &scan, "The --json document of `precdetect scan ARGS`", py::arg("args"));
  module.def("diff", &diff, "The --json document of `precdetect diff ARGS`", py::arg("args"));
  module.def("check", &check, "The --json document of a check of live tensors", py::arg("args"), py::arg("name"),
             py::arg("format"), py::arg("tensors"), py::arg("not_tensors"), py::arg("config"));
  module.def("html", &html, "The HTML report (--report) of a scan's JSON document", py::arg("document"));
}
