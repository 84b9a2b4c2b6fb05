/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * route.c - the route engine: name index, LFT walks and the hop-count DP.
 * Semantics are specified in route.h; this file only adds the reasons.
 */
#include "route.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- names ----------------------------------------------------------------- */

static int name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.';
}

static int guid_shaped(const char *t, size_t n)
{
	if (n < 2 || t[0] != '0' || (t[1] != 'x' && t[1] != 'X'))
		return 0;
	for (size_t i = 2; i < n; i++)
		if (util_hexval((unsigned char)t[i]) < 0)
			return 0;
	return 1;
}

/* The token-th (0-based) whitespace-separated token of s, if it is a valid
 * name; otherwise out is left empty and 0 is returned. */
static int name_token(const char *s, int token, char out[ROUTE_NAME_MAX + 1])
{
	out[0] = '\0';
	const unsigned char *p = (const unsigned char *)s;
	for (int t = 0;; t++) {
		while (*p && util_is_space((unsigned char)*p))
			p++;
		if (!*p)
			return 0;
		const unsigned char *b = p;
		while (*p && !util_is_space((unsigned char)*p))
			p++;
		if (t < token)
			continue;
		size_t n = (size_t)(p - b);
		if (n > ROUTE_NAME_MAX || guid_shaped((const char *)b, n))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!name_char(b[i]))
				return 0;
		memcpy(out, b, n);
		out[n] = '\0';
		return 1;
	}
}

/* strcmp, except that runs of digits compare by value, so that rails sort
 * the way people number them: HCA-2 before HCA-10, mlx5_2 before mlx5_10. */
static int natcmp(const char *a, const char *b)
{
	for (;;) {
		unsigned char x = (unsigned char)*a, y = (unsigned char)*b;
		if (x >= '0' && x <= '9' && y >= '0' && y <= '9') {
			const char *ea = a, *eb = b;
			while (*a == '0')
				a++;
			while (*b == '0')
				b++;
			const char *da = a, *db = b;
			while (*a >= '0' && *a <= '9')
				a++;
			while (*b >= '0' && *b <= '9')
				b++;
			if (a - da != b - db)
				return a - da < b - db ? -1 : 1;
			int c = strncmp(da, db, (size_t)(a - da));
			if (c)
				return c;
			/* equal values: fewer leading zeros first, for a total order */
			if (a - ea != b - eb)
				return a - ea < b - eb ? -1 : 1;
			continue;
		}
		if (x != y)
			return x < y ? -1 : 1;
		if (!x)
			return 0;
		a++;
		b++;
	}
}

struct rail_key {
	const char *host;
	const struct route_ep *ep;
	uint64_t node_guid;
	uint32_t idx;
};

static int cmp_rail(const void *a, const void *b)
{
	const struct rail_key *x = a, *y = b;
	int c = strcmp(x->host, y->host);
	if (c)
		return c;
	/* A rail whose label fell back to its GUID never becomes the default
	 * ahead of a properly labelled one. */
	int fx = guid_shaped(x->ep->hca, strlen(x->ep->hca)), fy = guid_shaped(y->ep->hca, strlen(y->ep->hca));
	if (fx != fy)
		return fx - fy;
	c = natcmp(x->ep->hca, y->ep->hca);
	if (c)
		return c;
	if (x->node_guid != y->node_guid)
		return x->node_guid < y->node_guid ? -1 : 1;
	return x->ep->port < y->ep->port ? -1 : x->ep->port > y->ep->port;
}

static int cmp_guid_ep(const void *a, const void *b, void *arg)
{
	const struct route_ep *eps = arg;
	uint64_t x = eps[*(const uint32_t *)a].guid, y = eps[*(const uint32_t *)b].guid;
	return x < y ? -1 : x > y;
}

/* ---- build ------------------------------------------------------------------ */

void route_free(struct route_tab *rt)
{
	if (!rt)
		return;
	free(rt->swlft);
	if (rt->pt_refs && atomic_fetch_sub(rt->pt_refs, 1) == 1) {
		free(rt->pt_refs);
		free(rt->pt);
	}
	if (rt->shared && atomic_fetch_sub(rt->shared, 1) != 1) {
		free(rt);
		return;
	}
	free(rt->shared);
	free(rt->eps);
	free(rt->hosts);
	free(rt->rails);
	free(rt->lid_ep);
	free(rt->guid_ep);
	free(rt->sw_node);
	free(rt->sw_of_node);
	free(rt->pt_off);
	free(rt->pt_base);
	free(rt);
}

