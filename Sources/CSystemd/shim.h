#include <sys/uio.h>
#include <systemd/sd-journal.h>
