/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostlist.c - see hostlist.h. Written for topoquery from the hostlist
 * syntax Slurm documents (prefix[lo-hi,n,...]suffix).
 */
#include "hostlist.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

int strv_push(struct strv *s, const char *str, size_t len)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **nv = realloc(s->v, cap * sizeof(*nv));
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	char *d = malloc(len + 1);
	if (!d)
		return -1;
	memcpy(d, str, len);
	d[len] = '\0';
	s->v[s->n++] = d;
	return 0;
}

/* Digits of a range bound: at most 18 so that any value fits a uint64. */
static int parse_bound(const char *s, size_t n, uint64_t *v)
{
	if (!n || n > 18)
		return -1;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return 0;
}

/* Expands word[0..len) (no top-level comma) onto out. */
static int expand_word(struct strv *out, const char *w, size_t len, const char **why)
{
	const char *lb = memchr(w, '[', len);
	if (!lb) {
		if (memchr(w, ']', len)) {
			*why = "unbalanced ']'";
			return -1;
		}
		if (out->n >= HOSTLIST_MAX) {
			*why = "host list too long";
			return -1;
		}
		if (strv_push(out, w, len)) {
			*why = "out of memory";
			return -1;
		}
		return 0;
	}
	const char *rb = memchr(lb, ']', len - (size_t)(lb - w));
	if (!rb || memchr(lb + 1, '[', (size_t)(rb - lb - 1))) {
		*why = "unbalanced '['";
		return -1;
	}
	size_t plen = (size_t)(lb - w), rlen = len - (size_t)(rb + 1 - w);
	const char *rest = rb + 1;
	const char *r = lb + 1;
	if (r == rb) {
		*why = "empty []";
		return -1;
	}
	while (r < rb) {
		const char *e = memchr(r, ',', (size_t)(rb - r));
		if (!e)
			e = rb;
		const char *dash = memchr(r, '-', (size_t)(e - r));
		uint64_t lo, hi;
		size_t width = dash ? (size_t)(dash - r) : (size_t)(e - r);
		if (parse_bound(r, width, &lo) ||
		    (dash ? parse_bound(dash + 1, (size_t)(e - dash - 1), &hi) : (hi = lo, 0)) || hi < lo) {
			*why = "bad range in []";
			return -1;
		}
		if (hi - lo >= HOSTLIST_MAX) {
			*why = "host list too long";
			return -1;
		}
		for (uint64_t v = lo; v <= hi; v++) {
			char num[32];
			int nn = snprintf(num, sizeof(num), "%0*llu", (int)width, (unsigned long long)v);
			size_t tl = plen + (size_t)nn + rlen;
			char *tmp = malloc(tl + 1);
			if (!tmp) {
				*why = "out of memory";
				return -1;
			}
			memcpy(tmp, w, plen);
			memcpy(tmp + plen, num, (size_t)nn);
			memcpy(tmp + plen + (size_t)nn, rest, rlen);
			tmp[tl] = '\0';
			int rc = expand_word(out, tmp, tl, why);
			free(tmp);
			if (rc)
				return rc;
		}
		r = e + 1;
	}
	return 0;
}

int hostlist_expand(struct strv *out, const char *expr, const char **why)
{
	const char *s = expr;
	while (*s) {
		const char *e = s;
		int depth = 0;
		while (*e && (depth || *e != ',')) {
			if (*e == '[')
				depth++;
			else if (*e == ']' && depth)
				depth--;
			e++;
		}
		if (e > s && expand_word(out, s, (size_t)(e - s), why))
			return -1;
		s = *e ? e + 1 : e;
	}
	return 0;
}

int hostlist_read(struct strv *out, FILE *f, const char **why)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while (!rc && (n = getline(&line, &cap, f)) >= 0) {
		char *hash = memchr(line, '#', (size_t)n);
		if (hash)
			*hash = '\0';
		for (char *tok = strtok(line, " \t\r\n"); tok && !rc; tok = strtok(NULL, " \t\r\n"))
			rc = hostlist_expand(out, tok, why);
	}
	if (!rc && ferror(f)) {
		*why = "read error";
		rc = -1;
	}
	free(line);
	return rc;
}

/* ---- compression --------------------------------------------------------- */

struct ent {
	const char *name;
	size_t plen;     /* prefix length: up to the numeric suffix */
	int hasnum;
	int width;       /* digits when zero-padded, or when a padded name of that
			  * prefix has as many (h0996 and h1000: 4); else 0, free */
	uint64_t num;
};

