#include "precdetect/load/source/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>

namespace precdetect {
namespace {

/// Lock-free, so the signal handler may read it: a slot is live while `base` is non-zero; `size` is written
/// before `base` is published and `base` cleared before the range is unmapped.
struct Slot {
  std::atomic<uintptr_t> base{0};
  std::atomic<uint64_t> size{0};
  std::atomic<bool> faulted{false};
  std::atomic<bool> taken{false};
};
std::array<Slot, 4096> slots;
struct sigaction previous_action;

void pass_on(int signal, siginfo_t* info, void* context) {
  if (previous_action.sa_flags & SA_SIGINFO) return previous_action.sa_sigaction(signal, info, context);
  if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN)
    return previous_action.sa_handler(signal);
  // Not ours and nobody else's: back to the default action, which the re-executed access then takes (a crash).
  ::signal(SIGBUS, SIG_DFL);
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
  auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  for (Slot& slot : slots) {
    uintptr_t base = slot.base.load(std::memory_order_acquire);
    if (base == 0 || address < base || address - base >= slot.size.load(std::memory_order_acquire)) continue;
    // A zero page over the lost one; the faulting read is then re-executed and reads zeros.
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the page's address is arithmetic on the faulting address
    void* zeros = ::mmap(reinterpret_cast<void*>(address & ~(page - 1)), page, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros == MAP_FAILED) break;
    slot.faulted.store(true, std::memory_order_release);
    return;
  }
  pass_on(signal, info, context);
}

void install_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &previous_action);
}

}  // namespace

MappingGuard::MappingGuard(const void* base, uint64_t size) {
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  for (size_t i = 0; i < slots.size(); ++i) {
    bool free = false;
    if (!slots[i].taken.compare_exchange_strong(free, true)) continue;
    slots[i].faulted.store(false);
    slots[i].size.store(size, std::memory_order_release);
    slots[i].base.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
    slot_ = static_cast<int>(i);
    return;
  }
}

MappingGuard::~MappingGuard() {
  if (slot_ < 0) return;
  slots[slot_].base.store(0, std::memory_order_release);
  slots[slot_].taken.store(false, std::memory_order_release);
}

bool MappingGuard::faulted() const { return slot_ >= 0 && slots[slot_].faulted.load(std::memory_order_acquire); }

}  // namespace precdetect
