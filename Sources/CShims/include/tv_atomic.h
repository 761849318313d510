// C11 atomics and futex on memory shared between processes (the live ring). Owned by LiveFeed.
#ifndef TV_ATOMIC_H
#define TV_ATOMIC_H
#include <stdint.h>
#endif
