// An argparse Namespace of run flags (fairseq's and Megatron-LM's `args`, timm's): fp16, bf16, params_dtype, amp.

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

bool read_object(const Opaque& object, const Ref& value, const std::string& path, RecordSink& sink) {
  std::string name = object.type.qualified();
  if (name != "argparse.Namespace") return false;
  // Only the run's own arguments (a checkpoint's `args`) are expected to name a precision.
  sink.add_flags(RecordKind::kRunArguments, read_flags(dict_of(value), path), path, path == "args" ? name : "");
  return true;
}

}  // namespace

extern const FrameworkRecords kRunArgumentsRecords{.framework = "argparse", .read_object = read_object};

}  // namespace precdetect
