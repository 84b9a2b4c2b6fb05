/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * load.c - tii_get_pattern_load / tii_get_matrix_load: the `load` request
 * (docs/protocol.md) and its reply as a tii_load_t.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tii_impl.h"

struct ld_ctx {
	tii_load_t *l;
	size_t caplinks, caphosts, caplevels, capmax;
	size_t nranks;
	size_t maxmax;      /* max lines announced: no more are taken */
	int nolinks;
};

void tii_load_free(tii_load_t *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nmax; i++) {
		for (size_t k = 0; k < l->max[i].nbehind; k++)
			free(l->max[i].behind[k]);
		free(l->max[i].behind);
	}
	free(l->max);
	free(l->levels);
	free(l->links);
	free(l->hostnames);
	free(l);
}

/* tii_impl.h */
int tii__guid_port(const char *w, uint64_t *guid, int *port)
{
	char buf[24];   /* "0x" and 16 hex digits */
	const char *colon = w ? strchr(w, ':') : NULL;
	long v;
	if (!colon || (size_t)(colon - w) >= sizeof buf || tii__parse_long(colon + 1, 0, 255, &v))
		return TII_E_PROTO;
	memcpy(buf, w, (size_t)(colon - w));
	buf[colon - w] = '\0';
	if (tii__parse_guid(buf, guid))
		return TII_E_PROTO;
	*port = (int)v;
	return 0;
}

/* time_us=T|- bottleneck=0xGUID:PORT|- bottleneck_bps=N|- (cost.h's model) */
static int ld_time(const struct tii__kv *kv, tii_load_t *l)
{
	const char *t = tii__kv_get(kv, "time_us"), *b = tii__kv_get(kv, "bottleneck");
	const char *r = tii__kv_get(kv, "bottleneck_bps");
	if (!t || !b || !r || tii__parse_us(t, &l->time_s))
		return TII_E_PROTO;
	if (l->time_s < 0)
		return strcmp(b, "-") || strcmp(r, "-") ? TII_E_PROTO : 0;
	if (tii__parse_u64(r, 10, &l->bottleneck_bps))
		return TII_E_PROTO;
	if (!strcmp(b, "-"))
		return l->bottleneck_bps ? TII_E_PROTO : 0;
	return tii__guid_port(b, &l->bottleneck_guid, &l->bottleneck_port) || !l->bottleneck_bps ? TII_E_PROTO : 0;
}

static int ld_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct ld_ctx *c = ctx;
	tii_load_free(c->l);
	c->caplinks = c->caphosts = c->caplevels = c->capmax = 0;
	tii_load_t *l = c->l = calloc(1, sizeof(*l));
	if (!l)
		return TII_E_NOMEM;
	uint64_t ranks, hosts, nmax, nlinks, hops;
	if (tii__kv_u64(kv, "ranks", &ranks) || ranks != c->nranks || tii__kv_u64(kv, "hosts", &hosts) ||
	    hosts > ranks || tii__kv_u64(kv, "flows", &l->flows) || tii__kv_u64(kv, "msgs", &l->msgs) ||
	    tii__kv_u64(kv, "bytes", &l->bytes) || tii__kv_u64(kv, "intra_msgs", &l->intra_msgs) ||
	    tii__kv_u64(kv, "intra_bytes", &l->intra_bytes) ||
	    tii__kv_u64(kv, "failed_msgs", &l->failed_msgs) ||
	    tii__kv_u64(kv, "failed_bytes", &l->failed_bytes) ||
	    tii__kv_u64(kv, "max_msgs", &l->max_msgs) || tii__kv_u64(kv, "max_bytes", &l->max_bytes) ||
	    tii__kv_u64(kv, "max_links", &nmax) || nmax > nlines || tii__kv_u64(kv, "max_hops", &hops) ||
	    hops > 1u << 16 || tii__kv_u64(kv, "links", &nlinks))
		return TII_E_PROTO;
	if (ld_time(kv, l))
		return TII_E_PROTO;
	l->nranks = (size_t)ranks;
	l->nhosts = (size_t)hosts;
	l->max_hops = (int)hops;
	c->maxmax = (size_t)nmax;
	return 0;
}

/* "0xGUID:PORT" then "F>T" */
static int link_words(char **p, struct tii_load_link *k)
{
	char *w = tii__word(p);
	if (tii__guid_port(w, &k->guid, &k->port))
		return TII_E_PROTO;
	w = tii__word(p);
	char *gt = w ? strchr(w, '>') : NULL;
	if (!gt)
		return TII_E_PROTO;
	*gt = '\0';
	long a, b;
	if ((strcmp(w, "x") ? tii__parse_long(w, 0, 254, &a) : (a = TII_LOAD_LEVEL_NONE, 0)) ||
	    (strcmp(gt + 1, "x") ? tii__parse_long(gt + 1, 0, 254, &b) : (b = TII_LOAD_LEVEL_NONE, 0)))
		return TII_E_PROTO;
	k->from = (int)a;
	k->to = (int)b;
	return 0;
}

