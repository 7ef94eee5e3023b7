#pragma once
/// Tensors from their files to a CUDA device at the host's speed: the host fills one pinned staging buffer (a
/// parallel memcpy from the mapping, or parallel pread) while the GPU copies the previous one out, on a side
/// stream. A pageable copy would run at a third of that and block the host while it lasts (docs/benchmarks.md).

#include <ATen/core/Tensor.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <array>

#include "precdetect/load/checkpoint.h"

namespace precdetect {

class CudaUploader {
 public:
  static constexpr uint64_t kDefaultBufferBytes = 64 << 20;

  /// Two pinned staging buffers of `buffer_bytes` each, for CUDA device `device_index`.
  explicit CudaUploader(int device_index, uint64_t buffer_bytes = kDefaultBufferBytes);
  ~CudaUploader();  ///< waits for the copies still reading the staging buffers
  CudaUploader(const CudaUploader&) = delete;
  CudaUploader& operator=(const CudaUploader&) = delete;

  /// A tensor on its way to the device: its bytes are queued for copying, on the uploader's own stream.
  struct Upload {
    at::Tensor values;  ///< as load_tensor() gives it on the CPU, once copied
    c10::Event copied;  ///< recorded after the last byte's copy
    /// Work queued on `stream` from now on sees the copied bytes (the host does not wait).
    void ready_on(const c10::Stream& stream) const { copied.block(stream); }
  };

  /// Stages `record`'s bytes and queues their copy to the device. `consumer` is the stream that will read the
  /// tensor: its memory is not handed out again before that stream's work on it is done. May run on another
  /// thread than the one that queues that work, so the host can stage one tensor while it queues the statistics
  /// of the last; one upload at a time.
  Upload upload(const Checkpoint& checkpoint, const TensorRecord& record, const c10::Stream& consumer);

 private:
  struct Staging {
    at::Tensor pinned;  ///< uint8, page-locked host memory
    c10::Event copied;  ///< recorded after the GPU's copy out of `pinned`
  };
  c10::Device device_;
  c10::Stream copy_stream_;
  std::array<Staging, 2> staging_;
  size_t next_ = 0;  ///< the staging buffer filled next
};

}  // namespace precdetect