static int port_up(const struct snap *s, uint32_t node, unsigned port)
{
	return snap_state_linked(s->ports[s->nodes[node].port0 + port].state);
}

/* Names a CA from the node-name-map or its description (the map wins, as
 * in infiniband-diags): host and HCA label, each falling back to the node
 * GUID when the text gives no valid name. */
static void ca_names(const struct snap_node *n, const struct route_namemap *map, char host[ROUTE_NAME_MAX + 1],
		     char label[ROUTE_NAME_MAX + 1])
{
	const char *src = route_namemap_get(map, n->guid);
	if (!src)
		src = n->desc;
	if (!name_token(src, 0, host))
		snprintf(host, ROUTE_NAME_MAX + 1, "0x%016llx", (unsigned long long)n->guid);
	if (!name_token(src, 1, label))
		snprintf(label, ROUTE_NAME_MAX + 1, "0x%016llx", (unsigned long long)n->guid);
}

/* Phase 1: end ports in node then port order (route_resolve() relies on
 * it), the switch index, and each CA port's hostname. Returns the highest
 * LID owned. */
static uint32_t build_eps(struct route_tab *rt, const struct route_namemap *map, uint32_t *ep_of_slot,
			  char (*hostname)[ROUTE_NAME_MAX + 1])
{
	const struct snap *s = rt->snap;
	uint32_t max_lid = 0;
	for (uint32_t i = 0; i < s->nports; i++)
		ep_of_slot[i] = ROUTE_NONE;
	for (uint32_t i = 0, sw = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		rt->sw_of_node[i] = ROUTE_NONE;
		if (n->type == SNAP_NODE_SWITCH) {
			rt->sw_of_node[i] = sw;
			rt->sw_node[sw++] = i;
		}
		char label[ROUTE_NAME_MAX + 1], host[ROUTE_NAME_MAX + 1];
		if (n->type != SNAP_NODE_SWITCH)
			ca_names(n, map, host, label);
		for (unsigned p = 0; p <= n->nports; p++) {
			const struct snap_port *pt = &s->ports[n->port0 + p];
			if (!pt->present || !snap_is_endport(n->type, p))
				continue;
			struct route_ep *e = &rt->eps[rt->neps];
			ep_of_slot[n->port0 + p] = rt->neps++;
			e->guid = pt->guid;
			e->node = i;
			e->port = (uint8_t)p;
			e->lid = pt->lid;
			e->lmc = pt->lmc & 7;
			e->host = ROUTE_NONE;
			e->leaf = ROUTE_NONE;
			e->up = AN_OK;
			if (n->type == SNAP_NODE_SWITCH) {
				e->leaf = i;
			} else {
				if (pt->peer_node == SNAP_NONE || pt->peer_node >= s->nnodes)
					e->up = AN_E_SRC_NOLINK;
				else if (!snap_state_linked(pt->state) || !port_up(s, pt->peer_node, pt->peer_port))
					e->up = AN_E_DOWN;
				if (pt->peer_node < s->nnodes && s->nodes[pt->peer_node].type == SNAP_NODE_SWITCH)
					e->leaf = pt->peer_node;
				memcpy(e->hca, label, sizeof(label));
				if (n->type == SNAP_NODE_CA)
					memcpy(hostname[rt->neps - 1], host, sizeof(host));
			}
			uint32_t top = snap_port_top_lid(pt);
			if (top > max_lid)
				max_lid = top;
		}
	}
	return max_lid > SNAP_MAX_LID ? SNAP_MAX_LID : max_lid;
}

/* Phase 2: one array indexed by LID, the whole LMC range pointing at its
 * owner, so that resolving a destination is one load. */
static int build_lid_index(struct route_tab *rt, uint32_t max_lid)
{
	rt->max_lid = max_lid;
	rt->lid_ep = malloc(((size_t)max_lid + 1) * sizeof(*rt->lid_ep));
	if (!rt->lid_ep)
		return AN_E_NOMEM;
	for (uint32_t l = 0; l <= max_lid; l++)
		rt->lid_ep[l] = ROUTE_NONE;
	for (uint32_t e = 0; e < rt->neps; e++) {
		const struct route_ep *ep = &rt->eps[e];
		for (uint32_t l = ep->lid; ep->lid && l < (uint32_t)ep->lid + (1u << ep->lmc) && l <= max_lid; l++)
			rt->lid_ep[l] = e;
	}
	return AN_OK;
}

