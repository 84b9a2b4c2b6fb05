/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * textdump.c - snapshot from ibnetdiscover topology + ibroute/opensm LFT dumps.
 *
 * ibnetdiscover's text is a record per node:
 *     sysimgguid=0x200001
 *     switchguid=0x200001(200001)          or caguid=0x.. / rtguid=0x..
 *     Switch  8 "S-0000000000200001"   # "desc" base port 0 lid 3 lmc 0
 *     [1]  "H-0000000000100003"[1](100004)   # "Hca2" lid 4 4xSDR
 *     Ca  2 "H-0000000000100009"       # "desc"
 *     [1](10000a)  "S-0000000000200001"[2]   # lid 6 lmc 0 "Switch2" lid 3 4xSDR
 * Links name the peer by its quoted id, so they are resolved after all nodes
 * are read. The dump lists only ports whose link is up: a switch's other
 * ports are recorded as present and DOWN, a CA's as absent (their GUIDs are
 * not in the file).
 */
#include "textdump.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"

#define ID_MAX 128

struct pend_link {
	uint32_t node;
	uint8_t port, rport;
	char rid[ID_MAX];
};

struct idx {
	char id[ID_MAX];
	uint32_t node;
};

struct parser {
	const char *path;
	unsigned long line;
	char *err;
	struct snap *s;
	struct idx *ids;
	size_t nids, capids;
	struct pend_link *links;
	size_t nlinks, caplinks;
};

static int perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *p, const char *fmt, ...)
{
	char msg[SNAP_ERR_LEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Keep the path short enough that the reason always fits. */
	snprintf(p->err, SNAP_ERR_LEN, "%.80s:%lu: %.160s", p->path, p->line, msg);
	return -1;
}

/* Reads one line into buf, bounded; returns 1 on a line, 0 at EOF, -1 if a
 * line is longer than TEXT_LINE_MAX or contains a NUL byte. */
static int get_line(FILE *f, char *buf, size_t n)
{
	size_t len = 0;
	int c;
	while ((c = getc(f)) != EOF) {
		if (c == '\n')
			break;
		if (c == '\0' || len + 1 >= n)
			return -1;
		buf[len++] = (char)c;
	}
	if (c == EOF && len == 0)
		return 0;
	if (len && buf[len - 1] == '\r')
		len--;
	buf[len] = '\0';
	return 1;
}

static int parse_hex64(const char *s, uint64_t *v, const char **end)
{
	char *e;
	errno = 0;
	unsigned long long x = strtoull(s, &e, 16);
	if (errno || e == s)
		return -1;
	*v = x;
	if (end)
		*end = e;
	return 0;
}

/* Parses `"id"` at *s into id; advances *s past the closing quote. */
static int parse_quoted(const char **s, char *out, size_t n)
{
	const char *p = *s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '"')
		return -1;
	const char *q = strchr(p + 1, '"');
	if (!q || (size_t)(q - p - 1) >= n)
		return -1;
	memcpy(out, p + 1, (size_t)(q - p - 1));
	out[q - p - 1] = '\0';
	*s = q + 1;
	return 0;
}

/* Link "4xQDR" style into PortInfo width/speed/ext-speed codes. */
static void parse_rate(const char *c, struct snap_port *pt)
{
	static const struct { const char *w; uint8_t code; } widths[] = {
		{ "12x", 8 }, { "1x", 1 }, { "2x", 16 }, { "4x", 2 }, { "8x", 4 },
	};
	static const struct { const char *s; uint8_t speed, espeed; } speeds[] = {
		{ "FDR10", 4, 0 }, { "SDR", 1, 0 }, { "DDR", 2, 0 }, { "QDR", 4, 0 },
		{ "FDR", 4, 1 }, { "EDR", 4, 2 }, { "HDR", 4, 4 }, { "NDR", 4, 8 },
	};
	/* The rate is the last token of the comment. */
	const char *tok = strrchr(c, ' ');
	tok = tok ? tok + 1 : c;
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		size_t l = strlen(widths[i].w);
		if (strncmp(tok, widths[i].w, l))
			continue;
		for (size_t j = 0; j < sizeof(speeds) / sizeof(speeds[0]); j++)
			if (!strcmp(tok + l, speeds[j].s)) {
				pt->width = widths[i].code;
				pt->speed = speeds[j].speed;
				pt->espeed = speeds[j].espeed;
				return;
			}
	}
}

static int add_id(struct parser *p, const char *id, uint32_t node)
{
	if (util_grow((void **)&p->ids, &p->capids, p->nids + 1, sizeof(*p->ids)))
		return perr(p, "out of memory");
	snprintf(p->ids[p->nids].id, ID_MAX, "%s", id);
	p->ids[p->nids++].node = node;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp(((const struct idx *)a)->id, ((const struct idx *)b)->id);
}

