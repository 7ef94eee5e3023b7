#include "precdetect/cuda/cuda_upload.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "precdetect/cuda/torch_dtype.h"

namespace precdetect {
namespace {

// Device-generic c10 calls throughout: libtorch_cuda is loaded at run time (analyze/device.cpp), not linked.
c10::impl::VirtualGuardImpl cuda_runtime() { return c10::impl::VirtualGuardImpl(c10::DeviceType::CUDA); }

at::Tensor pinned_buffer(uint64_t bytes) {
  return at::empty({static_cast<int64_t>(bytes)}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
}

}  // namespace

CudaUploader::CudaUploader(int device_index, uint64_t buffer_bytes)
    : device_(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_index)),
      copy_stream_(cuda_runtime().getStreamFromGlobalPool(device_)),
      staging_{Staging{pinned_buffer(buffer_bytes), c10::Event(c10::DeviceType::CUDA)},
               Staging{pinned_buffer(buffer_bytes), c10::Event(c10::DeviceType::CUDA)}} {}

CudaUploader::~CudaUploader() {
  for (const Staging& staging : staging_) staging.copied.synchronize();
}

CudaUploader::Upload CudaUploader::upload(const Checkpoint& checkpoint, const TensorRecord& record,
                                          const c10::Stream& consumer) {
  const ByteSource& file = *checkpoint.files[record.file];
  uint64_t element_bytes = dtype_bits(record.dtype) / 8;
  uint64_t nbytes = record.storage_nbytes / element_bytes * element_bytes;
  file.view(record.offset, nbytes);  // the range check, before any allocation
  c10::Event uploaded(c10::DeviceType::CUDA);
  at::Tensor bytes;
  {
    // Allocated on the copy stream, which writes it, and marked as used by the consumer: the caching allocator
    // then hands the block out again only once the work on it is done. (Allocated on the consumer's stream,
    // the next tensor's copy could overwrite it while the last one's statistics still read it.)
    c10::StreamGuard on_copy_stream(copy_stream_);
    bytes = at::empty({static_cast<int64_t>(nbytes)}, at::TensorOptions().dtype(at::kByte).device(device_));
    bytes.record_stream(consumer);
    auto buffer_bytes = static_cast<uint64_t>(staging_[0].pinned.numel());
    for (uint64_t done = 0; done < nbytes; done += buffer_bytes) {
      Staging& staging = staging_[next_];
      next_ = (next_ + 1) % staging_.size();
      uint64_t length = std::min(buffer_bytes, nbytes - done);
      staging.copied.synchronize();  // the GPU has finished reading this buffer's last contents
      file.read(record.offset + done, {static_cast<std::byte*>(staging.pinned.data_ptr()), length});
      auto part = static_cast<int64_t>(length);
      bytes.narrow(0, static_cast<int64_t>(done), part).copy_(staging.pinned.narrow(0, 0, part), /*non_blocking=*/true);
      staging.copied.record(copy_stream_);
    }
    uploaded.record(copy_stream_);
  }
  return {view_storage(bytes.view(torch_scalar_type(record.dtype)), record), std::move(uploaded)};
}

}  // namespace precdetect