/* The code of switch port pt (p >= 1): far_ep is the end port at its far
 * end when that is not a switch, else ROUTE_NONE. */
static uint32_t link_code(const struct route_tab *rt, const struct snap_port *pt, uint32_t far_ep)
{
	const struct snap *s = rt->snap;
	if (!pt->present || pt->peer_node >= s->nnodes)
		return ROUTE_PT_NOLINK;
	if (!snap_state_linked(pt->state) || !port_up(s, pt->peer_node, pt->peer_port))
		return ROUTE_PT_DOWN;
	if (s->nodes[pt->peer_node].type == SNAP_NODE_SWITCH)
		return rt->sw_of_node[pt->peer_node];
	return far_ep != ROUTE_NONE ? ROUTE_PT_EP + far_ep : ROUTE_PT_NOLINK;
}

/* Phase 3: port codes, the per-step decision of a walk without chasing
 * pointers through nodes[] and ports[]. */
static void build_port_codes(struct route_tab *rt, const uint32_t *ep_of_slot)
{
	const struct snap *s = rt->snap;
	for (uint32_t sw = 0, off = 0; sw < rt->nsw; sw++) {
		const struct snap_node *n = &s->nodes[rt->sw_node[sw]];
		rt->pt_off[sw] = off;
		for (unsigned p = 0; p <= n->nports; p++) {
			const struct snap_port *pt = &s->ports[n->port0 + p];
			uint32_t c = ROUTE_PT_NOLINK;
			if (p == 0) {
				if (ep_of_slot[n->port0] != ROUTE_NONE)
					c = ROUTE_PT_EP + ep_of_slot[n->port0];
			} else {
				uint32_t far = pt->present && pt->peer_node < s->nnodes ?
					       ep_of_slot[s->nodes[pt->peer_node].port0 + pt->peer_port] : ROUTE_NONE;
				c = link_code(rt, pt, far);
			}
			rt->pt[off++] = c;
		}
	}
}

/* Phase 4: the port GUID index; qsort_r passes the table to the comparator. */
static int build_guid_index(struct route_tab *rt)
{
	rt->guid_ep = malloc(((size_t)rt->neps + 1) * sizeof(*rt->guid_ep));
	if (!rt->guid_ep)
		return AN_E_NOMEM;
	for (uint32_t e = 0; e < rt->neps; e++)
		if (rt->eps[e].guid)
			rt->guid_ep[rt->nguid++] = e;
	qsort_r(rt->guid_ep, rt->nguid, sizeof(*rt->guid_ep), cmp_guid_ep, rt->eps);
	return AN_OK;
}

/* Phase 5: hosts. Every CA port, sorted by (hostname, rail order); runs of
 * one hostname become one host. */
static int build_hosts(struct route_tab *rt, char (*hostname)[ROUTE_NAME_MAX + 1])
{
	const struct snap *s = rt->snap;
	uint32_t nca = 0;
	for (uint32_t e = 0; e < rt->neps; e++)
		nca += s->nodes[rt->eps[e].node].type == SNAP_NODE_CA;
	struct rail_key *keys = malloc(((size_t)nca + 1) * sizeof(*keys));
	rt->rails = malloc(((size_t)nca + 1) * sizeof(*rt->rails));
	rt->hosts = malloc(((size_t)nca + 1) * sizeof(*rt->hosts));
	if (!keys || !rt->rails || !rt->hosts) {
		free(keys);
		return AN_E_NOMEM;
	}
	for (uint32_t e = 0, k = 0; e < rt->neps; e++)
		if (s->nodes[rt->eps[e].node].type == SNAP_NODE_CA)
			keys[k++] = (struct rail_key){ hostname[e], &rt->eps[e], s->nodes[rt->eps[e].node].guid, e };
	qsort(keys, nca, sizeof(*keys), cmp_rail);
	for (uint32_t k = 0; k < nca; k++) {
		if (!k || strcmp(keys[k].host, keys[k - 1].host)) {
			struct route_host *h = &rt->hosts[rt->nhosts++];
			memcpy(h->name, keys[k].host, sizeof(h->name));
			h->rail0 = k;
			h->nrails = 0;
		}
		rt->hosts[rt->nhosts - 1].nrails++;
		rt->rails[k] = keys[k].idx;
		rt->eps[keys[k].idx].host = rt->nhosts - 1;
	}
	free(keys);
	return AN_OK;
}

