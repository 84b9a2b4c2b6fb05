/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simgrid.c - tii_get_simgrid_platform: the `simgrid` request
 * (docs/protocol.md) and its reply, the platform's XML, as one string.
 */
#include <stdlib.h>
#include <string.h>

#include "tii_impl.h"
#include "util.h"

/* The XML lines topod writes around the hosts, links and routes: 10
 * before (declaration, doctype, comment, <platform>, <config>, 3 props,
 * </config>, <zone>) and 2 after. */
#define SG_FIXED_LINES 12

struct sg_ctx {
	size_t nhosts;
	struct tbuf xml;
	uint64_t bytes;
	size_t nlines;
};

static int sg_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct sg_ctx *c = ctx;
	uint64_t hosts, links, routes;
	tbuf_release(&c->xml);
	if (tii__kv_u64(kv, "hosts", &hosts) || hosts != c->nhosts || tii__kv_u64(kv, "routes", &routes) ||
	    routes != hosts * (hosts - 1) || tii__kv_u64(kv, "links", &links) ||
	    links > (uint64_t)TOPO_SIMGRID_HOPS_MAX * (routes + 1) + 2 * hosts ||
	    nlines != SG_FIXED_LINES + hosts + links + routes || tii__kv_u64(kv, "bytes", &c->bytes) ||
	    c->bytes > TOPO_SIMGRID_BYTES_MAX || c->bytes < nlines)
		return TII_E_PROTO;
	/* Grows as lines arrive, never past what was announced. */
	c->xml = (struct tbuf)TBUF_INIT((size_t)c->bytes);
	c->nlines = nlines;
	return 0;
}

static int sg_line(void *ctx, size_t i, char *line, size_t len)
{
	struct sg_ctx *c = ctx;
	if ((i == 0 && strncmp(line, "<?xml ", 6)) || (i + 1 == c->nlines && strcmp(line, "</platform>")))
		return TII_E_PROTO;
	if (tbuf_add(&c->xml, line, len) || tbuf_add(&c->xml, "\n", 1))
		return c->xml.len + len + 1 > c->xml.max ? TII_E_PROTO : TII_E_NOMEM;
	return 0;
}

int tii_get_simgrid_platform(tii_t *t, const char *const *hosts, size_t n, char **xml, size_t *len)
{
	if (!t || !hosts || !n || !xml)
		return TII_E_INVAL;
	if (n > TII_SIMGRID_HOSTS_MAX)
		return TII_E_TOOMANY;
	struct sg_ctx c = { .nhosts = n, .xml = TBUF_INIT(0) };
	static const struct tii__handler h = { sg_head, sg_line, 0 };
	int rc = tii__req_begin(t, TII__SIMGRID);
	rc = rc ? rc : tii__req_hosts(t, hosts, n);
	rc = rc ? rc : tii__request(t, &h, &c);
	if (!rc && c.xml.len != c.bytes)
		rc = TII_E_PROTO;
	if (rc) {
		tbuf_release(&c.xml);
		return rc;
	}
	*xml = tbuf_detach(&c.xml, len);
	return 0;
}

/* ---- the whole fabric ----------------------------------------------------- */

static int sgf_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct sg_ctx *c = ctx;
	uint64_t hosts, omitted, zones, links, routes;
	tbuf_release(&c->xml);
	/* Every count bounded by the limits before anything is kept; the lines
	 * cannot outnumber the bytes. */
	if (tii__kv_u64(kv, "hosts", &hosts) || !hosts || hosts > TOPO_SIMGRID_ALL_HOSTS_MAX ||
	    tii__kv_u64(kv, "omitted", &omitted) || tii__kv_u64(kv, "zones", &zones) || !zones || zones > hosts ||
	    tii__kv_u64(kv, "links", &links) || tii__kv_u64(kv, "routes", &routes) || links > nlines ||
	    routes > nlines || routes < zones * (zones - 1) + hosts || tii__kv_u64(kv, "bytes", &c->bytes) ||
	    c->bytes > TOPO_SIMGRID_ALL_BYTES_MAX || c->bytes < nlines || nlines < SG_FIXED_LINES + hosts + links + routes)
		return TII_E_PROTO;
	c->xml = (struct tbuf)TBUF_INIT((size_t)c->bytes);
	c->nlines = nlines;
	c->nhosts = (size_t)hosts;
	return 0;
}

int tii_get_simgrid_fabric(tii_t *t, char **xml, size_t *len, size_t *hosts)
{
	if (!t || !xml)
		return TII_E_INVAL;
	struct sg_ctx c = { .xml = TBUF_INIT(0) };
	static const struct tii__handler h = { sgf_head, sg_line, 0 };
	int rc = tii__req_begin(t, TII__SIMGRID);
	rc = rc ? rc : tii__req_word(t, "all", 3);
	rc = rc ? rc : tii__request(t, &h, &c);
	if (!rc && c.xml.len != c.bytes)
		rc = TII_E_PROTO;
	if (rc) {
		tbuf_release(&c.xml);
		return rc;
	}
	if (hosts)
		*hosts = c.nhosts;
	*xml = tbuf_detach(&c.xml, len);
	return 0;
}
