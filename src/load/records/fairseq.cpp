// fairseq and metaseq: `cfg.common`'s run flags (fp16, bf16, memory_efficient_*, amp), and the FP16Optimizer's loss
// scale in `last_optimizer_state`.

#include <fmt/format.h>

#include "precdetect/load/records/framework_records.h"

namespace precdetect {
namespace {

using namespace pickle;

bool read_keyed(const std::string& key, const Ref& item, const std::string& path, RecordSink& sink) {
  if (key == "last_optimizer_state") {
    sink.add_loss_scale(dict_of(item), "loss_scale", path, /*if_set=*/true);
    return true;
  }
  if (key != "cfg") return false;
  if (const Ref* common = field(dict_of(item), "common"); common && std::holds_alternative<Dict>((*common)->v))
    sink.add_flags(RecordKind::kFairseqConfig, read_flags(dict_of(*common), join_key(path, "common")), path, "cfg");
  else if (const auto* object = std::get_if<Opaque>(&item->v))
    sink.unreadable(
        fmt::format("{}: a pickled {}, whose values precdetect does not read", path, object->type.qualified()));
  return true;
}

}  // namespace

extern const FrameworkRecords kFairseqRecords{.framework = "fairseq", .read_keyed = read_keyed};

}  // namespace precdetect
