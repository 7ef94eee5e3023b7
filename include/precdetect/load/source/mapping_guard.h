#pragma once
/// A file that shrinks while it is mapped (truncated, or rewritten in place, during a scan) makes every read past
/// its new end fault with SIGBUS, which would kill the process mid-batch. A guarded mapping reads zeros there
/// instead and remembers that it did, so the reader can fail that one model with a named error.

#include <cstdint>

namespace precdetect {

class MappingGuard {
 public:
  /// Guards [base, base + size) until destroyed; installs the process's SIGBUS handler on first use. When every
  /// slot is taken (thousands of files mapped at once) the range is left unguarded.
  MappingGuard(const void* base, uint64_t size);
  ~MappingGuard();
  MappingGuard(const MappingGuard&) = delete;
  MappingGuard& operator=(const MappingGuard&) = delete;

  /// True once a read inside the range faulted: the bytes read since may be zeros, not the file's.
  bool faulted() const;

 private:
  int slot_ = -1;
};

}  // namespace precdetect
