/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hosts.c - names, hosts and batches: tii_resolve ("resolve"), tii_get_hosts
 * ("hosts"), tii_get_hops_batch ("hopsbatch") and tii_ping ("ping").
 *
 * As everywhere in libtii, results grow as lines arrive and every name in
 * a reply is checked against the protocol's bounds.
 */
#include "tii_impl.h"

#include <stdlib.h>
#include <string.h>

/* Copies s into dst[cap] if it fits, else TII_E_PROTO (never cut silently:
 * a cut name would name something else). "-" is topod's "none". */
static int put_name(char *dst, size_t cap, const char *s)
{
	if (!s)
		return TII_E_PROTO;
	if (!strcmp(s, "-"))
		s = "";
	size_t n = strlen(s);
	if (n >= cap)
		return TII_E_PROTO;
	memcpy(dst, s, n + 1);
	return 0;
}

/* ---- resolve ------------------------------------------------------------------ */

static int resolve_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct tii_endpoint *ep = ctx;
	long port, lid, dlid, lmc;
	memset(ep, 0, sizeof(*ep));
	const char *leaf = tii__kv_get(kv, "leaf");
	if (nlines || put_name(ep->name, sizeof(ep->name), tii__kv_get(kv, "name")) ||
	    put_name(ep->host, sizeof(ep->host), tii__kv_get(kv, "host")) ||
	    put_name(ep->hca, sizeof(ep->hca), tii__kv_get(kv, "hca")) ||
	    tii__kv_u64(kv, "guid", &ep->port_guid) || tii__kv_u64(kv, "node", &ep->node_guid) ||
	    tii__kv_int(kv, "port", 0, 255, &port) || tii__kv_int(kv, "lid", 0, 0xFFFF, &lid) ||
	    tii__kv_int(kv, "dlid", 0, 0xFFFF, &dlid) || tii__kv_int(kv, "lmc", 0, 7, &lmc) || !leaf ||
	    (strcmp(leaf, "-") && tii__parse_guid(leaf, &ep->leaf)))
		return TII_E_PROTO;
	ep->port = (int)port;
	ep->lid = (uint16_t)lid;
	ep->dlid = (uint16_t)dlid;
	ep->lmc = (int)lmc;
	return 0;
}

int tii_resolve(tii_t *t, const char *name, struct tii_endpoint *ep)
{
	if (!t || !ep)
		return TII_E_INVAL;
	struct tii_endpoint tmp;
	static const struct tii__handler h = { resolve_head, NULL, 0 };
	int rc = tii__req_begin(t, TII__RESOLVE);
	rc = rc ? rc : tii__req_host(t, name);
	rc = rc ? rc : tii__request(t, &h, &tmp);
	if (!rc)
		*ep = tmp;
	return rc;
}

/* ---- hosts ---------------------------------------------------------------------- */

void tii_hosts_free(tii_hosts_t *hs)
{
	if (!hs)
		return;
	for (size_t i = 0; i < hs->n; i++) {
		free(hs->hosts[i].name);
		free(hs->hosts[i].rails);
	}
	free(hs->hosts);
	free(hs);
}

struct hosts_ctx {
	tii_hosts_t *hs;
	size_t cap;
};

static int hosts_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct hosts_ctx *c = ctx;
	(void)kv;
	(void)nlines;
	tii_hosts_free(c->hs);
	c->cap = 0;
	c->hs = calloc(1, sizeof(*c->hs));
	return c->hs ? 0 : TII_E_NOMEM;
}

