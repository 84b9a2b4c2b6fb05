/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simgrid.c - the SimGrid platform of a job's hosts (see simgrid.h): walk
 * every ordered pair once, number the directed links the walks use, then
 * write hosts, links and routes.
 */
#include "simgrid.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rate.h"
#include "topo_limits.h"

struct sg {
	const struct route_tab *rt;
	const uint32_t *hosts;
	size_t n;
	uint32_t *link_of_slot;  /* [snap->nports]: directed link leaving that port slot, or ROUTE_NONE */
	uint32_t *slot;          /* [nlinks]: port slot of each link */
	size_t nlinks, capslot;
	uint32_t *rl;            /* links of every route, pair (i, j) at rl[off[i * n + j] ..] */
	size_t nrl, caprl;
	uint32_t *off;           /* [n * n + 1] */
};

/* Range and repeats: a host named twice would be two SimGrid hosts of one
 * name, which SimGrid refuses far from the cause. */
static int check_hosts(const struct route_tab *rt, const uint32_t *hosts, size_t n, char err[AN_ERR_LEN])
{
	if (n < 1 || n > TOPO_SIMGRID_HOSTS_MAX) {
		util_fail(err, AN_ERR_LEN, "%zu hosts: a platform takes 1 to %d", n, TOPO_SIMGRID_HOSTS_MAX);
		return AN_E_RANGE;
	}
	uint8_t *seen = calloc(rt->nhosts ? rt->nhosts : 1, 1);
	if (!seen)
		return AN_E_NOMEM;
	int rc = AN_OK;
	for (size_t i = 0; i < n && rc == AN_OK; i++) {
		if (hosts[i] >= rt->nhosts) {
			util_fail(err, AN_ERR_LEN, "host index %" PRIu32 " out of range", hosts[i]);
			rc = AN_E_INVAL;
		} else if (seen[hosts[i]]++) {
			util_fail(err, AN_ERR_LEN, "host %s listed twice", rt->hosts[hosts[i]].name);
			rc = AN_E_INVAL;
		}
	}
	free(seen);
	return rc;
}

/* The link leaving node's port, numbered on first use; its cable must have a
 * rate, or the platform would hold a link SimGrid cannot time. */
static int link_of(struct sg *g, uint32_t node, unsigned port, uint32_t *id)
{
	const struct snap *s = g->rt->snap;
	uint32_t slot = s->nodes[node].port0 + port;
	if (g->link_of_slot[slot] == ROUTE_NONE) {
		if (!rate_cable_bps(s, node, port))
			return AN_E_NOTAPPLIC;
		if (util_grow((void **)&g->slot, &g->capslot, g->nlinks + 1, sizeof(*g->slot)))
			return AN_E_NOMEM;
		g->slot[g->nlinks] = slot;
		g->link_of_slot[slot] = (uint32_t)g->nlinks++;
	}
	*id = g->link_of_slot[slot];
	return AN_OK;
}

static int push_link(struct sg *g, uint32_t node, unsigned port)
{
	uint32_t id;
	int rc = link_of(g, node, port, &id);
	if (rc)
		return rc;
	if (util_grow((void **)&g->rl, &g->caprl, g->nrl + 1, sizeof(*g->rl)))
		return AN_E_NOMEM;
	g->rl[g->nrl++] = id;
	return AN_OK;
}

/* The directed links from host i to host j: i's cable, then each switch's
 * out port (the last one is j's cable). */
