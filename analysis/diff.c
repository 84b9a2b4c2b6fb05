/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * diff.c - see diff.h. The fabric is compared first: its changed LIDs are
 * what limits the route walks when no host list is given.
 */
#include "diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct dstate {
	const struct snap *a, *b;   /* from, to */
	struct diff *d;
	size_t cap;                 /* of d->changes */
	size_t pcap;                /* of d->pairs */
	uint8_t *lid_changed;       /* [nlid] */
	uint32_t nlid;              /* max(max_lid) + 1 */
	uint8_t *on_a, *on_b;       /* with a host list: nodes of from / to on their routes */
};

static int add(struct dstate *st, struct diff_change c)
{
	struct diff *d = st->d;
	if (util_grow((void **)&d->changes, &st->cap, d->nchanges + 1, sizeof(*d->changes)))
		return AN_E_NOMEM;
	d->changes[d->nchanges++] = c;
	return AN_OK;
}

/* ---- the fabric -------------------------------------------------------------- */

/* A link as seen from one port: its far end, when both ends are physically
 * up (the route engine's rule: a walk crosses a cable only then). */
static int link_of(const struct snap *s, uint32_t node, unsigned p, uint32_t *peer, unsigned *peer_port)
{
	const struct snap_port *pt = &s->ports[s->nodes[node].port0 + p];
	if (!pt->present || pt->peer_node == SNAP_NONE || !snap_state_linked(pt->state) ||
	    pt->peer_node >= s->nnodes || pt->peer_port > s->nodes[pt->peer_node].nports ||
	    !snap_state_linked(s->ports[s->nodes[pt->peer_node].port0 + pt->peer_port].state))
		return 0;
	*peer = pt->peer_node;
	*peer_port = pt->peer_port;
	return 1;
}

/* Each link once: from its lower (GUID, port) end. */
static int first_end(uint64_t g, unsigned p, uint64_t pg, unsigned pp)
{
	return g < pg || (g == pg && p < pp);
}

/* Links up in x that y does not have: down (x = from) or up (x = to). */
static int find_links(struct dstate *st, const struct snap *x, const struct snap *y, int down)
{
	for (uint32_t i = 0; i < x->nnodes; i++) {
		const struct snap_node *n = &x->nodes[i];
		int64_t j = snap_find_node(y, n->guid);
		for (unsigned p = 1; p <= n->nports; p++) {
			uint32_t peer, ypeer;
			unsigned pp, qp;
			if (!link_of(x, i, p, &peer, &pp) || !first_end(n->guid, p, x->nodes[peer].guid, pp))
				continue;
			if (j >= 0 && p <= y->nodes[j].nports && link_of(y, (uint32_t)j, p, &ypeer, &qp) &&
			    y->nodes[ypeer].guid == x->nodes[peer].guid && qp == pp)
				continue;
			struct diff_change c = { .kind = down ? DIFF_LINK_DOWN : DIFF_LINK_UP, .port = (uint8_t)p,
						 .peer_port = (uint8_t)pp, .from_node = down ? i : DIFF_NONE,
						 .to_node = down ? DIFF_NONE : i, .peer = peer };
			if (add(st, c))
				return AN_E_NOMEM;
			if (down)
				st->d->links_down++;
			else
				st->d->links_up++;
		}
	}
	return AN_OK;
}

/* Nodes of x that y does not have: gone (x = from) or new (x = to). */
static int find_nodes(struct dstate *st, const struct snap *x, const struct snap *y, int gone)
{
	for (uint32_t i = 0; i < x->nnodes; i++) {
		if (snap_find_node(y, x->nodes[i].guid) >= 0)
			continue;
		struct diff_change c = { .kind = gone ? DIFF_NODE_GONE : DIFF_NODE_NEW, .from_node = gone ? i : DIFF_NONE,
					 .to_node = gone ? DIFF_NONE : i, .peer = DIFF_NONE };
		if (add(st, c))
			return AN_E_NOMEM;
		if (gone)
			st->d->nodes_gone++;
		else
			st->d->nodes_new++;
	}
	return AN_OK;
}

static void mark_lid(struct dstate *st, uint32_t lid)
{
	if (lid < st->nlid)
		st->lid_changed[lid] = 1;
}

static void mark_port_lids(struct dstate *st, const struct snap_port *pt)
{
	uint32_t top = snap_port_top_lid(pt);
	for (uint32_t l = pt->lid; pt->lid && l <= top; l++)
		mark_lid(st, l);
}

