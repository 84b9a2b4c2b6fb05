/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plane.c - tii_get_planes ("planes"): the fabric planes one topod serves.
 */
#include "tii_impl.h"

#include <stdio.h>
#include <string.h>

struct planes_ctx {
	struct tii_plane *p;
	size_t n;
};

static int planes_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct planes_ctx *c = ctx;
	(void)kv;
	c->n = 0;
	return nlines > TOPO_PLANES_MAX ? TII_E_PROTO : 0;
}

/* "NAME generation=G nodes=N switches=S hosts=H sm_guid=0x.. selected=0|1 [port_guid=0x.. lid=L]" */
static int planes_line(void *ctx, size_t i, char *line, size_t len)
{
	struct planes_ctx *c = ctx;
	char *p = line, *name = tii__word(&p);
	struct tii__kv kv;
	long nodes, sw, hosts, sel, lid;
	(void)len;
	if (i >= TOPO_PLANES_MAX || !name || strlen(name) > TII_PLANE_NAME_MAX || tii__kv_parse(p, &kv))
		return TII_E_PROTO;
	struct tii_plane *pl = &c->p[i];
	memset(pl, 0, sizeof(*pl));
	snprintf(pl->name, sizeof(pl->name), "%s", name);
	if (tii__kv_u64(&kv, "generation", &pl->generation) || tii__kv_u64(&kv, "sm_guid", &pl->sm_guid) ||
	    tii__kv_int(&kv, "nodes", 0, 1L << 30, &nodes) || tii__kv_int(&kv, "switches", 0, 1L << 30, &sw) ||
	    tii__kv_int(&kv, "hosts", 0, 1L << 30, &hosts) || tii__kv_int(&kv, "selected", 0, 1, &sel))
		return TII_E_PROTO;
	pl->nodes = (uint32_t)nodes;
	pl->switches = (uint32_t)sw;
	pl->hosts = (uint32_t)hosts;
	pl->selected = (int)sel;
	if (tii__kv_get(&kv, "lid")) {
		if (tii__kv_u64(&kv, "port_guid", &pl->port_guid) || tii__kv_int(&kv, "lid", 0, 0xFFFF, &lid))
			return TII_E_PROTO;
		pl->lid = (uint16_t)lid;
	}
	c->n = i + 1;
	return 0;
}

int tii_get_planes(tii_t *t, const char *host, struct tii_plane *planes, size_t *n)
{
	if (!t || !planes || !n)
		return TII_E_INVAL;
	static const struct tii__handler h = { planes_head, planes_line, 0 };
	struct planes_ctx c = { planes, 0 };
	int rc = tii__req_begin(t, TII__PLANES);
	rc = rc ? rc : host ? tii__req_host(t, host) : 0;
	rc = rc ? rc : tii__request(t, &h, &c);
	*n = rc ? 0 : c.n;
	return rc;
}
