#pragma once
/// Work on untrusted bytes done by a library we cannot harden (libhdf5 crashes on some damaged files), run by a
/// helper program in a process of its own: a crash or a hang there is one file's named error, never the scan's
/// end. A fresh program rather than a fork of this one: a fork of a threaded process inherits locks other threads
/// held, and its child can hang on them (AddressSanitizer's allocator did, in our tests).

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "precdetect/core/error.h"

namespace precdetect {

/// Where helper program `name` is: $PRECDETECT_HELPERS/name when set, else beside the running program, else in
/// the build folder it was built in (tests and fuzz targets run from elsewhere).
std::filesystem::path helper_path(std::string_view name);

/// Runs `program` with `args` and returns what it wrote on its standard output; with `into`, its output must fill
/// `into` exactly and "" is returned. A helper reports an Error it caught on its standard error as
/// "<code number>\t<message>" and exits with status 2: that Error is thrown here. A helper that cannot start, dies
/// (a signal, another status) or runs past `limit` (then killed) is Error(`code`) naming `path` and `what` it
/// was doing.
std::string run_helper(const std::filesystem::path& program, const std::vector<std::string>& args, ErrorCode code,
                       const std::filesystem::path& path, std::string_view what, std::chrono::seconds limit,
                       std::span<std::byte> into = {});

/// How a helper reports `error` (on its standard error, then exit status 2), for run_helper to throw it again.
std::string helper_error_line(const Error& error);

}  // namespace precdetect