static int signed_or_dash(const struct tii__kv *kv, const char *key, int64_t *v)
{
	const char *s = tii__kv_get(kv, key);
	uint64_t u;
	if (!s)
		return TII_E_PROTO;
	if (!strcmp(s, "-")) {
		*v = -1;
		return 0;
	}
	if (tii__parse_u64(s, 10, &u) || u > INT64_MAX)
		return TII_E_PROTO;
	*v = (int64_t)u;
	return 0;
}

static int ld_line(void *ctx, size_t i, char *line, size_t len)
{
	struct ld_ctx *c = ctx;
	tii_load_t *l = c->l;
	char *p = line, *kind = tii__word(&p);
	struct tii__kv kv;
	(void)i;
	(void)len;
	if (!kind)
		return TII_E_PROTO;
	/* "tier"; an older topod said "level" */
	if (!strcmp(kind, "tier") || !strcmp(kind, "level")) {
		if (tii__grow((void **)&l->levels, &c->caplevels, l->nlevels + 1, sizeof(*l->levels)))
			return TII_E_NOMEM;
		struct tii_load_level *v = &l->levels[l->nlevels];
		char *w = tii__word(&p), *gt = w ? strchr(w, '>') : NULL;
		long a, b;
		uint64_t n, u;
		if (!gt)
			return TII_E_PROTO;
		*gt = '\0';
		if ((strcmp(w, "x") ? tii__parse_long(w, 0, 254, &a) : (a = TII_LOAD_LEVEL_NONE, 0)) ||
		    (strcmp(gt + 1, "x") ? tii__parse_long(gt + 1, 0, 254, &b) : (b = TII_LOAD_LEVEL_NONE, 0)))
			return TII_E_PROTO;
		if (tii__kv_parse(p, &kv) || tii__kv_u64(&kv, "links", &n) || tii__kv_u64(&kv, "used", &u) ||
		    tii__kv_u64(&kv, "max_msgs", &v->max_msgs) || tii__kv_u64(&kv, "max_bytes", &v->max_bytes) ||
		    tii__kv_u64(&kv, "total_msgs", &v->total_msgs) ||
		    tii__kv_u64(&kv, "total_bytes", &v->total_bytes) ||
		    signed_or_dash(&kv, "bound_msgs", &v->bound_msgs) ||
		    signed_or_dash(&kv, "bound_bytes", &v->bound_bytes))
			return TII_E_PROTO;
		v->from = (int)a;
		v->to = (int)b;
		v->nlinks = (size_t)n;
		v->nused = (size_t)u;
		l->nlevels++;
		return 0;
	}
	if (!strcmp(kind, "hops")) {
		long h;
		uint64_t m, b;
		char *w = tii__word(&p);
		if (!w || tii__parse_long(w, 0, TII_LOAD_HOPS_MAX, &h) || tii__kv_parse(p, &kv) ||
		    tii__kv_u64(&kv, "msgs", &m) || tii__kv_u64(&kv, "bytes", &b))
			return TII_E_PROTO;
		l->hop_msgs[h] = m;
		l->hop_bytes[h] = b;
		return 0;
	}
	if (!strcmp(kind, "max")) {
		if (l->nmax == c->maxmax)
			return TII_E_PROTO;
		if (tii__grow((void **)&l->max, &c->capmax, l->nmax + 1, sizeof(*l->max)))
			return TII_E_NOMEM;
		struct tii_load_max *m = &l->max[l->nmax];
		memset(m, 0, sizeof(*m));
		if (link_words(&p, &m->link))
			return TII_E_PROTO;
		char *wm = tii__word(&p), *wb = tii__word(&p), *wh = tii__word(&p);
		if (!wm || !wb || !wh || strncmp(wm, "msgs=", 5) || strncmp(wb, "bytes=", 6) ||
		    strncmp(wh, "behind=", 7) || tii__parse_u64(wm + 5, 10, &m->link.msgs) ||
		    tii__parse_u64(wb + 6, 10, &m->link.bytes) || tii__word(&p))
			return TII_E_PROTO;
		l->nmax++;  /* counted now: tii_load_free frees what is attached */
		char *h = wh + 7;
		if (!strcmp(h, "-"))
			return 0;
		size_t n = 1;
		for (char *q = h; *q; q++)
			n += *q == ',';
		m->behind = calloc(n, sizeof(*m->behind));
		if (!m->behind)
			return TII_E_NOMEM;
		for (char *tok = strtok(h, ","); tok; tok = strtok(NULL, ",")) {
			if (!(m->behind[m->nbehind++] = strdup(tok)))
				return TII_E_NOMEM;
		}
		return 0;
	}
	if (!strcmp(kind, "link")) {
		struct tii_load_link k;
		if (link_words(&p, &k) || tii__parse_u64(tii__word(&p), 10, &k.msgs) ||
		    tii__parse_u64(tii__word(&p), 10, &k.bytes) || tii__parse_guid(tii__word(&p), &k.head) ||
		    tii__word(&p))
			return TII_E_PROTO;
		if (tii__grow((void **)&l->links, &c->caplinks, l->nlinks + 1, sizeof(*l->links)))
			return TII_E_NOMEM;
		l->links[l->nlinks++] = k;
		return 0;
	}
	if (!strcmp(kind, "host")) {
		char *w = tii__word(&p);
		struct tii_load_host hh;
		if (!w || strlen(w) > TII_NAME_MAX || tii__parse_guid(tii__word(&p), &hh.guid) || tii__word(&p))
			return TII_E_PROTO;
		strcpy(hh.name, w);
		if (tii__grow((void **)&l->hostnames, &c->caphosts, l->nhostnames + 1, sizeof(*l->hostnames)))
			return TII_E_NOMEM;
		l->hostnames[l->nhostnames++] = hh;
		return 0;
	}
	return TII_E_PROTO;
}