/* rt->swlft for rt->snap, rt->sw_node built. */
static int swlft_new(struct route_tab *rt)
{
	rt->swlft = malloc(((size_t)rt->nsw + 1) * sizeof(*rt->swlft));
	if (!rt->swlft)
		return AN_E_NOMEM;
	for (uint32_t x = 0; x < rt->nsw; x++) {
		const struct snap_node *n = &rt->snap->nodes[rt->sw_node[x]];
		rt->swlft[x] = (struct route_swlft){ n->lft, n->lft_len };
	}
	return AN_OK;
}

int route_build(const struct snap *s, const struct route_namemap *map, struct route_tab **out)
{
	struct route_tab *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return AN_E_NOMEM;
	rt->snap = s;
	uint32_t neps = 0, npt = 0;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		for (unsigned p = 0; p <= n->nports; p++)
			neps += s->ports[n->port0 + p].present && snap_is_endport(n->type, p);
		if (n->type == SNAP_NODE_SWITCH) {
			rt->nsw++;
			npt += n->nports + 1u;
		}
	}
	/* Scratch for the build only: which end port each port slot is, and
	 * each end port's hostname until the hosts are sorted. */
	uint32_t *ep_of_slot = malloc(((size_t)s->nports + 1) * sizeof(*ep_of_slot));
	char (*hostname)[ROUTE_NAME_MAX + 1] = calloc(neps ? neps : 1, sizeof(*hostname));
	rt->eps = calloc(neps ? neps : 1, sizeof(*rt->eps));
	rt->sw_node = malloc(((size_t)rt->nsw + 1) * sizeof(*rt->sw_node));
	rt->sw_of_node = malloc(((size_t)s->nnodes + 1) * sizeof(*rt->sw_of_node));
	rt->pt_off = malloc(((size_t)rt->nsw + 1) * sizeof(*rt->pt_off));
	rt->pt = rt->pt_base = malloc(((size_t)npt + 1) * sizeof(*rt->pt));
	rt->shared = malloc(sizeof(*rt->shared));
	if (rt->shared)
		atomic_init(rt->shared, 1);
	int rc = AN_E_NOMEM;
	if (ep_of_slot && hostname && rt->eps && rt->sw_node && rt->sw_of_node && rt->pt_off && rt->pt &&
	    rt->shared) {
		rc = build_lid_index(rt, build_eps(rt, map, ep_of_slot, hostname));
		if (!rc) {
			build_port_codes(rt, ep_of_slot);
			rc = build_guid_index(rt);
		}
		if (!rc)
			rc = build_hosts(rt, hostname);
		if (!rc)
			rc = swlft_new(rt);
	}
	free(hostname);
	free(ep_of_slot);
	if (rc) {
		route_free(rt);
		return rc;
	}
	*out = rt;
	return AN_OK;
}

int route_repoint(const struct route_tab *rt, const struct snap *s, struct route_tab **out)
{
	struct route_tab *x = malloc(sizeof(*x));
	if (!x)
		return AN_E_NOMEM;
	/* The tables are read-only once built: sharing them needs only the
	 * count route_build() made. */
	*x = *rt;
	x->snap = s;
	if (swlft_new(x)) {
		free(x);
		return AN_E_NOMEM;
	}
	atomic_fetch_add(rt->shared, 1);
	if (rt->pt_refs)
		atomic_fetch_add(rt->pt_refs, 1);
	*out = x;
	return AN_OK;
}

/* Marks in swc[nsw] the switches with a port whose record differs between
 * a and s, and the switches at the far end of each (before and after):
 * their codes read it. AN_E_NOTAPPLIC when a difference is not a
 * switch-to-switch link's (or a node, its description included,
 * differs). */
static int changed_links(const struct route_tab *rt, const struct snap *a, const struct snap *s, uint8_t *swc)
{
	if (a->nnodes != s->nnodes || a->nports != s->nports)
		return AN_E_NOTAPPLIC;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *na = &a->nodes[i], *n = &s->nodes[i];
		if (na->type != n->type || na->nports != n->nports || na->port0 != n->port0 || na->guid != n->guid ||
		    strcmp(na->desc, n->desc))
			return AN_E_NOTAPPLIC;
	}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		for (unsigned p = 0; p <= n->nports; p++) {
			const struct snap_port *x = &a->ports[n->port0 + p], *y = &s->ports[n->port0 + p];
			if (snap_port_equal(x, y))
				continue;
			if (n->type != SNAP_NODE_SWITCH || p == 0)
				return AN_E_NOTAPPLIC;
			swc[rt->sw_of_node[i]] = 1;
			const struct snap_port *end[2] = { x, y };
			for (int k = 0; k < 2; k++) {
				if (!end[k]->present || end[k]->peer_node >= s->nnodes)
					continue;
				uint32_t far = rt->sw_of_node[end[k]->peer_node];
				if (s->nodes[end[k]->peer_node].type != SNAP_NODE_SWITCH || far == ROUTE_NONE)
					return AN_E_NOTAPPLIC;
				swc[far] = 1;
			}
		}
	}
	return AN_OK;
}