static int walk_pair(struct sg *g, size_t i, size_t j, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = g->rt;
	const char *a = rt->hosts[g->hosts[i]].name, *b = rt->hosts[g->hosts[j]].name;
	const struct route_ep *src = &rt->eps[route_host_ep(rt, g->hosts[i])];
	const struct route_ep *dst = &rt->eps[route_host_ep(rt, g->hosts[j])];
	struct route_hop hops[TOPO_SIMGRID_HOPS_MAX];
	struct route_res res;
	int rc = dst->lid ? route_walk(rt, route_host_ep(rt, g->hosts[i]), dst->lid, hops, TOPO_SIMGRID_HOPS_MAX, &res)
			  : AN_E_NOLID;
	if (rc) {
		util_fail(err, AN_ERR_LEN, "no route from %s to %s: %s", a, b, an_strerror(rc));
		return AN_E_ROUTE;
	}
	if (res.hops > TOPO_SIMGRID_HOPS_MAX) {
		util_fail(err, AN_ERR_LEN, "route from %s to %s crosses %" PRIu32 " switches (at most %d)", a, b,
			  res.hops, TOPO_SIMGRID_HOPS_MAX);
		return AN_E_RANGE;
	}
	rc = push_link(g, src->node, src->port);
	for (uint32_t k = 0; k < res.hops && !rc; k++)
		rc = push_link(g, hops[k].node, hops[k].out);
	if (rc == AN_E_NOTAPPLIC) {
		util_fail(err, AN_ERR_LEN, "route from %s to %s uses a cable of unknown rate (width/speed)", a, b);
		return AN_E_ROUTE;
	}
	return rc;
}

static int walk_all(struct sg *g, char err[AN_ERR_LEN])
{
	const struct snap *s = g->rt->snap;
	g->link_of_slot = malloc((s->nports ? s->nports : 1) * sizeof(*g->link_of_slot));
	g->off = malloc((g->n * g->n + 1) * sizeof(*g->off));
	if (!g->link_of_slot || !g->off)
		return AN_E_NOMEM;
	for (uint32_t p = 0; p < s->nports; p++)
		g->link_of_slot[p] = ROUTE_NONE;
	for (size_t i = 0; i < g->n; i++)
		for (size_t j = 0; j < g->n; j++) {
			g->off[i * g->n + j] = (uint32_t)g->nrl;
			if (i == j)
				continue;
			int rc = walk_pair(g, i, j, err);
			if (rc)
				return rc;
		}
	g->off[g->n * g->n] = (uint32_t)g->nrl;
	return AN_OK;
}

/* "0xNODEGUID:PORT" of link l. */
static void link_name(const struct sg *g, uint32_t l, uint32_t *node, unsigned *port, uint64_t *guid)
{
	const struct snap *s = g->rt->snap;
	uint32_t slot = g->slot[l], lo = snap_node_of_slot(s, slot);
	*node = lo;
	*port = slot - s->nodes[lo].port0;
	*guid = s->nodes[lo].guid;
}

static int emit(const struct sg *g, struct tbuf *out)
{
	const struct snap *s = g->rt->snap;
	int bad = tbuf_printf(out, "<?xml version='1.0'?>\n"
				   "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
				   "<!-- topod: LFT routes, PortInfo link rates; docs/performance.md -->\n"
				   "<platform version=\"4.1\">\n<config>\n"
				   "<prop id=\"network/optim\" value=\"Full\"/>\n"
				   "<prop id=\"network/solver\" value=\"fairbottleneck\"/>\n"
				   "<prop id=\"network/crosstraffic\" value=\"0\"/>\n"
				   "</config>\n<zone id=\"fabric\" routing=\"Full\">\n");
	for (size_t i = 0; i < g->n && !bad; i++)
		bad = tbuf_printf(out, "<host id=\"%s\" speed=\"%s\"/>\n", g->rt->hosts[g->hosts[i]].name,
				  SIMGRID_HOST_SPEED);
	for (uint32_t l = 0; l < g->nlinks && !bad; l++) {
		uint32_t node;
		unsigned port;
		uint64_t guid;
		link_name(g, l, &node, &port, &guid);
		unsigned lat = COST_CABLE_LAT_NS + (s->nodes[node].type == SNAP_NODE_SWITCH ? COST_SWITCH_LAT_NS : 0);
		bad = tbuf_printf(out,
				  "<link id=\"0x%016" PRIx64 ":%u\" bandwidth=\"%" PRIu64 "bps\" latency=\"%uns\" "
				  "sharing_policy=\"SHARED\"/>\n",
				  guid, port, rate_cable_bps(s, node, port), lat);
	}
	for (size_t i = 0; i < g->n && !bad; i++)
		for (size_t j = 0; j < g->n && !bad; j++) {
			if (i == j)
				continue;
			bad = tbuf_printf(out, "<route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">",
					  g->rt->hosts[g->hosts[i]].name, g->rt->hosts[g->hosts[j]].name);
			for (uint32_t k = g->off[i * g->n + j]; k < g->off[i * g->n + j + 1] && !bad; k++) {
				uint32_t node;
				unsigned port;
				uint64_t guid;
				link_name(g, g->rl[k], &node, &port, &guid);
				bad = tbuf_printf(out, "<link_ctn id=\"0x%016" PRIx64 ":%u\"/>", guid, port);
			}
			bad = bad || tbuf_add(out, "</route>\n", 9);
		}
	bad = bad || tbuf_add(out, "</zone>\n</platform>\n", 20);
	return bad ? -1 : 0;
}

