// precdetect._core: the scanner in-process for the Python API (python/precdetect/api.py). Options arrive as the
// command line's arguments, so that the CLI's one definition of every option (app/cli) validates them alike;
// results leave as the --json documents, which the Python side wraps. The GIL is released while models are read.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "precdetect/app/cli.h"
#include "precdetect/app/diff.h"
#include "precdetect/app/scan.h"
#include "precdetect/core/error.h"
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
  module.def("html", &html, "The HTML report (--report) of a scan's JSON document", py::arg("document"));
}
