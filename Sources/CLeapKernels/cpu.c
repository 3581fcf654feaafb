#include "leap_kernels.h"

uint32_t lk_cpu_features(void) { return 0; }