int simgrid_platform(const struct route_tab *rt, const uint32_t *hosts, size_t n, struct tbuf *out,
		     struct simgrid_stats *st, char err[AN_ERR_LEN])
{
	int rc = check_hosts(rt, hosts, n, err);
	if (rc)
		return rc;
	struct sg g = { .rt = rt, .hosts = hosts, .n = n };
	rc = walk_all(&g, err);
	size_t len0 = out->len, max0 = out->max;
	uint32_t lines = 0;
	if (!rc) {
		/* The bound holds whatever the caller's buffer allows. */
		if (!out->max || out->max - len0 > TOPO_SIMGRID_BYTES_MAX)
			out->max = len0 + TOPO_SIMGRID_BYTES_MAX;
		if (emit(&g, out)) {
			/* No line is longer than a route of TOPO_SIMGRID_HOPS_MAX
			 * switches (~2.5 KiB): a failure that close to the bound is the bound. */
			int full = out->len + 16384 > out->max;
			rc = full ? AN_E_RANGE : AN_E_NOMEM;
			if (full)
				util_fail(err, AN_ERR_LEN, "the platform would exceed %zu bytes", out->max - len0);
			out->len = len0;
			if (out->buf)
				out->buf[len0] = '\0';
		}
		out->max = max0;
		for (size_t k = len0; !rc && k < out->len; k++)
			lines += out->buf[k] == '\n';
	}
	if (!rc && st) {
		st->hosts = (uint32_t)n;
		st->links = (uint32_t)g.nlinks;
		st->routes = (uint32_t)(n * (n - 1));
		st->lines = lines;
	}
	free(g.link_of_slot);
	free(g.slot);
	free(g.rl);
	free(g.off);
	return rc;
}

/* ---- the whole fabric (simgrid_fabric) ------------------------------------ */

struct sgf {
	struct sg g;          /* link numbering (rt, link_of_slot, slot, nlinks) */
	uint32_t *host;       /* [n] hosts in the platform, grouped by leaf */
	size_t n;
	uint32_t *gstart;     /* [G + 1]: group z is host[gstart[z] .. gstart[z + 1]) */
	uint32_t G;
	struct tbuf *out;     /* NULL: the numbering pass */
	uint32_t routes;
	int bad;              /* an append failed (out of room) */
};

/* Leaf-mates together; a host not cabled to a switch alone. */
static uint64_t group_key(const struct route_tab *rt, uint32_t h)
{
	const struct route_ep *e = &rt->eps[route_host_ep(rt, h)];
	return e->leaf != ROUTE_NONE && rt->snap->nodes[e->leaf].type == SNAP_NODE_SWITCH ? e->leaf
												: ((uint64_t)1 << 32) + h;
}

static int cmp_u64pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] > y[1]) - (x[1] < y[1]);
}

