/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * history.c - the fabric over time: tii_get_history ("history") and
 * tii_diff ("diff").
 *
 * A scheduler asks "did any route between my job's hosts change between
 * these two generations (or times)?": tii_diff with the job's hosts answers
 * it in routes_changed and names the pairs. Lines of other kinds (links,
 * nodes, ports, LFTs) are kept as topod sent them, for display.
 */
#include "tii_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tii_history_free(tii_history_t *h)
{
	if (!h)
		return;
	free(h->gens);
	free(h);
}

struct hist_ctx {
	tii_history_t *h;
	size_t want;
};

static int hist_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct hist_ctx *c = ctx;
	tii_history_free(c->h);
	c->h = calloc(1, sizeof(*c->h));
	if (!c->h)
		return TII_E_NOMEM;
	if (tii__kv_u64(kv, "bytes", &c->h->bytes))
		return TII_E_PROTO;
	c->want = nlines;
	/* Grown as lines arrive, never sized by what the head claims. */
	return 0;
}

static int hist_line(void *ctx, size_t i, char *line, size_t len)
{
	struct hist_ctx *c = ctx;
	tii_history_t *h = c->h;
	struct tii__kv kv;
	long nodes, sw, cas, links, hosts;
	(void)len;
	if (i == h->n && (h->n & (h->n - 1)) == 0) {
		size_t cap = h->n ? h->n * 2 : 16;
		struct tii_generation *ng = realloc(h->gens, cap * sizeof(*ng));
		if (!ng)
			return TII_E_NOMEM;
		h->gens = ng;
	}
	struct tii_generation *g = &h->gens[h->n];
	memset(g, 0, sizeof(*g));
	if (tii__kv_parse(line, &kv))
		return TII_E_PROTO;
	const char *kind = tii__kv_get(&kv, "kind"), *eng = tii__kv_get(&kv, "engine");
	if (!kind || !eng || strlen(eng) >= sizeof(g->engine) || tii__kv_u64(&kv, "generation", &g->generation) ||
	    tii__kv_u64(&kv, "snapshot_us", &g->snapshot_us) || tii__kv_u64(&kv, "received_us", &g->received_us) ||
	    tii__kv_u64(&kv, "sm_guid", &g->sm_guid) || tii__kv_u64(&kv, "sweep", &g->sweep) ||
	    tii__kv_u64(&kv, "bytes", &g->bytes) || tii__kv_int(&kv, "nodes", 0, 1L << 30, &nodes) ||
	    tii__kv_int(&kv, "switches", 0, 1L << 30, &sw) || tii__kv_int(&kv, "cas", 0, 1L << 30, &cas) ||
	    tii__kv_int(&kv, "links", 0, 1L << 30, &links) || tii__kv_int(&kv, "hosts", 0, 1L << 30, &hosts))
		return TII_E_PROTO;
	if (!strcmp(kind, "served"))
		g->kind = TII_GEN_SERVED;
	else if (!strcmp(kind, "delta"))
		g->kind = TII_GEN_DELTA;
	else if (!strcmp(kind, "full"))
		g->kind = TII_GEN_FULL;
	else
		return TII_E_PROTO;
	snprintf(g->engine, sizeof(g->engine), "%s", strcmp(eng, "-") ? eng : "");
	g->nodes = (uint32_t)nodes;
	g->switches = (uint32_t)sw;
	g->cas = (uint32_t)cas;
	g->links = (uint32_t)links;
	g->hosts = (uint32_t)hosts;
	h->n++;
	return 0;
}

int tii_get_history(tii_t *t, tii_history_t **out)
{
	if (!t || !out)
		return TII_E_INVAL;
	static const struct tii__handler hd = { hist_head, hist_line, 0 };
	struct hist_ctx c = { 0 };
	int rc = tii__req_begin(t, TII__HISTORY);
	rc = rc ? rc : tii__request(t, &hd, &c);
	if (rc) {
		tii_history_free(c.h);
		return rc;
	}
	c.h->generation = tii_last_generation(t);
	*out = c.h;
	return 0;
}

/* ---- diff ---------------------------------------------------------------------- */

