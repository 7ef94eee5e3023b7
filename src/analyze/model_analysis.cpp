#include "precdetect/analyze/model_analysis.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "precdetect/core/error.h"
#include "precdetect/kernel/cpu_kernel.h"
#include "precdetect/kernel/zero_stats.h"

namespace precdetect {
namespace {

/// The statistics of `floats`, in order: from the cache where it holds them, the others analyzed in one go (and
/// then stored there).
std::vector<TensorStats> float_stats(const Checkpoint& checkpoint, const std::vector<const TensorRecord*>& floats,
                                     Analyzer& analyzer, StatsCache* cache) {
  if (!cache) return analyzer.analyze(checkpoint, floats);
  std::vector<std::string> file_identities(checkpoint.files.size());
  auto identity = [&](const TensorRecord& record) -> const std::string& {
    std::string& file = file_identities[record.file];
    if (file.empty()) file = StatsCache::file_identity(checkpoint, record.file);
    return file;
  };
  std::unordered_map<std::string_view, const TensorRecord*> by_name;
  for (const TensorRecord& record : checkpoint.tensors) by_name.emplace(record.name, &record);
  // What a tensor's statistics are computed from: its file, and a scaled weight's parts wherever they lie (a
  // sharded checkpoint may keep the scales in another file, which can change while the weight's does not).
  auto inputs = [&](const TensorRecord& record) {
    std::string key = identity(record);
    if (record.scaled_by)
      for (const std::string& name : linked_tensors(*record.scaled_by)) {
        auto part = by_name.find(name);  // linking found every part: a missing one fails the analysis itself
        if (part != by_name.end())
          key += fmt::format("|{}@{}:{}+{}:{}", name, identity(*part->second), part->second->offset,
                             part->second->nbytes, static_cast<int>(part->second->dtype));
      }
    return key;
  };
  std::vector<std::string> keys;
  std::vector<std::optional<TensorStats>> cached;
  std::vector<const TensorRecord*> missing;
  for (const TensorRecord* record : floats) {
    keys.push_back(inputs(*record));
    cached.push_back(cache->find(keys.back(), *record));
    if (!cached.back()) missing.push_back(record);
  }
  std::vector<TensorStats> analyzed = analyzer.analyze(checkpoint, missing);
  std::vector<TensorStats> stats;
  for (size_t i = 0, next = 0; i < floats.size(); ++i) {
    if (!cached[i]) cache->store(keys[i], *floats[i], analyzed[next]);
    stats.push_back(cached[i] ? *cached[i] : analyzed[next++]);
  }
  return stats;
}

/// Whether a tensor's values get statistics: floating ones, and quantized weights read with their scales; never a
/// weight quantized by a scheme precdetect does not read, whatever dtype it is stored as.
bool analyzed_values(const TensorRecord& record) {
  return record.unread_scheme.empty() && (is_analyzed(record.dtype) || record.scaled_by);
}

/// The quantized_not_read warning: each selected weight of a scheme precdetect does not read, with its scheme.
void warn_unread(ModelAnalysis& analysis, const std::vector<const TensorRecord*>& selected) {
  std::vector<std::string> unread;
  for (const TensorRecord* record : selected)
    if (!record->unread_scheme.empty()) unread.push_back(fmt::format("{} ({})", record->name, record->unread_scheme));
  warn_about(analysis.warnings, WarningCode::kQuantizedNotRead, "", std::move(unread));
}

AnalyzedTensor analyzed(const TensorRecord& record, const BufferNames& buffers) {
  bool buffer = record.role == TensorRole::kModel && !record.role_from_file && buffers.matches(record.name);
  const std::string& grouped_by = record.torch_name.value_or(record.name);
  return {.name = record.name,
          .dtype = record.dtype,
          .shape = record.shape,
          .numel = record.numel,
          .nbytes = record.nbytes,
          .torch_name = record.torch_name,
          .group = tensor_group(grouped_by),
          .layer = tensor_layer(grouped_by),
          .role = buffer ? TensorRole::kBuffer : record.role,
          .shares_storage_with = record.shares_storage_with,
          .counted = record.counted,
          .scaled_by = record.scaled_by};
}

/// The parts of one model-parallel tensor as one: copies of one tensor are taken once, slices are added up.
/// Copies are told by their statistics, so parts whose values were not analyzed (integers) count as slices.
AnalyzedTensor joined(std::vector<AnalyzedTensor> parts) {
  AnalyzedTensor whole = std::move(parts.front());
  whole.parts = {whole.shape};
  whole.replicated = whole.stats.has_value();
  for (size_t i = 1; i < parts.size(); ++i) {
    whole.parts.push_back(parts[i].shape);
    whole.replicated = whole.replicated && parts[i].shape == whole.shape && parts[i].stats == whole.stats;
  }
  if (whole.replicated) return whole;
  whole.shape.clear();  // slices of an unknown split: the whole tensor's shape is not recorded anywhere
  for (size_t i = 1; i < parts.size(); ++i) {
    whole.numel += parts[i].numel;
    whole.nbytes += parts[i].nbytes;
    if (whole.stats && parts[i].stats) whole.stats->merge(*parts[i].stats);
  }
  return whole;
}

/// Adds a chunk of a tensor stored in chunks (TensorRecord::chunk_of) to the tensor its first chunk began, which
/// carries the whole shape: the chunks tile the tensor (their reader checked), so the counts add up and the
/// statistics merge exactly (each is a count, a sum, a minimum or a maximum).
void join_chunk(AnalyzedTensor& whole, const AnalyzedTensor& chunk) {
  whole.numel += chunk.numel;
  whole.nbytes += chunk.nbytes;
  if (whole.stats && chunk.stats) whole.stats->merge(*chunk.stats);
}

/// A sparse tensor's values (TensorRecord::sparse_of) as the dense tensor they stand for: its shape and count, and
/// the statistics of its values merged with those of the zeros around them, which are never read or materialized.
void densify(AnalyzedTensor& tensor, const SparseOf& dense) {
  tensor.shape = dense.shape;
  if (tensor.stats) tensor.stats->merge(zero_stats(tensor.dtype, dense.numel - tensor.numel));
  tensor.numel = dense.numel;
}

/// Joins same-named tensors (model-parallel parts) into one, in the order their names first appear.
std::vector<AnalyzedTensor> join_parts(std::vector<AnalyzedTensor> tensors) {
  std::map<std::string, size_t> first;
  std::vector<std::vector<AnalyzedTensor>> named;
  for (AnalyzedTensor& tensor : tensors) {
    auto [at, fresh] = first.emplace(tensor.name, named.size());
    if (fresh) named.emplace_back();
    named[at->second].push_back(std::move(tensor));
  }
  std::vector<AnalyzedTensor> joined_tensors;
  joined_tensors.reserve(named.size());
  for (auto& parts : named)
    joined_tensors.push_back(parts.size() == 1 ? std::move(parts.front()) : joined(std::move(parts)));
  return joined_tensors;
}

std::filesystem::path model_path(const Checkpoint& checkpoint) {
  if (checkpoint.files.size() == 1) return checkpoint.files.front()->path();
  return checkpoint.files.empty() ? std::filesystem::path() : checkpoint.files.front()->path().parent_path();
}

void count_roles(ModelAnalysis& analysis) {
  for (const AnalyzedTensor& tensor : analysis.tensors) {
    if (!tensor.counted) continue;  // a tied weight's second name: reported, counted once
    if (tensor.role == TensorRole::kModel) analysis.summary.add(tensor);
    if (tensor.role == TensorRole::kBuffer) analysis.buffers.add(tensor);
  }
}

/// The names of the tensors weights are multiplied by: their scales (bitsandbytes' nested absmax too), not the
/// biases, shifts and code maps beside them, where a zero is an ordinary value (nf4's map holds 0).
std::set<std::string> multipliers(const ModelAnalysis& analysis) {
  std::set<std::string> names;
  for (const AnalyzedTensor& tensor : analysis.tensors) {
    if (!tensor.scaled_by) continue;
    names.insert(tensor.scaled_by->tensor);
    if (tensor.scaled_by->blockwise) names.insert(tensor.scaled_by->blockwise->nested_absmax);
  }
  return names;
}

/// The quantization state's warnings: NaN or Inf in any part, zeros in a scale, and a largest scale that grows a
/// hundredfold or more from the first block to the last (AWQ scales reaching 548 from 0.6, ROCm/hip-ep#168).
void add_scale_warnings(ModelAnalysis& analysis) {
  std::vector<std::string> scaled, nonfinite, zero;
  std::map<int64_t, double> largest_by_block;
  const std::set<std::string> scales = multipliers(analysis);
  for (const AnalyzedTensor& tensor : analysis.tensors) {
    if (tensor.role != TensorRole::kScale || !tensor.stats) continue;
    if (tensor.stats->nans + tensor.stats->infs > 0) nonfinite.push_back(tensor.name);
    if (!scales.contains(tensor.name)) continue;
    if (tensor.stats->zeros > 0) zero.push_back(tensor.name);
    if (tensor.layer && tensor.stats->has_values()) {
      double& largest = largest_by_block[tensor.layer->index];
      largest = std::max(largest, tensor.stats->abs_max);
    }
  }
  auto& warnings = analysis.warnings;
  warn_about(warnings, WarningCode::kScalesNonFinite, "", std::move(nonfinite));
  warn_about(warnings, WarningCode::kScalesZero, "", std::move(zero));
  if (largest_by_block.size() < 2) return;
  auto [first, first_max] = *largest_by_block.begin();
  auto [last, last_max] = *largest_by_block.rbegin();
  if (first_max > 0 && last_max >= 100 * first_max)
    warnings.push_back({.code = WarningCode::kScalesGrow,
                        .names = {fmt::format("block {} ({:.3e})", first, first_max),
                                  fmt::format("block {} ({:.3e})", last, last_max)},
                        .count = static_cast<uint64_t>(last_max / first_max)});
}

void add_warnings(ModelAnalysis& analysis, const TensorFilter& filter) {
  std::vector<std::string> skipped, dequantized, scaled;
  size_t optimizer = 0, parts = 0, replicated = 0;
  for (const AnalyzedTensor& tensor : analysis.tensors) {
    if (dtype_kind(tensor.dtype) == DTypeKind::kSkipped)
      skipped.push_back(fmt::format("{} ({})", tensor.name, dtype_name(tensor.dtype)));
    if (dtype_kind(tensor.dtype) == DTypeKind::kQuantized)
      dequantized.push_back(fmt::format("{} ({})", tensor.name, dtype_name(tensor.dtype)));
    if (tensor.scaled_by) scaled.push_back(fmt::format("{} (x {})", tensor.name, tensor.scaled_by->tensor));
    optimizer += tensor.role == TensorRole::kOptimizer;
    parts += !tensor.parts.empty() && !tensor.replicated;
    replicated += tensor.replicated;
  }
  auto& warnings = analysis.warnings;
  warn_about(warnings, WarningCode::kDtypesNotAnalyzed, "", std::move(skipped));
  warn_about(warnings, WarningCode::kDequantized, "", std::move(dequantized));
  warn_about(warnings, WarningCode::kScaledWeights, "", std::move(scaled));
  add_scale_warnings(analysis);
  if (optimizer > 0) warnings.push_back({.code = WarningCode::kOptimizerState, .count = optimizer});
  if (analysis.buffers.tensors > 0)
    warnings.push_back({.code = WarningCode::kBuffers, .count = analysis.buffers.tensors});
  if (parts + replicated > 0)
    warnings.push_back({.code = WarningCode::kModelParallelJoined, .count = parts, .other = replicated});
  if (analysis.tensors.empty() && filter.given())
    warnings.push_back({.code = WarningCode::kEmptySelection});
  else if (analysis.summary.analyzed_tensors == 0)
    warnings.push_back({.code = WarningCode::kNoFloatParameters});
  TensorStats totals = analysis.summary.totals;
  totals.merge(analysis.buffers.totals);
  if (totals.nans + totals.infs > 0)
    warnings.push_back({.code = WarningCode::kNonFinite, .count = totals.nans, .other = totals.infs});
}

/// The analysis of `selected` (`stats` holding the floating ones' statistics, in order; null when no values were
/// read): roles given, model-parallel parts joined, parameters and buffers summed, warnings added (with values).
ModelAnalysis assemble(const std::vector<const TensorRecord*>& selected, const std::vector<TensorStats>* stats,
                       bool model_parallel, const TensorFilter& filter, const BufferNames& buffers) {
  ModelAnalysis analysis;
  size_t next_float = 0;
  std::map<std::string, size_t> chunked;  // a tensor stored in chunks: where its first chunk is reported
  for (const TensorRecord* record : selected) {
    AnalyzedTensor tensor = analyzed(*record, buffers);
    if (stats && analyzed_values(*record)) {
      tensor.stats = (*stats)[next_float++];
      if (record->scaled_by) tensor.numel = tensor.stats->numel;  // MLX's packed words hold several values each
      // An exporter's -inf mask is no trained weight, whatever reads it: a weight holds finite values.
      bool nonfinite = tensor.stats->nans + tensor.stats->infs > 0;
      if (record->graph_constant && nonfinite && tensor.role == TensorRole::kModel) tensor.role = TensorRole::kBuffer;
    }
    if (record->sparse_of) densify(tensor, *record->sparse_of);
    if (!record->chunk_of) {
      analysis.tensors.push_back(std::move(tensor));
      continue;
    }
    auto [first, fresh] = chunked.emplace(record->name, analysis.tensors.size());
    if (!fresh) {
      join_chunk(analysis.tensors[first->second], tensor);
      continue;
    }
    tensor.shape = record->chunk_of->shape;
    analysis.tensors.push_back(std::move(tensor));
  }
  if (model_parallel) analysis.tensors = join_parts(std::move(analysis.tensors));
  count_roles(analysis);
  warn_unread(analysis, selected);
  if (stats) add_warnings(analysis, filter);
  return analysis;
}

/// The records `filter` selects, and among them those whose values are analyzed. Throws Error(kNoTensors) for a
/// checkpoint of no tensors.
std::vector<const TensorRecord*> selected_records(const Checkpoint& checkpoint, const TensorFilter& filter,
                                                  std::vector<const TensorRecord*>* floats) {
  if (checkpoint.tensors.empty())
    fail(ErrorCode::kNoTensors, model_path(checkpoint),
         checkpoint.warnings.empty()
             ? "no tensors found: nothing to scan"
             : "no tensors found: nothing to scan (" + checkpoint.warnings.front().message() + ")");
  std::vector<const TensorRecord*> selected;
  for (const TensorRecord& record : checkpoint.tensors) {
    if (!filter.selects(record.name)) continue;
    selected.push_back(&record);
    if (floats && analyzed_values(record)) floats->push_back(&record);
  }
  return selected;
}

}  // namespace

ModelAnalysis analyze_model(const Checkpoint& checkpoint, const TensorFilter& filter, const BufferNames& buffers,
                            Analyzer& analyzer, StatsCache* cache) {
  std::vector<const TensorRecord*> floats;
  std::vector<const TensorRecord*> selected = selected_records(checkpoint, filter, &floats);
  std::vector<TensorStats> stats = float_stats(checkpoint, floats, analyzer, cache);
  return assemble(selected, &stats, checkpoint.model_parallel, filter, buffers);
}

ModelAnalysis census_model(const Checkpoint& checkpoint, const TensorFilter& filter, const BufferNames& buffers) {
  return assemble(selected_records(checkpoint, filter, nullptr), nullptr, checkpoint.model_parallel, filter, buffers);
}

ModelAnalysis analyze_live_model(const LiveModel& model, const std::string& name, const TensorFilter& filter,
                                 const BufferNames& buffers) {
  if (model.records.empty())
    fail(ErrorCode::kNoTensors, name,
         model.warnings.empty() ? "no tensors found: nothing to check"
                                : "no tensors found: nothing to check (" + model.warnings.front().message() + ")");
  std::vector<const TensorRecord*> selected;
  std::vector<TensorStats> stats;
  try {
    for (size_t i = 0; i < model.records.size(); ++i) {
      const TensorRecord& record = model.records[i];
      if (!filter.selects(record.name)) continue;
      selected.push_back(&record);
      if (is_analyzed(record.dtype)) stats.push_back(model.stats(i));
    }
  } catch (const Error& e) {
    fail(e.code(), name, e.what());
  }
  return assemble(selected, &stats, /*model_parallel=*/false, filter, buffers);
}

}  // namespace precdetect