static int fabric_hosts(struct sgf *f, uint32_t *omitted, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = f->g.rt;
	uint64_t *kv = malloc((rt->nhosts ? rt->nhosts : 1) * 2 * sizeof(*kv));
	f->host = malloc((rt->nhosts ? rt->nhosts : 1) * sizeof(*f->host));
	f->gstart = malloc(((size_t)rt->nhosts + 1) * sizeof(*f->gstart));
	if (!kv || !f->host || !f->gstart) {
		free(kv);
		return AN_E_NOMEM;
	}
	size_t n = 0;
	for (uint32_t h = 0; h < rt->nhosts; h++) {
		const struct route_ep *e = &rt->eps[route_host_ep(rt, h)];
		if (e->up != AN_OK || !e->lid)
			continue;
		kv[2 * n] = group_key(rt, h);
		kv[2 * n++ + 1] = h;
	}
	*omitted = rt->nhosts - (uint32_t)n;
	if (n < 1 || n > TOPO_SIMGRID_ALL_HOSTS_MAX) {
		free(kv);
		util_fail(err, AN_ERR_LEN, "%zu hosts with a live port: a whole-fabric platform takes 1 to %d", n,
			  TOPO_SIMGRID_ALL_HOSTS_MAX);
		return AN_E_RANGE;
	}
	qsort(kv, n, 2 * sizeof(*kv), cmp_u64pair);
	for (size_t i = 0; i < n; i++) {
		f->host[i] = (uint32_t)kv[2 * i + 1];
		if (i == 0 || kv[2 * i] != kv[2 * i - 2])
			f->gstart[f->G++] = (uint32_t)i;
	}
	f->gstart[f->G] = (uint32_t)n;
	f->n = n;
	free(kv);
	return AN_OK;
}

static void put(struct sgf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct sgf *f, const char *fmt, ...)
{
	if (!f->out || f->bad)
		return;
	/* Every piece is short (a name is at most 64 bytes): one format into a
	 * stack buffer, one copy. */
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	f->bad = k < 0 || (size_t)k >= sizeof(tmp) || tbuf_add(f->out, tmp, (size_t)k);
}

/* Numbers the link and, when writing, names it in the route. */
static int route_link(struct sgf *f, uint32_t node, unsigned port)
{
	uint32_t id;
	int rc = link_of(&f->g, node, port, &id);
	if (!rc && f->out)
		put(f, "<link_ctn id=\"l:%" PRIu32 "\"/>", id);
	return rc;
}

/* The links of the walk from host a to host b; without a's own cable when
 * tail_only (the part every leaf-mate of a shares). */
static int fabric_walk(struct sgf *f, uint32_t a, uint32_t b, int tail_only, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = f->g.rt;
	const struct route_ep *src = &rt->eps[route_host_ep(rt, a)];
	const struct route_ep *dst = &rt->eps[route_host_ep(rt, b)];
	struct route_hop hops[TOPO_SIMGRID_HOPS_MAX];
	struct route_res res;
	int rc = route_walk(rt, route_host_ep(rt, a), dst->lid, hops, TOPO_SIMGRID_HOPS_MAX, &res);
	if (!rc && res.hops > TOPO_SIMGRID_HOPS_MAX)
		rc = AN_E_RANGE;
	if (rc) {
		util_fail(err, AN_ERR_LEN, "no route from %s to %s: %s", rt->hosts[a].name, rt->hosts[b].name,
			  an_strerror(rc));
		return AN_E_ROUTE;
	}
	rc = tail_only ? AN_OK : route_link(f, src->node, src->port);
	for (uint32_t k = 0; k < res.hops && !rc; k++)
		rc = route_link(f, hops[k].node, hops[k].out);
	if (tail_only && !res.hops)
		put(f, "<link_ctn id=\"glue\"/>"); /* a CA cabled to a CA: nothing after the cable */
	if (rc == AN_E_NOTAPPLIC) {
		util_fail(err, AN_ERR_LEN, "route from %s to %s uses a cable of unknown rate (width/speed)",
			  rt->hosts[a].name, rt->hosts[b].name);
		return AN_E_ROUTE;
	}
	return rc;
}

/* Zone z is "z:Z", its routers "o:Z" and "i:Z:S" (from zone S): short,
 * since route lists name them a million times at 3,456 hosts, and with a
 * ':' no hostname has. Its <zone> carries the leaf's GUID as a property. */
