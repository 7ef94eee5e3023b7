#pragma once
/// The one interface every quantization scheme implements, and the one list of them (src/quantize/schemes.cpp).
/// A scheme is one file in src/quantize/: how its weights are recognized and linked to the tensors they are read
/// with (from their names, and from config.json's `quantization_config` or a quantizer's own settings file), and
/// how those tensors dequantize into the kernel's statistics, in its library's own dtypes and rounding order.
/// Shared pieces sit beside them: packed codes (packed_codes, grid_codes), tables of decoded values (table_stats,
/// grid_tables), rounding to narrow dtypes (narrow_rounding), the state parts' marking (state_parts).

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

namespace precdetect {

/// A linked weight's tensors, each read from its checkpoint when a scheme asks for it. Does not own the
/// checkpoint, the record or the parts' index, which must outlive it.
class LinkedValues {
 public:
  /// Each record of role TensorRole::kScale by name: the tensors links name.
  using Parts = std::unordered_map<std::string, const TensorRecord*>;

  LinkedValues(const Checkpoint& checkpoint, const TensorRecord& weight, const Parts& parts)
      : checkpoint_(checkpoint), weight_(weight), parts_(parts) {}

  const TensorRecord& record() const { return weight_; }
  const ScaleLink& link() const { return *weight_.scaled_by; }
  /// The file the weight is stored in, for error messages.
  const std::filesystem::path& file() const { return checkpoint_.files[weight_.file]->path(); }
  /// The weight's own stored values (its codes).
  HostValues weight() const { return read_values(checkpoint_, weight_); }
  /// The linked tensor `name` (one linked_tensors names). Throws std::out_of_range for a name no link gave.
  HostValues part(const std::string& name) const { return read_values(checkpoint_, *parts_.at(name)); }
  /// As part(), nullopt for an empty name (a part the link does not have).
  std::optional<HostValues> optional_part(const std::string& name) const {
    return name.empty() ? std::nullopt : std::optional(part(name));
  }

 private:
  const Checkpoint& checkpoint_;
  const TensorRecord& weight_;
  const Parts& parts_;
};

/// One quantization scheme: its entry in the list.
struct QuantScheme {
  std::string_view name;  ///< the formats it reads, as docs/using.md lists them
  /// The ScaleLink::scheme values its links carry: the links whose values `stats` computes.
  std::span<const ScaleScheme> computes;
  /// Links each weight of `tensors` the scheme stores (`config`: config.json's object with a quantizer's settings
  /// merged in, null without one) by setting its TensorRecord::scaled_by, and marks the tensors it is read with as
  /// TensorRole::kScale. Throws Error(kSizeMismatch) naming `file` where parts that it checks here do not fit.
  void (*link)(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file);
  /// The statistics of the values a weight it linked dequantizes to (nullptr where `computes` is empty: the
  /// schemes precdetect does not read, which link nothing). Exactness counts are left at 0: a dequantized
  /// value is no stored value. Throws Error(kSizeMismatch) (or the scheme's own code) naming the file and the
  /// tensors where their shapes or contents do not fit together.
  TensorStats (*stats)(const LinkedValues& values);
};

/// Every scheme, in the order their links are tried (each scheme sees the names the ones before it gave).
std::span<const QuantScheme* const> quant_schemes();

/// Runs every scheme's link over `tensors` (a checkpoint's records, their names unique), in quant_schemes' order.
void link_quantized(std::vector<TensorRecord>& tensors, const nlohmann::json& config, const std::string& file);

/// The statistics of a linked weight (`values.record().scaled_by` set), by the scheme whose link it carries.
TensorStats quantized_stats(const LinkedValues& values);

}  // namespace precdetect
