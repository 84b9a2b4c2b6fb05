/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inventory.c - the inventory: tii_show ("show") and tii_get_links
 * ("links"), docs/protocol.md.
 *
 * Replies are untrusted: every name is checked against its field before it
 * is copied (never cut), a host's nodes are capped by TII_SHOW_NODES_MAX and
 * a node's ports by the port count its node line gave (at most 255), the
 * cables by TII_LINKS_MAX; arrays grow as lines arrive.
 */
#include "tii_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies s into dst[cap] if it fits, else TII_E_PROTO; "-" is "". */
static int put(char *dst, size_t cap, const char *s)
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

#define PUT(dst, kv, key) put((dst), sizeof(dst), tii__kv_get((kv), (key)))

/* A GUID, or "-" for none (0). */
static int guid_or_none(const struct tii__kv *kv, const char *key, uint64_t *v)
{
	const char *s = tii__kv_get(kv, key);
	if (!s)
		return TII_E_PROTO;
	*v = 0;
	return strcmp(s, "-") ? tii__parse_guid(s, v) : 0;
}

/* "0xNODE:PORT" (port 0..255) */
static int node_port(const char *s, uint64_t *node, int *port)
{
	char buf[40];
	const char *colon = s ? strchr(s, ':') : NULL;
	long p;
	if (!colon || (size_t)(colon - s) >= sizeof(buf))
		return TII_E_PROTO;
	memcpy(buf, s, (size_t)(colon - s));
	buf[colon - s] = '\0';
	if (tii__parse_guid(buf, node) || tii__parse_long(colon + 1, 0, 255, &p))
		return TII_E_PROTO;
	*port = (int)p;
	return 0;
}

/* ---- show --------------------------------------------------------------------- */

void tii_show_free(tii_show_t *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nnodes; i++)
		free(s->nodes[i].ports);
	free(s->nodes);
	free(s);
}

struct show_ctx {
	tii_show_t *s;
	size_t want;   /* nodes the head announced */
};

/* A cluster name: absent (an older topod) or "-" is "", else it must fit. */
static int opt_name(char *dst, size_t n, const char *v)
{
	if (!v || !strcmp(v, "-")) {
		dst[0] = '\0';
		return 0;
	}
	/* cluster names are one word of [A-Za-z0-9._-] (docs/protocol.md, tree) */
	if (strlen(v) >= n || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(v))
		return TII_E_PROTO;
	strcpy(dst, v);
	return 0;
}

static int show_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct show_ctx *c = ctx;
	long nodes;
	tii_show_free(c->s);
	c->s = calloc(1, sizeof(*c->s));
	if (!c->s)
		return TII_E_NOMEM;
	tii_show_t *s = c->s;
	if (PUT(s->name, kv, "name") || PUT(s->kind, kv, "kind") || PUT(s->plane, kv, "plane") ||
	    PUT(s->host, kv, "host") || PUT(s->leaf_name, kv, "leaf_name") || guid_or_none(kv, "leaf", &s->leaf) ||
	    guid_or_none(kv, "leaf_cluster", &s->leaf_cluster) || guid_or_none(kv, "pod", &s->pod) ||
	    tii__kv_int(kv, "nodes", 1, TII_SHOW_NODES_MAX, &nodes) || nlines < (size_t)nodes ||
	    opt_name(s->leaf_cluster_name, sizeof(s->leaf_cluster_name), tii__kv_get(kv, "leaf_cluster_name")) ||
	    opt_name(s->pod_name, sizeof(s->pod_name), tii__kv_get(kv, "pod_name")))
		return TII_E_PROTO;
	c->want = (size_t)nodes;
	s->nodes = calloc((size_t)nodes, sizeof(*s->nodes));
	return s->nodes ? 0 : TII_E_NOMEM;
}

static int show_node(tii_show_t *s, size_t want, const char *guid, const struct tii__kv *kv)
{
	long nports;
	if (s->nnodes == want)
		return TII_E_PROTO;
	struct tii_node_info *n = &s->nodes[s->nnodes];
	if (tii__parse_guid(guid, &n->guid) || PUT(n->type, kv, "type") || PUT(n->name, kv, "name") ||
	    PUT(n->desc, kv, "desc") || tii__kv_int(kv, "ports", 0, 255, &nports) ||
	    tii__kv_u64(kv, "sysimg", &n->sysimg_guid))
		return TII_E_PROTO;
	n->nports = (int)nports;
	n->ports = calloc((size_t)nports + 1, sizeof(*n->ports));
	if (!n->ports)
		return TII_E_NOMEM;
	s->nnodes++;
	return 0;
}

static int show_port(tii_show_t *s, const char *where, const struct tii__kv *kv)
{
	uint64_t node;
	int port;
	long lid, lmc;
	if (!s->nnodes || node_port(where, &node, &port))
		return TII_E_PROTO;
	struct tii_node_info *n = &s->nodes[s->nnodes - 1];
	/* a port of the node just listed, each once, within its port count */
	if (node != n->guid || port < 1 || port > n->nports || n->nlisted == (size_t)n->nports ||
	    (n->nlisted && n->ports[n->nlisted - 1].port >= port))
		return TII_E_PROTO;
	struct tii_port_info *p = &n->ports[n->nlisted];
	p->port = port;
	const char *peer = tii__kv_get(kv, "peer");
	if (tii__kv_u64(kv, "guid", &p->port_guid) || tii__kv_int(kv, "lid", 0, 0xFFFF, &lid) ||
	    tii__kv_int(kv, "lmc", 0, 7, &lmc) || PUT(p->state, kv, "state") || PUT(p->width, kv, "width") ||
	    PUT(p->speed, kv, "speed") || tii__kv_u64(kv, "rate_bps", &p->rate_bps) || !peer ||
	    PUT(p->peer_type, kv, "peer_type") || PUT(p->peer_state, kv, "peer_state") ||
	    PUT(p->peer_name, kv, "peer_name") || guid_or_none(kv, "peer_guid", &p->peer_guid))
		return TII_E_PROTO;
	p->has_peer = strcmp(peer, "-") != 0;
	if (p->has_peer && node_port(peer, &p->peer_node, &p->peer_port))
		return TII_E_PROTO;
	p->lid = (uint16_t)lid;
	p->lmc = (int)lmc;
	n->nlisted++;
	return 0;
}