static void zone_prop(struct sgf *f, uint32_t z)
{
	const struct route_tab *rt = f->g.rt;
	uint32_t h = f->host[f->gstart[z]];
	const struct route_ep *e = &rt->eps[route_host_ep(rt, h)];
	if (group_key(rt, h) == e->leaf)
		put(f, "<prop id=\"leaf\" value=\"0x%016" PRIx64 "\"/>\n", rt->snap->nodes[e->leaf].guid);
	else
		put(f, "<prop id=\"port\" value=\"0x%016" PRIx64 "\"/>\n", e->guid);
}

/* Group z's zone: hosts, routers, routes between its hosts, to its out
 * router, and from each other group's in router. */
static int fabric_zone(struct sgf *f, uint32_t z, char err[AN_ERR_LEN])
{
	const struct route_tab *rt = f->g.rt;
	put(f, "<zone id=\"z:%" PRIu32 "\" routing=\"Full\">\n", z);
	zone_prop(f, z);
	for (uint32_t i = f->gstart[z]; i < f->gstart[z + 1]; i++)
		put(f, "<host id=\"%s\" speed=\"%s\"/>\n", rt->hosts[f->host[i]].name, SIMGRID_HOST_SPEED);
	put(f, "<router id=\"o:%" PRIu32 "\"/>\n", z);
	for (uint32_t s = 0; s < f->G; s++)
		if (s != z)
			put(f, "<router id=\"i:%" PRIu32 ":%" PRIu32 "\"/>\n", z, s);
	int rc = AN_OK;
	for (uint32_t i = f->gstart[z]; i < f->gstart[z + 1] && !rc; i++) {
		const char *a = rt->hosts[f->host[i]].name;
		for (uint32_t j = f->gstart[z]; j < f->gstart[z + 1] && !rc; j++) {
			if (i == j)
				continue;
			put(f, "<route src=\"%s\" dst=\"%s\" symmetrical=\"NO\">", a, rt->hosts[f->host[j]].name);
			rc = fabric_walk(f, f->host[i], f->host[j], 0, err);
			put(f, "</route>\n");
			f->routes++;
		}
		const struct route_ep *e = &rt->eps[route_host_ep(rt, f->host[i])];
		put(f, "<route src=\"%s\" dst=\"o:%" PRIu32 "\" symmetrical=\"NO\">", a, z);
		rc = rc ? rc : route_link(f, e->node, e->port);
		put(f, "</route>\n");
		f->routes++;
	}
	for (uint32_t s = 0; s < f->G && !rc; s++) {
		if (s == z)
			continue;
		for (uint32_t j = f->gstart[z]; j < f->gstart[z + 1] && !rc; j++) {
			put(f, "<route src=\"i:%" PRIu32 ":%" PRIu32 "\" dst=\"%s\" symmetrical=\"NO\">", z, s,
			    rt->hosts[f->host[j]].name);
			rc = fabric_walk(f, f->host[f->gstart[s]], f->host[j], 1, err);
			put(f, "</route>\n");
			f->routes++;
		}
	}
	put(f, "</zone>\n");
	return rc;
}

/* Every zone, then the zone routes. */
static int fabric_body(struct sgf *f, char err[AN_ERR_LEN])
{
	f->routes = 0;
	int rc = AN_OK;
	for (uint32_t z = 0; z < f->G && !rc && !f->bad; z++)
		rc = fabric_zone(f, z, err);
	for (uint32_t s = 0; s < f->G && !rc && f->out && !f->bad; s++)
		for (uint32_t z = 0; z < f->G; z++)
			if (z != s)
				put(f, "<zoneRoute src=\"z:%" PRIu32 "\" dst=\"z:%" PRIu32 "\" gw_src=\"o:%" PRIu32
				       "\" gw_dst=\"i:%" PRIu32 ":%" PRIu32 "\" symmetrical=\"NO\"><link_ctn id=\"glue\"/>"
				       "</zoneRoute>\n", s, z, s, z, s);
	f->routes += f->G * (f->G - 1);
	return rc;
}

