// Training records in a pickle's object graph, by the frameworks of this folder (one file each, listed here), and
// records merged across a model's files.

#include <array>
#include <set>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {

// Each framework's readers, one file each in this folder. A new framework is its file, its line here and its line
// in the list.
extern const FrameworkRecords kTransformersRecords;  // transformers.cpp
extern const FrameworkRecords kRunArgumentsRecords;  // run_arguments.cpp
extern const FrameworkRecords kDeepSpeedRecords;     // deepspeed.cpp
extern const FrameworkRecords kGradScalerRecords;    // grad_scaler.cpp
extern const FrameworkRecords kFairseqRecords;       // fairseq.cpp
extern const FrameworkRecords kApexRecords;          // apex.cpp
extern const FrameworkRecords kMegatronRecords;      // megatron.cpp
extern const FrameworkRecords kNanoGptRecords;       // nanogpt.cpp
extern const FrameworkRecords kOpenMmlabRecords;     // openmmlab.cpp
extern const FrameworkRecords kUltralyticsRecords;   // ultralytics.cpp
extern const FrameworkRecords kLightningRecords;     // lightning.cpp

namespace {

using namespace pickle;

constexpr int kMaxDepth = 64;

// Asked in this order; the first whose reader claims a value reads it (an object's class, a key, a dict's keys
// claim it for one framework only).
const std::array<const FrameworkRecords*, 11> kFrameworks = {
    &kTransformersRecords, &kRunArgumentsRecords, &kDeepSpeedRecords, &kGradScalerRecords,
    &kFairseqRecords,      &kApexRecords,         &kMegatronRecords,  &kNanoGptRecords,
    &kOpenMmlabRecords,    &kUltralyticsRecords,  &kLightningRecords};

/// Walks a pickle's graph once, each value offered to the frameworks' readers.
class RecordFinder {
 public:
  explicit RecordFinder(const std::filesystem::path& file) : sink(file) {}
  RecordSink sink;

  void visit(const Ref& value, const std::string& path, int depth) {
    if (depth > kMaxDepth || std::holds_alternative<Tensor>(value->v) || !visited_.insert(value.get()).second) return;
    if (const auto* object = std::get_if<Opaque>(&value->v)) {
      ask([&](const FrameworkRecords& f) { return f.read_object && f.read_object(*object, value, path, sink); });
      for (const Ref& part : {object->state, object->contents})
        if (part) visit(part, path, depth + 1);
    } else if (const auto* dict = std::get_if<Dict>(&value->v)) {
      ask([&](const FrameworkRecords& f) { return f.read_dict && f.read_dict(*dict, path, sink); });
      for (const auto& entry : dict->items) {  // not a structured binding: a lambda below captures the item
        const Ref& item = entry.second;
        const std::string name = key_text(entry.first), inner = join_key(path, name);
        ask([&](const FrameworkRecords& f) { return f.read_keyed && f.read_keyed(name, item, inner, sink); });
        visit(item, inner, depth + 1);
      }
    } else if (const auto* list = std::get_if<List>(&value->v)) {
      for (size_t i = 0; i < list->items.size(); ++i)
        visit(list->items[i], join_key(path, std::to_string(i)), depth + 1);
    } else if (const auto* tuple = std::get_if<Tuple>(&value->v)) {
      for (const Ref& item : tuple->items) visit(item, path, depth + 1);  // an object's (dict, slots) state
    }
  }

 private:
  /// Offers a value to each framework in turn, until one claims it.
  template <typename Read>
  void ask(Read read) {
    for (const FrameworkRecords* framework : kFrameworks)
      if (read(*framework)) return;
  }

  std::set<const Value*> visited_;
};

}  // namespace

FoundRecords find_training_records(const pickle::Result& pickle, const std::filesystem::path& file) {
  RecordFinder finder(file);
  finder.visit(pickle.root, "", 0);
  return std::move(finder.sink.found);
}

void merge_record(std::vector<TrainingRecord>& records, TrainingRecord record) {
  for (TrainingRecord& known : records) {
    if (known.kind != record.kind || known.label != record.label || known.fields != record.fields) continue;
    for (std::string& file : record.files)
      if (std::find(known.files.begin(), known.files.end(), file) == known.files.end())
        known.files.push_back(std::move(file));
    return;
  }
  records.push_back(std::move(record));
}

}  // namespace precdetect