void tii_diff_free(tii_diff_t *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nlines; i++)
		free(d->lines[i]);
	free(d->lines);
	for (size_t i = 0; i < d->npairs; i++) {
		free(d->pairs[i].a);
		free(d->pairs[i].b);
	}
	free(d->pairs);
	free(d);
}

struct diff_ctx {
	tii_diff_t *d;
	size_t lcap, pcap;
};

static int diff_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct diff_ctx *c = ctx;
	long v[9];
	static const char *const keys[9] = { "links_down", "links_up", "nodes_gone", "nodes_new", "ports",
					     "lft_switches", "lft_entries", "hosts_changed", "" };
	(void)nlines;
	tii_diff_free(c->d);
	c->lcap = c->pcap = 0;
	c->d = calloc(1, sizeof(*c->d));
	if (!c->d)
		return TII_E_NOMEM;
	tii_diff_t *d = c->d;
	for (int k = 0; k < 8; k++)
		if (tii__kv_int(kv, keys[k], 0, 1L << 40, &v[k]))
			return TII_E_PROTO;
	if (tii__kv_u64(kv, "from", &d->from) || tii__kv_u64(kv, "to", &d->to) ||
	    tii__kv_u64(kv, "routes_changed", &d->routes_changed))
		return TII_E_PROTO;
	d->links_down = (uint64_t)v[0];
	d->links_up = (uint64_t)v[1];
	d->nodes_gone = (uint64_t)v[2];
	d->nodes_new = (uint64_t)v[3];
	d->ports = (uint64_t)v[4];
	d->lft_switches = (uint64_t)v[5];
	d->lft_entries = (uint64_t)v[6];
	d->hosts_changed = (uint64_t)v[7];
	return 0;
}

static int diff_line(void *ctx, size_t i, char *line, size_t len)
{
	struct diff_ctx *c = ctx;
	tii_diff_t *d = c->d;
	(void)i;
	if (!strncmp(line, "route ", 6)) {
		char *p = line + 6, *a = tii__word(&p), *b = tii__word(&p);
		if (!a || !b || tii__word(&p) || strlen(a) > TII_NAME_MAX || strlen(b) > TII_NAME_MAX)
			return TII_E_PROTO;
		if (d->npairs == c->pcap) {
			size_t cap = c->pcap ? c->pcap * 2 : 64;
			struct tii_pair *np = realloc(d->pairs, cap * sizeof(*np));
			if (!np)
				return TII_E_NOMEM;
			d->pairs = np;
			c->pcap = cap;
		}
		d->pairs[d->npairs].a = strdup(a);
		d->pairs[d->npairs].b = strdup(b);
		d->npairs++;
		return d->pairs[d->npairs - 1].a && d->pairs[d->npairs - 1].b ? 0 : TII_E_NOMEM;
	}
	if (d->nlines == c->lcap) {
		size_t cap = c->lcap ? c->lcap * 2 : 64;
		char **nl = realloc(d->lines, cap * sizeof(*nl));
		if (!nl)
			return TII_E_NOMEM;
		d->lines = nl;
		c->lcap = cap;
	}
	d->lines[d->nlines] = malloc(len + 1);
	if (!d->lines[d->nlines])
		return TII_E_NOMEM;
	memcpy(d->lines[d->nlines], line, len);
	d->lines[d->nlines++][len] = '\0';
	return 0;
}

int tii_diff(tii_t *t, const char *from, const char *to, const char *const *hosts, size_t n, tii_diff_t **out)
{
	if (!t || !from || !to || !out || (n && !hosts))
		return TII_E_INVAL;
	static const struct tii__handler hd = { diff_head, diff_line, 0 };
	struct diff_ctx c = { 0 };
	int rc = tii__req_begin(t, TII__DIFF);
	/* A generation or "@SECONDS": words of digits, a dot and '@' only. */
	for (const char *w = from; !rc && w; w = w == from ? to : NULL) {
		if (!*w || strspn(w, "@0123456789.") != strlen(w) || strlen(w) > 32)
			rc = TII_E_INVAL;
		else
			rc = tii__req_word(t, w, strlen(w));
	}
	rc = rc ? rc : n ? tii__req_hosts(t, hosts, n) : 0;
	rc = rc ? rc : tii__request(t, &hd, &c);
	if (rc) {
		tii_diff_free(c.d);
		return rc;
	}
	*out = c.d;
	return 0;
}
