#include "precdetect/app/shard_set.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <map>
#include <set>

#include "precdetect/core/error.h"

namespace precdetect {
namespace {

using nlohmann::ordered_json;

std::optional<ShardPart> shard_of(const ordered_json& summary) {
  if (!summary.contains("shard") || !summary["shard"].is_object()) return std::nullopt;
  const ordered_json& shard = summary["shard"];
  try {
    return ShardPart{.shard = {.index = shard.at("index").get<uint64_t>(), .count = shard.at("count").get<uint64_t>()},
                     .inputs_digest = shard.at("inputs_digest").get<std::string>(),
                     .inputs = shard.at("inputs").get<uint64_t>()};
  } catch (const nlohmann::json::exception&) {
    return ShardPart{.shard = {.index = 0, .count = 0}};  // count 0: a shard object that is no precdetect's
  }
}

bool is_list_position(const ordered_json& at) {
  return at.is_array() && at.size() == 2 && at[0].is_number_unsigned() && at[1].is_number_unsigned();
}

bool is_model_record(const ordered_json& record) {
  return record.is_object() && record.value("type", "") == "model" && record.contains("input") &&
         record["input"].is_string() && record.contains("error") && record.contains("verdict") &&
         record["verdict"].is_object() &&
         (!record.contains("list_position") || is_list_position(record["list_position"]));
}

bool is_summary(const ordered_json& record) {
  return record.is_object() && record.value("type", "") == "summary" && record.contains("summary") &&
         record["summary"].is_object() && record["summary"].contains("models") &&
         record["summary"]["models"].is_number_unsigned();
}

std::string name(const JsonlPart& part) { return part.file.string(); }

/// The parts that are --shard outputs agree on N and the list (the first one's), and none is there twice.
void check_parts(const std::vector<const JsonlPart*>& sharded, ShardSetProblems& problems) {
  const ShardPart& first = *sharded.front()->shard;
  std::map<uint64_t, std::vector<std::string>> by_index;
  for (const JsonlPart* part : sharded) {
    const ShardPart& shard = *part->shard;
    if (shard.shard.count == 0 || shard.shard.index >= shard.shard.count)
      problems.mixed.push_back(fmt::format("{}: its summary's shard object is not precdetect's", name(*part)));
    else if (shard.shard.count != first.shard.count)
      problems.mixed.push_back(fmt::format("{} is part {} of {}, {} part {} of {}", name(*part), shard.shard.index,
                                           shard.shard.count, name(*sharded.front()), first.shard.index,
                                           first.shard.count));
    else if (shard.inputs_digest != first.inputs_digest)
      problems.mixed.push_back(fmt::format("{} splits another input list than {} (inputs digest {}, not {})",
                                           name(*part), name(*sharded.front()), shard.inputs_digest,
                                           first.inputs_digest));
    else
      by_index[shard.shard.index].push_back(name(*part));
  }
  for (const auto& [index, files] : by_index)
    if (files.size() > 1)
      problems.mixed.push_back(
          fmt::format("part {} of {} twice: {}", index, first.shard.count, fmt::join(files, ", ")));
  for (uint64_t index = 0; index < first.shard.count; ++index)
    if (!by_index.count(index))
      problems.incomplete.push_back(fmt::format("part {} of {} missing", index, first.shard.count));
}

}  // namespace

JsonlPart read_jsonl_part(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) fail(ErrorCode::kIo, file, "cannot open the JSONL file");
  JsonlPart part{.file = file};
  std::optional<ordered_json> summary;
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    ordered_json record = ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (summary) {
      part.foreign = fmt::format("line {} follows the summary line", number);
      break;  // the first foreign line names the file; nothing after it is read
    } else if (is_summary(record)) {
      summary = record["summary"];
    } else if (is_model_record(record)) {
      record.erase("type");
      part.models.push_back(std::move(record));
    } else if (record.is_discarded() && in.peek() == std::char_traits<char>::eof()) {
      part.truncated = fmt::format("its last line (line {}) is cut short", number);
    } else {
      part.foreign = fmt::format("line {} is not a precdetect --jsonl record (type \"model\" or \"summary\")", number);
      break;
    }
  }
  if (!part.foreign.empty() || !part.truncated.empty()) return part;
  if (!summary) {
    part.truncated = fmt::format("no summary line after its {} model line(s)", part.models.size());
  } else if ((*summary)["models"].get<uint64_t>() != part.models.size()) {
    part.truncated = fmt::format("its summary counts {} models, it holds {} model lines",
                                 (*summary)["models"].get<uint64_t>(), part.models.size());
  } else {
    part.shard = shard_of(*summary);
  }
  return part;
}

ShardSetProblems check_shard_set(const std::vector<JsonlPart>& parts) {
  ShardSetProblems problems;
  std::vector<const JsonlPart*> sharded, plain;
  for (const JsonlPart& part : parts) {
    if (!part.foreign.empty())
      problems.mixed.push_back(fmt::format("{}: {}", name(part), part.foreign));
    else if (!part.truncated.empty())
      problems.incomplete.push_back(fmt::format("{} is cut short: {}", name(part), part.truncated));
    else
      (part.shard ? sharded : plain).push_back(&part);
  }
  if (!sharded.empty()) {
    check_parts(sharded, problems);
    for (const JsonlPart* part : plain)
      problems.mixed.push_back(fmt::format("{} is no --shard output, unlike {}", name(*part), name(*sharded.front())));
  }
  std::map<std::string, std::string> first_file;
  std::set<std::string> twice;
  for (const JsonlPart& part : parts)
    for (const ordered_json& model : part.models) {
      auto [at, fresh] = first_file.emplace(model["input"].get<std::string>(), name(part));
      if (!fresh && twice.insert(at->first).second)
        problems.mixed.push_back(fmt::format("input `{}` is in {} and {}", at->first, at->second, name(part)));
    }
  return problems;
}

}  // namespace precdetect
