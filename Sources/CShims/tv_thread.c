#define _GNU_SOURCE
#include "tv_thread.h"
#include <errno.h>
#include <sys/prctl.h>

int tv_thread_set_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0) == 0 ? 0 : -errno;
}