/* The GUID line before a node record: what the record's node will be. */
struct pending_node {
	uint64_t sysimg, nguid, pguid;
	int have_guid;
};

/* "Switch 36 "id" # "desc" ... lid N lmc M" or "Ca 2 "id" # "desc"": adds
 * the node; returns its index, or -1 with the error set. */
static int64_t parse_node_line(struct parser *p, const char *s, uint8_t type, struct pending_node *pn)
{
	const char *q = s + (type == SNAP_NODE_SWITCH ? 6 : 2);
	char *e;
	long np = strtol(q, &e, 10);
	if (e == q || np < 1 || np > SNAP_MAX_PORTS_PER_NODE)
		return perr(p, "bad port count");
	q = e;
	char id[ID_MAX], desc[SNAP_DESC_LEN + 1] = "";
	if (parse_quoted(&q, id, sizeof(id)))
		return perr(p, "expected a quoted node id");
	if (!pn->have_guid)
		return perr(p, "node \"%.64s\" has no GUID line before it", id);
	const char *hash = strchr(q, '#');
	unsigned lid = 0, lmc = 0;
	if (hash) {
		const char *d = hash + 1;
		while (*d == ' ')
			d++;
		if (*d == '"') {
			/* A NodeDescription may itself contain quotes: it ends at
			 * the last quote before the switch's "base port" /
			 * "enhanced port" tail, or of the line. */
			const char *end = strstr(d, "\" base port");
			if (!end)
				end = strstr(d, "\" enhanced port");
			if (!end)
				end = strrchr(d, '"');
			size_t dl = end > d ? (size_t)(end - d - 1) : 0;
			if (dl > SNAP_DESC_LEN)
				dl = SNAP_DESC_LEN;
			memcpy(desc, d + 1, dl);
			desc[dl] = '\0';
			const char *l = strstr(end, " lid ");
			if (l)
				sscanf(l, " lid %u lmc %u", &lid, &lmc);
		}
	}
	int64_t idx = snap_add_node(p->s, type, pn->nguid, pn->sysimg, (uint8_t)np, desc, strlen(desc));
	if (idx < 0)
		return perr(p, "too many nodes or out of memory");
	/* A switch's ports all exist and share its GUID; a CA port the dump
	 * does not list has no GUID we could know, so it is left absent
	 * rather than invented. */
	if (type == SNAP_NODE_SWITCH) {
		for (unsigned k = 0; k <= (unsigned)np; k++) {
			struct snap_port *pt = snap_port_of(p->s, (uint32_t)idx, k);
			pt->present = 1;
			pt->state = SNAP_PORT_DOWN;
			pt->guid = pn->pguid;
		}
		struct snap_port *p0 = snap_port_of(p->s, (uint32_t)idx, 0);
		if (lid > SNAP_MAX_LID || lmc > 7)
			return perr(p, "switch LID %u or LMC %u out of range", lid, lmc);
		p0->lid = (uint16_t)lid;
		p0->lmc = (uint8_t)lmc;
		p0->state = SNAP_PORT_ACTIVE;
	}
	if (add_id(p, id, (uint32_t)idx))
		return -1;
	pn->have_guid = 0;
	return idx;
}

/* "[N](guid) "peer-id"[M] # ... lid L lmc K": fills port N of node cur and
 * queues the link until every node id is known. */
static int parse_port_line(struct parser *p, const char *s, uint32_t cur)
{
	char *e;
	long port = strtol(s + 1, &e, 10);
	const struct snap_node *nd = &p->s->nodes[cur];
	if (e == s + 1 || *e != ']' || port < 1 || port > nd->nports)
		return perr(p, "bad port number");
	struct snap_port *pt = snap_port_of(p->s, cur, (unsigned)port);
	pt->present = 1;
	const char *q = e + 1;
	if (*q == '(') {
		uint64_t g;
		const char *ge;
		if (parse_hex64(q + 1, &g, &ge) || *ge != ')')
			return perr(p, "bad port GUID");
		pt->guid = g;
		q = ge + 1;
	}
	struct pend_link pl = { .node = cur, .port = (uint8_t)port };
	if (parse_quoted(&q, pl.rid, sizeof(pl.rid)))
		return perr(p, "expected the peer's quoted id");
	long rport;
	if (*q != '[' || (rport = strtol(q + 1, &e, 10)) < 1 || rport > SNAP_MAX_PORTS_PER_NODE || *e != ']')
		return perr(p, "bad peer port");
	pl.rport = (uint8_t)rport;
	pt->state = SNAP_PORT_ACTIVE;
	const char *hash = strchr(e, '#');
	if (hash) {
		parse_rate(hash, pt);
		unsigned lid, lmc;
		/* Only end ports print their own "lid N lmc M" first. */
		if (nd->type != SNAP_NODE_SWITCH && sscanf(hash + 1, " lid %u lmc %u", &lid, &lmc) == 2) {
			if (lid > SNAP_MAX_LID || lmc > 7)
				return perr(p, "LID %u or LMC %u out of range", lid, lmc);
			pt->lid = (uint16_t)lid;
			pt->lmc = (uint8_t)lmc;
		}
	}
	if (util_grow((void **)&p->links, &p->caplinks, p->nlinks + 1, sizeof(*p->links)))
		return perr(p, "out of memory");
	p->links[p->nlinks++] = pl;
	return 0;
}

