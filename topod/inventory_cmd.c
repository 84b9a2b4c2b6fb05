/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inventory_cmd.c - the inventory: `show NAME` (a host, HCA or switch the way
 * iblinkinfo and `scontrol show node` give it) and `links [FILTER ...]` (every
 * cable once, like iblinkinfo). The replies are specified in docs/protocol.md.
 *
 * `show` is a lookup (a name, then one node's ports; a switch by its
 * description scans the switches only) and runs on the event loop; `links`
 * walks every port of the fabric and runs on the worker pool.
 */
#include "inventory_cmd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gone.h"
#include "hier.h"
#include "inventory.h"
#include "place.h"
#include "rate.h"
#include "route.h"
#include "util.h"

/* host/HCA or a NodeDescription: the escaped form is at most 4x longer */
#define INV_NAME_BUF (SNAP_DESC_LEN * 4 + ROUTE_NAME_MAX * 2 + 8)

/* A node's name as `show` and `links` print it, escaped and unquoted: a
 * CA's (or router's) "host/HCA", a switch's NodeDescription. */
static void node_name(const struct qctx *c, uint32_t node, char *buf, size_t n)
{
	const struct snap_node *sn = &c->s->nodes[node];
	uint32_t ep = sn->type == SNAP_NODE_SWITCH ? ROUTE_NONE : inv_node_ep(c->rt, node);
	if (ep != ROUTE_NONE)
		qctx_ep_name(c, ep, buf, n);
	else
		snap_escape(sn->desc, buf, n);
}

/* The switch whose NodeDescription is name, or whose first word is (the
 * switches only: a few thousand at most). ROUTE_NONE with the ERR written. */
static uint32_t switch_by_desc(struct qctx *c, const char *name)
{
	uint32_t found = ROUTE_NONE, nfound = 0;
	size_t len = strlen(name);
	for (uint32_t k = 0; k < c->rt->nsw; k++) {
		const char *d = c->s->nodes[c->rt->sw_node[k]].desc;
		if (strcmp(d, name) && (strncmp(d, name, len) || (d[len] != ' ' && d[len] != '\t')))
			continue;
		if (!strcmp(d, name)) {   /* a whole description wins over first words */
			found = c->rt->sw_node[k];
			nfound = 1;
			break;
		}
		found = c->rt->sw_node[k];
		nfound++;
	}
	if (nfound == 1)
		return found;
	if (nfound)
		query_error(c->out, "NOTFOUND", "'%.100s' begins the descriptions of %u switches; name one by GUID", name,
			    nfound);
	else
		qctx_notfound(c, name, "no host, HCA, switch, GUID or LID", 1);
	return ROUTE_NONE;
}

/* One port of a node: "port 0xNODE:P guid=... lid=... state=... peer=...". */
static void show_port(struct qctx *c, uint32_t node, unsigned p)
{
	const struct snap *s = c->s;
	const struct snap_port *pt = &s->ports[s->nodes[node].port0 + p];
	uint16_t lid = pt->lid;
	uint8_t lmc = pt->lmc;
	if (s->nodes[node].type == SNAP_NODE_SWITCH) {   /* a switch's LID is its port 0's */
		lid = s->ports[s->nodes[node].port0].lid;
		lmc = s->ports[s->nodes[node].port0].lmc;
	}
	evbuffer_add_printf(c->out,
			    "port 0x%016" PRIx64 ":%u guid=0x%016" PRIx64 " lid=%u lmc=%u state=%s width=%s speed=%s "
			    "rate_bps=%" PRIu64,
			    s->nodes[node].guid, p, pt->guid, lid, lmc, rate_state_name(pt->state),
			    rate_width_name(pt->width), rate_speed_name(pt->speed, pt->espeed), rate_port_bps(pt));
	if (pt->peer_node == SNAP_NONE) {
		evbuffer_add_printf(c->out, " peer=- peer_guid=- peer_type=- peer_state=- peer_name=-\n");
		return;
	}
	const struct snap_node *pn = &s->nodes[pt->peer_node];
	const struct snap_port *pp = &s->ports[pn->port0 + pt->peer_port];
	char nm[INV_NAME_BUF];
	node_name(c, pt->peer_node, nm, sizeof(nm));
	evbuffer_add_printf(c->out,
			    " peer=0x%016" PRIx64 ":%u peer_guid=0x%016" PRIx64 " peer_type=%s peer_state=%s peer_name=\"%s\"\n",
			    pn->guid, pt->peer_port, pp->guid, inv_type_word(pn->type), rate_state_name(pp->state), nm);
}

