#pragma once
/// The one interface every quantization scheme implements, and the one list of them (src/quantize/schemes.cpp).
/// A scheme is one file in src/quantize/: its parts (link.h: the tensors a weight is read with, and how, with their
/// report description and cache key), how its weights are recognized and linked to them (from their names, from
/// config.json's `quantization_config` or a quantizer's own settings file, from what an exported graph says), and
/// how those tensors dequantize into the kernel's statistics, in its library's own dtypes and rounding order.
/// Shared pieces sit beside them: packed codes (packed_codes, grid_codes), tables of decoded values (table_stats,
/// grid_tables), rounding to narrow dtypes (narrow_rounding).

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "precdetect/kernel/tensor_stats.h"
#include "precdetect/load/checkpoint.h"
#include "precdetect/load/record_values.h"
#include "precdetect/load/tensor_record.h"
#include "precdetect/quantize/link.h"
#include "precdetect/quantize/linked_checkpoint.h"

namespace precdetect {

/// What a scheme's link works on: a model's records (their names unique, but across model-parallel shards) and
/// what the schemes before it read them as, the model's config, and what its graph says it dequantizes. A scheme
/// finds records by name, marks the tensors it reads a weight with as quantization state (part()), and sets what
/// each of its weights is read as (read(), unread()).
class Linking {
 public:
  /// `config`: config.json's object with a quantizer's settings and the checkpoint's tensor subclasses merged in
  /// (null without one); `file` names the model in errors.
  Linking(LinkedCheckpoint& model, const nlohmann::json& config, const std::string& file);

  std::vector<TensorRecord>& tensors() { return model_.tensors; }
  const nlohmann::json& config() const { return config_; }
  const std::string& file() const { return file_; }
  /// What the model's exported graphs say they dequantize (ONNX's DequantizeLinear and QOperator nodes).
  const std::vector<DequantizeNode>& dequantize_nodes() const { return model_.dequantize_nodes; }

  /// The record named `name` (the first of that name); nullptr when absent.
  TensorRecord* find(const std::string& name);
  bool contains(const std::string& name) const { return names_.contains(name); }
  /// find(), marked as quantization state (TensorRole::kScale, as the file said it): never a weight in the
  /// verdict, even where the weight it belongs to cannot be read.
  TensorRecord* part(const std::string& name);
  const RecordReading& reading(const TensorRecord& record) const { return model_.reading(record); }
  bool linked(const TensorRecord& record) const { return reading(record).link.has_value(); }
  /// `weight` is read through `link`.
  void read(const TensorRecord& weight, Link link);
  /// No longer read (a link the scheme made that it then finds it does not read).
  void forget(const TensorRecord& weight);
  /// `weight` is quantized by `scheme`, which precdetect does not read: counted, never analyzed as the numbers it
  /// is stored as, out of the verdict.
  void unread(const TensorRecord& weight, std::string scheme);
  /// Renames `record` (a scheme that reports its codes under the weight's own name), for the schemes after it too.
  void rename(TensorRecord& record, std::string name);

 private:
  RecordReading& mutable_reading(const TensorRecord& record);

  LinkedCheckpoint& model_;
  const nlohmann::json& config_;
  const std::string& file_;
  std::unordered_map<std::string, size_t> names_;
};

/// A linked weight's tensors, each read from its checkpoint when a scheme asks for it. Does not own the
/// checkpoint, the record, the link or the parts' index, which must outlive it.
class LinkedValues {
 public:
  /// Each record of role TensorRole::kScale by name: the tensors links name.
  using Parts = std::unordered_map<std::string, const TensorRecord*>;

  LinkedValues(const Checkpoint& checkpoint, const TensorRecord& weight, const Link& link, const Parts& parts)
      : checkpoint_(checkpoint), weight_(weight), link_(link), parts_(parts) {}

  const TensorRecord& record() const { return weight_; }
  const Link& link() const { return link_; }
  /// The link's parts, as its scheme defined them (Link::parts).
  template <typename SchemeParts>
  const SchemeParts& parts() const {
    return link_.parts<SchemeParts>();
  }
  /// The file the weight is stored in, for error messages.
  const std::filesystem::path& file() const { return checkpoint_.files[weight_.file]->path(); }
  /// The weight's own stored values (its codes).
  HostValues weight() const { return read_values(checkpoint_, weight_); }
  /// The linked tensor `part` (one the link names). Throws std::out_of_range for a name no link gave.
  HostValues part(const PartName& part) const { return read_values(checkpoint_, *parts_.at(part.name)); }
  /// As part(), nullopt for a part the link does not have (an empty name).
  std::optional<HostValues> optional_part(const PartName& part) const {
    return part.name.empty() ? std::nullopt : std::optional(this->part(part));
  }

 private:
  const Checkpoint& checkpoint_;
  const TensorRecord& weight_;
  const Link& link_;
  const Parts& parts_;
};

/// One quantization scheme: its entry in the list.
struct QuantScheme {
  std::string_view name;  ///< the formats it reads, as docs/using.md lists them
  /// Links each weight the scheme stores to its parts (Linking::read), marks the tensors it is read with as
  /// quantization state, and names the weights it declares but does not read (Linking::unread). Throws
  /// Error(kSizeMismatch) (or the format's own code) naming the model where parts that it checks here do not fit.
  void (*link)(Linking& model);
  /// The statistics of the values a weight it linked dequantizes to (nullptr for the schemes precdetect does not
  /// read, which link nothing). Exactness counts are left at 0: a dequantized value is no stored value. Throws
  /// Error(kSizeMismatch) (or the scheme's own code) naming the file and the tensors where their shapes or
  /// contents do not fit together.
  TensorStats (*stats)(const LinkedValues& values);
};

/// Every scheme, in the order their links are tried (each scheme sees the names the ones before it gave).
std::span<const QuantScheme* const> quant_schemes();

/// The statistics of a linked weight, by the scheme its link names.
TensorStats quantized_stats(const LinkedValues& values);

}  // namespace precdetect
