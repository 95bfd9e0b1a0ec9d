// Waiting for another thread that is about to act: spin with the CPU's pause hint for a bounded
// time (the thread pool between ops, tensor-parallel ranks between collectives: microseconds),
// then sleep on the word (a futex) so that a long wait costs no core. Thread-safe.
#pragma once

#include <atomic>

namespace xinfer {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Returns once `word` no longer holds `old` (acquire): after up to `spins` polls, asleep in
// std::atomic::wait. The writer that changes it calls notify_one/notify_all.
template <class T>
void SpinThenWait(const std::atomic<T>& word, T old, int spins) {
  for (int i = 0; i < spins && word.load(std::memory_order_acquire) == old; ++i) CpuRelax();
  while (word.load(std::memory_order_acquire) == old) word.wait(old, std::memory_order_acquire);
}

}  // namespace xinfer
