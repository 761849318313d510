// Counts heap allocations made by the whole process (malloc, calloc, realloc, aligned variants),
// so benchmarks can show that a hot loop allocates nothing. Link only into benchmark executables:
// the definitions below replace glibc's allocator entry points for the process.
#ifndef CALLOCCOUNTER_H
#define CALLOCCOUNTER_H
#include <stdint.h>
/// Number of allocation calls since the process started.
uint64_t tv_alloc_count(void);
#endif
