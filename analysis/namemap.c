/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * namemap.c - the infiniband-diags node-name-map parser (route.h, "node-name-map"):
 * untrusted text from a file an administrator edits by hand, bounded per line
 * and per entry count.
 */
#include "route.h"
#include "namemap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct map_ent {
	uint64_t guid;
	char *name;
	uint32_t line;   /* keeps "first entry wins" after an unstable qsort */
};

struct route_namemap {
	size_t n;
	struct map_ent *e;  /* sorted by GUID, unique */
};

void route_namemap_free(struct route_namemap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].name);
	free(m->e);
	free(m);
}

static int cmp_map_ent(const void *a, const void *b)
{
	const struct map_ent *x = a, *y = b;
	if (x->guid != y->guid)
		return x->guid < y->guid ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Sorted by GUID (then line); of the entries for one GUID the first stays. */
static void map_sort_unique(struct route_namemap *m)
{
	if (m->n)
		qsort(m->e, m->n, sizeof(*m->e), cmp_map_ent);
	size_t w = 0;
	for (size_t i = 0; i < m->n; i++) {
		if (w && m->e[w - 1].guid == m->e[i].guid) {
			free(m->e[i].name);
			continue;
		}
		m->e[w++] = m->e[i];
	}
	m->n = w;
}

int route_namemap_parse(const char *text, size_t len, struct route_namemap **out,
			char err[AN_ERR_LEN])
{
	struct route_namemap *m = calloc(1, sizeof(*m));
	size_t cap = 0;
	if (!m)
		goto nomem;
	const char *p = text, *end = text + len;
	for (uint32_t line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		if (le - p > ROUTE_MAP_LINE_MAX) {
			snprintf(err, AN_ERR_LEN, "line %u: longer than %d bytes", line, ROUTE_MAP_LINE_MAX);
			goto bad;
		}
		const char *q = p;
		p = nl ? nl + 1 : end;
		while (q < le && util_is_space((unsigned char)*q))
			q++;
		if (q == le || *q == '#')
			continue;
		const char *g = q;
		while (q < le && !util_is_space((unsigned char)*q))
			q++;
		uint64_t guid;
		if (util_parse_guid(g, q, &guid)) {
			snprintf(err, AN_ERR_LEN, "line %u: expected a 0x-prefixed node GUID", line);
			goto bad;
		}
		while (q < le && util_is_space((unsigned char)*q))
			q++;
		const char *ns = q, *ne;
		if (q < le && *q == '"') {
			ns = q + 1;
			ne = memchr(ns, '"', (size_t)(le - ns));
			if (!ne) {
				snprintf(err, AN_ERR_LEN, "line %u: unterminated quote", line);
				goto bad;
			}
		} else {
			ne = le;
			while (ne > ns && util_is_space((unsigned char)ne[-1]))
				ne--;
		}
		if (ne == ns || memchr(ns, '\0', (size_t)(ne - ns)))
			continue;   /* an empty or NUL-bearing name names nothing */
		if (m->n >= ROUTE_MAP_MAX_ENTRIES) {
			snprintf(err, AN_ERR_LEN, "more than %u entries", (unsigned)ROUTE_MAP_MAX_ENTRIES);
			goto bad;
		}
		if (util_grow((void **)&m->e, &cap, m->n + 1, sizeof(*m->e)))
			goto nomem;
		char *name = strndup(ns, (size_t)(ne - ns));
		if (!name)
			goto nomem;
		m->e[m->n++] = (struct map_ent){ guid, name, line };
	}
	map_sort_unique(m);
	*out = m;
	return AN_OK;
nomem:
	snprintf(err, AN_ERR_LEN, "out of memory");
	route_namemap_free(m);
	return AN_E_NOMEM;
bad:
	route_namemap_free(m);
	return AN_E_INVAL;
}

const char *route_namemap_get(const struct route_namemap *m, uint64_t guid)
{
	size_t lo = 0, hi = m ? m->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->e[mid].guid < guid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return m && lo < m->n && m->e[lo].guid == guid ? m->e[lo].name : NULL;
}


/* ---- names two machines share (namemap.h) ------------------------------- */

struct ca_key {
	uint64_t guid;
	char key[2 * ROUTE_NAME_MAX + 2];   /* "host label" */
};

/* route.c's name rules: [A-Za-z0-9._-], 1..ROUTE_NAME_MAX bytes, not "0x"
 * and hex digits. A token that breaks them is a GUID name there already. */
static int valid_token(const char *t, size_t n)
{
	if (n == 0 || n > ROUTE_NAME_MAX)
		return 0;
	int hex = n >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.'))
			return 0;
		if (i >= 2 && util_hexval(c) < 0)
			hex = 0;
	}
	return !hex;
}

