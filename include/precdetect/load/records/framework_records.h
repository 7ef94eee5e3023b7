#pragma once
/// The one interface a framework's training records implement, and what its readers share: each framework is one
/// file in src/load/records/ (transformers, run_arguments, deepspeed, grad_scaler, fairseq, apex, megatron, nanogpt,
/// openmmlab, ultralytics, lightning; nemo and espnet read config files, not pickles), listed in one place
/// (find_records.cpp, kFrameworks). The values are read as they lie in a pickle's inert object graph: nothing is
/// called.

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/load/pickle/pickle.h"
#include "precdetect/load/records/find_records.h"

namespace precdetect {

/// The dict behind a value: itself, or an object's BUILD state or set items (a Namespace's attributes, an
/// AttributeDict's entries); nullptr for anything else.
const pickle::Dict* dict_of(const pickle::Ref& value);

/// The item of `dict` (may be nullptr) under `key`; nullptr when absent.
const pickle::Ref* field(const pickle::Dict* dict, std::string_view key);

/// A value as Python prints it: True, 128, 65536.0, 'bf16', torch.bfloat16, None.
std::string python_text(const pickle::Ref& value);

/// The text of a value that names a precision: a string, an int (Lightning's 16), a torch dtype global.
std::optional<std::string> name_of(const pickle::Ref& value);

/// The label a dtype or precision name spells (torch dtypes, Lightning's and NeMo's precision strings, timm's
/// amp_dtype, accelerate's mixed_precision, OpenCLIP's --precision); nullopt for anything else (fp8, "auto", 64).
std::optional<Label> label_of_name(std::string name);

/// A top-level `key: value` line of a YAML file (nested keys are indented), its value without quotes or a comment;
/// nullopt when the file has none.
std::optional<std::string> top_level_yaml_value(std::string_view yaml, std::string_view key);

/// What an arguments object's precision fields say.
struct FlagReading {
  std::vector<RecordField> fields;      ///< every precision field present, as read
  std::set<Label> says;                 ///< the labels the set flags and named precisions name
  bool any = false;                     ///< at least one precision field was present
  std::vector<std::string> unreadable;  ///< fields whose values name no precision
};

/// The precision fields of an arguments dict (may be nullptr) at `path`: boolean run flags (fairseq, Megatron-LM,
/// the HF Trainer, timm before 2022-10), `amp` with timm's `amp_dtype`, and fields that name a precision.
FlagReading read_flags(const pickle::Dict* dict, const std::string& path);

/// Where a framework's reader puts what it finds in one file.
class RecordSink {
 public:
  explicit RecordSink(const std::filesystem::path& file) : file_(file.string()) {}

  /// A record of `kind` naming `label`, read from `fields` (merged with an equal record already found).
  void add(RecordKind kind, Label label, std::vector<RecordField> fields);
  /// The record a reading makes: the one precision its fields name; fp32 when precision fields are present and
  /// none is set. Fields that contradict each other or name no precision make a warning instead, and so does an
  /// object that should hold flags and holds none (`expected` names it; empty: nothing was expected).
  void add_flags(RecordKind kind, FlagReading reading, const std::string& path, const std::string& expected);
  /// A loss scale under `dict`'s `key` (fairseq, Megatron-LM, apex amp): fp16. `if_set`: None proves nothing.
  void add_loss_scale(const pickle::Dict* dict, std::string_view key, const std::string& path, bool if_set);
  /// A record recognised whose precision cannot be read: a warning (kRecordUnreadable) saying `what`.
  void unreadable(std::string what);

  FoundRecords found;

 private:
  std::string file_;
};

/// One framework's records in a pickle's object graph. Each reader returns whether the value is the framework's
/// (then no later framework is asked); nullptr: the framework saves no record that way.
struct FrameworkRecords {
  std::string_view framework;
  /// An object that is a record by its class (`value` holds `object`).
  bool (*read_object)(const pickle::Opaque& object, const pickle::Ref& value, const std::string& path,
                      RecordSink& sink) = nullptr;
  /// Any dict, by its keys alone (a state dict saved wherever the run put it).
  bool (*read_dict)(const pickle::Dict& dict, const std::string& path, RecordSink& sink) = nullptr;
  /// A value the framework saves under `key` (at `path`, which ends with the key).
  bool (*read_keyed)(const std::string& key, const pickle::Ref& item, const std::string& path,
                     RecordSink& sink) = nullptr;
};

}  // namespace precdetect
