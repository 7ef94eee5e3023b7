#pragma once
/// A Keras model config judged as keras.models.load_model would rebuild the model from it, with nothing imported or
/// run: the Python functions it carries as marshalled bytecode, which loading runs, and the Python names it asks
/// Keras to import. The config is a `.keras` archive's config.json or an HDF5 model's `model_config` attribute, in
/// Keras 3's format (`{"module", "class_name", "config", "registered_name"}`) or Keras 2's and tf-keras's. What is
/// judged and why, with its sources: docs/security.md#keras-configs.

#include <string>
#include <string_view>

#include "precdetect/load/pickle/pickle_globals.h"
#include "precdetect/safety/safety.h"

namespace precdetect {

/// Judges the Keras config `json`, named `where` in the report ("model.keras!config.json"), into `safety`:
/// - every serialized Python function is FileTampering::kSerializedFunction, its detail naming the layer and the
///   path in the config: a `"class_name": "__lambda__"` object (Keras 3, tf-keras), an object with a `*_type`
///   field `"lambda"` (Keras 2 and tf-keras: a Lambda's `function_type`, `output_shape_type`), or any string that
///   decodes, as Keras' `func_load` decodes it, to a marshalled code object. Nothing below one is judged further.
/// - every object naming a `module` and a class (`class_name`) or a function (`"class_name": "function"`, the name
///   in `config`) is judged by judge_keras_name and, unless allowed, listed once per config as a SafetyImport
///   (offset 0, called: Keras calls what it resolves, a Lambda's function when the model is rebuilt).
/// A config that is not JSON is unverified (Keras cannot load it either). Never throws Error.
void judge_keras_config(std::string_view json, const std::string& where, Safety& safety);

/// A name a Keras config asks for:
/// - in a module of Keras' own packages (keras, keras_hub, keras_cv, keras_nlp, tf_keras): allowed, unless it is
///   one of Keras' own non-modeling APIs (serialization_lib's NON_MODELING_APIS: get_file, load_model,
///   enable_unsafe_deserialization, ..., matched by the function's name in any of those modules) or judge_global
///   finds it dangerous (a dunder or dotted name): dangerous;
/// - in `builtins`, Keras' name for its own built-in functions: judge_listed_global's dangerous ones (eval, open,
///   getattr, ...) and those that end or take over the process (exit, quit, help) are dangerous, the rest allowed;
/// - in any other module: judge_global's judgement, as a pickle's global.
GlobalJudgement judge_keras_name(std::string_view module, std::string_view name);

}  // namespace precdetect
