/*
 * namemap.c - the infiniband-diags node-name-map parser (route.h, "node-name-map"):
 * untrusted text from a file an administrator edits by hand, bounded per line
 * and per entry count.
 */
#include "route.h"

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

