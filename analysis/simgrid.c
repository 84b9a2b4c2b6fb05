/*
 * simgrid.c - the SimGrid platform of a job's hosts (see simgrid.h): walk
 * every ordered pair once, number the directed links the walks use, then
 * write hosts, links and routes.
 */
#include "simgrid.h"

#include <inttypes.h>
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