int route_relink(const struct route_tab *rt, const struct snap *s, struct route_tab **out)
{
	uint8_t *swc = calloc((size_t)rt->nsw + 1, 1);
	if (!swc)
		return AN_E_NOMEM;
	int rc = changed_links(rt, rt->snap, s, swc);
	if (rc) {
		free(swc);
		return rc;
	}
	size_t npt = rt->nsw ? rt->pt_off[rt->nsw - 1] + s->nodes[rt->sw_node[rt->nsw - 1]].nports + 1u : 0;
	struct route_tab *x = NULL;
	uint32_t *pt = malloc((npt + 1) * sizeof(*pt));
	atomic_uint *refs = malloc(sizeof(*refs));
	if (!pt || !refs || route_repoint(rt, s, &x)) {
		free(pt);
		free(refs);
		free(swc);
		return AN_E_NOMEM;
	}
	/* x holds a count of rt's pt if rt had its own: x's is another */
	if (x->pt_refs)
		atomic_fetch_sub(x->pt_refs, 1);
	memcpy(pt, rt->pt, npt * sizeof(*pt));
	x->pt = pt;
	x->pt_refs = refs;
	atomic_init(refs, 1);
	for (uint32_t sw = 0; sw < rt->nsw; sw++) {
		const struct snap_node *n = &s->nodes[rt->sw_node[sw]];
		for (unsigned p = 1; swc[sw] && p <= n->nports; p++) {
			const struct snap_port *sp = &s->ports[n->port0 + p];
			uint32_t *c = &pt[rt->pt_off[sw] + p];
			/* a link to an end port keeps its code: changed_links
			 * saw neither end of it change */
			if (*c < ROUTE_PT_EP || *c >= ROUTE_PT_DOWN)
				*c = link_code(x, sp, ROUTE_NONE);
		}
	}
	free(swc);
	*out = x;
	return AN_OK;
}

/* ---- resolving -------------------------------------------------------------- */

