/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pattern.c - jobs and communication patterns as flow generators; see
 * pattern.h for the syntax and the flow order.
 */
#include "pattern.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char err[AN_ERR_LEN], int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, AN_ERR_LEN, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* A decimal number in [lo, hi], the whole of s[0..len). */
static int parse_num(const char *s, size_t len, long lo, long hi, long *out)
{
	if (len == 0 || len > 12)
		return -1;
	char buf[16];
	memcpy(buf, s, len);
	buf[len] = 0;
	char *end;
	errno = 0;
	long v = strtol(buf, &end, 10);
	if (errno || *end || end == buf || v < lo || v > hi)
		return -1;
	/* strtol accepts leading spaces and '+': the syntax does not. */
	if (buf[0] != '-' && (buf[0] < '0' || buf[0] > '9'))
		return -1;
	*out = v;
	return 0;
}

int pattern_parse(const char *spec, struct pattern *p, char err[AN_ERR_LEN])
{
	if (!spec || !p)
		return fail(err, AN_E_INVAL, "no pattern");
	size_t len = strnlen(spec, PAT_SPEC_MAX + 1);
	if (len > PAT_SPEC_MAX)
		return fail(err, AN_E_INVAL, "pattern spec longer than %d bytes", PAT_SPEC_MAX);
	struct pattern q = { .msg_bytes = 1, .dim = { 1, 1, 1 } };
	if (!strcmp(spec, "alltoall")) {
		q.kind = PAT_ALLTOALL;
	} else if (!strcmp(spec, "allgather")) {
		q.kind = PAT_ALLGATHER;
	} else if (!strcmp(spec, "ring")) {
		q.kind = PAT_RING;
	} else if (!strncmp(spec, "shift:", 6)) {
		long k;
		if (parse_num(spec + 6, len - 6, -(TOPO_RANKS_MAX - 1), TOPO_RANKS_MAX - 1, &k))
			return fail(err, AN_E_INVAL, "shift:K needs an integer |K| < %d",
				    TOPO_RANKS_MAX);
		q.kind = PAT_SHIFT;
		q.shift = (int32_t)k;
	} else if (!strncmp(spec, "xor:", 4)) {
		long k;
		if (parse_num(spec + 4, len - 4, 0, TOPO_RANKS_MAX - 1, &k))
			return fail(err, AN_E_INVAL, "xor:K needs an integer 0 <= K < %d",
				    TOPO_RANKS_MAX);
		q.kind = PAT_XOR;
		q.shift = (int32_t)k;
	} else if (!strcmp(spec, "bitrev")) {
		q.kind = PAT_BITREV;
	} else if (!strncmp(spec, "random:", 7)) {
		long v;
		if (parse_num(spec + 7, len - 7, 0, (long)UINT32_MAX, &v) || spec[7] == '-')
			return fail(err, AN_E_INVAL, "random:SEED needs an integer 0..%lu",
				    (unsigned long)UINT32_MAX);
		q.kind = PAT_RANDOM;
		q.seed = (uint32_t)v;
	} else if (!strncmp(spec, "stencil2d:", 10) || !strncmp(spec, "stencil3d:", 10)) {
		unsigned nd = spec[7] == '2' ? 2 : 3;
		q.kind = nd == 2 ? PAT_STENCIL2D : PAT_STENCIL3D;
		const char *s = spec + 10, *end = spec + len;
		const char *colon = memchr(s, ':', (size_t)(end - s));
		if (colon) {
			if (strcmp(colon, ":periodic"))
				return fail(err, AN_E_INVAL, "stencil option must be ':periodic'");
			q.periodic = 1;
			end = colon;
		}
		for (unsigned d = 0; d < nd; d++) {
			const char *comma = d + 1 < nd ? memchr(s, ',', (size_t)(end - s)) : end;
			long v;
			if (!comma || parse_num(s, (size_t)(comma - s), 1, TOPO_RANKS_MAX, &v))
				return fail(err, AN_E_INVAL,
					    "stencil%ud needs %u dimensions, each 1..%d", nd, nd,
					    TOPO_RANKS_MAX);
			q.dim[d] = (uint32_t)v;
			s = comma + 1;
		}
	} else {
		return fail(err, AN_E_INVAL,
			    "unknown pattern (alltoall, allgather, shift:K, xor:K, bitrev, "
			    "random:SEED, ring, "
			    "stencil2d:X,Y[:periodic], stencil3d:X,Y,Z[:periodic])");
	}
	*p = q;
	return AN_OK;
}

static int tri_cmp(const void *a, const void *b)
{
	const struct pat_triple *x = a, *y = b;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->dst < y->dst ? -1 : x->dst > y->dst;
}

