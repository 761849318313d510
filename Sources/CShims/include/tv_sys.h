// System calls Swift cannot express directly: TUN ioctls, recvmmsg/sendmmsg, timerfd. Owned by Gateway.
#ifndef TV_SYS_H
#define TV_SYS_H
#include <stdint.h>
#endif