/* After the last line: every node id is unique and every queued link
 * names a known node, agreeing from both ends. */
static int resolve_links(struct parser *p)
{
	/* An empty topology file has no node ids (p->ids NULL, which qsort
	 * and bsearch may not take). */
	if (p->nids)
		qsort(p->ids, p->nids, sizeof(*p->ids), cmp_id);
	for (size_t i = 1; i < p->nids; i++)
		if (!strcmp(p->ids[i].id, p->ids[i - 1].id))
			return perr(p, "node id \"%.64s\" appears twice", p->ids[i].id);
	for (size_t i = 0; i < p->nlinks; i++) {
		struct pend_link *pl = &p->links[i];
		struct idx key = { .node = 0 };
		snprintf(key.id, sizeof(key.id), "%s", pl->rid);
		struct idx *hit = bsearch(&key, p->ids, p->nids, sizeof(*p->ids), cmp_id);
		if (!hit)
			return perr(p, "link to unknown node \"%.64s\"", pl->rid);
		struct snap_port *a = snap_port_of(p->s, pl->node, pl->port);
		struct snap_port *b = snap_port_of(p->s, hit->node, pl->rport);
		if (!b)
			return perr(p, "link to port %u of \"%.64s\", which has fewer ports", pl->rport, pl->rid);
		/* Each link is listed from both ends; they must agree. */
		if ((a->peer_node != SNAP_NONE && (a->peer_node != hit->node || a->peer_port != pl->rport)) ||
		    (b->peer_node != SNAP_NONE && (b->peer_node != pl->node || b->peer_port != pl->port)))
			return perr(p, "link %.64s[%u] is listed inconsistently from its two ends", pl->rid,
				    pl->rport);
		snap_link(p->s, pl->node, pl->port, hit->node, pl->rport);
	}
	return 0;
}

static int parse_topology(struct parser *p, FILE *f)
{
	char line[TEXT_LINE_MAX];
	struct pending_node pn = { 0 };
	int64_t cur = -1;
	int r;
	while ((r = get_line(f, line, sizeof(line))) > 0) {
		p->line++;
		const char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			continue;
		if (!strncmp(s, "vendid=", 7) || !strncmp(s, "devid=", 6))
			continue;
		if (!strncmp(s, "sysimgguid=", 11)) {
			if (parse_hex64(s + 11, &pn.sysimg, NULL))
				return perr(p, "bad sysimgguid");
			continue;
		}
		if (!strncmp(s, "switchguid=", 11) || !strncmp(s, "caguid=", 7) || !strncmp(s, "rtguid=", 7)) {
			const char *e, *v = strchr(s, '=') + 1;
			if (parse_hex64(v, &pn.nguid, &e))
				return perr(p, "bad node GUID");
			pn.pguid = pn.nguid;
			if (*e == '(' && parse_hex64(e + 1, &pn.pguid, NULL))
				return perr(p, "bad port GUID");
			pn.have_guid = 1;
			continue;
		}
		uint8_t type = !strncmp(s, "Switch", 6) ? SNAP_NODE_SWITCH
			       : !strncmp(s, "Ca", 2)   ? SNAP_NODE_CA
			       : !strncmp(s, "Rt", 2)   ? SNAP_NODE_ROUTER
							: 0;
		if (type) {
			if ((cur = parse_node_line(p, s, type, &pn)) < 0)
				return -1;
			continue;
		}
		if (*s == '[') {
			if (cur < 0)
				return perr(p, "port line outside a node record");
			if (parse_port_line(p, s, (uint32_t)cur))
				return -1;
			continue;
		}
		return perr(p, "unrecognised line");
	}
	if (r < 0) {
		p->line++;
		return perr(p, "line longer than %d bytes or containing a NUL byte", TEXT_LINE_MAX);
	}
	return resolve_links(p);
}

