// C11 atomics and futex on shared mappings. See tv_atomic.h.
#include "tv_atomic.h"
#include <errno.h>
#include <stdatomic.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

uint64_t tv_load_acquire_u64(const void *a) { return atomic_load_explicit((_Atomic uint64_t *)a, memory_order_acquire); }
uint64_t tv_load_relaxed_u64(const void *a) { return atomic_load_explicit((_Atomic uint64_t *)a, memory_order_relaxed); }
void tv_store_release_u64(void *a, uint64_t v) { atomic_store_explicit((_Atomic uint64_t *)a, v, memory_order_release); }
void tv_store_relaxed_u64(void *a, uint64_t v) { atomic_store_explicit((_Atomic uint64_t *)a, v, memory_order_relaxed); }
uint64_t tv_fetch_add_relaxed_u64(void *a, uint64_t d) { return atomic_fetch_add_explicit((_Atomic uint64_t *)a, d, memory_order_relaxed); }

uint32_t tv_load_acquire_u32(const void *a) { return atomic_load_explicit((_Atomic uint32_t *)a, memory_order_acquire); }
void tv_store_release_u32(void *a, uint32_t v) { atomic_store_explicit((_Atomic uint32_t *)a, v, memory_order_release); }
void tv_store_seq_cst_u32(void *a, uint32_t v) { atomic_store_explicit((_Atomic uint32_t *)a, v, memory_order_seq_cst); }
uint32_t tv_load_seq_cst_u32(const void *a) { return atomic_load_explicit((_Atomic uint32_t *)a, memory_order_seq_cst); }
uint32_t tv_exchange_seq_cst_u32(void *a, uint32_t v) { return atomic_exchange_explicit((_Atomic uint32_t *)a, v, memory_order_seq_cst); }
uint32_t tv_fetch_add_release_u32(void *a, uint32_t d) { return atomic_fetch_add_explicit((_Atomic uint32_t *)a, d, memory_order_release); }

void tv_fence_seq_cst(void) { atomic_thread_fence(memory_order_seq_cst); }

void tv_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

int tv_futex_wait(void *address, uint32_t expected, int64_t timeout_ns) {
#ifdef __linux__
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        tsp = &ts;
    }
    long r = syscall(SYS_futex, address, FUTEX_WAIT, expected, tsp, NULL, 0);
    return r == 0 ? 0 : -errno;
#else
    (void)address; (void)expected; (void)timeout_ns;
    return -ENOSYS;
#endif
}

int tv_futex_wake(void *address, int count) {
#ifdef __linux__
    long r = syscall(SYS_futex, address, FUTEX_WAKE, count, NULL, NULL, 0);
    return r >= 0 ? (int)r : -errno;
#else
    (void)address; (void)count;
    return -ENOSYS;
#endif
}
