/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * namemap_file.c - reads a node-name-map file for the parser in
 * analysis/namemap.c: the analyses do no I/O, so the file is the service's.
 */
#include "namemap_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int route_namemap_load(const char *path, struct route_namemap **out, char err[AN_ERR_LEN])
{
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, AN_ERR_LEN, "%.200s: %s", path, strerror(errno));
		return AN_E_NOTFOUND;
	}
	/* A map holds at most one line per node: bound the file by that. */
	const size_t max = (size_t)ROUTE_MAP_MAX_ENTRIES * 128;
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	int rc = AN_E_NOMEM;
	while (buf) {
		size_t r = fread(buf + len, 1, cap - len, f);
		len += r;
		if (r == 0)
			break;
		if (len == cap) {
			if (cap >= max) {
				snprintf(err, AN_ERR_LEN, "%.200s: larger than %zu bytes", path, max);
				rc = AN_E_INVAL;
				goto out;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	if (!buf) {
		snprintf(err, AN_ERR_LEN, "out of memory");
		goto out;
	}
	if (ferror(f)) {
		snprintf(err, AN_ERR_LEN, "%.200s: read error", path);
		rc = AN_E_INVAL;
		goto out;
	}
	rc = route_namemap_parse(buf, len, out, err);
out:
	free(buf);
	fclose(f);
	return rc;
}
