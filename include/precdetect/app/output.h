#pragma once
/// How every command hands over its result: the JSON document to --output, and the document or a table to stdout.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace precdetect {

/// `-o -`: the JSON document goes to standard output.
inline const std::filesystem::path kStandardOutput = "-";

/// Writes `document` to `output` when given (core/output_file: atomically where it is a regular file), then prints
/// the document (`json`) or `table` on stdout; with `output` kStandardOutput, prints the document alone.
/// Paths and library messages need not be UTF-8: invalid bytes become U+FFFD rather than aborting the dump.
void publish(const nlohmann::ordered_json& document, const std::optional<std::filesystem::path>& output, bool json,
             const std::string& table);

/// Prints `document` on one line of stdout and flushes it, so a reader (or a crash) never sees half a record.
void print_json_line(const nlohmann::ordered_json& document);

}  // namespace precdetect
