/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * delay_cmd.c - `delaymatrix [bytes=B] HOST ...`: per ordered pair, the
 * predicted time in nanoseconds of one message of B bytes on its LFT route
 * (latency of its switches and cables + B over its slowest cable), -1 where
 * the route fails, 0 on the diagonal. Heavy: a walk per (leaf, host).
 *
 *   OK gen=G n=N bytes=B unit=ns lines=N
 *   0 1340 5300
 *   ...
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delay_cmd.h"
#include "matrix.h"

/* A Bcast of large messages is what rates decide (seed 004, 4.2.2); at
 * 1 MiB a QDR cable's time is ~260 us against ~1 us of latency. */
#define DELAY_BYTES_DEFAULT 1048576ull

/* "bytes=B" ahead of the hosts; *first gets the first host's index. */
static int parse_bytes(struct qctx *c, uint64_t *bytes, size_t *first)
{
	const struct proto_req *r = c->req;
	*bytes = DELAY_BYTES_DEFAULT;
	*first = 0;
	if (r->argc && !strncmp(r->argv[0], "bytes=", 6)) {
		const char *a = r->argv[0] + 6;
		char *e;
		unsigned long long v = 0;
		if (*a < '0' || *a > '9' || (v = strtoull(a, &e, 10), *e) || v > MATRIX_DELAY_BYTES_MAX) {
			query_error(c->out, "USAGE", "bytes=B needs an integer 0..2^53");
			return -1;
		}
		*bytes = v;
		*first = 1;
	}
	return 0;
}

void answer_delaymatrix(struct qctx *c)
{
	const struct proto_req *r = c->req;
	uint64_t bytes;
	size_t first;
	if (parse_bytes(c, &bytes, &first))
		return;
	size_t n = r->argc - first;
	uint32_t *eps;
	uint16_t *dl;
	if (qctx_check_hosts(c, n, 1) || qctx_resolve_list(c, r->argv + first, n, &eps, &dl))
		return;
	int64_t *m = malloc(n * n * sizeof(*m));
	/* 20 bytes per entry: a 17-digit time (2^53 bytes at 1x SDR), a sign,
	 * a space, with room. */
	char *line = malloc(n * 20 + 2);
	char err[AN_ERR_LEN] = "";
	int rc = m && line ? matrix_delay(c->rt, eps, dl, n, bytes, m, err) : AN_E_NOMEM;
	if (rc) {
		query_error(c->out,
			    rc == AN_E_RANGE   ? "NOROUTE"
			    : rc == AN_E_INVAL ? "USAGE"
						: "NOMEM",
			    "%s", err[0] ? err : an_strerror(rc));
		goto out;
	}
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " n=%zu bytes=%" PRIu64 " unit=ns lines=%zu\n", c->gen, n,
			    bytes, n);
	for (size_t i = 0; i < n; i++) {
		size_t o = 0;
		for (size_t j = 0; j < n; j++)
			o += (size_t)sprintf(line + o, j ? " %" PRId64 : "%" PRId64, m[i * n + j]);
		line[o++] = '\n';
		evbuffer_add(c->out, line, o);
	}
out:
	free(m);
	free(line);
	free(eps);
	free(dl);
}
