#pragma once
/// What an exported graph says of a stored weight it dequantizes: an ONNX DequantizeLinear node (or a QOperator
/// one: QLinearConv, QLinearMatMul, QGemm, DynamicQuantizeMatMul, MatMulInteger, ConvInteger) whose codes are an
/// initializer or a Constant of the file. The loader records the node as the graph holds it and links nothing:
/// quantize's dequantize_linear scheme decides what it reads.

#include <cstddef>
#include <cstdint>
#include <string>

namespace precdetect {

struct DequantizeNode {
  std::string op_type;
  size_t file = 0;  ///< the file whose graph holds the node (TensorRecord::file of its codes)
  /// The records the node reads, by name: its codes (a stored tensor), its scale and zero point as the graph
  /// resolves them (empty: absent, or for the scale, an operator that takes none: MatMulInteger, ConvInteger, whose
  /// scale a later node applies; a name no record has: a value the graph computes).
  std::string codes, scale, zero_point;
  int64_t axis = 1;        ///< as stored: may be negative (counted from the last dimension)
  int64_t block_size = 0;  ///< opset 21's blocks along `axis`; 0: per tensor or per axis
};

}  // namespace precdetect
