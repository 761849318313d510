// System calls Swift cannot express directly: TUN ioctls, recvmmsg/sendmmsg, timerfd, eventfd and a
// self-pipe for signals. Owned by Gateway (Sources/Gateway/Sys*.swift wraps every function here).
//
// Convention: functions return a non-negative value on success and -errno on failure, so Swift never
// reads the thread-local `errno` after an intervening call.
#ifndef TV_SYS_H
#define TV_SYS_H
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

/// Bytes for an interface name including the terminating NUL (IFNAMSIZ).
#define TV_IFNAMSIZ 16

/// Opens /dev/net/tun (O_RDWR | O_NONBLOCK | O_CLOEXEC) and attaches it to the TUN interface
/// `name` (created if missing; an empty name lets the kernel pick `tunN`) with IFF_TUN | IFF_NO_PI,
/// plus IFF_MULTI_QUEUE when `multi_queue` is non-zero and IFF_VNET_HDR when `vnet_hdr` is (every
/// read and write then starts with a 10-byte `struct virtio_net_hdr`, see Packet.VirtioNetHeader).
/// The kernel's chosen name is copied into `out_name` (TV_IFNAMSIZ bytes). Returns the descriptor
/// or -errno.
int tv_tun_open(const char *name, int multi_queue, int vnet_hdr, char *out_name);

/// TUN_F_* offload bits for tv_tun_set_offload (values of <linux/if_tun.h>).
#define TV_TUN_F_CSUM 0x01
#define TV_TUN_F_TSO4 0x02
#define TV_TUN_F_TSO6 0x04
#define TV_TUN_F_USO4 0x20
#define TV_TUN_F_USO6 0x40

/// ioctl(TUNSETOFFLOAD, flags): which offloaded packets the kernel may hand us on reads (checksum
/// left partial, TCP/UDP segmentation left to us). 0 or -errno (EINVAL: a bit this kernel lacks).
int tv_tun_set_offload(int fd, unsigned int flags);

/// writev(2) / readv(2). Return bytes or -errno.
long tv_writev(int fd, const struct iovec *iov, int count);
long tv_readv(int fd, const struct iovec *iov, int count);

/// Socket option numbers glibc's headers may not expose: UDP_SEGMENT (UDP GSO: one send carries
/// many equal-sized datagrams), at level SOL_UDP.
#define TV_SOL_UDP 17
#define TV_UDP_SEGMENT 103

/// Writes a `cmsghdr` for (SOL_UDP, UDP_SEGMENT, size) into `buffer` (at least
/// tv_udp_segment_cmsg_space() bytes) and returns the length to put in msg_controllen.
size_t tv_udp_segment_cmsg(void *buffer, uint16_t size);
/// CMSG_SPACE(sizeof(uint16_t)).
size_t tv_udp_segment_cmsg_space(void);

/// UDP_GRO (Linux 5.0): a socket option at level SOL_UDP that lets the kernel hand the socket
/// runs of same-flow datagrams as one coalesced message, with a (SOL_UDP, UDP_GRO, int) control
/// message carrying the segment size.
#define TV_UDP_GRO 104

/// CMSG_SPACE(sizeof(int)): room for the UDP_GRO control message on receive.
size_t tv_udp_gro_cmsg_space(void);

/// The segment size of a (SOL_UDP, UDP_GRO) control message in `msg`, or 0 when there is none
/// (the message is one plain datagram).
int tv_udp_gro_size(const struct msghdr *msg);

/// Same layout as glibc's `struct mmsghdr` (checked by a static assertion in tv_sys.c); declared
/// here because <sys/socket.h> hides it unless _GNU_SOURCE is defined before the first include.
struct tv_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};

/// recvmmsg(2) with no timeout. Returns the number of messages received or -errno.
int tv_recvmmsg(int fd, struct tv_mmsghdr *msgs, unsigned int count, int flags);

/// sendmmsg(2). Returns the number of messages sent or -errno.
int tv_sendmmsg(int fd, struct tv_mmsghdr *msgs, unsigned int count, int flags);

/// eventfd(initial, EFD_NONBLOCK | EFD_CLOEXEC). Returns the descriptor or -errno.
int tv_eventfd(unsigned int initial);

/// A CLOCK_REALTIME timerfd (nonblocking, close-on-exec) armed with TFD_TIMER_ABSTIME |
/// TFD_TIMER_CANCEL_ON_SET at a far-future absolute time, so a read fails with ECANCELED exactly when
/// the wall clock is set discontinuously (settimeofday, clock_settime, NTP step). Returns fd or -errno.
int tv_clock_change_timerfd(void);

/// Re-arms a descriptor from tv_clock_change_timerfd after it reported ECANCELED. 0 or -errno.
int tv_clock_change_rearm(int fd);

/// Installs handlers for `count` signals that write the signal number (one byte) to a nonblocking,
/// close-on-exec self-pipe, and returns the pipe's read end (the same pipe on every call; later calls
/// add signals). Handlers use SA_RESTART. Returns the descriptor or -errno.
int tv_signal_pipe_install(const int *signals, int count);

/// Restores the default disposition of `signo`. 0 or -errno.
int tv_signal_default(int signo);

/// unshare(CLONE_NEWNET): moves the calling *thread* into a new, empty network namespace (for
/// root-only tests that must not touch the host's network). 0 or -errno.
int tv_unshare_network(void);

/// Heap policy for a long-running daemon (glibc): allocations from 128 KiB up are always their own
/// mappings (mallopt M_MMAP_THRESHOLD; fixing it stops glibc's dynamic threshold from moving large
/// temporary buffers — a config parse, an array that grows — into the heap, where their pages stay
/// resident after free). Call once, early. 0, or -1 when glibc refused.
int tv_malloc_tune(void);

/// Returns free heap pages to the kernel (glibc malloc_trim(0)): after work that allocated and freed
/// a lot (a start or reload with thousands of peers). 1 when memory was released, 0 otherwise.
int tv_malloc_trim(void);

#endif
