#include "tv_atomic.h"
