// CShims: the few things Swift cannot say directly — C11 atomics on shared mappings, futex,
// TUN ioctls and batched socket calls. Each concern has its own header; this one gathers them.
#ifndef CSHIMS_H
#define CSHIMS_H
#include "tv_atomic.h"
#include "tv_sys.h"
#include "tv_thread.h"
#endif
