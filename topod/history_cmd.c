/*
 * history_cmd.c - the `history` and `diff` commands (docs/protocol.md).
 *
 * `diff` rebuilds both generations from the history (history.h), compares
 * them by GUID (so it works across node-set changes too), and walks the
 * routes that can have changed in both, with the route engine of each
 * generation, comparing them switch by switch and port by port.
 */
#include "history_cmd.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "fabric.h"
#include "history.h"
#include "route.h"
#include "util.h"

#define DIFF_PAIRS_MAX 10000 /* route lines listed; the counts cover all */
#define DIFF_HOPS_MAX 64
/* Route pairs one diff walks at most (each in both generations): seconds of
 * one worker. All hosts of k=24 after a reroute fit; all of k=56 after one
 * that touched most destinations would not, and then the caller names the
 * hosts it cares about. */
#define DIFF_WALKS_MAX (16u << 20)

static const char *kind_name(char k)
{
	return k == 's' ? "served" : k == 'd' ? "delta" : "full";
}

void answer_history(struct qctx *c)
{
	struct history_meta *m;
	size_t n;
	if (history_list(c->f->hist, &m, &n)) {
		query_error(c->out, "NOMEM", "out of memory");
		return;
	}
	size_t bytes = c->f->hist ? history_bytes(c->f->hist) : 0;
	evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " bytes=%zu lines=%zu\n", c->gen, bytes, n);
	for (size_t i = 0; i < n; i++)
		evbuffer_add_printf(c->out,
				    "generation=%" PRIu64 " kind=%s snapshot_us=%" PRIu64 " received_us=%" PRIu64
				    " sm_guid=0x%016" PRIx64 " sweep=%" PRIu64
				    " engine=%s nodes=%u switches=%u cas=%u links=%u hosts=%u bytes=%zu\n",
				    m[i].generation, kind_name(m[i].kind), m[i].timestamp, m[i].received_us, m[i].sm_guid,
				    m[i].sweep, m[i].engine[0] ? m[i].engine : "-", m[i].nodes, m[i].switches, m[i].cas,
				    m[i].links, m[i].hosts, m[i].bytes);
	free(m);
}

/* "G" or "@SECONDS" (the generation served at that Unix time). */
static int parse_gen(struct qctx *c, const char *arg, uint64_t *gen)
{
	char *end;
	if (arg[0] == '@') {
		double t = strtod(arg + 1, &end);
		if (end == arg + 1 || *end || !(t >= 0 && t < 1e11)) {
			query_error(c->out, "USAGE", "bad time '%.40s': @UNIX_SECONDS", arg);
			return -1;
		}
		*gen = history_at(c->f->hist, (uint64_t)(t * 1e6));
		if (!*gen) {
			query_error(c->out, "NOTFOUND", "no generation in the history was served at %.40s", arg);
			return -1;
		}
		return 0;
	}
	if (arg[0] < '0' || arg[0] > '9') {
		query_error(c->out, "USAGE", "bad generation '%.40s'", arg);
		return -1;
	}
	*gen = strtoull(arg, &end, 10);
	if (*end) {
		query_error(c->out, "USAGE", "bad generation '%.40s'", arg);
		return -1;
	}
	return 0;
}

struct dstate {
	const struct snap *a, *b;
	struct evbuffer *body;
	size_t lines;
	uint32_t links_down, links_up, nodes_gone, nodes_new, ports, lft_entries, lft_switches;
	uint8_t *lid_changed; /* [max(max_lid)+1] */
	uint32_t nlid;
};

static void line(struct dstate *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct dstate *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	evbuffer_add_vprintf(d->body, fmt, ap);
	va_end(ap);
	evbuffer_add(d->body, "\n", 1);
	d->lines++;
}

static void desc_of(const struct snap_node *n, char *buf, size_t len)
{
	snap_escape(n->desc, buf, len);
}

/* A link as seen from one port: its far end, when it is physically up
 * (the route engine's rule, snap_state_linked). */
static int link_of(const struct snap *s, uint32_t node, unsigned p, uint64_t *peer_guid, unsigned *peer_port)
{
	const struct snap_port *pt = &s->ports[s->nodes[node].port0 + p];
	if (!pt->present || pt->peer_node == SNAP_NONE || !snap_state_linked(pt->state))
		return 0;
	*peer_guid = s->nodes[pt->peer_node].guid;
	*peer_port = pt->peer_port;
	return 1;
}

/* Each link once: from its lower (GUID, port) end, or from the end whose
 * peer is not in the other snapshot at all. */
static int first_end(uint64_t g, unsigned p, uint64_t pg, unsigned pp)
{
	return g < pg || (g == pg && p < pp);
}