/* Ports of node i (from) and j (to): LID, width and speed changes (state
 * is the links'). */
static int compare_ports(struct dstate *st, uint32_t i, uint32_t j)
{
	const struct snap *a = st->a, *b = st->b;
	const struct snap_node *x = &a->nodes[i], *y = &b->nodes[j];
	unsigned np = x->nports < y->nports ? x->nports : y->nports;
	for (unsigned p = 0; p <= np; p++) {
		const struct snap_port *u = &a->ports[x->port0 + p], *v = &b->ports[y->port0 + p];
		struct diff_change c = { .port = (uint8_t)p, .from_node = i, .to_node = j, .peer = DIFF_NONE };
		if (u->present != v->present || u->lid != v->lid || u->lmc != v->lmc) {
			c.kind = DIFF_PORT_LID;
			mark_port_lids(st, u);
			mark_port_lids(st, v);
		} else if (u->present && (u->width != v->width || u->speed != v->speed || u->espeed != v->espeed ||
					  (u->state != v->state && snap_state_linked(u->state) &&
					   snap_state_linked(v->state)))) {
			/* A state change that is not a link going down or up
			 * (INIT -> ACTIVE) is a port change, not a link one. */
			c.kind = DIFF_PORT_ATTR;
		} else {
			continue;
		}
		if (add(st, c))
			return AN_E_NOMEM;
		st->d->ports++;
	}
	return AN_OK;
}

/* The LFTs of switch i (from) and j (to), over the longer one. */
static int compare_lft(struct dstate *st, uint32_t i, uint32_t j)
{
	const struct snap *a = st->a, *b = st->b;
	const struct snap_node *x = &a->nodes[i], *y = &b->nodes[j];
	uint32_t len = x->lft_len > y->lft_len ? x->lft_len : y->lft_len, changed = 0, first = 0;
	for (uint32_t l = 0; l < len;) {
		/* A chunk both generations share is equal without reading it. */
		uint32_t rx, ry, end = (l | (SNAP_LFT_CHUNK - 1)) + 1;
		const uint8_t *px = snap_lft_span(x, l, &rx), *py = snap_lft_span(y, l, &ry);
		if (px && px == py && rx == ry) {
			l += rx;
			continue;
		}
		for (end = end < len ? end : len; l < end; l++) {
			if (snap_lft_get(x, l) == snap_lft_get(y, l))
				continue;
			if (!changed++)
				first = l;
			mark_lid(st, l);
		}
	}
	if (!changed)
		return AN_OK;
	struct diff_change c = { .kind = DIFF_LFT, .from_node = i, .to_node = j, .peer = DIFF_NONE,
				 .entries = changed, .first_lid = first };
	if (add(st, c))
		return AN_E_NOMEM;
	st->d->lft_entries += changed;
	st->d->lft_switches++;
	return AN_OK;
}

/* Nodes in both: their ports, and the LFTs of switches. */
static int find_common(struct dstate *st)
{
	const struct snap *a = st->a, *b = st->b;
	for (uint32_t i = 0; i < a->nnodes; i++) {
		int64_t j = snap_find_node(b, a->nodes[i].guid);
		if (j < 0)
			continue;
		int rc = compare_ports(st, i, (uint32_t)j);
		if (!rc && a->nodes[i].type == SNAP_NODE_SWITCH && b->nodes[j].type == SNAP_NODE_SWITCH)
			rc = compare_lft(st, i, (uint32_t)j);
		if (rc)
			return rc;
	}
	return AN_OK;
}

static int compare_fabric(struct dstate *st)
{
	int rc = find_nodes(st, st->a, st->b, 1);
	if (!rc)
		rc = find_nodes(st, st->b, st->a, 0);
	if (!rc)
		rc = find_links(st, st->a, st->b, 1);
	if (!rc)
		rc = find_links(st, st->b, st->a, 0);
	if (!rc)
		rc = find_common(st);
	return rc;
}

/* ---- the routes -------------------------------------------------------------- */

/* The route from host src to host dst in one generation, as (switch GUID,
 * out port) steps; returns the walk's code and sets *n. Marks the switches
 * it crossed in on[] (NULL: none). */
