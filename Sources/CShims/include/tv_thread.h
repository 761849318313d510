// Thread naming for the gateway's dedicated data-path threads (shown by `top -H`, `ps -L`).
#ifndef TV_THREAD_H
#define TV_THREAD_H
/// Names the calling thread (at most 15 bytes are kept). Returns 0 or -errno.
int tv_thread_set_name(const char *name);
#endif