static unsigned present_ports(const struct snap *s, uint32_t node)
{
	unsigned n = 0;
	for (unsigned p = 1; p <= s->nodes[node].nports; p++)
		n += s->ports[s->nodes[node].port0 + p].present != 0;
	return n;
}

static void show_node(struct qctx *c, uint32_t node)
{
	const struct snap_node *sn = &c->s->nodes[node];
	char nm[INV_NAME_BUF], desc[SNAP_DESC_LEN * 4 + 1];
	node_name(c, node, nm, sizeof(nm));
	snap_escape(sn->desc, desc, sizeof(desc));
	evbuffer_add_printf(c->out, "node 0x%016" PRIx64 " type=%s name=\"%s\" desc=\"%s\" ports=%u sysimg=0x%016" PRIx64 "\n",
			    sn->guid, inv_type_word(sn->type), nm, desc, sn->nports, sn->sysimg_guid);
	for (unsigned p = 1; p <= sn->nports; p++)
		if (c->s->ports[sn->port0 + p].present)
			show_port(c, node, p);
}

/* The nodes `show` lists for a resolved end port: every HCA of a host named
 * bare, else the port's node. Returns their count (at most max). */
static size_t nodes_of(struct qctx *c, const char *name, uint32_t ep, uint32_t *nodes, size_t max, uint32_t *host)
{
	const struct route_tab *rt = c->rt;
	*host = rt->eps[ep].host;
	if (*host == ROUTE_NONE || strcmp(name, rt->hosts[*host].name)) {
		nodes[0] = rt->eps[ep].node;
		return 1;
	}
	size_t n = 0;
	const struct route_host *h = &rt->hosts[*host];
	for (uint32_t k = 0; k < h->nrails; k++) {
		uint32_t node = rt->eps[rt->rails[h->rail0 + k]].node, j;
		for (j = 0; j < n && nodes[j] != node; j++)
			;
		if (j == n && n < max)
			nodes[n++] = node;
	}
	return n;
}

/* " leaf=... leaf_name=... leaf_cluster=... pod=..." of a host's rail. */
static void show_place(struct qctx *c, uint32_t ep, uint32_t host)
{
	const struct route_ep *e = &c->rt->eps[ep];
	if (e->leaf == ROUTE_NONE || c->s->nodes[e->node].type == SNAP_NODE_SWITCH) {
		evbuffer_add_printf(c->out, " leaf=- leaf_name=-");
	} else {
		char nm[INV_NAME_BUF];
		node_name(c, e->leaf, nm, sizeof(nm));
		evbuffer_add_printf(c->out, " leaf=0x%016" PRIx64 " leaf_name=\"%s\"", c->s->nodes[e->leaf].guid, nm);
	}
	if (host == ROUTE_NONE || !c->h || host >= c->h->nhosts) {
		evbuffer_add_printf(c->out, " leaf_cluster=- pod=- leaf_cluster_name=- pod_name=-");
		return;
	}
	/* names are hier.h's: [A-Za-z0-9._-] only, one word */
	uint32_t lc = place_leaf_cluster(c->h, host), pod = place_pod(c->h, host);
	evbuffer_add_printf(c->out, " leaf_cluster=0x%016" PRIx64 " pod=0x%016" PRIx64 " leaf_cluster_name=%s pod_name=%s",
			    c->h->clusters[lc].id, c->h->clusters[pod].id, c->h->names ? c->h->names[lc] : "-",
			    c->h->names ? c->h->names[pod] : "-");
}