static void report_links(struct dstate *d, const struct snap *x, const struct snap *y, int down)
{
	for (uint32_t i = 0; i < x->nnodes; i++) {
		const struct snap_node *n = &x->nodes[i];
		int64_t j = snap_find_node(y, n->guid);
		for (unsigned p = 1; p <= n->nports; p++) {
			uint64_t pg, qg;
			unsigned pp, qp;
			if (!link_of(x, i, p, &pg, &pp) || !first_end(n->guid, p, pg, pp))
				continue;
			if (j >= 0 && p <= y->nodes[j].nports && link_of(y, (uint32_t)j, p, &qg, &qp) && qg == pg &&
			    qp == pp)
				continue;
			char da[SNAP_DESC_LEN * 4 + 1], db[SNAP_DESC_LEN * 4 + 1];
			desc_of(n, da, sizeof(da));
			desc_of(&x->nodes[x->ports[n->port0 + p].peer_node], db, sizeof(db));
			line(d, "%s 0x%016" PRIx64 "/%u 0x%016" PRIx64 "/%u \"%s\" \"%s\"", down ? "link-down" : "link-up",
			     n->guid, p, pg, pp, da, db);
			if (down)
				d->links_down++;
			else
				d->links_up++;
		}
	}
}

static void report_nodes(struct dstate *d, const struct snap *x, const struct snap *y, int gone)
{
	for (uint32_t i = 0; i < x->nnodes; i++) {
		const struct snap_node *n = &x->nodes[i];
		if (snap_find_node(y, n->guid) >= 0)
			continue;
		char ds[SNAP_DESC_LEN * 4 + 1];
		desc_of(n, ds, sizeof(ds));
		line(d, "%s 0x%016" PRIx64 " %s \"%s\"", gone ? "node-gone" : "node-new", n->guid,
		     snap_node_type_str(n->type), ds);
		if (gone)
			d->nodes_gone++;
		else
			d->nodes_new++;
	}
}

static void mark_lid(struct dstate *d, uint32_t lid)
{
	if (lid < d->nlid)
		d->lid_changed[lid] = 1;
}

static void mark_port_lids(struct dstate *d, const struct snap_port *pt)
{
	uint32_t top = snap_port_top_lid(pt);
	for (uint32_t l = pt->lid; pt->lid && l <= top; l++)
		mark_lid(d, l);
}

/* Ports in both: LID, width and speed changes (state is the link lines');
 * switches in both: LFT entries. */
static void report_common(struct dstate *d)
{
	const struct snap *a = d->a, *b = d->b;
	for (uint32_t i = 0; i < a->nnodes; i++) {
		const struct snap_node *x = &a->nodes[i];
		int64_t j = snap_find_node(b, x->guid);
		if (j < 0)
			continue;
		const struct snap_node *y = &b->nodes[j];
		unsigned np = x->nports < y->nports ? x->nports : y->nports;
		for (unsigned p = 0; p <= np; p++) {
			const struct snap_port *u = &a->ports[x->port0 + p], *v = &b->ports[y->port0 + p];
			if (u->present != v->present || u->lid != v->lid || u->lmc != v->lmc) {
				line(d, "port 0x%016" PRIx64 "/%u lid=%u->%u lmc=%u->%u", x->guid, p, u->lid, v->lid,
				     u->lmc, v->lmc);
				d->ports++;
				mark_port_lids(d, u);
				mark_port_lids(d, v);
			} else if (u->present && (u->width != v->width || u->speed != v->speed || u->espeed != v->espeed ||
						  (u->state != v->state && snap_state_linked(u->state) &&
						   snap_state_linked(v->state)))) {
				/* A state change that is not a link going down or up
				 * (INIT -> ACTIVE) is a port line, not a link line. */
				line(d, "port 0x%016" PRIx64 "/%u state=%u->%u width=%u->%u speed=%u->%u espeed=%u->%u",
				     x->guid, p, u->state, v->state, u->width, v->width, u->speed, v->speed, u->espeed,
				     v->espeed);
				d->ports++;
			}
		}
		if (x->type != SNAP_NODE_SWITCH || y->type != SNAP_NODE_SWITCH)
			continue;
		uint32_t len = x->lft_len > y->lft_len ? x->lft_len : y->lft_len, changed = 0, first = 0;
		for (uint32_t l = 0; l < len; l++) {
			uint8_t ex = l < x->lft_len ? a->lft[x->lft_off + l] : SNAP_LFT_NONE;
			uint8_t ey = l < y->lft_len ? b->lft[y->lft_off + l] : SNAP_LFT_NONE;
			if (ex == ey)
				continue;
			if (!changed++)
				first = l;
			mark_lid(d, l);
		}
		if (!changed)
			continue;
		char ds[SNAP_DESC_LEN * 4 + 1];
		desc_of(y, ds, sizeof(ds));
		line(d, "lft 0x%016" PRIx64 " entries=%u first_lid=%u \"%s\"", x->guid, changed, first, ds);
		d->lft_entries += changed;
		d->lft_switches++;
	}
}

