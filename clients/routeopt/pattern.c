/* pattern.c - see pattern.h. */
#include "pattern.h"

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

/* "A,B[,C]" into dims; returns how many were read or -1. */
static int parse_dims(const char *s, uint32_t *d, int want)
{
	char *end;
	for (int i = 0; i < want; i++) {
		if (parse_u32(s, &end, &d[i]) || d[i] == 0)
			return -1;
		s = end;
		if (i + 1 < want) {
			if (*s != ',')
				return -1;
			s++;
		}
	}
	return *s ? -1 : want;
}

static int pow2(uint32_t n) { return n && !(n & (n - 1)); }

static struct phase *new_phase(struct pattern *p)
{
	struct phase *np = realloc(p->phases, (p->nphases + 1) * sizeof(*np));
	if (!np)
		return NULL;
	p->phases = np;
	np[p->nphases] = (struct phase){ 0 };
	return &np[p->nphases++];
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int stencil(struct pattern *p, const uint32_t *dim, int nd, uint32_t n, char *err)
{
	uint64_t prod = 1;
	for (int i = 0; i < nd; i++)
		prod *= dim[i];
	if (prod != n)
		return perr(err, "stencil dimensions give %llu ranks, the host set has %u",
			    (unsigned long long)prod, n);
	struct phase *ph = new_phase(p);
	size_t cap = 0;
	if (!ph)
		return perr(err, "out of memory");
	for (uint32_t r = 0; r < n; r++) {
		uint32_t c[3] = { 0 }, rest = r;
		for (int i = 0; i < nd; i++) {
			c[i] = rest % dim[i];
			rest /= dim[i];
		}
		for (int i = 0; i < nd; i++) {
			if (dim[i] < 2)
				continue;
			for (int dir = -1; dir <= 1; dir += 2) {
				uint32_t cc[3] = { c[0], c[1], c[2] };
				cc[i] = (cc[i] + dim[i] + (uint32_t)dir) % dim[i];
				if (dim[i] == 2 && dir == 1)
					continue; /* both neighbours are the same rank */
				uint32_t q = 0;
				for (int j = nd - 1; j >= 0; j--)
					q = q * dim[j] + cc[j];
				if (add(ph, &cap, r, q, 1))
					return perr(err, "out of memory");
			}
		}
	}
	return 0;
}

static int flow_file(struct pattern *p, const char *path, uint32_t n, char *err)
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

int pattern_parse(const char *spec, uint32_t n, struct pattern *out, char err[PATTERN_ERR_LEN])
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
	char *end;
	uint32_t k, d[3];
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
	} else if ((IS("shift") || IS("xor")) && arg) {
		if (parse_u32(arg, &end, &k) || *end)
			return perr(err, "%.*s:K needs a non-negative integer K", (int)kw, spec);
		int x = IS("xor");
		if (x && (!pow2(n) || k >= n))
			return perr(err, "xor:K needs a power-of-two host count and K < %u", n);
		struct phase *p = new_phase(out);
		size_t cap = 0;
		if (!p)
			return perr(err, "out of memory");
		rc = 0;
		for (uint32_t i = 0; i < n && !rc; i++)
			if (add(p, &cap, i, x ? i ^ k : (uint32_t)(((uint64_t)i + k) % n), 1))
				rc = perr(err, "out of memory");
	} else if (IS("bitrev") && !arg) {
		if (!pow2(n))
			return perr(err, "bitrev needs a power-of-two host count (have %u)", n);
		unsigned bits = 0;
		while ((1u << bits) < n)
			bits++;
		struct phase *p = new_phase(out);
		size_t cap = 0;
		if (!p)
			return perr(err, "out of memory");
		rc = 0;
		for (uint32_t i = 0; i < n && !rc; i++) {
			uint32_t r = 0;
			for (unsigned b = 0; b < bits; b++)
				if (i & (1u << b))
					r |= 1u << (bits - 1 - b);
			if (add(p, &cap, i, r, 1))
				rc = perr(err, "out of memory");
		}
	} else if (IS("stencil2d") && arg) {
		if (parse_dims(arg, d, 2) < 0)
			return perr(err, "stencil2d:X,Y needs two positive integers");
		rc = stencil(out, d, 2, n, err);
	} else if (IS("stencil3d") && arg) {
		if (parse_dims(arg, d, 3) < 0)
			return perr(err, "stencil3d:X,Y,Z needs three positive integers");
		rc = stencil(out, d, 3, n, err);
	} else if (IS("random") && arg) {
		uint32_t seed;
		if (parse_u32(arg, &end, &seed) || *end)
			return perr(err, "random:SEED needs a non-negative integer");
		uint32_t *perm = malloc((size_t)n * sizeof(*perm));
		struct phase *p = perm ? new_phase(out) : NULL;
		size_t cap = 0;
		if (!p) {
			free(perm);
			return perr(err, "out of memory");
		}
		uint64_t st = seed;
		for (uint32_t i = 0; i < n; i++)
			perm[i] = i;
		for (uint32_t i = n - 1; i > 0; i--) {   /* Fisher-Yates */
			uint32_t j = (uint32_t)(splitmix(&st) % (i + 1));
			uint32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
		}
		rc = 0;
		for (uint32_t i = 0; i < n && !rc; i++)
			if (add(p, &cap, i, perm[i], 1))
				rc = perr(err, "out of memory");
		free(perm);
	} else if (IS("file") && arg && *arg) {
		rc = flow_file(out, arg, n, err);
	} else {
		return perr(err, "unknown pattern \"%s\" (alltoall[:xor], shift:K, xor:K, bitrev, "
			    "stencil2d:X,Y, stencil3d:X,Y,Z, random:SEED, file:PATH)", spec);
	}
#undef IS
	if (rc)
		pattern_free(out);
	return rc;
}

void pattern_free(struct pattern *p)
{
	for (size_t i = 0; i < p->nphases; i++)
		free(p->phases[i].flows);
	free(p->phases);
	p->phases = NULL;
	p->nphases = 0;
}
