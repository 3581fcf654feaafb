/* Calls into libcurl's two variadic entry points through function pointers resolved with dlsym (Swift
 * cannot call a C variadic function). No curl header: a handle is a void *, an option or info code an int,
 * and the result a CURLcode (int). */
#ifndef LEAP_CURL_SHIM_H
#define LEAP_CURL_SHIM_H

#include <stdint.h>

/* curl_easy_setopt(handle, option, long) */
int leapcurl_setopt_long(void *setopt_fn, void *handle, int option, long value);
/* curl_easy_setopt(handle, option, pointer): strings, data pointers and callbacks */
int leapcurl_setopt_pointer(void *setopt_fn, void *handle, int option, const void *value);
/* curl_easy_getinfo(handle, info, long *) */
int leapcurl_getinfo_long(void *getinfo_fn, void *handle, int info, long *out);

#endif