/* The route from host src to host dst in one generation, as (switch GUID,
 * out port) steps; returns the walk's code and sets *n. */
static int walk(const struct route_tab *rt, uint32_t src, uint32_t dst, uint64_t *g, uint8_t *out, uint32_t *n)
{
	struct route_hop hops[DIFF_HOPS_MAX];
	struct route_res res;
	uint32_t dep = route_host_ep(rt, dst);
	int rc = route_walk(rt, route_host_ep(rt, src), rt->eps[dep].lid, hops, DIFF_HOPS_MAX, &res);
	*n = res.hops < DIFF_HOPS_MAX ? res.hops : DIFF_HOPS_MAX;
	for (uint32_t k = 0; k < *n; k++) {
		g[k] = rt->snap->nodes[hops[k].node].guid;
		out[k] = hops[k].out;
	}
	return rc;
}

static int route_changed(const struct route_tab *ra, uint32_t sa, uint32_t da, const struct route_tab *rb,
			 uint32_t sb, uint32_t db)
{
	uint64_t ga[DIFF_HOPS_MAX], gb[DIFF_HOPS_MAX];
	uint8_t oa[DIFF_HOPS_MAX], ob[DIFF_HOPS_MAX];
	uint32_t na, nb;
	int ca = walk(ra, sa, da, ga, oa, &na), cb = walk(rb, sb, db, gb, ob, &nb);
	if (ca != cb || na != nb)
		return 1;
	for (uint32_t k = 0; k < na; k++)
		if (ga[k] != gb[k] || oa[k] != ob[k])
			return 1;
	return 0;
}

struct hostpair {
	uint32_t a, b; /* host index in each generation's table */
	const char *name;
	uint32_t changed;
};

/* Hosts present in both generations: given by name, or all of them. */
static int collect_hosts(struct qctx *c, const struct route_tab *ra, const struct route_tab *rb,
			 struct hostpair **out, size_t *n, struct dstate *d)
{
	size_t want = c->req->argc > 2 ? c->req->argc - 2 : rb->nhosts;
	struct hostpair *hp = calloc(want ? want : 1, sizeof(*hp));
	if (!hp)
		return -1;
	size_t k = 0;
	for (size_t i = 0; i < want; i++) {
		const char *name = c->req->argc > 2 ? c->req->argv[2 + i] : rb->hosts[i].name;
		uint32_t ia, ib;
		int in_a = route_find_host(ra, name, &ia) == AN_OK, in_b = route_find_host(rb, name, &ib) == AN_OK;
		if (in_a && in_b) {
			hp[k++] = (struct hostpair){ ia, ib, name, 0 };
		} else if (c->req->argc > 2) {
			line(d, "host-missing %.100s %s", name,
			     !in_a && !in_b ? "in-neither" : !in_a ? "only-in-to" : "only-in-from");
		}
	}
	*out = hp;
	*n = k;
	return 0;
}

/* Without a host list only destinations whose LID has a changed LFT entry
 * or port can have another route (docs/protocol.md). */
static int dest_changed(const struct dstate *d, const struct route_tab *ra, const struct route_tab *rb,
			const struct hostpair *h)
{
	uint32_t la = ra->eps[route_host_ep(ra, h->a)].lid, lb = rb->eps[route_host_ep(rb, h->b)].lid;
	return (la < d->nlid && d->lid_changed[la]) || (lb < d->nlid && d->lid_changed[lb]);
}

