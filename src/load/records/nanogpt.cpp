// nanoGPT's and llama2.c's `config` (train.py's settings): `dtype` is the autocast dtype when `device` is CUDA;
// elsewhere train.py runs without autocast. Only a dict with their `dtype`, `device` and `compile` settings is
// theirs.

#include <fmt/format.h>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

void read_train_config(const Dict* dict, const std::string& path, RecordSink& sink) {
  const Ref* dtype = field(dict, "dtype");
  const Ref* device = field(dict, "device");
  if (!dtype || !device || !field(dict, "compile")) return;
  const auto* dtype_name = std::get_if<std::string>(&(*dtype)->v);
  const auto* device_name = std::get_if<std::string>(&(*device)->v);
  if (!dtype_name || !device_name) return;
  std::vector<RecordField> fields = {{join_key(path, "dtype"), python_text(*dtype)},
                                     {join_key(path, "device"), python_text(*device)}};
  std::optional<Label> label =
      device_name->find("cuda") == std::string::npos ? Label::kFp32 : label_of_name(*dtype_name);
  if (!label)
    return sink.unreadable(fmt::format("{}.dtype={} names no precision precdetect knows", path, python_text(*dtype)));
  sink.add(RecordKind::kTrainConfig, *label, std::move(fields));
}

bool read_keyed(const std::string& key, const Ref& item, const std::string& path, RecordSink& sink) {
  if (key != "config" || path != "config") return false;  // the checkpoint's top-level `config`
  read_train_config(dict_of(item), path, sink);
  return true;
}

}  // namespace

extern const FrameworkRecords kNanoGptRecords{.framework = "nanoGPT", .read_keyed = read_keyed};

}  // namespace precdetect