static int cmp_ent(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	size_t m = x->plen < y->plen ? x->plen : y->plen;
	int r = memcmp(x->name, y->name, m);
	if (r)
		return r;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	if (x->hasnum != y->hasnum)
		return x->hasnum - y->hasnum;
	if (x->width != y->width)
		return x->width - y->width;
	return x->num < y->num ? -1 : x->num > y->num;
}

static int same_group(const struct ent *x, const struct ent *y)
{
	return x->plen == y->plen && !memcmp(x->name, y->name, x->plen) && x->hasnum == y->hasnum &&
	       x->width == y->width && x->hasnum;
}

/* A name without leading zero folds with the padded ones of its prefix
 * that have as many digits: "h[0996-1000]" reads back as h0996..h1000
 * (the width follows lo), as Slurm folds them. Sorted by cmp_ent, the
 * padded widths of a prefix follow its free-width names; afterwards e is
 * sorted again. */
static void join_widths(struct ent *e, size_t n)
{
	int moved = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && e[j].hasnum == e[i].hasnum && e[j].plen == e[i].plen &&
		       !memcmp(e[j].name, e[i].name, e[i].plen))
			j++;
		uint32_t padded = 0;   /* widths 2..18 held by padded names */
		for (size_t k = i; k < j; k++)
			if (e[k].width)
				padded |= 1u << e[k].width;
		for (size_t k = i; k < j && padded; k++) {
			int d = (int)(strlen(e[k].name) - e[k].plen);
			if (e[k].hasnum && !e[k].width && d > 1 && (padded >> d & 1)) {
				e[k].width = d;
				moved = 1;
			}
		}
		i = j;
	}
	if (moved)
		qsort(e, n, sizeof(*e), cmp_ent);
}

struct sbuf {
	char *s;
	size_t len, cap;
	int err;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->err = 1;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_num(struct sbuf *b, uint64_t v, int width)
{
	char num[32];
	int n = snprintf(num, sizeof(num), "%0*llu", width, (unsigned long long)v);
	sb_add(b, num, (size_t)n);
}

char *hostlist_compress(char *const *names, size_t n)
{
	struct ent *e = calloc(n ? n : 1, sizeof(*e));
	struct sbuf b = { 0 };
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *s = names[i];
		size_t len = strlen(s), d = len;
		while (d && isdigit((unsigned char)s[d - 1]))
			d--;
		e[i].name = s;
		e[i].plen = len;
		/* [] would be read back as a range, so names holding brackets
		 * (never a valid host name) and over-long numbers stay as is */
		if (d < len && len - d <= 18 && !strpbrk(s, "[],")) {
			e[i].plen = d;
			e[i].hasnum = 1;
			parse_bound(s + d, len - d, &e[i].num);
			if (len - d > 1 && s[d] == '0')
				e[i].width = (int)(len - d);
		}
	}
	qsort(e, n, sizeof(*e), cmp_ent);
	join_widths(e, n);
	size_t u = 0;   /* duplicates sort next to each other */
	for (size_t i = 0; i < n; i++)
		if (!u || strcmp(e[u - 1].name, e[i].name))
			e[u++] = e[i];
	n = u;
	sb_add(&b, "", 0);
	size_t i = 0;
	int first = 1;
	while (i < n) {
		size_t j = i + 1;
		while (j < n && same_group(&e[i], &e[j]))
			j++;
		if (!first)
			sb_add(&b, ",", 1);
		first = 0;
		if (j - i == 1) {
			sb_add(&b, e[i].name, strlen(e[i].name));
			i = j;
			continue;
		}
		sb_add(&b, e[i].name, e[i].plen);
		sb_add(&b, "[", 1);
		int firstr = 1;
		size_t k = i;
		while (k < j) {
			size_t m = k;
			while (m + 1 < j && e[m + 1].num == e[m].num + 1)
				m++;
			if (!firstr)
				sb_add(&b, ",", 1);
			firstr = 0;
			sb_num(&b, e[k].num, e[k].width);
			if (e[m].num != e[k].num) {
				sb_add(&b, "-", 1);
				sb_num(&b, e[m].num, e[k].width);
			}
			k = m + 1;
		}
		sb_add(&b, "]", 1);
		i = j;
	}
	free(e);
	if (b.err) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