/* The document around the body: the links must be declared before any
 * route names them, and SimGrid wants a zone's sub-zones before its links,
 * hence the zone "cables". */
static int fabric_emit(struct sgf *f, char err[AN_ERR_LEN])
{
	const struct snap *s = f->g.rt->snap;
	put(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
	       "<!-- topod: the whole fabric, LFT routes by leaf zones, PortInfo link rates; docs/protocol.md -->\n"
	       "<platform version=\"4.1\">\n<config>\n<prop id=\"network/optim\" value=\"Full\"/>\n");
	put(f, "<prop id=\"network/solver\" value=\"fairbottleneck\"/>\n"
	       "<prop id=\"network/crosstraffic\" value=\"0\"/>\n</config>\n<zone id=\"fabric\" routing=\"Full\">\n"
	       "<zone id=\"cables\" routing=\"None\">\n"
	       "<link id=\"glue\" bandwidth=\"1Pbps\" latency=\"0ns\" sharing_policy=\"FATPIPE\"/>\n");
	for (uint32_t l = 0; l < f->g.nlinks && !f->bad; l++) {
		uint32_t node;
		unsigned port;
		uint64_t guid;
		link_name(&f->g, l, &node, &port, &guid);
		unsigned lat = COST_CABLE_LAT_NS + (s->nodes[node].type == SNAP_NODE_SWITCH ? COST_SWITCH_LAT_NS : 0);
		put(f, "<link id=\"l:%" PRIu32 "\" bandwidth=\"%" PRIu64 "bps\" latency=\"%uns\" sharing_policy=\"SHARED\">"
		       "<prop id=\"port\" value=\"0x%016" PRIx64 ":%u\"/></link>\n", l, rate_cable_bps(s, node, port), lat,
		       guid, port);
	}
	put(f, "</zone>\n");
	int rc = fabric_body(f, err);
	put(f, "</zone>\n</platform>\n");
	return rc;
}

int simgrid_fabric(const struct route_tab *rt, struct tbuf *out, struct simgrid_fabric_stats *st,
		   char err[AN_ERR_LEN])
{
	struct sgf f = { .g = { .rt = rt } };
	const struct snap *s = rt->snap;
	uint32_t omitted = 0;
	size_t len0 = out->len, max0 = out->max;
	int rc = fabric_hosts(&f, &omitted, err);
	if (!rc) {
		f.g.link_of_slot = malloc((s->nports ? s->nports : 1) * sizeof(*f.g.link_of_slot));
		rc = f.g.link_of_slot ? AN_OK : AN_E_NOMEM;
	}
	for (uint32_t p = 0; !rc && p < s->nports; p++)
		f.g.link_of_slot[p] = ROUTE_NONE;
	/* Pass 1 numbers the links (and finds every failing route), pass 2 writes. */
	rc = rc ? rc : fabric_body(&f, err);
	if (!rc) {
		if (!out->max || out->max - len0 > TOPO_SIMGRID_ALL_BYTES_MAX)
			out->max = len0 + TOPO_SIMGRID_ALL_BYTES_MAX;
		f.out = out;
		rc = fabric_emit(&f, err);
		if (!rc && f.bad) {
			int full = out->len + 16384 > out->max;
			rc = full ? AN_E_RANGE : AN_E_NOMEM;
			if (full)
				util_fail(err, AN_ERR_LEN, "the platform of %zu hosts would exceed %zu bytes "
					  "(TOPO_SIMGRID_ALL_BYTES_MAX)", f.n, out->max - len0);
		}
		out->max = max0;
	}
	uint32_t lines = 0;
	for (size_t k = len0; !rc && k < out->len; k++)
		lines += out->buf[k] == '\n';
	if (rc) {
		out->len = len0;
		if (out->buf)
			out->buf[len0] = '\0';
	} else if (st) {
		*st = (struct simgrid_fabric_stats){ (uint32_t)f.n, omitted, f.G, (uint32_t)f.g.nlinks + 1, f.routes,
						     lines };
	}
	free(f.g.link_of_slot);
	free(f.g.slot);
	free(f.host);
	free(f.gstart);
	return rc;
}
