/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * delay.c - tii_get_delay_matrix: the `delaymatrix` request
 * (docs/protocol.md) and its n rows of nanoseconds, each checked against
 * what was asked: n rows of n entries, 0 on the diagonal, every entry
 * bounded.
 */
#include <stdio.h>
#include <string.h>

#include "tii_impl.h"

struct dm_ctx {
	size_t n;
	uint64_t bytes;
	uint64_t *m;
};

static int dm_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct dm_ctx *dm = ctx;
	uint64_t n, bytes;
	const char *unit = tii__kv_get(kv, "unit");
	if (tii__kv_u64(kv, "n", &n) || n != dm->n || nlines != dm->n || tii__kv_u64(kv, "bytes", &bytes) ||
	    bytes != dm->bytes || !unit || strcmp(unit, "ns"))
		return TII_E_PROTO;
	return 0;
}

static int dm_line(void *ctx, size_t i, char *line, size_t len)
{
	struct dm_ctx *dm = ctx;
	char *p = line, *w;
	size_t j = 0;
	(void)len;
	while ((w = tii__word(&p))) {
		long v;
		if (j == dm->n || tii__parse_long(w, -1, TII_DELAY_NS_MAX, &v) || (i == j && v != 0))
			return TII_E_PROTO;
		dm->m[i * dm->n + j++] = v < 0 ? UINT64_MAX : (uint64_t)v;
	}
	return j == dm->n ? 0 : TII_E_PROTO;
}

int tii_get_delay_matrix(tii_t *t, const char *const *hosts, size_t n, uint64_t bytes, uint64_t *matrix)
{
	if (!t || !hosts || !n || !matrix || bytes > TII_DELAY_BYTES_MAX)
		return TII_E_INVAL;
	if (n > TII_MATRIX_MAX)
		return TII_E_TOOMANY;
	struct dm_ctx dm = { n, bytes, matrix };
	static const struct tii__handler h = { dm_head, dm_line, 0 };
	char word[32];
	int rc = tii__req_begin(t, TII__DELAYMATRIX);
	if (!rc) {
		int k = snprintf(word, sizeof(word), "bytes=%llu", (unsigned long long)bytes);
		rc = tii__req_word(t, word, (size_t)k);
	}
	rc = rc ? rc : tii__req_hosts(t, hosts, n);
	return rc ? rc : tii__request(t, &h, &dm);
}
