#pragma once
/* precdetect's C interface (libprecdetect_api.so): what the Python package calls through ctypes, so that one
 * library serves every CPython and links no libtorch. Options arrive as the command line's arguments, so that the
 * CLI's one definition of every option (app/cli) validates them alike; results leave as the --json documents.
 *
 * Every function returning char* returns a UTF-8 JSON text allocated here, which the caller frees with
 * precdetect_free: {"document": ...} on success, {"error": {"code": "...", "message": "..."}} on failure
 * ("usage" for an option the command line refuses; the scanner's error codes otherwise, docs/errors.md). */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PRECDETECT_API __attribute__((visibility("default")))

/* A tensor of a model in memory, borrowed for the call: `dlpack` is a DLManagedTensorVersioned* when `versioned`
 * is 1, a DLManagedTensor* when 0 (the pointer inside a `__dlpack__` capsule, which the caller keeps alive). */
typedef struct {
  const char* name;
  const void* dlpack;
  int32_t versioned;
  const char* dtype;      /* the stored dtype where DLPack cannot say it ("F8_E4M3" for a uint8 view), or NULL */
  const char* role;       /* "model", "buffer", or "" for a state dict's entry */
  uint64_t storage_key;   /* tensors with the same non-zero key share one storage; 0: not known */
  const char* unreadable; /* why the caller knows it cannot be read (meta, sparse, freed), or NULL */
} precdetect_live_tensor;

/* Fills `into` (`length` bytes) with tensor `index`'s bytes from byte `offset` on, in row-major order: how a GPU
 * tensor reaches the host when the CUDA plugin cannot run. Returns 0, or non-zero when it could not. */
typedef int (*precdetect_copy_to_host)(size_t index, uint64_t offset, void* into, uint64_t length);

PRECDETECT_API char* precdetect_scan(const char* const* args, size_t count);
PRECDETECT_API char* precdetect_diff(const char* const* args, size_t count);
/* The check of a model in memory: `args` are scan's options; `format` is "module" or "state_dict"; `config` is
 * the model's config as JSON text ("null" without one); `activations` what a forward pass measured, as JSON text:
 * [{"module": ..., "output": largest |output|, "input": largest |input|}, ...] ("[]" without one). Reads the tensors
 * during the call: a caller that holds Python's GIL across it keeps other threads from freeing them meanwhile. */
PRECDETECT_API char* precdetect_check(const char* const* args, size_t count, const char* name, const char* format,
                                      const precdetect_live_tensor* tensors, size_t tensor_count,
                                      const char* const* not_tensors, size_t not_tensor_count, const char* config,
                                      const char* activations, precdetect_copy_to_host copy_to_host);
/* The HTML report (--report) of a scan's JSON document. */
PRECDETECT_API char* precdetect_html(const char* document);
PRECDETECT_API void precdetect_free(char* text);

#ifdef __cplusplus
}
#endif
