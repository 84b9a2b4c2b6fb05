/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simgrid.c - `topoquery simgrid HOSTS...`: the SimGrid platform of a job's
 * hosts (docs/protocol.md `simgrid`), or with --all of the whole fabric
 * (`simgrid all`), written to stdout or to -o FILE, for
 * `smpirun -platform FILE` (settings: docs/performance.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topoquery.h"

/* Writes through a temporary file and renames it, so that a failed export
 * never leaves a truncated platform where a simulation will read it. */
static int write_file(const char *path, const char *xml, size_t len)
{
	size_t pl = strlen(path);
	char *tmp = malloc(pl + 8);
	if (!tmp)
		return -1;
	memcpy(tmp, path, pl);
	memcpy(tmp + pl, ".XXXXXX", 8);
	int fd = mkstemp(tmp);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	int bad = !f || fwrite(xml, 1, len, f) != len;
	if (f && fclose(f))
		bad = 1;
	else if (!f && fd >= 0)
		close(fd);
	if (!bad && rename(tmp, path))
		bad = 1;
	if (bad && fd >= 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
	}
	free(tmp);
	return bad ? -1 : 0;
}

/* --all: the whole fabric. Its answer may pass the default reply limit. */
static int get_fabric(struct tq *q, int argc, char **argv, char **xml, size_t *len)
{
	(void)argv;
	if (argc > 0 || q->have_file)
		return tq_usage_error("simgrid --all takes no hosts");
	if (tii_get_max_reply_bytes(q->t) < (size_t)TII_SIMGRID_ALL_BYTES_MAX + 4096)
		tii_set_max_reply_bytes(q->t, (size_t)TII_SIMGRID_ALL_BYTES_MAX + 4096);
	int rc = tii_get_simgrid_fabric(q->t, xml, len, NULL);
	return rc ? tq_fail(q, "simgrid", rc) : 0;
}

int cmd_simgrid(struct tq *q, int argc, char **argv)
{
	char *xml = NULL;
	size_t len = 0;
	int status, rc = 0;
	if (q->sg_all) {
		if ((status = get_fabric(q, argc, argv, &xml, &len)))
			return status;
	} else {
		struct strv hosts = { 0 };
		status = tq_collect_hosts(q, argc, argv, &hosts, 0);
		if (status) {
			strv_free(&hosts);
			return status;
		}
		if (hosts.n > TII_SIMGRID_HOSTS_MAX) {
			strv_free(&hosts);
			return tq_usage_error("simgrid: %zu hosts, at most %d (--all: the whole fabric)", hosts.n,
					      TII_SIMGRID_HOSTS_MAX);
		}
		rc = tii_get_simgrid_platform(q->t, (const char *const *)hosts.v, hosts.n, &xml, &len);
		strv_free(&hosts);
	}
	if (rc)
		return tq_fail(q, "simgrid", rc);
	if (q->output) {
		if (write_file(q->output, xml, len)) {
			fprintf(stderr, "topoquery: %s: %s\n", q->output, strerror(errno));
			status = EXIT_ERROR;
		}
	} else if (fwrite(xml, 1, len, q->out) != len) {
		status = EXIT_ERROR;
	}
	free(xml);
	return status;
}
