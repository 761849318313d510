#include "tv_sys.h"
