/* SPDX-License-Identifier: BSD-3-Clause */
/* pattern.c - see pattern.h. */
#include "pattern.h"
#include "../../analysis/pattern.h"   /* the pattern names, shared with topod */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int perr(char *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, PATTERN_ERR_LEN, fmt, ap);
	va_end(ap);
	return -1;
}

static int add(struct phase *ph, size_t *cap, uint32_t s, uint32_t d, uint32_t w)
{
	if (s == d || w == 0)
		return 0;
	if (ph->n >= PATTERN_MAX_FLOWS)
		return -1;
	if (ph->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct flow *nf = realloc(ph->flows, nc * sizeof(*nf));
		if (!nf)
			return -1;
		ph->flows = nf;
		*cap = nc;
	}
	ph->flows[ph->n++] = (struct flow){ s, d, w };
	return 0;
}

static int parse_u32(const char *s, char **end, uint32_t *v)
{
	errno = 0;
	unsigned long long x = strtoull(s, end, 10);
	if (*end == s || errno || x > UINT32_MAX || *s == '-')
		return -1;
	*v = (uint32_t)x;
	return 0;
}

static int pow2(uint32_t n) { return n && !(n & (n - 1)); }

static struct phase *new_phase(struct ro_pattern *p)
{
	struct phase *np = realloc(p->phases, (p->nphases + 1) * sizeof(*np));
	if (!np)
		return NULL;
	p->phases = np;
	np[p->nphases] = (struct phase){ 0 };
	return &np[p->nphases++];
}

/* one phase of topod's flows, collected from its generator */
struct collect {
	struct phase *ph;
	size_t cap;
};

static int collect_fn(void *arg, uint32_t s, uint32_t d, uint64_t bytes)
{
	struct collect *c = arg;
	/* a regular pattern carries msg_bytes = 1 per flow: weight 1, as the
	 * seed's messages */
	return add(c->ph, &c->cap, s, d, bytes > PATTERN_MAX_WEIGHT ? PATTERN_MAX_WEIGHT : (uint32_t)bytes);
}

static int topod_phase(struct ro_pattern *out, const char *spec, uint32_t n, char *err)
{
	struct pattern tp;
	char te[AN_ERR_LEN];
	if (pattern_parse(spec, &tp, te))
		return perr(err, "%s; topo-routeopt also reads alltoall[:shift|:xor] (as phases), file:PATH", te);
	if (pattern_check(&tp, n, te))
		return perr(err, "%s", te);
	struct collect c = { .ph = new_phase(out) };
	if (!c.ph)
		return perr(err, "out of memory");
	if (pattern_for_each(&tp, n, collect_fn, &c))
		return perr(err, "%s: too many flows or out of memory (limit %u)", spec, PATTERN_MAX_FLOWS);
	return 0;
}

static int flow_file(struct ro_pattern *p, const char *path, uint32_t n, char *err)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return perr(err, "flow file %s: %s", path, strerror(errno));
	struct phase *ph = new_phase(p);
	size_t cap = 0;
	char line[256];
	unsigned lineno = 0;
	int rc = 0;
	if (!ph)
		rc = perr(err, "out of memory");
	while (!rc && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			rc = perr(err, "%s:%u: line too long", path, lineno);
			break;
		}
		char *s = line, *end;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '#' || *s == '\n' || !*s)
			continue;
		uint32_t a, b, w = 1;
		if (parse_u32(s, &end, &a) || parse_u32(end, &end, &b)) {
			rc = perr(err, "%s:%u: expected \"src dst [weight]\"", path, lineno);
			break;
		}
		s = end;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s && *s != '\n' && *s != '#') {
			if (parse_u32(s, &end, &w) || w == 0 || w > PATTERN_MAX_WEIGHT) {
				rc = perr(err, "%s:%u: weight must be 1..%u", path, lineno, PATTERN_MAX_WEIGHT);
				break;
			}
			s = end;
			while (*s == ' ' || *s == '\t' || *s == '\n')
				s++;
			if (*s && *s != '#') {
				rc = perr(err, "%s:%u: trailing text", path, lineno);
				break;
			}
		}
		if (a >= n || b >= n) {
			rc = perr(err, "%s:%u: rank %u out of range (the host set has %u)", path, lineno,
				  a >= n ? a : b, n);
			break;
		}
		if (add(ph, &cap, a, b, w))
			rc = perr(err, "%s:%u: too many flows (limit %u)", path, lineno, PATTERN_MAX_FLOWS);
	}
	fclose(f);
	return rc;
}

int ro_pattern_parse(const char *spec, uint32_t n, struct ro_pattern *out, char err[PATTERN_ERR_LEN])
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", spec);
	if (n < 2)
		return perr(err, "a pattern needs at least 2 hosts");
	const char *arg = strchr(spec, ':');
	size_t kw = arg ? (size_t)(arg - spec) : strlen(spec);
	if (arg)
		arg++;
#define IS(k) (kw == strlen(k) && !strncmp(spec, k, kw))
	int rc = -1;
	if (IS("alltoall") && (!arg || !strcmp(arg, "shift"))) {
		rc = 0;
		for (uint32_t ph = 1; ph < n && !rc; ph++) {
			struct phase *p = new_phase(out);
			size_t cap = 0;
			if (!p) { rc = perr(err, "out of memory"); break; }
			for (uint32_t i = 0; i < n && !rc; i++)
				if (add(p, &cap, i, (i + ph) % n, 1))
					rc = perr(err, "out of memory");
		}
	} else if (IS("alltoall") && !strcmp(arg, "xor")) {
		if (!pow2(n))
			return perr(err, "alltoall:xor needs a power-of-two host count (have %u)", n);
		rc = 0;
		for (uint32_t ph = 1; ph < n && !rc; ph++) {
			struct phase *p = new_phase(out);
			size_t cap = 0;
			if (!p) { rc = perr(err, "out of memory"); break; }
			for (uint32_t i = 0; i < n && !rc; i++)
				if (add(p, &cap, i, i ^ ph, 1))
					rc = perr(err, "out of memory");
		}
	} else if (IS("file") && arg && *arg) {
		rc = flow_file(out, arg, n, err);
	} else if (IS("alltoall")) {
		return perr(err, "unknown pattern \"%s\" (alltoall, alltoall:shift, alltoall:xor)", spec);
	} else {
		/* topod's names: the same text means the same flows in `load` */
		rc = topod_phase(out, spec, n, err);
	}
#undef IS
	if (rc)
		ro_pattern_free(out);
	return rc;
}

void ro_pattern_free(struct ro_pattern *p)
{
	for (size_t i = 0; i < p->nphases; i++)
		free(p->phases[i].flows);
	free(p->phases);
	p->phases = NULL;
	p->nphases = 0;
}
