// precdetect's C interface (include/precdetect/c_api.h): the scanner in-process for the Python package's ctypes
// binding (python/precdetect/api.py). Torch-free: live tensors arrive through DLPack.
#include "precdetect/c_api.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "precdetect/analyze/live_tensors.h"
#include "precdetect/app/check.h"
#include "precdetect/app/cli.h"
#include "precdetect/app/diff.h"
#include "precdetect/app/rule_files.h"
#include "precdetect/app/scan.h"
#include "precdetect/core/error.h"
#include "precdetect/report/diff_report.h"
#include "precdetect/report/html_report.h"
#include "precdetect/report/json_report.h"

namespace {

using precdetect::Error;

/// The code a usage error carries (precdetect.Error.code in Python); the scanner's own errors carry theirs.
constexpr const char* kUsageCode = "usage";

/// A failure on its way to the caller as {"error": {"code", "message"}}.
struct Failure {
  std::string code, message;
};

char* owned_copy(const std::string& text) {
  auto* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy) std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

/// Runs `work` (returning the document as JSON text) and wraps its outcome for the caller.
template <typename Work>
char* answer(Work&& work) {
  try {
    return owned_copy(R"({"document": )" + work() + "}");
  } catch (const Failure& failure) {
    return owned_copy(nlohmann::json{{"error", {{"code", failure.code}, {"message", failure.message}}}}.dump());
  } catch (const Error& e) {
    return owned_copy(
        nlohmann::json{{"error", {{"code", precdetect::to_string(e.code())}, {"message", e.what()}}}}.dump());
  } catch (const std::exception& e) {  // not ours (the standard library): named, never a crash of the caller
    return owned_copy(nlohmann::json{{"error", {{"code", "internal"}, {"message", e.what()}}}}.dump());
  }
}

std::vector<std::string> strings(const char* const* values, size_t count) { return {values, values + count}; }

precdetect::CommandLine parse(const char* command, const std::vector<std::string>& args) {
  std::vector<const char*> argv{"precdetect", command};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  precdetect::CommandLine line = precdetect::parse_command_line(static_cast<int>(argv.size()), argv.data());
  if (line.exit_code != 0 || (!line.scan && !line.diff)) {
    std::string text = line.err.empty() ? line.out : line.err;
    throw Failure{kUsageCode, text.substr(0, text.find('\n'))};  // not CLI11's "Run with --help" line
  }
  return line;
}

const precdetect::dlpack::Tensor& dl_tensor(const precdetect_live_tensor& tensor) {
  if (tensor.versioned) return static_cast<const precdetect::dlpack::ManagedTensorVersioned*>(tensor.dlpack)->dl_tensor;
  return static_cast<const precdetect::dlpack::ManagedTensor*>(tensor.dlpack)->dl_tensor;
}

precdetect::LiveTensor live_tensor(const precdetect_live_tensor& tensor) {
  precdetect::LiveTensor live{.name = tensor.name, .values = &dl_tensor(tensor), .storage_key = tensor.storage_key};
  if (tensor.dtype) live.dtype = precdetect::parse_dtype(tensor.dtype);
  if (tensor.role && std::string_view(tensor.role) == "model") live.role = precdetect::TensorRole::kModel;
  if (tensor.role && std::string_view(tensor.role) == "buffer") live.role = precdetect::TensorRole::kBuffer;
  if (tensor.unreadable) live.unreadable = tensor.unreadable;
  return live;
}

/// The probe's measurements: [{"module", "output", "input"}, ...].
std::vector<precdetect::ActivationPeak> activation_peaks(const nlohmann::json& list) {
  std::vector<precdetect::ActivationPeak> peaks;
  for (const nlohmann::json& item : list)
    peaks.push_back(
        {item.at("module").get<std::string>(), item.at("output").get<double>(), item.at("input").get<double>()});
  return peaks;
}

}  // namespace

extern "C" {

char* precdetect_scan(const char* const* args, size_t count) {
  return answer([&] {
    precdetect::ScanOptions options = *parse("scan", strings(args, count)).scan;
    return precdetect::json_text(precdetect::to_json(precdetect::scan_all(options)), 2);
  });
}

char* precdetect_diff(const char* const* args, size_t count) {
  return answer([&] {
    precdetect::DiffCommand command = *parse("diff", strings(args, count)).diff;
    return precdetect::json_text(precdetect::diff_to_json(precdetect::diff_all(command), command.tolerances), 2);
  });
}

char* precdetect_check(const char* const* args, size_t count, const char* name, const char* format,
                       const precdetect_live_tensor* tensors, size_t tensor_count, const char* const* not_tensors,
                       size_t not_tensor_count, const char* config, const char* activations,
                       precdetect_copy_to_host copy_to_host) {
  return answer([&] {
    std::vector<std::string> with_input = strings(args, count);
    with_input.insert(with_input.end(), {"--", name});  // the parser wants an input; the check has none
    precdetect::ScanOptions options = *parse("scan", with_input).scan;
    std::vector<precdetect::LiveTensor> live;
    for (size_t i = 0; i < tensor_count; ++i) live.push_back(live_tensor(tensors[i]));
    precdetect::CopyToHost copy = [copy_to_host](size_t index, uint64_t offset, std::span<std::byte> into) {
      if (!copy_to_host || copy_to_host(index, offset, into.data(), into.size()) != 0)
        throw Error(precdetect::ErrorCode::kDevice, "a GPU tensor could not be copied to the host");
    };
    precdetect::RuleSet rules = precdetect::run_rules(options);
    precdetect::Registry registry = precdetect::run_registry(options);
    precdetect::ModelReport report = precdetect::check_live_model(
        precdetect::open_live_model(std::move(live), strings(not_tensors, not_tensor_count), std::move(copy)),
        {.name = name,
         .format = format,
         .config = nlohmann::json::parse(config),
         .activations = activation_peaks(nlohmann::json::parse(activations))},
        options, {rules, registry, options.gpu});
    return precdetect::json_text(precdetect::to_json(precdetect::ScanReport{.models = {std::move(report)}}), 2);
  });
}

char* precdetect_html(const char* document) {
  return answer(
      [&] { return nlohmann::json(precdetect::render_html(nlohmann::ordered_json::parse(document))).dump(); });
}

void precdetect_free(char* text) { std::free(text); }

}  // extern "C"