int route_find_host(const struct route_tab *rt, const char *name, uint32_t *host)
{
	if (!name || strnlen(name, ROUTE_NAME_MAX + 1) > ROUTE_NAME_MAX)
		return AN_E_INVAL;
	uint32_t lo = 0, hi = rt->nhosts;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (strcmp(rt->hosts[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= rt->nhosts || strcmp(rt->hosts[lo].name, name))
		return AN_E_NOTFOUND;
	*host = lo;
	return AN_OK;
}

/* First end port of node (eps[] is in node order), ROUTE_NONE if none. */
static uint32_t first_ep_of_node(const struct route_tab *rt, uint32_t node)
{
	uint32_t lo = 0, hi = rt->neps;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (rt->eps[mid].node < node)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rt->neps && rt->eps[lo].node == node ? lo : ROUTE_NONE;
}

int route_resolve(const struct route_tab *rt, const char *name, uint32_t *ep, uint16_t *dlid)
{
	if (!name)
		return AN_E_INVAL;
	size_t len = strnlen(name, ROUTE_QUERY_MAX + 1);
	if (len > ROUTE_QUERY_MAX || len == 0)
		return AN_E_INVAL;
	const char *end = name + len;
	uint32_t e = ROUTE_NONE;
	uint16_t l = 0;

	if (len > 4 && !memcmp(name, "lid:", 4)) {
		uint64_t v = 0;
		const char *p = name + 4;
		if (util_parse_guid(p, end, &v)) {   /* not hex: decimal */
			v = 0;
			for (; p < end; p++) {
				if (*p < '0' || *p > '9' || v > SNAP_MAX_LID)
					return AN_E_NOTFOUND;
				v = v * 10 + (uint64_t)(*p - '0');
			}
		}
		if (v == 0 || v > rt->max_lid || rt->lid_ep[v] == ROUTE_NONE)
			return AN_E_NOTFOUND;
		e = rt->lid_ep[v];
		l = (uint16_t)v;
	} else if (name[0] == '0' && (name[1] == 'x' || name[1] == 'X')) {
		/* No host can be GUID-shaped (route.h), so this never hides one. */
		uint64_t g;
		if (util_parse_guid(name, end, &g))
			return AN_E_NOTFOUND;
		uint32_t lo = 0, hi = rt->nguid;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (rt->eps[rt->guid_ep[mid]].guid < g)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < rt->nguid && rt->eps[rt->guid_ep[lo]].guid == g) {
			e = rt->guid_ep[lo];
		} else {
			int64_t n = snap_find_node(rt->snap, g);
			if (n < 0 || (e = first_ep_of_node(rt, (uint32_t)n)) == ROUTE_NONE)
				return AN_E_NOTFOUND;
		}
		l = rt->eps[e].lid;
	} else {
		const char *slash = memchr(name, '/', len);
		char host[ROUTE_NAME_MAX + 1];
		size_t hl = slash ? (size_t)(slash - name) : len;
		if (hl > ROUTE_NAME_MAX)
			return AN_E_NOTFOUND;
		memcpy(host, name, hl);
		host[hl] = '\0';
		uint32_t h;
		int rc = route_find_host(rt, host, &h);
		if (rc)
			return rc == AN_E_INVAL ? AN_E_NOTFOUND : rc;
		const struct route_host *hh = &rt->hosts[h];
		if (!slash) {
			e = rt->rails[hh->rail0];
		} else {
			for (uint32_t r = 0; r < hh->nrails && e == ROUTE_NONE; r++)
				if (!strcmp(rt->eps[rt->rails[hh->rail0 + r]].hca, slash + 1))
					e = rt->rails[hh->rail0 + r];
			if (e == ROUTE_NONE)
				return AN_E_NOTFOUND;
		}
		l = rt->eps[e].lid;
	}
	*ep = e;
	if (dlid)
		*dlid = l;
	return AN_OK;
}

/* ---- walking ------------------------------------------------------------------ */

int route_walk(const struct route_tab *rt, uint32_t src, uint16_t dlid, struct route_hop *hops,
	       size_t cap, struct route_res *res)
{
	struct route_res dummy;
	if (!res)
		res = &dummy;
	res->hops = 0;
	res->fail_node = ROUTE_NONE;
	res->fail_port = 0;
	if (src >= rt->neps)
		return AN_E_INVAL;
	const struct snap *s = rt->snap;
	const struct route_ep *ep = &rt->eps[src];
	uint32_t dst = dlid && dlid <= rt->max_lid ? rt->lid_ep[dlid] : ROUTE_NONE;
	if (dst == ROUTE_NONE)
		return AN_E_NOLID;

	uint32_t sw;
	uint8_t in;
	if (s->nodes[ep->node].type == SNAP_NODE_SWITCH) {
		sw = rt->sw_of_node[ep->node];
		in = 0;
	} else {
		/* A port to its own LID: the HCA loops the packet back (and ranks
		 * of one host use memory), so no cable and no switch carry it,
		 * whatever the state of the cable. */
		if (dst == src)
			return AN_OK;
		if (ep->up != AN_OK) {
			res->fail_node = ep->node;
			res->fail_port = ep->port;
			return ep->up;
		}
		const struct snap_port *pt = &s->ports[s->nodes[ep->node].port0 + ep->port];
		if (ep->leaf == ROUTE_NONE) {
			/* Cabled to a CA or router: delivered at once, or nowhere. */
			const struct route_ep *d = &rt->eps[dst];
			if (d->node == pt->peer_node && d->port == pt->peer_port)
				return AN_OK;
			res->fail_node = pt->peer_node;
			res->fail_port = pt->peer_port;
			return AN_E_WRONGDST;
		}
		sw = rt->sw_of_node[ep->leaf];
		in = pt->peer_port;
	}
	for (;;) {
		uint32_t node = rt->sw_node[sw];
		if (res->hops == rt->nsw) {
			/* nsw switches traversed and one more ahead: a repeat */
			res->fail_node = node;
			return AN_E_LOOP;
		}
		uint8_t port;
		uint32_t next = 0;
		int r = route_step(rt, sw, dlid, dst, &port, &next);
		if (res->hops < cap)
			hops[res->hops] = (struct route_hop){ node, in, port };
		res->hops++;
		if (r == ROUTE_STEP_DONE)
			return AN_OK;
		if (r != ROUTE_STEP_NEXT) {
			res->fail_node = node;
			res->fail_port = port == SNAP_LFT_NONE ? 0 : port;
			return r;
		}
		in = s->ports[s->nodes[node].port0 + port].peer_port;
		sw = next;
	}
}

int route_hops(const struct route_tab *rt, uint32_t src, uint16_t dlid)
{
	struct route_res res;
	int r = route_walk(rt, src, dlid, NULL, 0, &res);
	if (r)
		return r;
	return res.hops > (uint32_t)INT32_MAX ? AN_E_RANGE : (int)res.hops;
}

/* ---- hop-count DP ---------------------------------------------------------------- */

/* Destinations per block: one 64-byte cache line of each LFT serves the
 * whole block when their LIDs are dense, which they are under OpenSM. */
#define DP_BLOCK 64
#define DP_PENDING 0xFFFEu
#define DP_AHEAD 16 /* LFT rows prefetched ahead of the one copied */

struct dp_ws {
	const uint8_t *np; /* [nsw] the switch's port count, shared: nodes[] is 100 bytes a node */
	uint8_t *nxt;    /* [nsw][DP_BLOCK] LFT out port per switch and block slot */
	uint16_t *val;   /* [nsw] hops from the switch, or DP_PENDING / ROUTE_HOPS_INF */
	uint32_t *stamp; /* [nsw] which destination val[] belongs to (saves a memset per LID) */
	uint32_t *stack; /* [nsw] the chain being resolved */
};

static int cmp_by_lid(const void *a, const void *b, void *arg)
{
	const uint32_t *lids = arg;
	uint32_t x = lids[*(const uint32_t *)a], y = lids[*(const uint32_t *)b];
	return x < y ? -1 : x > y;
}

/* Hops from switch x to the destination of block slot k; memoised in ws.
 * Iterative: a recursive chase could be as deep as the fabric is wide. */
static uint16_t dp_eval(const struct route_tab *rt, struct dp_ws *ws, uint32_t x, unsigned k,
			uint32_t dst, uint32_t cur, int *overflow)
{
	uint32_t top = 0, r;
	if (ws->stamp[x] == cur && ws->val[x] != DP_PENDING)
		return ws->val[x];
	for (;;) {
		if (ws->stamp[x] == cur) {
			/* a pending switch is on the chain being resolved: a loop */
			r = ws->val[x] == DP_PENDING ? ROUTE_HOPS_INF : ws->val[x];
			break;
		}
		ws->stamp[x] = cur;
		ws->val[x] = DP_PENDING;
		ws->stack[top++] = x;
		uint32_t next = 0;
		int st = route_step_code(rt->pt + rt->pt_off[x], ws->np[x], ws->nxt[(size_t)x * DP_BLOCK + k], dst, &next);
		if (st == ROUTE_STEP_NEXT) {
			x = next;
			continue;
		}
		r = st == ROUTE_STEP_DONE ? 0 : ROUTE_HOPS_INF;
		break;
	}
	while (top) {
		x = ws->stack[--top];
		if (r != ROUTE_HOPS_INF) {
			if (r + 1 >= DP_PENDING) {
				*overflow = 1;
				r = ROUTE_HOPS_INF;
			} else {
				r++;
			}
		}
		ws->val[x] = (uint16_t)r;
	}
	return ws->val[ws->stack[0]];
}

/* Per switch, dense: its port count, so that the DP's inner loops never
 * touch the 100-byte node records (a cache miss each at k=56); where its
 * table is, rt->swlft says. NULL when out of memory. */
static uint8_t *dp_ports_new(const struct route_tab *rt)
{
	uint8_t *np = malloc((size_t)rt->nsw + 1);
	for (uint32_t x = 0; np && x < rt->nsw; x++)
		np[x] = rt->snap->nodes[rt->sw_node[x]].nports;
	return np;
}

int route_switch_hops(const struct route_tab *rt, const uint32_t *src_nodes, size_t nsrc,
		      const uint32_t *dst, size_t ndst, uint16_t *out)
{
	const struct snap *s = rt->snap;
	uint32_t *src = malloc((nsrc + 1) * sizeof(*src));
	uint32_t *order = malloc((ndst + 1) * sizeof(*order));
	uint32_t *lids = malloc((ndst + 1) * sizeof(*lids));
	uint8_t *np = dp_ports_new(rt);
	int rc = AN_OK;
	if (!src || !order || !lids || !np) {
		rc = AN_E_NOMEM;
		goto out;
	}
	for (size_t j = 0; j < nsrc; j++) {
		if (src_nodes[j] >= s->nnodes || rt->sw_of_node[src_nodes[j]] == ROUTE_NONE) {
			rc = AN_E_INVAL;
			goto out;
		}
		src[j] = rt->sw_of_node[src_nodes[j]];
	}
	for (size_t i = 0; i < ndst; i++) {
		if (dst[i] >= rt->neps) {
			rc = AN_E_INVAL;
			goto out;
		}
		order[i] = (uint32_t)i;
		lids[i] = rt->eps[dst[i]].lid;
	}
	/* LID order makes each block's LFT bytes adjacent. */
	qsort_r(order, ndst, sizeof(*order), cmp_by_lid, (void *)lids);

	const size_t nblocks = (ndst + DP_BLOCK - 1) / DP_BLOCK;
	const uint32_t nsw = rt->nsw;
	int failed = 0, overflow = 0;
#pragma omp parallel
	{
		struct dp_ws ws;
		ws.np = np;
		ws.nxt = malloc((size_t)(nsw ? nsw : 1) * DP_BLOCK);
		ws.val = malloc((size_t)(nsw ? nsw : 1) * sizeof(*ws.val));
		ws.stamp = calloc(nsw ? nsw : 1, sizeof(*ws.stamp));
		ws.stack = malloc((size_t)(nsw ? nsw : 1) * sizeof(*ws.stack));
		int ok = ws.nxt && ws.val && ws.stamp && ws.stack;
		int my_over = 0;
		if (!ok) {
#pragma omp atomic write
			failed = 1;
		}
		uint32_t cur = 0;
#pragma omp for schedule(dynamic, 1)
		for (size_t b = 0; b < nblocks; b++) {
			if (!ok)
				continue;
			size_t first = b * DP_BLOCK, cnt = ndst - first < DP_BLOCK ? ndst - first : DP_BLOCK;
			/* Consecutive LIDs, as OpenSM hands them out: each row is one
			 * copy of adjacent LFT bytes, not cnt lookups. */
			uint32_t l0 = lids[order[first]];
			int dense = l0 != 0;
			for (size_t k = 1; k < cnt && dense; k++)
				dense = lids[order[first + k]] == l0 + k;
			for (uint32_t x = 0; x < nsw; x++) {
				/* Each row is a cache miss in the LFTs (one line per
				 * switch, a table apart): ask for later ones early. */
				const uint32_t ci = l0 >> SNAP_LFT_CHUNK_SHIFT, in = l0 & (SNAP_LFT_CHUNK - 1);
				if (x + DP_AHEAD < nsw && dense && l0 + cnt <= rt->swlft[x + DP_AHEAD].len)
					__builtin_prefetch(rt->swlft[x + DP_AHEAD].lft->chunk[ci] + in);
				const struct route_swlft *t = &rt->swlft[x];
				uint8_t *row = ws.nxt + (size_t)x * DP_BLOCK;
				if (dense && l0 + cnt <= t->len) {
					/* cnt <= DP_BLOCK: in one chunk, or two */
					size_t part = SNAP_LFT_CHUNK - in < cnt ? SNAP_LFT_CHUNK - in : cnt;
					memcpy(row, t->lft->chunk[ci] + in, part);
					if (part < cnt)
						memcpy(row + part, t->lft->chunk[ci + 1], cnt - part);
					continue;
				}
				for (size_t k = 0; k < cnt; k++)
					row[k] = route_lft(rt, x, (uint16_t)lids[order[first + k]]);
			}
			for (size_t k = 0; k < cnt; k++) {
				size_t i = order[first + k];
				uint16_t *o = out + i * nsrc;
				if (!lids[i]) {
					for (size_t j = 0; j < nsrc; j++)
						o[j] = ROUTE_HOPS_INF;
					continue;
				}
				/* stamps stay unique per thread: one per destination */
				cur++;
				for (size_t j = 0; j < nsrc; j++)
					o[j] = dp_eval(rt, &ws, src[j], (unsigned)k, dst[i], cur, &my_over);
			}
		}
		if (my_over) {
#pragma omp atomic write
			overflow = 1;
		}
		free(ws.nxt);
		free(ws.val);
		free(ws.stamp);
		free(ws.stack);
	}
	if (failed)
		rc = AN_E_NOMEM;
	else if (overflow)
		rc = AN_E_RANGE;
out:
	free(src);
	free(order);
	free(lids);
	free(np);
	return rc;
}
