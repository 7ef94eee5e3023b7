// The pickle machine's side of the differential harness (tests/differential/pickle_differential.py): for each file
// named on a line of stdin, the first pickle of its bytes run as the safety examination runs it, printed as one JSON
// line: the globals it imported (as the pickle names them), the tampering it named, and why it stopped, if it did.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "precdetect/load/pickle/pickle_stream.h"

int main() {
  std::string path;
  while (std::getline(std::cin, path)) {
    std::ifstream file(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    precdetect::PickleStream read =
        precdetect::read_pickle_stream({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, path, 0, 1);
    nlohmann::json imports = nlohmann::json::array();
    for (const precdetect::pickle::Import& item : read.log.imports)
      if (item.attribute.empty()) imports.push_back({item.module, item.name});  // not the method references it read
    nlohmann::json tampering = nlohmann::json::array();
    for (const precdetect::pickle::Tampering& item : read.log.tampering)
      tampering.push_back(precdetect::pickle::tampering_kind_name(item.kind));
    nlohmann::json line = {{"imports", imports},
                           {"tampering", tampering},
                           {"stopped", read.stopped ? nlohmann::json(*read.stopped) : nlohmann::json(nullptr)}};
    std::cout << line.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) << '\n' << std::flush;
  }
}