void answer_show(struct qctx *c)
{
	const char *name = c->req->argv[0];
	uint32_t ep = ROUTE_NONE, host = ROUTE_NONE, nodes[TOPO_SHOW_NODES_MAX];
	uint16_t dl;
	size_t n;
	if (route_resolve(c->rt, name, &ep, &dl) == AN_OK) {
		n = nodes_of(c, name, ep, nodes, TOPO_SHOW_NODES_MAX, &host);
	} else {
		if ((nodes[0] = switch_by_desc(c, name)) == ROUTE_NONE)
			return;
		ep = inv_node_ep(c->rt, nodes[0]);
		n = 1;
	}
	const struct snap_node *first = &c->s->nodes[nodes[0]];
	const char *kind = host != ROUTE_NONE && !strcmp(name, c->rt->hosts[host].name) ? "host"
			   : first->type == SNAP_NODE_SWITCH				 ? "switch"
			   : first->type == SNAP_NODE_ROUTER				 ? "router"
											 : "ca";
	char canon[INV_NAME_BUF];
	if (!strcmp(kind, "host"))
		snprintf(canon, sizeof(canon), "%s", c->rt->hosts[host].name);
	else
		node_name(c, nodes[0], canon, sizeof(canon));
	size_t lines = n;
	for (size_t i = 0; i < n; i++)
		lines += present_ports(c->s, nodes[i]);
	const char *plane = c->planes && c->planes->current >= 0 && c->planes->current < c->planes->n
				    ? c->planes->name[c->planes->current]
				    : "default";
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " name=\"%s\" kind=%s plane=%s host=%s nodes=%zu", c->gen, canon,
			    kind, plane, host != ROUTE_NONE ? c->rt->hosts[host].name : "-", n);
	if (host != ROUTE_NONE)
		show_place(c, strcmp(kind, "host") ? ep : route_host_ep(c->rt, host), host);
	else
		evbuffer_add_printf(c->out, " leaf=- leaf_name=- leaf_cluster=- pod=- leaf_cluster_name=- pod_name=-");
	evbuffer_add_printf(c->out, " lines=%zu\n", lines);
	for (size_t i = 0; i < n; i++)
		show_node(c, nodes[i]);
}

/* ---- links ------------------------------------------------------------------- */

struct link_filter {
	const char *name;   /* substring of either end's name or GUID, NULL: any */
	int state;          /* inv_state_filter(), 0: any */
};

static int parse_filter(struct qctx *c, struct link_filter *f)
{
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < c->req->argc; i++) {
		const char *a = c->req->argv[i];
		if (!strncmp(a, "name=", 5) && !f->name && a[5]) {
			f->name = a + 5;
		} else if (!strncmp(a, "state=", 6) && !f->state) {
			f->state = inv_state_filter(a + 6);
			if (f->state < 0) {
				query_error(c->out, "USAGE", "state=%.40s: down, init, armed, active, notactive or up",
					    a + 6);
				return -1;
			}
		} else {
			query_error(c->out, "USAGE", "links [name=SUBSTRING] [state=down|init|armed|active|notactive|up]; "
						   "'%.60s' is not one of them (or given twice)", a);
			return -1;
		}
	}
	return 0;
}

static int name_match(const struct qctx *c, uint32_t node, const char *sub, const char *nm)
{
	char g[24];
	snprintf(g, sizeof(g), "0x%016" PRIx64, c->s->nodes[node].guid);
	return strstr(nm, sub) || strstr(c->s->nodes[node].desc, sub) || strstr(g, sub);
}

/* Whether sub is in the name, description or GUID of any node. */
static int names_any(const struct qctx *c, const char *sub)
{
	char nm[INV_NAME_BUF];
	for (uint32_t a = 0; a < c->s->nnodes; a++) {
		node_name(c, a, nm, sizeof(nm));
		if (name_match(c, a, sub, nm))
			return 1;
	}
	return 0;
}

/* The cable on (a, pa) as one line into body; 1 if it passed the filter. */
static int link_line(struct qctx *c, struct evbuffer *body, const struct link_filter *f, uint32_t a, unsigned pa)
{
	const struct snap *s = c->s;
	const struct snap_port *p = &s->ports[s->nodes[a].port0 + pa];
	uint32_t b = p->peer_node;
	const struct snap_port *q = &s->ports[s->nodes[b].port0 + p->peer_port];
	if (f->state && !inv_state_match(f->state, p->state, q->state))
		return 0;
	char na[INV_NAME_BUF], nb[INV_NAME_BUF];
	node_name(c, a, na, sizeof(na));
	node_name(c, b, nb, sizeof(nb));
	if (f->name && !name_match(c, a, f->name, na) && !name_match(c, b, f->name, nb))
		return 0;
	evbuffer_add_printf(body,
			    "link 0x%016" PRIx64 ":%u 0x%016" PRIx64 ":%u state=%s width=%s speed=%s rate_bps=%" PRIu64
			    " a_type=%s a_state=%s a_name=\"%s\" b_type=%s b_state=%s b_name=\"%s\"\n",
			    s->nodes[a].guid, pa, s->nodes[b].guid, p->peer_port,
			    rate_state_name(inv_cable_state(s, a, pa)), rate_width_name(p->width),
			    rate_speed_name(p->speed, p->espeed), rate_cable_bps(s, a, pa), inv_type_word(s->nodes[a].type),
			    rate_state_name(p->state), na, inv_type_word(s->nodes[b].type), rate_state_name(q->state), nb);
	return 1;
}

