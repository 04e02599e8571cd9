/* The CHECK macro of the SHA-256 and signing C tests: counts every check and
 * reports the first 30 failures with file, line and the current path label.
 * (Header-only; each test program includes it once.) */
#ifndef CLOBKIT_TESTS_CHECK_H
#define CLOBKIT_TESTS_CHECK_H

#include <stdio.h>

static int failures, checks;
static const char *impl_name = "-";  /* the SHA-256 path under test */

#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        checks++;                                                                    \
        if (!(cond)) {                                                               \
            failures++;                                                              \
            if (failures <= 30) {                                                    \
                fprintf(stderr, "FAIL %s:%d [%s]: ", __FILE__, __LINE__, impl_name); \
                fprintf(stderr, __VA_ARGS__);                                        \
                fputc('\n', stderr);                                                 \
            }                                                                        \
        }                                                                            \
    } while (0)

#endif