/* The rank list as NAME*COUNT words (runs of equal names). */
static int req_ranks(tii_t *t, const char *const *rank_hosts, size_t nranks)
{
	char w[TII_NAME_MAX + 16];
	for (size_t r = 0; r < nranks;) {
		const char *h = rank_hosts[r];
		if (!h || tii__check_name(h) || strchr(h, '*'))
			return TII_E_INVAL;
		size_t e = r + 1;
		while (e < nranks && rank_hosts[e] && !strcmp(rank_hosts[e], h))
			e++;
		if (e - r == 1)
			snprintf(w, sizeof(w), "%s", h);
		else
			snprintf(w, sizeof(w), "%s*%zu", h, e - r);
		int rc = tii__req_host(t, w);
		if (rc)
			return rc;
		r = e;
	}
	return 0;
}

static int run(tii_t *t, size_t nranks, unsigned flags, tii_load_t **out)
{
	struct ld_ctx c = { .nranks = nranks, .nolinks = !!(flags & TII_LOAD_NOLINKS) };
	static const struct tii__handler h = { ld_head, ld_line, 0 };
	int rc = tii__request(t, &h, &c);
	if (rc) {
		tii_load_free(c.l);
		return rc;
	}
	c.l->generation = tii_last_generation(t);
	*out = c.l;
	return 0;
}

static int begin(tii_t *t, const char *const *rank_hosts, size_t nranks, unsigned flags, tii_load_t **out)
{
	if (!t || !rank_hosts || !nranks || !out || (flags & ~TII_LOAD_NOLINKS))
		return TII_E_INVAL;
	if (nranks > TII_RANKS_MAX)
		return TII_E_TOOMANY;
	int rc = tii__req_begin(t, TII__LOAD);
	if (!rc && (flags & TII_LOAD_NOLINKS))
		rc = tii__req_host(t, "links=max");
	return rc;
}

int tii_get_pattern_load(tii_t *t, const char *const *rank_hosts, size_t nranks, const char *pattern,
			 uint64_t msg_bytes, unsigned flags, tii_load_t **out)
{
	int rc = begin(t, rank_hosts, nranks, flags, out);
	if (rc)
		return rc;
	if (!pattern || tii__check_name(pattern) || !strcmp(pattern, "matrix"))
		return TII_E_INVAL;
	if (msg_bytes > TII_MSG_BYTES_MAX) {
		tii__set_msg(t, "bytes=%" PRIu64 ": at most 2^53 per message", msg_bytes);
		return TII_E_INVAL;
	}
	char w[40];
	snprintf(w, sizeof(w), "bytes=%" PRIu64, msg_bytes ? msg_bytes : 1);
	rc = tii__req_host(t, w);
	rc = rc ? rc : tii__req_host(t, pattern);
	rc = rc ? rc : req_ranks(t, rank_hosts, nranks);
	return rc ? rc : run(t, nranks, flags, out);
}

int tii_get_matrix_load(tii_t *t, const char *const *rank_hosts, size_t nranks,
			const struct tii_flow *flows, size_t nflows, unsigned flags, tii_load_t **out)
{
	int rc = begin(t, rank_hosts, nranks, flags, out);
	if (rc)
		return rc;
	if (!flows && nflows)
		return TII_E_INVAL;
	rc = tii__req_host(t, "matrix");
	rc = rc ? rc : req_ranks(t, rank_hosts, nranks);
	rc = rc ? rc : tii__req_host(t, "--");
	char w[64];
	for (size_t i = 0; !rc && i < nflows; i++) {
		if (flows[i].src >= nranks || flows[i].dst >= nranks)
			return TII_E_INVAL;
		if (flows[i].bytes > TII_MSG_BYTES_MAX) {
			tii__set_msg(t, "flow %zu: %" PRIu64 " bytes, at most 2^53", i, flows[i].bytes);
			return TII_E_INVAL;
		}
		snprintf(w, sizeof(w), "%" PRIu32 ":%" PRIu32 ":%" PRIu64, flows[i].src, flows[i].dst,
			 flows[i].bytes);
		rc = tii__req_host(t, w);
	}
	return rc ? rc : run(t, nranks, flags, out);
}
