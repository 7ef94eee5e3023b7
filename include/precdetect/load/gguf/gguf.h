#pragma once
/// GGUF (llama.cpp's format, versions 2 and 3; github.com/ggml-org/ggml docs/gguf.md): "GGUF", a version, the
/// tensor and key/value counts, the key/values, the tensor infos, then the tensors' data, each at an offset
/// aligned to `general.alignment` (default 32).

#include <memory>
#include <string>

#include "precdetect/load/checkpoint.h"
#include "precdetect/load/file_format.h"

namespace precdetect {

/// True when the source starts with the GGUF magic.
bool looks_like_gguf(const ByteSource& source);

/// Reads the GGUF that is file `file` of `checkpoint`: every tensor (shape as PyTorch writes it: GGUF lists
/// dimensions innermost first), ggml's block-quantized types with their real bytes (counted, not analyzed), and
/// the key/values into Checkpoint::metadata (arrays longer than kMaxMetadataArray summarized by type and length).
/// Returns "gguf". Errors: kInvalidGguf naming the offset (a version other than 2 or 3, a big-endian file, counts
/// or lengths past the end, an unknown value or tensor type, a misaligned or overlapping tensor, overflowing
/// dimensions), kDuplicateTensor.
FileFormat read_gguf(Checkpoint& checkpoint, size_t file);

/// NamePickles of GGUF, which holds no pickles: names to `visitor` each chat template the file carries
/// (`tokenizer.chat_template`, `tokenizer.chat_template.<name>`: llama.cpp and llama-cpp-python render them with
/// Jinja2), as `<where>!<key>`. Reads the key/values only. Throws Error(kInvalidGguf) where read_gguf would for
/// them.
void name_gguf_templates(const ByteSource& source, const std::string& where, PickleVisitor& visitor);

/// The file opened as GGUF when it starts with the GGUF magic, else nullptr; its pickles are its chat templates.
std::unique_ptr<FormatFile> open_gguf(const ByteSource& source);

}  // namespace precdetect