static int walk(const struct route_tab *rt, uint8_t *on, uint32_t src, uint32_t dst, uint64_t *g, uint8_t *out,
		uint32_t *n)
{
	struct route_hop hops[DIFF_HOPS_MAX];
	struct route_res res;
	uint32_t dep = route_host_ep(rt, dst);
	int rc = route_walk(rt, route_host_ep(rt, src), rt->eps[dep].lid, hops, DIFF_HOPS_MAX, &res);
	*n = res.hops < DIFF_HOPS_MAX ? res.hops : DIFF_HOPS_MAX;
	for (uint32_t k = 0; k < *n; k++) {
		g[k] = rt->snap->nodes[hops[k].node].guid;
		out[k] = hops[k].out;
		if (on)
			on[hops[k].node] = 1;
	}
	return rc;
}

static int route_changed(const struct dstate *st, const struct route_tab *ra, uint32_t sa, uint32_t da,
			 const struct route_tab *rb, uint32_t sb, uint32_t db)
{
	uint64_t ga[DIFF_HOPS_MAX], gb[DIFF_HOPS_MAX];
	uint8_t oa[DIFF_HOPS_MAX], ob[DIFF_HOPS_MAX];
	uint32_t na, nb;
	int ca = walk(ra, st->on_a, sa, da, ga, oa, &na), cb = walk(rb, st->on_b, sb, db, gb, ob, &nb);
	if (ca != cb || na != nb)
		return 1;
	for (uint32_t k = 0; k < na; k++)
		if (ga[k] != gb[k] || oa[k] != ob[k])
			return 1;
	return 0;
}

/* Hosts present in both generations: the listed ones, or all of to's. */
static int collect_hosts(struct diff *d, const struct route_tab *ra, const struct route_tab *rb,
			 const char *const *names, size_t nnames)
{
	size_t want = names ? nnames : rb->nhosts;
	d->hosts = calloc(want ? want : 1, sizeof(*d->hosts));
	if (names)
		d->missing = calloc(want ? want : 1, sizeof(*d->missing));
	if (!d->hosts || (names && !d->missing))
		return AN_E_NOMEM;
	for (size_t i = 0; i < want; i++) {
		const char *name = names ? names[i] : rb->hosts[i].name;
		uint32_t ia, ib;
		int in_a = route_find_host(ra, name, &ia) == AN_OK, in_b = route_find_host(rb, name, &ib) == AN_OK;
		if (in_a && in_b)
			d->hosts[d->nhosts++] = (struct diff_host){ name, ia, ib, 0 };
		else if (names)
			d->missing[d->nmissing++] = (struct diff_missing){
				name, !in_a && !in_b ? DIFF_IN_NEITHER : !in_a ? DIFF_ONLY_IN_TO : DIFF_ONLY_IN_FROM
			};
	}
	return AN_OK;
}

/* Without a host list only destinations whose LID has a changed LFT entry
 * or port can have another route. */
static int dest_changed(const struct dstate *st, const struct route_tab *ra, const struct route_tab *rb,
			const struct diff_host *h)
{
	uint32_t la = ra->eps[route_host_ep(ra, h->from)].lid, lb = rb->eps[route_host_ep(rb, h->to)].lid;
	return (la < st->nlid && st->lid_changed[la]) || (lb < st->nlid && st->lid_changed[lb]);
}

/* Every source to destination j. */
static int compare_dest(struct dstate *st, const struct route_tab *ra, const struct route_tab *rb, size_t j,
			int list, size_t max_pairs)
{
	struct diff *d = st->d;
	struct diff_host *hp = d->hosts;
	for (size_t i = 0; i < d->nhosts; i++) {
		if (i == j || !route_changed(st, ra, hp[i].from, hp[j].from, rb, hp[i].to, hp[j].to))
			continue;
		hp[i].changed++;
		hp[j].changed++;
		d->routes_changed++;
		if (!list || d->npairs >= max_pairs)
			continue;
		if (util_grow((void **)&d->pairs, &st->pcap, d->npairs + 1, sizeof(*d->pairs)))
			return AN_E_NOMEM;
		d->pairs[d->npairs++] = (struct diff_pair){ (uint32_t)i, (uint32_t)j };
	}
	return AN_OK;
}

static int compare_routes(struct dstate *st, const struct route_tab *ra, const struct route_tab *rb, int list,
			  uint64_t max_walks, size_t max_pairs, char err[AN_ERR_LEN])
{
	struct diff *d = st->d;
	size_t n = d->nhosts;
	for (size_t j = 0; j < n; j++)
		d->ndest += list || dest_changed(st, ra, rb, &d->hosts[j]);
	if ((uint64_t)d->ndest * n > max_walks) {
		snprintf(err, AN_ERR_LEN, "%zu destinations changed for %zu hosts: %llu routes to compare, more than %llu",
			 d->ndest, n, (unsigned long long)d->ndest * n, (unsigned long long)max_walks);
		return AN_E_RANGE;
	}
	for (size_t j = 0; j < n; j++) {
		if (!list && !dest_changed(st, ra, rb, &d->hosts[j]))
			continue;
		int rc = compare_dest(st, ra, rb, j, list, max_pairs);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < n; i++)
		d->hosts_changed += d->hosts[i].changed != 0;
	return AN_OK;
}

