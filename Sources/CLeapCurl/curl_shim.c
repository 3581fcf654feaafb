#include "leap_curl_shim.h"

typedef int (*setopt_fn)(void *, int, ...);
typedef int (*getinfo_fn)(void *, int, ...);

int leapcurl_setopt_long(void *fn, void *handle, int option, long value) {
    return ((setopt_fn)fn)(handle, option, value);
}

int leapcurl_setopt_pointer(void *fn, void *handle, int option, const void *value) {
    return ((setopt_fn)fn)(handle, option, value);
}

int leapcurl_getinfo_long(void *fn, void *handle, int info, long *out) {
    return ((getinfo_fn)fn)(handle, info, out);
}
