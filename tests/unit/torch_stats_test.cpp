// The libtorch statistics (the CUDA path's code) agree with the CPU kernel; on a GPU, end to end.
#include "precdetect/cuda/torch_stats.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "precdetect/analyze/analyzer.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/load/safetensors/safetensors.h"
#include "stats_reference.h"
#include "test_util.h"

namespace precdetect {
namespace {

using testing::expect_same_stats;
using testing::random_tensor_bytes;

constexpr DType kFloatDtypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2};

at::Tensor as_tensor(std::string& bytes, DType dtype) {
  int64_t numel = static_cast<int64_t>(bytes.size() / static_cast<size_t>(dtype_bits(dtype) / 8));
  return at::from_blob(bytes.data(), {numel}, at::TensorOptions().dtype(torch_scalar_type(dtype)));
}

TEST(TorchStats, AgreesWithCpuKernelOnEveryDtype) {
  for (DType dtype : kFloatDtypes) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    std::string bytes = random_tensor_bytes(dtype, 100'003, 11);
    expect_same_stats(torch_tensor_stats(as_tensor(bytes, dtype), dtype),
                      cpu_tensor_stats(bytes.data(), dtype, 100'003), 1e-12);
  }
}

TEST(TorchStats, EmptyAndAllNanTensors) {
  EXPECT_FALSE(torch_tensor_stats(at::empty({0, 3}), DType::F32).has_values());
  TensorStats nan = torch_tensor_stats(at::full({5}, NAN), DType::F32);
  EXPECT_EQ(nan.nans, 5u);
  EXPECT_FALSE(nan.has_values());
  EXPECT_EQ(nan.sum_squares, 0.0);
}

/// A one-file checkpoint over in-memory safetensors bytes, for the Analyzer.
Checkpoint checkpoint_of(const std::string& bytes) {
  Checkpoint checkpoint{.format = "safetensors"};
  checkpoint.files.push_back(memory_source(bytes, "gpu.safetensors"));
  checkpoint.tensors = read_safetensors_header(*checkpoint.files.front()).tensors;
  return checkpoint;
}

TEST(CudaPath, AgreesWithCpuPathOnEveryDtype) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: the CUDA path is tested on GPU machines";
  for (DType dtype : kFloatDtypes) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    std::string data = random_tensor_bytes(dtype, 1'000'003, 5);
    // One leading byte misaligns the tensor: the CUDA path must still copy it into aligned device memory.
    std::string header = fmt::format(R"({{"pad":{{"dtype":"U8","shape":[1],"data_offsets":[0,1]}},)"
                                     R"("t":{{"dtype":"{}","shape":[{}],"data_offsets":[1,{}]}}}})",
                                     dtype_name(dtype), 1'000'003, 1 + data.size());
    Checkpoint checkpoint = checkpoint_of(testing::safetensors_bytes(header, "\x7f" + data));
    const TensorRecord& record = checkpoint.tensors.back();
    const TensorRecord* records[] = {&record};
    expect_same_stats(Analyzer({.cuda = true}).analyze(checkpoint, records)[0],
                      Analyzer({}).analyze(checkpoint, records)[0], 1e-12);
  }
}

}  // namespace
}  // namespace precdetect
