#pragma once
/// Where torch's dynamo exporter (torch.onnx.export(dynamo=True), the default since torch 2.9) says an initializer
/// came from. It records each kept parameter's and buffer's kind on its GraphProto.value_info
/// (`pkg.torch.export.graph_signature.InputSpec.kind`), and onnxscript's optimizer records what it folded into a new
/// initializer (`pkg.onnxscript.optimizer.folded_from`: a Linear's transposed weight, from `fc1.weight`; an attention
/// mask's -3.4e38, from the exporter's own constants), while the graph's `pkg.torch.export.ExportedProgram.
/// graph_signature` lists the module's parameters and buffers; the Constants it lifts into initializers (a mask's 0
/// and -3.4e38) carry no record. Without these, an exporter's constant would be read as a weight, and a -3.4e38
/// mask would decide the verdict.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace precdetect {

/// What an initializer is, by the exporter's records.
enum class OnnxOrigin : uint8_t {
  kUnknown,    ///< no record: a weight, as any initializer is
  kParameter,  ///< a parameter of the module, or folded from one (transposed, cast): a weight
  kBuffer,     ///< a buffer of the module (BatchNorm's statistics, a position table)
  kExporter,   ///< a lifted constant, or folded from the exporter's constants alone: no weight of the module
};

/// The exporter's records of one model's main graph, gathered as the graph is walked.
class OnnxProvenance {
 public:
  /// A value_info's metadata entry `key` = `value` for the value `name`; other keys are ignored.
  void add(const std::string& name, std::string_view key, std::string_view value);
  /// The graph's metadata entry `key` = `value`: the exported program's signature is kept, other keys ignored.
  void add_graph(std::string_view key, std::string_view value);
  /// What the initializer `name` is: its InputSpec.kind where recorded; else, where the exported program's signature
  /// is known (a file torch.export wrote), kParameter when it was folded from a parameter or buffer the signature
  /// names and kExporter otherwise (folded from the exporter's constants alone, or, where the file holds InputSpec
  /// records, a Constant lifted with no record); else kUnknown.
  OnnxOrigin origin(const std::string& name) const;
  /// The parameter the initializer `name` was folded from when it is the only value it was folded from and the
  /// signature names it a parameter (a Linear's weight, transposed for its MatMul); else nullopt.
  std::optional<std::string> folded_weight(const std::string& name) const;

 private:
  std::map<std::string, std::string, std::less<>> kinds_;        ///< InputSpec.kind by value
  std::map<std::string, std::string, std::less<>> folded_from_;  ///< the folded_from record, a Python list's repr
  std::set<std::string, std::less<>> parameters_;                ///< the signature's parameters
  std::set<std::string, std::less<>> buffers_;                   ///< and buffers
  bool signature_ = false;
};

}  // namespace precdetect
