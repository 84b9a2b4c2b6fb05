/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpihost.h - which host an MPI rank runs on, as topod names hosts: the one
 * rule of every PMPI layer (the profiler, the collectives library) and of
 * the test programs that claim hosts of a simulated fabric.
 *
 *   1. $TII_HOST;
 *   2. $TII_HOSTMAP, a file with one host per line, line r for world rank r
 *      (blank lines and '#' lines do not count);
 *   3. gethostname(), cut at the first '.' (topod names hosts by their
 *      short NodeDescription name).
 *
 * Header-only (static inline): each PMPI library is one self-contained
 * shared object built per MPI implementation.
 */
#ifndef TOPO_MPIHOST_H
#define TOPO_MPIHOST_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MPIHOST_LINE_MAX 1024

/* name[n]: world rank `rank`'s host. 0, or -1 with why[whyn] saying why. */
static inline int mpihost_name(int rank, char *name, size_t n, char *why, size_t whyn)
{
	const char *h = getenv("TII_HOST");
	if (h && *h) {
		if (strlen(h) >= n) {
			snprintf(why, whyn, "TII_HOST is longer than %zu bytes", n - 1);
			return -1;
		}
		strcpy(name, h);
		return 0;
	}
	const char *map = getenv("TII_HOSTMAP");
	if (map && *map) {
		FILE *f = fopen(map, "r");
		if (!f) {
			snprintf(why, whyn, "TII_HOSTMAP %s: %s", map, strerror(errno));
			return -1;
		}
		char line[MPIHOST_LINE_MAX];
		int i = 0, found = 0;
		while (!found && fgets(line, sizeof(line), f)) {
			line[strcspn(line, " \t\r\n")] = '\0';
			if (!line[0] || line[0] == '#')
				continue;
			if (i++ == rank && strlen(line) < n) {
				strcpy(name, line);
				found = 1;
			}
		}
		fclose(f);
		if (!found) {
			snprintf(why, whyn, "TII_HOSTMAP %s: no usable line for rank %d", map, rank);
			return -1;
		}
		return 0;
	}
	if (gethostname(name, n - 1) != 0) {
		snprintf(why, whyn, "gethostname: %s", strerror(errno));
		return -1;
	}
	name[n - 1] = '\0';
	name[strcspn(name, ".")] = '\0';
	return 0;
}

#endif
