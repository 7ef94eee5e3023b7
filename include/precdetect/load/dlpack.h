#pragma once
/// DLPack's C ABI (https://github.com/dmlc/dlpack, include/dlpack/dlpack.h, v1.1), as precdetect.check receives
/// tensors through `__dlpack__`: the legacy DLManagedTensor (capsule "dltensor") and DLPack 1.0's
/// DLManagedTensorVersioned (capsule "dltensor_versioned", torch >= 2.9, NumPy >= 2.1, JAX). Declared here rather than
/// taken from Debian's libdlpack-dev, which is 0.6 and has no versioned tensor. Only what is read is declared; the
/// layouts are the header's, field for field.

#include <cstdint>

namespace precdetect::dlpack {

enum DeviceType : int32_t { kCpu = 1, kCuda = 2, kCudaHost = 3, kCudaManaged = 13 };
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kBool = 6 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};

struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  ///< in elements; null: compact row-major
  uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor*);
};

struct Version {
  uint32_t major;
  uint32_t minor;
};

struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned*);
  uint64_t flags;
  Tensor dl_tensor;
};

}  // namespace precdetect::dlpack
