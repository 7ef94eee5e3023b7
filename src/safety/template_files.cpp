#include "precdetect/safety/template_files.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "precdetect/net/text_file.h"
#include "precdetect/safety/chat_template.h"

namespace precdetect {
namespace {

/// A JSON file's `chat_template`: one template, or named ones (transformers saves several as a list of
/// {"name", "template"} and reads a list back the same way).
void examine_json_templates(const std::filesystem::path& path, Safety& safety) {
  std::string where = path.string();
  std::string text = read_text_file(path, path.filename().string());
  nlohmann::json config = nlohmann::json::parse(text, nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    safety.unverified.push_back(fmt::format("{}: not a JSON object, so its chat template cannot be read", where));
    return;
  }
  auto templates = config.find("chat_template");
  if (templates == config.end() || templates->is_null()) return;
  if (templates->is_string())
    return examine_chat_template(templates->get<std::string>(), where + "!chat_template", safety);
  bool named_list = templates->is_array();
  for (const auto& entry : named_list ? *templates : nlohmann::json::array()) {
    auto name = entry.find("name"), text = entry.find("template");
    if (!entry.is_object() || name == entry.end() || text == entry.end() || !name->is_string() || !text->is_string()) {
      named_list = false;
      break;
    }
    examine_chat_template(text->get<std::string>(), fmt::format("{}!chat_template.{}", where, name->get<std::string>()),
                          safety);
  }
  if (!named_list)
    safety.unverified.push_back(fmt::format(
        "{}: chat_template is neither a string nor a list of {{\"name\", \"template\"}}, so it cannot be judged",
        where));
}

}  // namespace

void examine_templates_beside(const ModelSource& source, Safety& safety) {
  for (const std::filesystem::path& path : source.texts_beside) {
    std::string file = path.filename().string();
    bool jinja = file == "chat_template.jinja" ||
                 (path.extension() == ".jinja" && path.parent_path().filename() == "additional_chat_templates");
    try {
      if (jinja)
        examine_chat_template(read_text_file(path, file), path.string(), safety);
      else if (file == "tokenizer_config.json" || file == "chat_template.json")
        examine_json_templates(path, safety);
    } catch (const std::exception& e) {  // unreadable, or a link out of the model: never passed, never the batch's
      safety.add_failure(e, path.string());
    }
  }
}

}  // namespace precdetect
