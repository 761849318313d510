// C11 atomics and futex on shared mappings. See tv_atomic.h.
#include "tv_atomic.h"
#include <errno.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

// The atomics are static inline in the header; only the system calls live here.

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
