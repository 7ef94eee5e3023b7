#pragma once
/// How every command hands over its result: the format asked for to -o FILE or stdout, and the JSON document to
/// --json-output FILE beside it.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace precdetect {

/// True when `output` (-o) is standard output: none given, or `-`.
bool to_standard_output(const std::optional<std::filesystem::path>& output);

/// Hands `text`, the command's output in the format asked for, to `output` (-o FILE: core/output_file, atomically
/// where it is a regular file) or to stdout (to_standard_output), flushed.
void publish(const std::string& text, const std::optional<std::filesystem::path>& output);

/// --json-output FILE: `document` written there too, whatever -o and the format give; nothing when none is given.
/// Paths and library messages need not be UTF-8: invalid bytes become U+FFFD rather than aborting the dump.
void write_json_output(const nlohmann::ordered_json& document, const std::optional<std::filesystem::path>& file);

/// Prints `document` on one line of stdout and flushes it, so a reader (or a crash) never sees half a record.
void print_json_line(const nlohmann::ordered_json& document);

}  // namespace precdetect
