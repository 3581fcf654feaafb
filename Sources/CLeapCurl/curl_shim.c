#include "leap_curl_shim.h"

typedef int (*setopt_fn)(void *, int, ...);
typedef int (*getinfo_fn)(void *, int, ...);

int leap_curl_setopt_long(void *fn, void *handle, int option, long value) {
    return ((setopt_fn)fn)(handle, option, value);
}

int leap_curl_setopt_pointer(void *fn, void *handle, int option, const void *value) {
    return ((setopt_fn)fn)(handle, option, value);
}

int leap_curl_setopt_off(void *fn, void *handle, int option, int64_t value) {
    return ((setopt_fn)fn)(handle, option, value);
}

int leap_curl_getinfo_long(void *fn, void *handle, int info, long *out) {
    return ((getinfo_fn)fn)(handle, info, out);
}