/* A listed host's own node (it may have lost every route) and the switch
 * its default port is cabled to. */
static void mark_host(const struct route_tab *rt, uint8_t *on, uint32_t host)
{
	const struct route_ep *ep = &rt->eps[route_host_ep(rt, host)];
	on[ep->node] = 1;
	if (ep->leaf != ROUTE_NONE && ep->leaf < rt->snap->nnodes)
		on[ep->leaf] = 1;
}

static int relevant(const struct dstate *st, const struct diff_change *c)
{
	if (c->from_node != DIFF_NONE && st->on_a[c->from_node])
		return 1;
	if (c->to_node != DIFF_NONE && st->on_b[c->to_node])
		return 1;
	if (c->kind == DIFF_LINK_DOWN || c->kind == DIFF_LINK_UP)
		return (c->kind == DIFF_LINK_DOWN ? st->on_a : st->on_b)[c->peer];
	return 0;
}

/* With a host list, the fabric's records are those of the nodes on the
 * listed hosts' routes in either generation (and the hosts themselves):
 * "did anything my job uses change?". The counts follow the records. */
static void keep_relevant(struct dstate *st, const struct route_tab *ra, const struct route_tab *rb)
{
	struct diff *d = st->d;
	for (size_t i = 0; i < d->nhosts; i++) {
		mark_host(ra, st->on_a, d->hosts[i].from);
		mark_host(rb, st->on_b, d->hosts[i].to);
	}
	size_t k = 0;
	d->links_down = d->links_up = d->nodes_gone = d->nodes_new = d->ports = 0;
	d->lft_switches = d->lft_entries = 0;
	for (size_t i = 0; i < d->nchanges; i++) {
		const struct diff_change *c = &d->changes[i];
		if (!relevant(st, c))
			continue;
		d->links_down += c->kind == DIFF_LINK_DOWN;
		d->links_up += c->kind == DIFF_LINK_UP;
		d->nodes_gone += c->kind == DIFF_NODE_GONE;
		d->nodes_new += c->kind == DIFF_NODE_NEW;
		d->ports += c->kind == DIFF_PORT_LID || c->kind == DIFF_PORT_ATTR;
		d->lft_switches += c->kind == DIFF_LFT;
		d->lft_entries += c->kind == DIFF_LFT ? c->entries : 0;
		d->changes[k++] = *c;
	}
	d->nchanges = k;
}

int diff_build(const struct route_tab *from, const struct route_tab *to, const char *const *names, size_t nnames,
	       uint64_t max_walks, size_t max_pairs, struct diff **out, char err[AN_ERR_LEN])
{
	struct dstate st = { .a = from->snap, .b = to->snap };
	st.nlid = (st.a->max_lid > st.b->max_lid ? st.a->max_lid : st.b->max_lid) + 1;
	st.lid_changed = calloc(st.nlid, 1);
	st.d = calloc(1, sizeof(*st.d));
	if (names) {
		st.on_a = calloc(st.a->nnodes + 1, 1);
		st.on_b = calloc(st.b->nnodes + 1, 1);
	}
	int rc = st.lid_changed && st.d && (!names || (st.on_a && st.on_b)) ? AN_OK : AN_E_NOMEM;
	if (!rc)
		rc = compare_fabric(&st);
	if (!rc)
		rc = collect_hosts(st.d, from, to, names, nnames);
	if (!rc)
		rc = compare_routes(&st, from, to, names != NULL, max_walks, max_pairs, err);
	if (!rc && names)
		keep_relevant(&st, from, to);
	free(st.lid_changed);
	free(st.on_a);
	free(st.on_b);
	if (rc) {
		if (rc == AN_E_NOMEM)
			snprintf(err, AN_ERR_LEN, "%s", an_strerror(rc));
		diff_free(st.d);
		return rc;
	}
	*out = st.d;
	return AN_OK;
}

void diff_free(struct diff *d)
{
	if (!d)
		return;
	free(d->changes);
	free(d->missing);
	free(d->hosts);
	free(d->pairs);
	free(d);
}