/* A cable earlier generations had, unplugged now at both ends (gone.h):
 * listed as Down, its width and speed unknown. */
static int gone_line(struct qctx *c, struct evbuffer *body, const struct link_filter *f,
		     const struct gone_cable *g)
{
	const struct snap *s = c->s;
	uint32_t a = g->node[0], b = g->node[1];
	const struct snap_port *p = &s->ports[s->nodes[a].port0 + g->port[0]];
	const struct snap_port *q = &s->ports[s->nodes[b].port0 + g->port[1]];
	uint8_t lo = p->state < q->state ? p->state : q->state;
	if (f->state && !inv_state_match(f->state, lo, lo))
		return 0;
	char na[INV_NAME_BUF], nb[INV_NAME_BUF];
	node_name(c, a, na, sizeof(na));
	node_name(c, b, nb, sizeof(nb));
	if (f->name && !name_match(c, a, f->name, na) && !name_match(c, b, f->name, nb))
		return 0;
	evbuffer_add_printf(body,
			    "link 0x%016" PRIx64 ":%u 0x%016" PRIx64 ":%u state=%s width=? speed=? rate_bps=0"
			    " a_type=%s a_state=%s a_name=\"%s\" b_type=%s b_state=%s b_name=\"%s\"\n",
			    s->nodes[a].guid, g->port[0], s->nodes[b].guid, g->port[1], rate_state_name(lo),
			    inv_type_word(s->nodes[a].type), rate_state_name(p->state), na, inv_type_word(s->nodes[b].type),
			    rate_state_name(q->state), nb);
	return 1;
}

void answer_links(struct qctx *c)
{
	struct link_filter f;
	if (parse_filter(c, &f))
		return;
	struct evbuffer *body = evbuffer_new();
	if (!body) {
		query_error(c->out, "NOMEM", "no memory");
		return;
	}
	const struct snap *s = c->s;
	const struct gone_cables *gc = c->f->gone_cables;
	size_t total = 0, shown = 0, k = 0;
	/* Each cable once, from its end first in (node, port) order: nodes are
	 * in GUID order, so the lower GUID end (iblinkinfo lists both). */
	for (uint32_t a = 0; a < s->nnodes && shown <= TOPO_LINKS_MAX; a++)
		for (unsigned pa = 1; pa <= s->nodes[a].nports; pa++) {
			const struct snap_port *p = &s->ports[s->nodes[a].port0 + pa];
			if (gc && k < gc->n && gc->v[k].node[0] == a && gc->v[k].port[0] == pa) {
				total++;
				shown += (size_t)gone_line(c, body, &f, &gc->v[k++]);
				continue;
			}
			if (!p->present || p->peer_node == SNAP_NONE ||
			    (p->peer_node < a || (p->peer_node == a && p->peer_port < pa)))
				continue;
			total++;
			shown += (size_t)link_line(c, body, &f, a, pa);
		}
	if (shown > TOPO_LINKS_MAX)
		query_error(c->out, "TOOMANY", "more than %u cables match; filter them (name=, state=)", TOPO_LINKS_MAX);
	else if (!shown && f.name && !names_any(c, f.name))
		/* nothing to list because the name names nothing, not because
		 * every cable of it is filtered out by state */
		qctx_notfound(c, f.name, "no host, HCA or switch whose name, description or GUID contains", 1);
	else
		evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " links=%zu shown=%zu lines=%zu\n", c->gen, total, shown,
				    shown);
	if (shown <= TOPO_LINKS_MAX)
		evbuffer_add_buffer(c->out, body);
	evbuffer_free(body);
}