/* "node 0xGUID k=v ..." or "port 0xNODE:P k=v ..." */
static int show_line(void *ctx, size_t i, char *line, size_t len)
{
	struct show_ctx *c = ctx;
	char *p = line, *what = tii__word(&p), *id = tii__word(&p);
	struct tii__kv kv;
	(void)i;
	(void)len;
	if (!what || !id || tii__kv_parse(p, &kv))
		return TII_E_PROTO;
	if (!strcmp(what, "node"))
		return show_node(c->s, c->want, id, &kv);
	if (!strcmp(what, "port"))
		return show_port(c->s, id, &kv);
	return TII_E_PROTO;
}

int tii_show(tii_t *t, const char *name, tii_show_t **out)
{
	if (!t || !out)
		return TII_E_INVAL;
	struct show_ctx c = { NULL, 0 };
	static const struct tii__handler h = { show_head, show_line, 0 };
	int rc = tii__req_begin(t, TII__SHOW);
	rc = rc ? rc : tii__req_host(t, name);
	rc = rc ? rc : tii__request(t, &h, &c);
	if (!rc && c.s->nnodes != c.want)
		rc = TII_E_PROTO;
	if (rc) {
		tii_show_free(c.s);
		return rc;
	}
	c.s->generation = tii_last_generation(t);
	*out = c.s;
	return 0;
}

/* ---- links -------------------------------------------------------------------- */

void tii_links_free(tii_links_t *l)
{
	if (!l)
		return;
	free(l->links);
	free(l);
}

struct links_ctx {
	tii_links_t *l;
	size_t cap, want;
};

static int links_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct links_ctx *c = ctx;
	uint64_t total, shown;
	tii_links_free(c->l);
	c->cap = 0;
	c->l = calloc(1, sizeof(*c->l));
	if (!c->l)
		return TII_E_NOMEM;
	if (tii__kv_u64(kv, "links", &total) || tii__kv_u64(kv, "shown", &shown) || shown > total ||
	    shown > TII_LINKS_MAX || shown != nlines)
		return TII_E_PROTO;
	c->l->total = (size_t)total;
	c->want = (size_t)shown;
	return 0;
}

/* "link 0xA:P 0xB:Q k=v ..." */
static int links_line(void *ctx, size_t i, char *line, size_t len)
{
	struct links_ctx *c = ctx;
	char *p = line, *w = tii__word(&p), *a = tii__word(&p), *b = tii__word(&p);
	struct tii__kv kv;
	(void)i;
	(void)len;
	if (!w || strcmp(w, "link") || !a || !b || tii__kv_parse(p, &kv) || c->l->n == c->want)
		return TII_E_PROTO;
	if (c->l->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct tii_link *nl = realloc(c->l->links, cap * sizeof(*nl));
		if (!nl)
			return TII_E_NOMEM;
		c->l->links = nl;
		c->cap = cap;
	}
	struct tii_link *k = &c->l->links[c->l->n];
	memset(k, 0, sizeof(*k));
	if (node_port(a, &k->node[0], &k->port[0]) || node_port(b, &k->node[1], &k->port[1]) ||
	    PUT(k->state, &kv, "state") || PUT(k->width, &kv, "width") || PUT(k->speed, &kv, "speed") ||
	    tii__kv_u64(&kv, "rate_bps", &k->rate_bps) || PUT(k->type[0], &kv, "a_type") ||
	    PUT(k->type[1], &kv, "b_type") || PUT(k->end_state[0], &kv, "a_state") ||
	    PUT(k->end_state[1], &kv, "b_state") || PUT(k->name[0], &kv, "a_name") || PUT(k->name[1], &kv, "b_name"))
		return TII_E_PROTO;
	c->l->n++;
	return 0;
}

/* A filter word: printable ASCII without spaces, as a name would be. */
static int filter_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > TII_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

int tii_get_links(tii_t *t, const char *name, const char *state, tii_links_t **out)
{
	static const char *const states[] = { "down", "init", "armed", "active", "notactive", "up" };
	if (!t || !out || (name && !filter_ok(name)))
		return TII_E_INVAL;
	int st_ok = !state;
	for (size_t i = 0; state && i < sizeof(states) / sizeof(*states); i++)
		st_ok |= !strcmp(state, states[i]);
	if (!st_ok)
		return TII_E_INVAL;
	char w[TII_NAME_MAX + 8];
	int rc = tii__req_begin(t, TII__LINKS);
	if (!rc && name) {
		int n = snprintf(w, sizeof(w), "name=%s", name);
		rc = tii__req_word(t, w, (size_t)n);
	}
	if (!rc && state) {
		int n = snprintf(w, sizeof(w), "state=%s", state);
		rc = tii__req_word(t, w, (size_t)n);
	}
	struct links_ctx c = { NULL, 0, 0 };
	static const struct tii__handler h = { links_head, links_line, 0 };
	rc = rc ? rc : tii__request(t, &h, &c);
	if (!rc && c.l->n != c.want)
		rc = TII_E_PROTO;
	if (rc) {
		tii_links_free(c.l);
		return rc;
	}
	c.l->generation = tii_last_generation(t);
	*out = c.l;
	return 0;
}
