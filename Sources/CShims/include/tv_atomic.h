// C11 atomics and futex on memory shared between processes (the live ring). Owned by LiveFeed.
//
// Swift cannot overlay `Synchronization.Atomic` on an mmap'd file, so every access to a field of
// the ring header that another process reads or writes goes through these functions. Each one is
// a single C11 <stdatomic.h> operation with the memory order in its name, `static inline` so the
// Swift compiler inlines it into the hot path (on x86-64 most are a single `mov`). Pointers must
// be naturally aligned (8 bytes for 64-bit, 4 for 32-bit) and point into a MAP_SHARED mapping.
#ifndef TV_ATOMIC_H
#define TV_ATOMIC_H
#include <stdint.h>
#include <stdatomic.h>

/// Acquire load of a 64-bit word (pairs with tv_store_release_u64 in the other process).
static inline uint64_t tv_load_acquire_u64(const void *address) {
    return atomic_load_explicit((_Atomic uint64_t *)address, memory_order_acquire);
}
/// Relaxed load of a 64-bit word (statistics, own fields).
static inline uint64_t tv_load_relaxed_u64(const void *address) {
    return atomic_load_explicit((_Atomic uint64_t *)address, memory_order_relaxed);
}
/// Release store of a 64-bit word: every write before it is visible to an acquire load that sees it.
static inline void tv_store_release_u64(void *address, uint64_t value) {
    atomic_store_explicit((_Atomic uint64_t *)address, value, memory_order_release);
}
/// Relaxed store of a 64-bit word (a counter with a single writer, like `dropped`).
static inline void tv_store_relaxed_u64(void *address, uint64_t value) {
    atomic_store_explicit((_Atomic uint64_t *)address, value, memory_order_relaxed);
}
/// Relaxed fetch-and-add of a 64-bit word; returns the previous value (for counters with
/// several writers; the ring's `dropped` has one and uses a store).
static inline uint64_t tv_fetch_add_relaxed_u64(void *address, uint64_t delta) {
    return atomic_fetch_add_explicit((_Atomic uint64_t *)address, delta, memory_order_relaxed);
}

/// Acquire load of a 32-bit word.
static inline uint32_t tv_load_acquire_u32(const void *address) {
    return atomic_load_explicit((_Atomic uint32_t *)address, memory_order_acquire);
}
/// Release store of a 32-bit word.
static inline void tv_store_release_u32(void *address, uint32_t value) {
    atomic_store_explicit((_Atomic uint32_t *)address, value, memory_order_release);
}
/// Sequentially consistent store of a 32-bit word (the consumer's "waiting" flag).
static inline void tv_store_seq_cst_u32(void *address, uint32_t value) {
    atomic_store_explicit((_Atomic uint32_t *)address, value, memory_order_seq_cst);
}
/// Sequentially consistent load of a 32-bit word.
static inline uint32_t tv_load_seq_cst_u32(const void *address) {
    return atomic_load_explicit((_Atomic uint32_t *)address, memory_order_seq_cst);
}
/// Sequentially consistent exchange of a 32-bit word; returns the previous value.
static inline uint32_t tv_exchange_seq_cst_u32(void *address, uint32_t value) {
    return atomic_exchange_explicit((_Atomic uint32_t *)address, value, memory_order_seq_cst);
}
/// Release fetch-and-add of a 32-bit word (the futex sequence); returns the previous value.
static inline uint32_t tv_fetch_add_release_u32(void *address, uint32_t delta) {
    return atomic_fetch_add_explicit((_Atomic uint32_t *)address, delta, memory_order_release);
}

/// A sequentially consistent fence (atomic_thread_fence(memory_order_seq_cst)). The wake-up
/// protocol needs one on each side: store own flag/index, fence, load the other side's.
static inline void tv_fence_seq_cst(void) { atomic_thread_fence(memory_order_seq_cst); }

/// A spin-wait hint to the CPU (x86 `pause`, ARM `yield`); no-op elsewhere.
static inline void tv_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/// futex(2) FUTEX_WAIT (shared, not FUTEX_PRIVATE: the word crosses processes) on a 32-bit word:
/// sleeps while `*address == expected`, at most `timeout_ns` nanoseconds (negative: no limit).
/// Returns 0 when woken, or -errno: -EAGAIN (value already changed), -ETIMEDOUT, -EINTR.
int tv_futex_wait(void *address, uint32_t expected, int64_t timeout_ns);
/// futex(2) FUTEX_WAKE (shared): wakes up to `count` waiters. Returns the number woken or -errno.
int tv_futex_wake(void *address, int count);

#endif