static int parse_lfts(struct parser *p, FILE *f)
{
	char line[TEXT_LINE_MAX];
	uint8_t *lft = malloc(SNAP_MAX_LID + 1);
	if (!lft)
		return perr(p, "out of memory");
	int64_t sw = -1;
	uint32_t len = 0;
	int r, rc = -1;
	while ((r = get_line(f, line, sizeof(line))) > 0) {
		p->line++;
		const char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!strncmp(s, "Unicast lids [", 14)) {
			if (sw >= 0 && snap_set_lft(p->s, (uint32_t)sw, lft, len)) {
				perr(p, "cannot store LFT");
				goto out;
			}
			const char *range = strchr(s, '-'), *g = strstr(s, "guid 0x");
			uint64_t top, guid;
			if (!range || parse_hex64(range + 1, &top, NULL) || top > SNAP_MAX_LID || !g ||
			    parse_hex64(g + 5, &guid, NULL)) {
				perr(p, "bad LFT header");
				goto out;
			}
			sw = snap_find_node(p->s, guid);
			if (sw < 0 || p->s->nodes[sw].type != SNAP_NODE_SWITCH) {
				perr(p, "LFT of 0x%016" PRIx64 ", which is not a switch in the topology", guid);
				goto out;
			}
			len = (uint32_t)top + 1;
			memset(lft, SNAP_LFT_NONE, len);
			continue;
		}
		if (!strncmp(s, "0x", 2)) {
			uint64_t lid;
			const char *e;
			if (sw < 0) {
				perr(p, "LFT entry before any \"Unicast lids\" header");
				goto out;
			}
			if (parse_hex64(s, &lid, &e) || lid >= len) {
				perr(p, "LID outside the header's range");
				goto out;
			}
			char *pe;
			long port = strtol(e, &pe, 10);
			if (pe == e || port < 0 || port > 255) {
				perr(p, "bad out port");
				goto out;
			}
			if (port != SNAP_LFT_NONE && port > p->s->nodes[sw].nports) {
				perr(p, "LID %" PRIu64 " routed to port %ld of a %u-port switch", lid, port,
				     p->s->nodes[sw].nports);
				goto out;
			}
			lft[lid] = (uint8_t)port;
			continue;
		}
		/* Column headings and "N valid lids dumped" trailers. */
	}
	if (r < 0) {
		p->line++;
		perr(p, "line longer than %d bytes or containing a NUL byte", TEXT_LINE_MAX);
		goto out;
	}
	if (sw >= 0 && snap_set_lft(p->s, (uint32_t)sw, lft, len)) {
		perr(p, "cannot store LFT");
		goto out;
	}
	rc = 0;
out:
	free(lft);
	return rc;
}

int snap_load_text(const char *topo_path, const char *lfts_path, struct snap **out,
		   char err[SNAP_ERR_LEN])
{
	struct parser p = { .path = topo_path, .err = err };
	p.s = snap_new();
	if (!p.s) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		return -1;
	}
	snprintf(p.s->engine, sizeof(p.s->engine), "text");
	p.s->timestamp = snap_now_us();
	p.s->generation = p.s->timestamp;
	int rc = -1;
	FILE *f = fopen(topo_path, "r");
	if (!f) {
		snprintf(err, SNAP_ERR_LEN, "%s: %s", topo_path, strerror(errno));
		goto out;
	}
	rc = parse_topology(&p, f);
	fclose(f);
	if (rc)
		goto out;
	rc = -1;
	/* Canonical order first, so that LFT headers find their switch by
	 * binary search; canonicalize again after, which is then a no-op sort. */
	if (snap_canonicalize(p.s)) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		goto out;
	}
	if (lfts_path) {
		p.path = lfts_path;
		p.line = 0;
		f = fopen(lfts_path, "r");
		if (!f) {
			snprintf(err, SNAP_ERR_LEN, "%s: %s", lfts_path, strerror(errno));
			goto out;
		}
		rc = parse_lfts(&p, f);
		fclose(f);
		if (rc)
			goto out;
		rc = -1;
	}
	if (snap_canonicalize(p.s) || snap_normalize_lfts(p.s)) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		goto out;
	}
	char verr[SNAP_ERR_LEN];
	if (snap_validate(p.s, verr) || snap_check_hosts(p.s, verr)) {
		snprintf(err, SNAP_ERR_LEN, "%.80s: %.170s", topo_path, verr);
		goto out;
	}
	*out = p.s;
	p.s = NULL;
	rc = 0;
out:
	snap_free(p.s);
	free(p.ids);
	free(p.links);
	return rc;
}