/* "LABEL:0xPORTGUID:lid=N" */
static int rail_field(char *w, struct tii_rail *r)
{
	char *c1 = strchr(w, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	long lid;
	if (!c2 || strncmp(c2 + 1, "lid=", 4))
		return TII_E_PROTO;
	*c1 = *c2 = '\0';
	if (!*w || put_name(r->hca, sizeof(r->hca), w) || tii__parse_guid(c1 + 1, &r->port_guid) ||
	    tii__parse_long(c2 + 5, 0, 0xFFFF, &lid))
		return TII_E_PROTO;
	r->lid = (uint16_t)lid;
	return 0;
}

/* "NAME rails=K RAIL ..." */
static int hosts_line(void *ctx, size_t i, char *line, size_t len)
{
	struct hosts_ctx *c = ctx;
	tii_hosts_t *hs = c->hs;
	char *p = line, *name = tii__word(&p), *rw = tii__word(&p), *w;
	long nr;
	(void)i;
	(void)len;
	/* a host has at most one rail per port of a CA: 255 is generous */
	if (!name || strlen(name) > TII_HOSTNAME_MAX || !rw || strncmp(rw, "rails=", 6) ||
	    tii__parse_long(rw + 6, 1, 255, &nr))
		return TII_E_PROTO;
	if (hs->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct tii_host *nh = realloc(hs->hosts, cap * sizeof(*nh));
		if (!nh)
			return TII_E_NOMEM;
		hs->hosts = nh;
		c->cap = cap;
	}
	struct tii_host *h = &hs->hosts[hs->n];
	h->nrails = 0;
	h->name = strdup(name);
	h->rails = calloc((size_t)nr, sizeof(*h->rails));
	if (!h->name || !h->rails) {
		free(h->name);
		free(h->rails);
		return TII_E_NOMEM;
	}
	hs->n++;
	while ((w = tii__word(&p))) {
		if (h->nrails == (size_t)nr || rail_field(w, &h->rails[h->nrails]))
			return TII_E_PROTO;
		h->nrails++;
	}
	return h->nrails == (size_t)nr ? 0 : TII_E_PROTO;
}

int tii_get_hosts(tii_t *t, tii_hosts_t **out)
{
	if (!t || !out)
		return TII_E_INVAL;
	struct hosts_ctx c = { NULL, 0 };
	static const struct tii__handler h = { hosts_head, hosts_line, 0 };
	int rc = tii__req_begin(t, TII__HOSTS);
	rc = rc ? rc : tii__request(t, &h, &c);
	if (rc) {
		tii_hosts_free(c.hs);
		return rc;
	}
	c.hs->generation = tii_last_generation(t);
	*out = c.hs;
	return 0;
}

/* ---- hopsbatch ------------------------------------------------------------------ */

struct batch_ctx {
	const char *const *src, *const *dst;
	size_t n;
	int *hops;
};

static int batch_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct batch_ctx *c = ctx;
	(void)kv;
	return nlines == c->n ? 0 : TII_E_PROTO;
}

/* A pair's ERR code as a TII_E_* for that pair. */
static int pair_code(const char *code)
{
	static const char *const route[] = { "NOLID", "SRC_NOLINK", "NOENTRY", "NOLINK", "DOWN", "WRONGDST", "LOOP" };
	if (!strcmp(code, "NOTFOUND"))
		return TII_E_NOTFOUND;
	if (!strcmp(code, "INVAL"))
		return TII_E_INVAL;
	if (!strcmp(code, "NOMEM"))
		return TII_E_NOMEM;
	for (size_t i = 0; i < sizeof(route) / sizeof(route[0]); i++)
		if (!strcmp(code, route[i]))
			return TII_E_NOROUTE;
	return 1;   /* not one of topod's */
}

/* "A B N" or "A B ERR CODE", echoing the pair as asked, in request order. */
static int batch_line(void *ctx, size_t i, char *line, size_t len)
{
	struct batch_ctx *c = ctx;
	char *p = line, *a = tii__word(&p), *b = tii__word(&p), *w = tii__word(&p);
	long v;
	(void)len;
	if (!a || !b || !w || strcmp(a, c->src[i]) || strcmp(b, c->dst[i]))
		return TII_E_PROTO;
	if (!strcmp(w, "ERR")) {
		char *code = tii__word(&p);
		int e = code ? pair_code(code) : 1;
		if (e > 0 || tii__word(&p))
			return TII_E_PROTO;
		c->hops[i] = e;
		return 0;
	}
	if (tii__parse_long(w, 0, 65535, &v) || tii__word(&p))
		return TII_E_PROTO;
	c->hops[i] = (int)v;
	return 0;
}

int tii_get_hops_batch(tii_t *t, const char *const *src, const char *const *dst, size_t n, int *hops)
{
	if (!t || !src || !dst || !n || !hops)
		return TII_E_INVAL;
	int rc = tii__req_begin(t, TII__HOPSBATCH);
	for (size_t i = 0; i < n && !rc; i++) {
		const char *a = src[i], *b = dst[i];
		if (tii__check_name(a) || tii__check_name(b) || strchr(!strncmp(a, "lid:", 4) ? a + 4 : a, ':')) {
			tii__set_msg(t, "invalid host name in pair %zu", i + 1);
			return TII_E_INVAL;
		}
		char pair[2 * TII_NAME_MAX + 2];
		size_t la = strlen(a), lb = strlen(b);
		memcpy(pair, a, la);
		pair[la] = ':';
		memcpy(pair + la + 1, b, lb + 1);
		rc = tii__req_word(t, pair, la + 1 + lb);
	}
	if (rc)
		return rc;
	struct batch_ctx c = { src, dst, n, hops };
	static const struct tii__handler h = { batch_head, batch_line, 0 };
	return tii__request(t, &h, &c);
}

/* ---- ping --------------------------------------------------------------------- */

static int ping_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	(void)ctx;
	(void)kv;
	return nlines ? TII_E_PROTO : 0;
}

int tii_ping(tii_t *t)
{
	if (!t)
		return TII_E_INVAL;
	static const struct tii__handler h = { ping_head, NULL, 1 };
	int rc = tii__req_begin(t, TII__PING);
	return rc ? rc : tii__request(t, &h, NULL);
}
