/*
 * tap.h - the few macros unit tests share: one "ok - " / "not ok - " line per
 * check, as tests/run.sh counts them, and a non-zero exit if any failed.
 */
#ifndef TOPOD_TAP_H
#define TOPOD_TAP_H

#include <stdio.h>

static int tap_failed;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		int tap_ok_ = !!(cond);                                   \
		if (tap_ok_) {                                            \
			printf("ok - ");                                  \
		} else {                                                  \
			printf("not ok - ");                              \
			tap_failed++;                                     \
		}                                                         \
		printf(__VA_ARGS__);                                      \
		printf("%s\n", tap_ok_ ? "" : "   <-- " #cond);           \
	} while (0)

#define TAP_DONE() (fflush(stdout), tap_failed ? 1 : 0)

#endif