/* "host label" of a description, if both tokens are valid names. */
static int host_label(const char *src, char key[2 * ROUTE_NAME_MAX + 2])
{
	const char *p = src, *tok[2];
	size_t len[2];
	for (int t = 0; t < 2; t++) {
		while (*p && util_is_space((unsigned char)*p))
			p++;
		tok[t] = p;
		while (*p && !util_is_space((unsigned char)*p))
			p++;
		len[t] = (size_t)(p - tok[t]);
		if (!valid_token(tok[t], len[t]))
			return 0;
	}
	snprintf(key, 2 * ROUTE_NAME_MAX + 2, "%.*s %.*s", (int)len[0], tok[0], (int)len[1], tok[1]);
	return 1;
}

static int cmp_ca_key(const void *a, const void *b)
{
	const struct ca_key *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->guid > y->guid) - (x->guid < y->guid);
}

/* base's entries, then one GUID-named entry per renamed CA, which wins. */
static int map_with(const struct route_namemap *base, const struct ca_key *k, const uint8_t *amb, size_t nk,
		    size_t nren, struct route_namemap **out)
{
	size_t nb = base ? base->n : 0;
	struct route_namemap *m = calloc(1, sizeof(*m));
	if (!m || !(m->e = calloc(nb + nren, sizeof(*m->e)))) {
		free(m);
		return AN_E_NOMEM;
	}
	for (size_t i = 0; i < nk; i++) {
		if (!amb[i])
			continue;
		char g[24];
		snprintf(g, sizeof(g), "0x%016llx", (unsigned long long)k[i].guid);
		m->e[m->n] = (struct map_ent){ k[i].guid, strdup(g), 0 };
		if (!m->e[m->n++].name)
			goto nomem;
	}
	for (size_t i = 0; i < nb; i++) {
		m->e[m->n] = (struct map_ent){ base->e[i].guid, strdup(base->e[i].name), base->e[i].line + 1 };
		if (!m->e[m->n++].name)
			goto nomem;
	}
	map_sort_unique(m);
	*out = m;
	return AN_OK;
nomem:
	route_namemap_free(m);
	return AN_E_NOMEM;
}

int route_namemap_disambiguate(const struct snap *s, const struct route_namemap *base, struct route_namemap **out,
			       uint32_t *renamed, char example[AN_ERR_LEN], char err[AN_ERR_LEN])
{
	*out = NULL;
	*renamed = 0;
	example[0] = '\0';
	struct ca_key *k = malloc((s->nnodes ? s->nnodes : 1) * sizeof(*k));
	uint8_t *amb = calloc(s->nnodes ? s->nnodes : 1, 1);
	if (!k || !amb)
		goto nomem;
	size_t nk = 0;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		const char *src = route_namemap_get(base, n->guid);
		if (n->type == SNAP_NODE_CA && host_label(src ? src : n->desc, k[nk].key))
			k[nk++].guid = n->guid;
	}
	qsort(k, nk, sizeof(*k), cmp_ca_key);
	for (size_t i = 1; i < nk; i++) {
		if (strcmp(k[i - 1].key, k[i].key) || k[i - 1].guid == k[i].guid)
			continue;
		if (!example[0])
			snprintf(example, AN_ERR_LEN, "%s", k[i].key);
		*renamed += !amb[i - 1] + !amb[i];
		amb[i - 1] = amb[i] = 1;
	}
	int rc = *renamed ? map_with(base, k, amb, nk, *renamed, out) : AN_OK;
	free(k);
	free(amb);
	if (rc)
		snprintf(err, AN_ERR_LEN, "out of memory");
	return rc;
nomem:
	free(k);
	free(amb);
	snprintf(err, AN_ERR_LEN, "out of memory");
	return AN_E_NOMEM;
}
