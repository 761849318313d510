#define _GNU_SOURCE
#include "CAllocCounter.h"
#include <stdatomic.h>
#include <stddef.h>
#include <errno.h>

// glibc's own entry points; ours count and forward.
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic uint64_t allocations;

uint64_t tv_alloc_count(void) { return atomic_load_explicit(&allocations, memory_order_relaxed); }

static inline void count(void) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); }

void *malloc(size_t n) { count(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { count(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count(); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t al, size_t n) { count(); return __libc_memalign(al, n); }
void *aligned_alloc(size_t al, size_t n) { count(); return __libc_memalign(al, n); }
int posix_memalign(void **out, size_t al, size_t n) {
    count();
    void *p = __libc_memalign(al, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
