/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * history_cmd.c - the `history` and `diff` commands (docs/protocol.md).
 *
 * `diff` rebuilds both generations from the history (history.h) and their
 * route tables; what changed between them is diff_build()'s (analysis/
 * diff.h), this file only parses the request and words the reply.
 */
#include "history_cmd.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "diff.h"
#include "fabric.h"
#include "history.h"
#include "rate.h"
#include "route.h"
#include "util.h"

#define DIFF_PAIRS_MAX 10000 /* route lines listed; the counts cover all */
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
			query_error(c->out, "NOGENERATION", "no generation in the history was served at %.40s", arg);
			return -1;
		}
		return 0;
	}
	if (util_parse_u64(arg, NULL, UINT64_MAX, gen)) {
		query_error(c->out, "USAGE", "bad generation '%.40s'", arg);
		return -1;
	}
	return 0;
}

/* The reply's body: one line per record, counted for the head's lines=. */
struct body {
	struct evbuffer *buf;
	size_t lines;
};

static void line(struct body *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(struct body *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	evbuffer_add_vprintf(o->buf, fmt, ap);
	va_end(ap);
	evbuffer_add(o->buf, "\n", 1);
	o->lines++;
}

static void desc_of(const struct snap_node *n, char *buf, size_t len)
{
	snap_escape(n->desc, buf, len);
}

static const struct snap_port *port_of(const struct snap *s, uint32_t node, unsigned p)
{
	return &s->ports[s->nodes[node].port0 + p];
}

/* Only the fields that changed, in iblinkinfo's words (state=Init->Active
 * width=4X->1X speed=QDR->SDR), the node's name beside its GUID. */
static void format_port(struct body *o, const struct snap *a, const struct snap *b, const struct diff_change *c,
			const struct snap_node *n)
{
	const struct snap_port *u = port_of(a, c->from_node, c->port), *v = port_of(b, c->to_node, c->port);
	char desc[SNAP_DESC_LEN * 4 + 1], f[256];
	size_t k = 0;
	desc_of(n, desc, sizeof(desc));
	f[0] = 0;
#define FIELD(...) (k += (size_t)snprintf(f + k, k < sizeof(f) ? sizeof(f) - k : 0, __VA_ARGS__))
	if (u->present != v->present)
		FIELD(" present=%s->%s", u->present ? "yes" : "no", v->present ? "yes" : "no");
	if (u->lid != v->lid)
		FIELD(" lid=%u->%u", u->lid, v->lid);
	if (u->lmc != v->lmc)
		FIELD(" lmc=%u->%u", u->lmc, v->lmc);
	if (c->kind == DIFF_PORT_ATTR && u->state != v->state)
		FIELD(" state=%s->%s", rate_state_name(u->state), rate_state_name(v->state));
	if (c->kind == DIFF_PORT_ATTR && u->width != v->width)
		FIELD(" width=%s->%s", rate_width_name(u->width), rate_width_name(v->width));
	if (c->kind == DIFF_PORT_ATTR && (u->speed != v->speed || u->espeed != v->espeed))
		FIELD(" speed=%s->%s", rate_speed_name(u->speed, u->espeed), rate_speed_name(v->speed, v->espeed));
#undef FIELD
	line(o, "port 0x%016" PRIx64 "/%u \"%s\"%s", n->guid, c->port, desc, f);
}

/* A port whose only change is its state between two linked states (Init ->
 * Active: every port after a subnet manager starts) moves no route; such
 * ports are counted per (old, new) state in one line each, not listed. */
static int state_only(const struct snap *a, const struct snap *b, const struct diff_change *c)
{
	if (c->kind != DIFF_PORT_ATTR)
		return 0;
	const struct snap_port *u = port_of(a, c->from_node, c->port), *v = port_of(b, c->to_node, c->port);
	return u->width == v->width && u->speed == v->speed && u->espeed == v->espeed;
}

static void format_states(struct body *o, const struct snap *a, const struct snap *b, const struct diff *d)
{
	uint32_t count[SNAP_PORT_ACTIVE + 1][SNAP_PORT_ACTIVE + 1] = { { 0 } };
	for (size_t i = 0; i < d->nchanges; i++) {
		const struct diff_change *c = &d->changes[i];
		if (!state_only(a, b, c))
			continue;
		uint8_t x = port_of(a, c->from_node, c->port)->state, y = port_of(b, c->to_node, c->port)->state;
		if (x <= SNAP_PORT_ACTIVE && y <= SNAP_PORT_ACTIVE)
			count[x][y]++;
	}
	for (unsigned x = 0; x <= SNAP_PORT_ACTIVE; x++)
		for (unsigned y = 0; y <= SNAP_PORT_ACTIVE; y++)
			if (count[x][y])
				line(o, "port-states %s->%s ports=%u", rate_state_name((uint8_t)x),
				     rate_state_name((uint8_t)y), count[x][y]);
}

static void format_change(struct body *o, const struct snap *a, const struct snap *b, const struct diff_change *c)
{
	char da[SNAP_DESC_LEN * 4 + 1], db[SNAP_DESC_LEN * 4 + 1];
	const struct snap *s = c->from_node != DIFF_NONE ? a : b;
	const struct snap_node *n = &s->nodes[c->from_node != DIFF_NONE ? c->from_node : c->to_node];
	switch (c->kind) {
	case DIFF_NODE_GONE:
	case DIFF_NODE_NEW:
		desc_of(n, da, sizeof(da));
		line(o, "%s 0x%016" PRIx64 " %s \"%s\"", c->kind == DIFF_NODE_GONE ? "node-gone" : "node-new", n->guid,
		     snap_node_type_str(n->type), da);
		break;
	case DIFF_LINK_DOWN:
	case DIFF_LINK_UP:
		desc_of(n, da, sizeof(da));
		desc_of(&s->nodes[c->peer], db, sizeof(db));
		line(o, "%s 0x%016" PRIx64 "/%u 0x%016" PRIx64 "/%u \"%s\" \"%s\"",
		     c->kind == DIFF_LINK_DOWN ? "link-down" : "link-up", n->guid, c->port, s->nodes[c->peer].guid,
		     c->peer_port, da, db);
		break;
	case DIFF_PORT_LID:
	case DIFF_PORT_ATTR:
		format_port(o, a, b, c, n);
		break;
	case DIFF_LFT:
		desc_of(&b->nodes[c->to_node], db, sizeof(db));
		line(o, "lft 0x%016" PRIx64 " entries=%u first_lid=%u \"%s\"", n->guid, c->entries, c->first_lid, db);
		break;
	}
}

static const char *where_name(uint8_t w)
{
	return w == DIFF_IN_NEITHER ? "in-neither" : w == DIFF_ONLY_IN_TO ? "only-in-to" : "only-in-from";
}

static void format_diff(struct body *o, const struct snap *a, const struct snap *b, const struct diff *d)
{
	for (size_t i = 0; i < d->nchanges; i++)
		if (!state_only(a, b, &d->changes[i]))
			format_change(o, a, b, &d->changes[i]);
	format_states(o, a, b, d);
	for (size_t i = 0; i < d->nmissing; i++)
		line(o, "host-missing %.100s %s", d->missing[i].name, where_name(d->missing[i].where));
	for (size_t k = 0; k < d->npairs; k++)
		line(o, "route %s %s", d->hosts[d->pairs[k].src].name, d->hosts[d->pairs[k].dst].name);
	for (size_t i = 0; i < d->nhosts; i++)
		if (d->hosts[i].changed)
			line(o, "host %s routes=%u", d->hosts[i].name, d->hosts[i].changed);
}

/* Both generations' route tables; 0, or -1 with the ERR reply written. */
static int build_both(struct qctx *c, uint64_t g1, uint64_t g2, struct snap **a, struct snap **b,
		      struct route_tab **ra, struct route_tab **rb)
{
	char err[SNAP_ERR_LEN];
	int rc = history_get(c->f->hist, g1, a, NULL, err);
	if (!rc)
		rc = history_get(c->f->hist, g2, b, NULL, err);
	if (rc) {
		query_error(c->out, rc > 0 ? "NOGENERATION" : !strcmp(err, "out of memory") ? "NOMEM" : "BUILD", "%s", err);
		return -1;
	}
	rc = route_build(*a, c->f->map, ra);
	if (!rc)
		rc = route_build(*b, c->f->map, rb);
	if (rc) {
		query_error(c->out, "BUILD", "route index: %s", an_strerror(rc));
		return -1;
	}
	return 0;
}

static void reply_diff(struct qctx *c, uint64_t g1, uint64_t g2, const struct route_tab *ra,
		       const struct route_tab *rb)
{
	char err[AN_ERR_LEN];
	struct diff *d = NULL;
	const char *const *names = c->req->argc > 2 ? c->req->argv + 2 : NULL;
	int rc = diff_build(ra, rb, names, c->req->argc - 2, DIFF_WALKS_MAX, DIFF_PAIRS_MAX, &d, err);
	struct body o = { evbuffer_new(), 0 };
	if (rc == AN_E_RANGE)
		query_error(c->out, "TOOMANY", "%s; name the hosts (diff G1 G2 HOST ...)", err);
	else if (rc || !o.buf)
		query_error(c->out, "NOMEM", "out of memory");
	if (rc || !o.buf)
		goto out;
	format_diff(&o, ra->snap, rb->snap, d);
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " from=%" PRIu64 " to=%" PRIu64
			    " links_down=%u links_up=%u nodes_gone=%u nodes_new=%u ports=%u lft_switches=%u "
			    "lft_entries=%u routes_changed=%" PRIu64 " hosts_changed=%u lines=%zu\n",
			    c->gen, g1, g2, d->links_down, d->links_up, d->nodes_gone, d->nodes_new, d->ports,
			    d->lft_switches, d->lft_entries, d->routes_changed, d->hosts_changed, o.lines);
	evbuffer_add_buffer(c->out, o.buf);
out:
	if (o.buf)
		evbuffer_free(o.buf);
	diff_free(d);
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
	if (c->req->argc > 2 && qctx_dup_names(c, c->req->argv + 2, c->req->argc - 2))
		return;
	struct snap *a = NULL, *b = NULL;
	struct route_tab *ra = NULL, *rb = NULL;
	if (!build_both(c, g1, g2, &a, &b, &ra, &rb))
		reply_diff(c, g1, g2, ra, rb);
	route_free(ra);
	route_free(rb);
	snap_free(a);
	snap_free(b);
}

/* ---- watch -------------------------------------------------------------------- */

int watch_args(const struct proto_req *req, uint64_t *gen, unsigned *ms, struct evbuffer *out)
{
	const char *g = req->argv[0];
	if (util_parse_u64(g, NULL, UINT64_MAX, gen)) {
		query_error(out, "USAGE", "watch GEN [TIMEOUT_MS]: bad generation '%.40s'", g);
		return -1;
	}
	*ms = TOPO_WATCH_DEFAULT_MS;
	if (req->argc > 1) {
		const char *t = req->argv[1];
		uint64_t v;
		if (util_parse_u64(t, NULL, TOPO_WATCH_MAX_MS, &v)) {
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