int pattern_set_matrix(struct pattern *p, const struct pat_triple *t, size_t n, uint32_t nranks,
		       char err[AN_ERR_LEN])
{
	if (nranks == 0 || nranks > TOPO_RANKS_MAX)
		return fail(err, AN_E_RANGE, "%" PRIu32 " ranks (1..%d)", nranks, TOPO_RANKS_MAX);
	if (n > PAT_TRIPLES_MAX)
		return fail(err, AN_E_RANGE, "%zu matrix entries (at most %u)", n, PAT_TRIPLES_MAX);
	for (size_t i = 0; i < n; i++)
		if (t[i].src >= nranks || t[i].dst >= nranks)
			return fail(err, AN_E_INVAL, "matrix entry %zu: rank beyond %" PRIu32, i,
				    nranks - 1);
	struct pat_triple *c = malloc((n ? n : 1) * sizeof *c);
	uint32_t *row = calloc((size_t)nranks + 1, sizeof *row);
	if (!c || !row) {
		free(c);
		free(row);
		return fail(err, AN_E_NOMEM, "out of memory");
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (t[i].bytes)
			c[m++] = t[i];
	qsort(c, m, sizeof *c, tri_cmp);
	size_t k = 0;
	for (size_t i = 0; i < m; i++) {
		if (k && c[k - 1].src == c[i].src && c[k - 1].dst == c[i].dst) {
			uint64_t s = c[k - 1].bytes + c[i].bytes;
			c[k - 1].bytes = s < c[i].bytes ? UINT64_MAX : s; /* saturate: pattern_total_bytes refuses it */
		} else {
			c[k++] = c[i];
		}
	}
	for (size_t i = 0; i < k; i++)
		row[c[i].src + 1]++;
	for (uint32_t r = 0; r < nranks; r++)
		row[r + 1] += row[r];
	struct pattern q = { .kind = PAT_MATRIX, .msg_bytes = 0, .dim = { 1, 1, 1 },
			     .tri = c, .ntri = k, .row = row, .nranks_row = nranks };
	*p = q;
	return AN_OK;
}

void pattern_clear(struct pattern *p)
{
	if (!p)
		return;
	free(p->tri);
	free(p->row);
	p->tri = NULL;
	p->row = NULL;
	p->ntri = 0;
}

int pattern_check(const struct pattern *p, uint32_t nranks, char err[AN_ERR_LEN])
{
	if (nranks == 0 || nranks > TOPO_RANKS_MAX)
		return fail(err, AN_E_RANGE, "%" PRIu32 " ranks (1..%d)", nranks, TOPO_RANKS_MAX);
	switch (p->kind) {
	case PAT_STENCIL2D:
	case PAT_STENCIL3D: {
		uint64_t prod = (uint64_t)p->dim[0] * p->dim[1] * p->dim[2];
		if (prod != nranks)
			return fail(err, AN_E_INVAL,
				    "stencil grid %" PRIu32 "x%" PRIu32 "x%" PRIu32
				    " has %" PRIu64 " cells for %" PRIu32 " ranks",
				    p->dim[0], p->dim[1], p->dim[2], prod, nranks);
		break;
	}
	case PAT_XOR:
	case PAT_BITREV:
		if (nranks & (nranks - 1))
			return fail(err, AN_E_INVAL, "%s needs a power-of-two number of ranks, not %" PRIu32,
				    p->kind == PAT_XOR ? "xor:K" : "bitrev", nranks);
		if (p->kind == PAT_XOR && (uint32_t)p->shift >= nranks)
			return fail(err, AN_E_INVAL, "xor:%" PRId32 " needs K < %" PRIu32 " (the ranks)",
				    p->shift, nranks);
		break;
	case PAT_MATRIX:
		if (p->nranks_row != nranks || !p->row)
			return fail(err, AN_E_INVAL, "matrix built for %" PRIu32 " ranks, job has %" PRIu32,
				    p->nranks_row, nranks);
		break;
	default:
		break;
	}
	return AN_OK;
}

void pattern_name(const struct pattern *p, char *buf, size_t n)
{
	switch (p->kind) {
	case PAT_ALLTOALL: snprintf(buf, n, "alltoall"); break;
	case PAT_ALLGATHER: snprintf(buf, n, "allgather"); break;
	case PAT_RING: snprintf(buf, n, "ring"); break;
	case PAT_SHIFT: snprintf(buf, n, "shift:%" PRId32, p->shift); break;
	case PAT_XOR: snprintf(buf, n, "xor:%" PRId32, p->shift); break;
	case PAT_BITREV: snprintf(buf, n, "bitrev"); break;
	case PAT_RANDOM: snprintf(buf, n, "random:%" PRIu32, p->seed); break;
	case PAT_STENCIL2D:
		snprintf(buf, n, "stencil2d:%" PRIu32 ",%" PRIu32 "%s", p->dim[0], p->dim[1],
			 p->periodic ? ":periodic" : "");
		break;
	case PAT_STENCIL3D:
		snprintf(buf, n, "stencil3d:%" PRIu32 ",%" PRIu32 ",%" PRIu32 "%s", p->dim[0],
			 p->dim[1], p->dim[2], p->periodic ? ":periodic" : "");
		break;
	case PAT_MATRIX: snprintf(buf, n, "matrix"); break;
	}
}

/* The stencil neighbours of r: up to 6 ranks, in the documented order. */
static unsigned stencil_nbrs(const struct pattern *p, uint32_t r, uint32_t out[6])
{
	unsigned nd = p->kind == PAT_STENCIL2D ? 2 : 3, k = 0;
	uint32_t c[3], stride[3] = { 1, p->dim[0], p->dim[0] * p->dim[1] };
	c[0] = r % p->dim[0];
	c[1] = (r / p->dim[0]) % p->dim[1];
	c[2] = r / (p->dim[0] * p->dim[1]);
	for (unsigned d = 0; d < nd; d++) {
		uint32_t D = p->dim[d];
		if (D == 1)
			continue;
		uint32_t base = r - c[d] * stride[d];
		if (c[d] > 0)
			out[k++] = base + (c[d] - 1) * stride[d];
		else if (p->periodic)
			out[k++] = base + (D - 1) * stride[d];
		/* size 2 periodic: +1 wraps to the rank -1 already reached */
		if (c[d] + 1 < D) {
			if (!(p->periodic && D == 2))
				out[k++] = base + (c[d] + 1) * stride[d];
		} else if (p->periodic && D > 2) {
			out[k++] = base;
		}
	}
	return k;
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * random:SEED's permutation, computed per rank rather than stored: a 4-round
 * Feistel network is a bijection of the 2b-bit integers whatever its round
 * function, and walking the cycle from r until it falls back into 0..n-1
 * restricts it to a bijection of 0..n-1 (2^2b < 4n, so under 4 steps on
 * average).  A pattern stays read-only and any thread can generate flows.
 */
static uint32_t random_perm(uint32_t seed, uint32_t n, uint32_t r)
{
	unsigned half = 1;
	while ((1ull << (2 * half)) < n)
		half++;
	uint32_t mask = (1u << half) - 1, x = r;
	do {
		uint32_t L = x >> half, R = x & mask;
		for (uint32_t round = 0; round < 4; round++) {
			uint32_t F = (uint32_t)mix64(((uint64_t)seed << 32) ^ ((uint64_t)round << 24) ^ R ^
						     0x9e3779b97f4a7c15ull) & mask;
			uint32_t t = R;
			R = L ^ F;
			L = t;
		}
		x = (L << half) | R;
	} while (x >= n);
	return x;
}

int pattern_flows_from(const struct pattern *p, uint32_t nranks, uint32_t r, pat_flow_fn *fn,
		       void *arg)
{
	int rc = 0;
	uint64_t b = p->msg_bytes;
	switch (p->kind) {
	case PAT_ALLTOALL:
	case PAT_ALLGATHER:
		for (uint32_t s = 0; s < nranks && !rc; s++)
			if (s != r)
				rc = fn(arg, r, s, b);
		return rc;
	case PAT_SHIFT: {
		int64_t k = p->shift % (int64_t)nranks;
		if (k < 0)
			k += nranks;
		if (k == 0)
			return 0;
		return fn(arg, r, (uint32_t)((r + (uint64_t)k) % nranks), b);
	}
	case PAT_XOR:
	case PAT_BITREV:
	case PAT_RANDOM: {
		uint32_t d;
		if (p->kind == PAT_XOR) {
			d = r ^ (uint32_t)p->shift;
		} else if (p->kind == PAT_RANDOM) {
			d = random_perm(p->seed, nranks, r);
		} else {
			d = 0;
			for (uint32_t bit = 1, top = nranks >> 1; bit < nranks; bit <<= 1, top >>= 1)
				if (r & bit)
					d |= top;
		}
		return d == r ? 0 : fn(arg, r, d, b);
	}
	case PAT_RING:
		if (nranks < 2)
			return 0;
		rc = fn(arg, r, (r + nranks - 1) % nranks, b);
		if (!rc && nranks > 2)
			rc = fn(arg, r, (r + 1) % nranks, b);
		return rc;
	case PAT_STENCIL2D:
	case PAT_STENCIL3D: {
		uint32_t nb[6];
		unsigned k = stencil_nbrs(p, r, nb);
		for (unsigned i = 0; i < k && !rc; i++)
			rc = fn(arg, r, nb[i], b);
		return rc;
	}
	case PAT_MATRIX:
		for (uint32_t i = p->row[r]; i < p->row[r + 1] && !rc; i++)
			rc = fn(arg, r, p->tri[i].dst, p->tri[i].bytes);
		return rc;
	}
	return 0;
}

int pattern_for_each(const struct pattern *p, uint32_t nranks, pat_flow_fn *fn, void *arg)
{
	int rc = 0;
	for (uint32_t r = 0; r < nranks && !rc; r++)
		rc = pattern_flows_from(p, nranks, r, fn, arg);
	return rc;
}

static int count_fn(void *arg, uint32_t s, uint32_t d, uint64_t b)
{
	(void)s, (void)d, (void)b;
	++*(uint64_t *)arg;
	return 0;
}

uint64_t pattern_nflows(const struct pattern *p, uint32_t nranks)
{
	switch (p->kind) {
	case PAT_ALLTOALL:
	case PAT_ALLGATHER:
		return (uint64_t)nranks * (nranks - 1);
	case PAT_MATRIX:
		return p->ntri;
	default: {
		uint64_t n = 0;
		pattern_for_each(p, nranks, count_fn, &n);
		return n;
	}
	}
}

int pattern_total_bytes(const struct pattern *p, uint32_t nranks, uint64_t *total, char err[AN_ERR_LEN])
{
	uint64_t t = 0;
	if (p->kind == PAT_MATRIX) {
		for (size_t i = 0; i < p->ntri; i++)
			if (__builtin_add_overflow(t, p->tri[i].bytes, &t) || t > TOPO_BYTES_TOTAL_MAX)
				return fail(err, AN_E_RANGE, "the matrix entries total more than 2^62 bytes");
	} else {
		uint64_t nf = pattern_nflows(p, nranks);
		if (__builtin_mul_overflow(nf, p->msg_bytes, &t) || t > TOPO_BYTES_TOTAL_MAX)
			return fail(err, AN_E_RANGE, "%" PRIu64 " flows of %" PRIu64 " bytes total more than 2^62 bytes",
				    nf, p->msg_bytes);
	}
	*total = t;
	return AN_OK;
}

int pattern_rank_token(const char *tok, char name[TOPO_QUERY_NAME_MAX + 1], uint32_t *count,
		       char err[AN_ERR_LEN])
{
	size_t len = strnlen(tok, TOPO_QUERY_NAME_MAX + 16);
	const char *star = memchr(tok, '*', len);
	size_t nl = star ? (size_t)(star - tok) : len;
	if (nl == 0 || nl > TOPO_QUERY_NAME_MAX)
		return fail(err, AN_E_INVAL, "bad rank list entry (NAME or NAME*COUNT)");
	long c = 1;
	if (star && parse_num(star + 1, len - nl - 1, 1, TOPO_RANKS_MAX, &c))
		return fail(err, AN_E_INVAL, "bad rank count in '%.*s' (1..%d)", (int)nl, tok,
			    TOPO_RANKS_MAX);
	memcpy(name, tok, nl);
	name[nl] = 0;
	*count = (uint32_t)c;
	return AN_OK;
}

int pattern_job_check(const struct pat_job *j, uint32_t nhosts_fabric, char err[AN_ERR_LEN])
{
	if (j->nranks == 0 || j->nranks > TOPO_RANKS_MAX)
		return fail(err, AN_E_RANGE, "%" PRIu32 " ranks (1..%d)", j->nranks, TOPO_RANKS_MAX);
	uint8_t *seen = calloc(nhosts_fabric ? nhosts_fabric : 1, 1);
	if (!seen)
		return fail(err, AN_E_NOMEM, "out of memory");
	uint32_t distinct = 0;
	int rc = AN_OK;
	for (uint32_t r = 0; r < j->nranks; r++) {
		uint32_t h = j->host[r];
		if (h >= nhosts_fabric) {
			rc = fail(err, AN_E_INVAL, "rank %" PRIu32 ": no such host", r);
			break;
		}
		if (!seen[h]) {
			seen[h] = 1;
			if (++distinct > TOPO_MATRIX_MAX) {
				rc = fail(err, AN_E_RANGE, "more than %d distinct hosts",
					  TOPO_MATRIX_MAX);
				break;
			}
		}
	}
	free(seen);
	return rc;
}
