// See include/tv_sys.h. Every function returns -errno on failure.
#define _GNU_SOURCE
#include "tv_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_tun.h>

_Static_assert(sizeof(struct tv_mmsghdr) == sizeof(struct mmsghdr), "tv_mmsghdr layout");
_Static_assert(offsetof(struct tv_mmsghdr, msg_len) == offsetof(struct mmsghdr, msg_len), "tv_mmsghdr layout");
_Static_assert(TV_IFNAMSIZ == IFNAMSIZ, "IFNAMSIZ");

int tv_tun_open(const char *name, int multi_queue, int vnet_hdr, char *out_name) {
    size_t len = strlen(name);
    if (len >= IFNAMSIZ) return -ENAMETOOLONG;
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TUN | IFF_NO_PI | (multi_queue ? IFF_MULTI_QUEUE : 0) | (vnet_hdr ? IFF_VNET_HDR : 0);
    memcpy(ifr.ifr_name, name, len);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    memcpy(out_name, ifr.ifr_name, IFNAMSIZ);
    out_name[IFNAMSIZ - 1] = 0;
    return fd;
}

_Static_assert(TV_TUN_F_CSUM == TUN_F_CSUM && TV_TUN_F_TSO4 == TUN_F_TSO4 && TV_TUN_F_TSO6 == TUN_F_TSO6, "TUN_F");
#ifdef TUN_F_USO4  // Debian 12's headers (Linux 6.1) predate USO; the values are those of 6.2+.
_Static_assert(TV_TUN_F_USO4 == TUN_F_USO4 && TV_TUN_F_USO6 == TUN_F_USO6, "TUN_F_USO");
#endif

int tv_tun_set_offload(int fd, unsigned int flags) {
    return ioctl(fd, TUNSETOFFLOAD, (unsigned long)flags) < 0 ? -errno : 0;
}

long tv_writev(int fd, const struct iovec *iov, int count) {
    ssize_t n = writev(fd, iov, count);
    return n < 0 ? -errno : (long)n;
}

long tv_readv(int fd, const struct iovec *iov, int count) {
    ssize_t n = readv(fd, iov, count);
    return n < 0 ? -errno : (long)n;
}

size_t tv_udp_segment_cmsg_space(void) { return CMSG_SPACE(sizeof(uint16_t)); }

size_t tv_udp_segment_cmsg(void *buffer, uint16_t size) {
    memset(buffer, 0, CMSG_SPACE(sizeof(uint16_t)));
    struct cmsghdr *c = (struct cmsghdr *)buffer;
    c->cmsg_level = TV_SOL_UDP;
    c->cmsg_type = TV_UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    memcpy(CMSG_DATA(c), &size, sizeof size);
    return CMSG_SPACE(sizeof(uint16_t));
}

size_t tv_udp_gro_cmsg_space(void) { return CMSG_SPACE(sizeof(int)); }

int tv_udp_gro_size(const struct msghdr *msg) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
        if (c->cmsg_level == TV_SOL_UDP && c->cmsg_type == TV_UDP_GRO && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int size;
            memcpy(&size, CMSG_DATA(c), sizeof size);
            return size > 0 ? size : 0;
        }
    }
    return 0;
}

int tv_recvmmsg(int fd, struct tv_mmsghdr *msgs, unsigned int count, int flags) {
    int n = recvmmsg(fd, (struct mmsghdr *)msgs, count, flags, NULL);
    return n < 0 ? -errno : n;
}

int tv_sendmmsg(int fd, struct tv_mmsghdr *msgs, unsigned int count, int flags) {
    int n = sendmmsg(fd, (struct mmsghdr *)msgs, count, flags);
    return n < 0 ? -errno : n;
}

int tv_eventfd(unsigned int initial) {
    int fd = eventfd(initial, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int tv_clock_change_rearm(int fd) {
    // Far in the future (year 2100+) so the timer itself never fires; only cancellation matters.
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = (time_t)4102444800;
    if (timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &spec, NULL) < 0) return -errno;
    return 0;
}

int tv_clock_change_timerfd(void) {
    int fd = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0) return -errno;
    int r = tv_clock_change_rearm(fd);
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

static int signal_pipe[2] = {-1, -1};

static void signal_pipe_handler(int signo) {
    int saved = errno;
    unsigned char b = (unsigned char)signo;
    // Nonblocking: a full pipe drops the byte; the reader already has wake-ups pending.
    ssize_t ignored = write(signal_pipe[1], &b, 1);
    (void)ignored;
    errno = saved;
}

int tv_signal_pipe_install(const int *signals, int count) {
    if (signal_pipe[0] < 0) {
        int p[2];
        if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0) return -errno;
        signal_pipe[0] = p[0];
        signal_pipe[1] = p[1];
    }
    for (int i = 0; i < count; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = signal_pipe_handler;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(signals[i], &sa, NULL) < 0) return -errno;
    }
    return signal_pipe[0];
}

int tv_signal_default(int signo) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    return sigaction(signo, &sa, NULL) < 0 ? -errno : 0;
}

int tv_unshare_network(void) {
    return unshare(CLONE_NEWNET) < 0 ? -errno : 0;
}

int tv_malloc_tune(void) { return mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1 ? 0 : -1; }

int tv_malloc_trim(void) { return malloc_trim(0); }
