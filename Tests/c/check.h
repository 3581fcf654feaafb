/* Minimal test harness for the C tests: CHECK(cond) records a failure with its location and goes on;
 * CHECK_STATUS(call, expected) also prints leap_last_error(). main() ends with CHECK_SUMMARY(). */
#ifndef LEAP_TEST_CHECK_H
#define LEAP_TEST_CHECK_H
#include <stdio.h>
#include <string.h>
#include "leap.h"

static int check_passed = 0, check_failed = 0;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (cond) {                                                                          \
            check_passed++;                                                                  \
        } else {                                                                             \
            check_failed++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);         \
        }                                                                                    \
    } while (0)

#define CHECK_STATUS(call, expected)                                                         \
    do {                                                                                     \
        leap_status check_s_ = (call);                                                       \
        if (check_s_ == (expected)) {                                                        \
            check_passed++;                                                                  \
        } else {                                                                             \
            check_failed++;                                                                  \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, \
                    #call, leap_status_string(check_s_), leap_status_string(expected),        \
                    leap_last_error());                                                      \
        }                                                                                    \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, LEAP_OK)

/* The last error message contains `needle`. */
#define CHECK_ERROR_MENTIONS(needle) CHECK(strstr(leap_last_error(), (needle)) != NULL)

#define CHECK_SUMMARY(name)                                                                  \
    (printf("%s: %d passed, %d failed\n", (name), check_passed, check_failed), check_failed != 0)

#endif
