#include <blake2.h>
