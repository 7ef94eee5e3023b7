#pragma once
/// Pickles written as base64 text into another format's config, where their loader decodes and unpickles them:
/// Stable-Baselines3's `data` member (save_util.data_to_json: every value JSON cannot hold as
/// `{":serialized:": base64(cloudpickle.dumps(value))}`, which json_to_data gives to cloudpickle.loads) and Keras'
/// TorchModuleWrapper (its config's `module`: base64 of torch.save(module), which from_config hands to
/// torch.load(weights_only=False) once safe mode is off).

#include <string>
#include <string_view>

#include "precdetect/load/file_format.h"

namespace precdetect {

/// Names to `visitor` every quoted string in `text` (JSON, YAML) that is base64 of a pickle (PROTO 2 to 5), of a
/// zip (a torch.save archive) or of a gzip stream: a pickle's pickles as `<where>!base64@<offset>` (the offset of
/// the string's first character in `text`), an archive or stream opened in its format and nested under that name.
/// Strings of other bytes, and ones that are no valid base64, are passed over: nothing decodes them to unpickle.
void name_embedded_pickles(std::string_view text, const std::string& where, PickleVisitor& visitor);

}  // namespace precdetect
