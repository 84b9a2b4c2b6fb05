/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plane_cmd.c - see plane_cmd.h. Outside a server (qctx.planes NULL) there
 * is one plane, "default", whose fabric is the request's.
 */
#include "plane_cmd.h"

#include <inttypes.h>
#include <string.h>

#include "fabric.h"
#include "route.h"

#define DEFAULT_PLANE "default"

int plane_name_ok(const char *s)
{
	size_t n = strlen(s);
	return n >= 1 && n <= TOPO_PLANE_NAME_MAX &&
	       strspn(s, TOPO_PLANE_NAME_CHARS) == n;
}

/* The planes of the request, or the one-plane view of it. */
static void view(const struct qctx *c, struct qplanes *v)
{
	if (c->planes) {
		*v = *c->planes;
		return;
	}
	memset(v, 0, sizeof(*v));
	v->n = 1;
	v->name[0] = DEFAULT_PLANE;
	v->f[0] = c->f;
}

void answer_planes(struct qctx *c)
{
	struct qplanes v;
	view(c, &v);
	const char *host = c->req->argc ? c->req->argv[0] : NULL;
	struct evbuffer *body = evbuffer_new();
	size_t lines = 0;
	if (!body) {
		query_error(c->out, "NOMEM", "out of memory");
		return;
	}
	for (int i = 0; i < v.n; i++) {
		const struct fabric *f = v.f[i];
		const struct fabric_index *x = f->index;
		uint32_t ep = 0;
		uint16_t dlid = 0;
		int found = host && x && route_resolve(x->rt, host, &ep, &dlid) == AN_OK;
		if (host && !found)
			continue;
		evbuffer_add_printf(body,
				    "%s generation=%" PRIu64 " nodes=%u switches=%u hosts=%u sm_guid=0x%016" PRIx64
				    " selected=%d",
				    v.name[i], f->snap->generation, f->snap->nnodes, x ? x->switches : 0,
				    x ? x->rt->nhosts : 0, f->snap->sm_guid,
				    v.selected ? *v.selected == i : i == 0);
		if (found)
			evbuffer_add_printf(body, " port_guid=0x%016" PRIx64 " lid=%u", x->rt->eps[ep].guid, dlid);
		evbuffer_add(body, "\n", 1);
		lines++;
	}
	if (host && !lines) {
		query_error(c->out, "NOTFOUND", "'%.100s' is on none of the %d planes", host, v.n);
	} else {
		evbuffer_add_printf(c->out, "OK gen=%" PRIu64 " planes=%d lines=%zu\n", c->gen, v.n, lines);
		evbuffer_add_buffer(c->out, body);
	}
	evbuffer_free(body);
}

void answer_plane(struct qctx *c)
{
	struct qplanes v;
	view(c, &v);
	if (!c->req->argc) {
		int sel = v.selected ? *v.selected : 0;
		evbuffer_add_printf(c->out, "OK plane=%s gen=%" PRIu64 "\n", sel < 0 ? "auto" : v.name[sel],
				    sel < 0 ? c->gen : v.f[sel]->snap->generation);
		return;
	}
	const char *name = c->req->argv[0];
	if (!strcmp(name, "auto")) {
		if (v.selected)
			*v.selected = -1;
		evbuffer_add_printf(c->out, "OK plane=auto gen=%" PRIu64 "\n", c->gen);
		return;
	}
	for (int i = 0; i < v.n; i++)
		if (!strcmp(v.name[i], name)) {
			if (v.selected)
				*v.selected = i;
			evbuffer_add_printf(c->out, "OK plane=%s gen=%" PRIu64 "\n", v.name[i], v.f[i]->snap->generation);
			return;
		}
	char list[TOPO_PLANES_MAX * (TOPO_PLANE_NAME_MAX + 2)] = "";
	for (int i = 0; i < v.n; i++) {
		strcat(list, i ? ", " : "");
		strcat(list, v.name[i]);
	}
	query_error(c->out, "NOPLANE", "no plane '%.40s' (planes: %s, or auto)", name, list);
}
