/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * smpi_time.c - time() for applications simulated in SMPI: one fixed
 * instant, so that a run repeats to the last digit.
 *
 * SMPI puts gettimeofday() and clock_gettime() on the simulated clock but
 * leaves time() on the host's. HPCC's PTRANS seeds the random map of ranks
 * onto its process grid with the sum of every rank's time(NULL)
 * (PTRANS/pdtransdriver.c, grid_map), so each run, and each of its five
 * repetitions that crossed a second, transposed between other pairs of
 * hosts: PTRANS's time did not repeat from one run to the next. Linked
 * into the SMPI builds only (SMPI loads the program with its own symbols
 * first, so an LD_PRELOADed time() would not be seen); the application's
 * sources are untouched, and every placement and variant transposes over
 * the same map. APPS_TIME=SECONDS picks another instant (another map).
 */
#include <stdlib.h>
#include <time.h>

time_t time(time_t *t)
{
	/* 2023-11-14 22:13:20 UTC unless APPS_TIME says */
	const char *e = getenv("APPS_TIME");
	const time_t fixed = e && *e ? (time_t)strtoll(e, NULL, 10) : 1700000000;

	if (t)
		*t = fixed;
	return fixed;
}