/* -1 (ERR written) when the walk would exceed DIFF_WALKS_MAX. */
static int report_routes(struct qctx *c, struct dstate *d, const struct route_tab *ra, const struct route_tab *rb,
			 uint64_t *pairs, uint32_t *hosts)
{
	struct hostpair *hp;
	size_t n;
	*pairs = 0;
	*hosts = 0;
	if (collect_hosts(c, ra, rb, &hp, &n, d)) {
		query_error(c->out, "NOMEM", "out of memory");
		return -1;
	}
	int given = c->req->argc > 2;
	size_t ndest = 0, listed = 0;
	for (size_t j = 0; j < n; j++)
		ndest += given || dest_changed(d, ra, rb, &hp[j]);
	if ((uint64_t)ndest * n > DIFF_WALKS_MAX) {
		query_error(c->out, "TOOMANY",
			    "%zu destinations changed for %zu hosts: %llu routes to compare, more than %u; name the hosts "
			    "(diff G1 G2 HOST ...)",
			    ndest, n, (unsigned long long)ndest * n, DIFF_WALKS_MAX);
		free(hp);
		return -1;
	}
	for (size_t j = 0; j < n; j++) {
		if (!given && !dest_changed(d, ra, rb, &hp[j]))
			continue;
		for (size_t i = 0; i < n; i++) {
			if (i == j || !route_changed(ra, hp[i].a, hp[j].a, rb, hp[i].b, hp[j].b))
				continue;
			hp[i].changed++;
			hp[j].changed++;
			(*pairs)++;
			if (given && listed < DIFF_PAIRS_MAX) {
				line(d, "route %s %s", hp[i].name, hp[j].name);
				listed++;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		if (hp[i].changed) {
			line(d, "host %s routes=%u", hp[i].name, hp[i].changed);
			(*hosts)++;
		}
	free(hp);
	return 0;
}

void answer_diff(struct qctx *c)
{
	uint64_t g1, g2;
	if (parse_gen(c, c->req->argv[0], &g1) || parse_gen(c, c->req->argv[1], &g2))
		return;
	if (c->req->argc - 2 > TOPO_MATRIX_MAX) {
		query_error(c->out, "TOOMANY", "diff takes at most %d hosts, got %zu", TOPO_MATRIX_MAX, c->req->argc - 2);
		return;
	}
	char err[SNAP_ERR_LEN];
	struct snap *a = NULL, *b = NULL;
	struct route_tab *ra = NULL, *rb = NULL;
	struct dstate d = { 0 };
	if (history_get(c->f->hist, g1, &a, NULL, err) || history_get(c->f->hist, g2, &b, NULL, err)) {
		query_error(c->out, "NOTFOUND", "%s", err);
		goto out;
	}
	int rc = route_build(a, c->f->map, &ra);
	if (!rc)
		rc = route_build(b, c->f->map, &rb);
	if (rc) {
		query_error(c->out, "BUILD", "route index: %s", an_strerror(rc));
		goto out;
	}
	d.a = a;
	d.b = b;
	d.nlid = (a->max_lid > b->max_lid ? a->max_lid : b->max_lid) + 1;
	d.lid_changed = calloc(d.nlid, 1);
	d.body = evbuffer_new();
	if (!d.lid_changed || !d.body) {
		query_error(c->out, "NOMEM", "out of memory");
		goto out;
	}
	report_nodes(&d, a, b, 1);
	report_nodes(&d, b, a, 0);
	report_links(&d, a, b, 1);
	report_links(&d, b, a, 0);
	report_common(&d);
	uint64_t pairs;
	uint32_t hosts;
	if (report_routes(c, &d, ra, rb, &pairs, &hosts))
		goto out;
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " from=%" PRIu64 " to=%" PRIu64
			    " links_down=%u links_up=%u nodes_gone=%u nodes_new=%u ports=%u lft_switches=%u "
			    "lft_entries=%u routes_changed=%" PRIu64 " hosts_changed=%u lines=%zu\n",
			    c->gen, g1, g2, d.links_down, d.links_up, d.nodes_gone, d.nodes_new, d.ports, d.lft_switches,
			    d.lft_entries, pairs, hosts, d.lines);
	evbuffer_add_buffer(c->out, d.body);
out:
	if (d.body)
		evbuffer_free(d.body);
	free(d.lid_changed);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

/* ---- watch -------------------------------------------------------------------- */

int watch_args(const struct proto_req *req, uint64_t *gen, unsigned *ms, struct evbuffer *out)
{
	char *end;
	const char *g = req->argv[0];
	if (g[0] < '0' || g[0] > '9' || (*gen = strtoull(g, &end, 10), *end)) {
		query_error(out, "USAGE", "watch GEN [TIMEOUT_MS]: bad generation '%.40s'", g);
		return -1;
	}
	*ms = TOPO_WATCH_DEFAULT_MS;
	if (req->argc > 1) {
		const char *t = req->argv[1];
		unsigned long v = t[0] >= '0' && t[0] <= '9' ? strtoul(t, &end, 10) : 0;
		if (t[0] < '0' || t[0] > '9' || *end || v > TOPO_WATCH_MAX_MS) {
			query_error(out, "USAGE", "watch GEN [TIMEOUT_MS]: timeout '%.40s' is not 0..%d milliseconds", t,
				    TOPO_WATCH_MAX_MS);
			return -1;
		}
		*ms = (unsigned)v;
	}
	return 0;
}

void watch_reply(struct evbuffer *out, uint64_t gen, int changed)
{
	evbuffer_add_printf(out, "OK gen=%" PRIu64 " changed=%d\n", gen, changed);
}

void answer_watch(struct qctx *c)
{
	uint64_t gen;
	unsigned ms;
	if (watch_args(c->req, &gen, &ms, c->out))
		return;
	watch_reply(c->out, c->gen, c->gen != gen);
}
