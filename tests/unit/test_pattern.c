/* test_pattern.c - pattern specs, flow generation against plain definitions,
 * rank list tokens and job limits. */
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "tap.h"

struct acc {
	uint32_t n;
	uint64_t *cnt;   /* [n*n] flows seen per pair */
	uint64_t total;
	int order_ok;
	uint32_t last_src, last_dst;
};

static int acc_fn(void *arg, uint32_t s, uint32_t d, uint64_t b)
{
	struct acc *a = arg;
	a->cnt[(size_t)s * a->n + d] += b;
	a->total++;
	if (a->total > 1 && s < a->last_src)
		a->order_ok = 0;
	a->last_src = s;
	a->last_dst = d;
	return 0;
}

/* records the one destination of a permutation pattern's source */
static int rec_dst(void *arg, uint32_t s, uint32_t d, uint64_t b)
{
	(void)s, (void)b;
	*(uint32_t *)arg = d;
	return 0;
}

/* Reference: the grid definition, by coordinates, counting distinct neighbours. */
static void ref_stencil(uint32_t X, uint32_t Y, uint32_t Z, int per, uint32_t n, uint64_t *ref)
{
	uint32_t D[3] = { X, Y, Z };
	for (uint32_t r = 0; r < n; r++) {
		int c[3] = { (int)(r % X), (int)(r / X % Y), (int)(r / (X * Y)) };
		for (int d = 0; d < 3; d++)
			for (int s = -1; s <= 1; s += 2) {
				int cc[3] = { c[0], c[1], c[2] };
				cc[d] += s;
				if (cc[d] < 0 || cc[d] >= (int)D[d]) {
					if (!per)
						continue;
					cc[d] = (cc[d] + (int)D[d]) % (int)D[d];
				}
				uint32_t q = (uint32_t)cc[0] + X * ((uint32_t)cc[1] + Y * (uint32_t)cc[2]);
				if (q != r)
					ref[(size_t)r * n + q] = 1; /* a neighbour once, however reached */
			}
	}
}

static int same(const uint64_t *a, const uint64_t *b, size_t n)
{
	return !memcmp(a, b, n * sizeof *a);
}

static void run(const char *spec, uint32_t n, const uint64_t *ref, const char *what)
{
	struct pattern p;
	char err[AN_ERR_LEN];
	int rc = pattern_parse(spec, &p, err);
	CHECK(rc == AN_OK, "%s parses", spec);
	if (rc)
		return;
	rc = pattern_check(&p, n, err);
	CHECK(rc == AN_OK, "%s fits %u ranks", spec, n);
	struct acc a = { .n = n, .cnt = calloc((size_t)n * n, 8), .order_ok = 1 };
	pattern_for_each(&p, n, acc_fn, &a);
	CHECK(same(a.cnt, ref, (size_t)n * n), "%s on %u ranks: %s", spec, n, what);
	CHECK(a.order_ok, "%s: flows by source rank", spec);
	CHECK(pattern_nflows(&p, n) == a.total, "%s: nflows %llu", spec,
	      (unsigned long long)a.total);
	free(a.cnt);
}

int main(void)
{
	char err[AN_ERR_LEN];
	struct pattern p;
	char name[64];
	uint32_t sizes[] = { 1, 2, 3, 7, 16 };
	for (unsigned i = 0; i < 5; i++) {
		uint32_t n = sizes[i];
		uint64_t *ref = calloc((size_t)n * n, 8);
		for (uint32_t r = 0; r < n; r++)
			for (uint32_t s = 0; s < n; s++)
				ref[r * n + s] = r != s;
		run("alltoall", n, ref, "every ordered pair once");
		run("allgather", n, ref, "every ordered pair once");
		memset(ref, 0, (size_t)n * n * 8);
		for (uint32_t r = 0; r < n; r++)
			if ((r + 3) % n != r)
				ref[r * n + (r + 3) % n] = 1;
		run("shift:3", n, ref, "r -> r+3");
		memset(ref, 0, (size_t)n * n * 8);
		for (uint32_t r = 0; r < n; r++)
			if ((r + n - (5 % n)) % n != r)
				ref[r * n + (r + n - (5 % n)) % n] = 1;
		run("shift:-5", n, ref, "r -> r-5");
		memset(ref, 0, (size_t)n * n * 8);
		for (uint32_t r = 0; r < n; r++) {
			if ((r + 1) % n != r)
				ref[r * n + (r + 1) % n] = 1;
			if ((r + n - 1) % n != r)
				ref[r * n + (r + n - 1) % n] = 1;
		}
		run("ring", n, ref, "both neighbours, once each");
		free(ref);
	}
	/* xor, bitrev on powers of two, by their plain definitions */
	for (uint32_t n = 1; n <= 64; n *= 2) {
		uint64_t *ref = calloc((size_t)n * n, 8);
		uint32_t k = n > 4 ? 5 : n - 1;
		char spec[32];
		for (uint32_t r = 0; r < n; r++)
			if ((r ^ k) != r)
				ref[r * n + (r ^ k)] = 1;
		snprintf(spec, sizeof spec, "xor:%u", k);
		run(spec, n, ref, "r -> r XOR K");
		memset(ref, 0, (size_t)n * n * 8);
		unsigned bits = 0;
		while ((1u << bits) < n)
			bits++;
		for (uint32_t r = 0; r < n; r++) {
			uint32_t d = 0;
			for (unsigned b = 0; b < bits; b++)
				if (r >> b & 1)
					d |= 1u << (bits - 1 - b);
			if (d != r)
				ref[r * n + d] = 1;
		}
		run("bitrev", n, ref, "bits reversed");
		free(ref);
	}
	/* random:SEED: a permutation (every rank sends at most once and receives
	 * at most once, fixed points silent), the same for the same seed and n,
	 * different for another seed */
	uint32_t rsz[] = { 2, 3, 16, 100, 1000, 16384 };
	for (unsigned i = 0; i < sizeof rsz / sizeof rsz[0]; i++) {
		uint32_t n = rsz[i];
		uint32_t *in = calloc(n, 4), *out = calloc(n, 4);
		uint64_t fl = 0, moved = 0;
		struct pattern q, q2;
		CHECK(pattern_parse("random:7", &q, err) == 0 && pattern_check(&q, n, err) == 0 &&
		      pattern_parse("random:8", &q2, err) == 0, "random:7 parses, fits %u ranks", n);
		for (uint32_t r = 0; r < n; r++) {
			uint32_t d1 = r, d2 = r;   /* r: no flow (a fixed point) */
			pattern_flows_from(&q, n, r, rec_dst, &d1);
			pattern_flows_from(&q2, n, r, rec_dst, &d2);
			if (d1 != r) {
				out[r]++;
				in[d1]++;
				fl++;
			}
			moved += d1 != d2;
		}
		int perm = 1;
		for (uint32_t r = 0; r < n; r++)
			perm &= out[r] <= 1 && in[r] <= 1;
		CHECK(perm && fl == pattern_nflows(&q, n), "random:7 on %u ranks is a permutation (%llu flows)",
		      n, (unsigned long long)fl);
		CHECK(n < 16 || moved > n / 2, "random:8 differs from random:7 on %u ranks (%llu of %u)", n,
		      (unsigned long long)moved, n);
		if (n >= 100)
			CHECK(fl > n * 9 / 10, "random:7 on %u ranks moves most ranks (%llu)", n,
			      (unsigned long long)fl);
		free(in);
		free(out);
	}
	struct { const char *spec; uint32_t X, Y, Z; int per; } st[] = {
		{ "stencil2d:4,4", 4, 4, 1, 0 },	{ "stencil2d:4,4:periodic", 4, 4, 1, 1 },
		{ "stencil2d:2,3:periodic", 2, 3, 1, 1 }, { "stencil2d:1,5", 1, 5, 1, 0 },
		{ "stencil3d:3,2,4", 3, 2, 4, 0 },	{ "stencil3d:3,2,4:periodic", 3, 2, 4, 1 },
		{ "stencil3d:2,2,2:periodic", 2, 2, 2, 1 }, { "stencil3d:5,1,3:periodic", 5, 1, 3, 1 },
	};
	for (unsigned i = 0; i < sizeof st / sizeof st[0]; i++) {
		uint32_t n = st[i].X * st[i].Y * st[i].Z;
		uint64_t *ref = calloc((size_t)n * n, 8);
		ref_stencil(st[i].X, st[i].Y, st[i].Z, st[i].per, n, ref);
		run(st[i].spec, n, ref, "face neighbours by coordinates");
		free(ref);
	}

	/* matrix: sorted, merged, zero dropped */
	struct pat_triple t[] = { { 2, 1, 10 }, { 0, 3, 5 }, { 2, 1, 7 }, { 1, 1, 4 }, { 3, 0, 0 } };
	CHECK(pattern_set_matrix(&p, t, 5, 4, err) == AN_OK, "matrix set");
	CHECK(p.ntri == 3, "matrix: duplicates merged, zero dropped (%zu)", p.ntri);
	uint64_t ref[16] = { 0 };
	ref[0 * 4 + 3] = 5;
	ref[2 * 4 + 1] = 17;
	ref[1 * 4 + 1] = 4;
	struct acc a = { .n = 4, .cnt = calloc(16, 8), .order_ok = 1 };
	pattern_for_each(&p, 4, acc_fn, &a);
	CHECK(same(a.cnt, ref, 16), "matrix flows are the triples");
	free(a.cnt);
	CHECK(pattern_check(&p, 5, err) == AN_E_INVAL, "matrix for 4 ranks refused on 5: %s", err);
	pattern_clear(&p);
	struct pat_triple bad = { 4, 0, 1 };
	CHECK(pattern_set_matrix(&p, &bad, 1, 4, err) == AN_E_INVAL, "rank 4 of 4 refused: %s", err);

	/* bad specs */
	const char *badspec[] = { "", "alltoal", "shift:", "shift:x", "shift:+3", "shift: 3",
				  "shift:16384", "stencil2d:4", "stencil2d:4,4,4", "stencil2d:0,4",
				  "stencil3d:2,2", "stencil2d:4,4:wrap", "stencil2d:4,,4", "ring:1",
				  "xor:", "xor:-1", "xor:16384", "bitrev:1", "random:", "random:-1",
				  "random:4294967296", "random:x" };
	for (unsigned i = 0; i < sizeof badspec / sizeof badspec[0]; i++) {
		err[0] = 0;
		CHECK(pattern_parse(badspec[i], &p, err) == AN_E_INVAL && err[0],
		      "'%s' refused: %s", badspec[i], err);
	}
	CHECK(pattern_parse("stencil2d:4,4", &p, err) == 0 && pattern_check(&p, 15, err) == AN_E_INVAL,
	      "4x4 grid for 15 ranks refused: %s", err);
	CHECK(pattern_check(&p, TOPO_RANKS_MAX + 1, err) == AN_E_RANGE, "16,385 ranks refused: %s", err);
	CHECK(pattern_parse("xor:3", &p, err) == 0 && pattern_check(&p, 12, err) == AN_E_INVAL,
	      "xor on 12 ranks refused: %s", err);
	CHECK(pattern_parse("xor:16", &p, err) == 0 && pattern_check(&p, 16, err) == AN_E_INVAL,
	      "xor:16 on 16 ranks refused: %s", err);
	CHECK(pattern_parse("bitrev", &p, err) == 0 && pattern_check(&p, 24, err) == AN_E_INVAL,
	      "bitrev on 24 ranks refused: %s", err);
	const char *names[] = { "xor:5", "bitrev", "random:4294967295" };
	for (unsigned i = 0; i < 3; i++) {
		pattern_parse(names[i], &p, err);
		pattern_name(&p, name, sizeof name);
		CHECK(!strcmp(name, names[i]), "%s round-trips (%s)", names[i], name);
	}
	pattern_parse("stencil3d:3,2,4:periodic", &p, err);
	pattern_name(&p, name, sizeof name);
	CHECK(!strcmp(name, "stencil3d:3,2,4:periodic"), "canonical name round-trips (%s)", name);

	/* rank tokens */
	char nm[TOPO_QUERY_NAME_MAX + 1];
	uint32_t c;
	CHECK(pattern_rank_token("node-1*4", nm, &c, err) == 0 && !strcmp(nm, "node-1") && c == 4,
	      "node-1*4");
	CHECK(pattern_rank_token("node-1", nm, &c, err) == 0 && c == 1, "bare name is one rank");
	CHECK(pattern_rank_token("node-1*0", nm, &c, err) == AN_E_INVAL, "count 0 refused");
	CHECK(pattern_rank_token("*3", nm, &c, err) == AN_E_INVAL, "empty name refused");
	CHECK(pattern_rank_token("a*16385", nm, &c, err) == AN_E_INVAL, "count beyond limit refused");

	/* job limits */
	uint32_t *hosts = malloc(5000 * sizeof *hosts);
	for (uint32_t i = 0; i < 5000; i++)
		hosts[i] = i;
	struct pat_job j = { .nranks = 4096, .host = hosts };
	CHECK(pattern_job_check(&j, 5000, err) == 0, "4,096 hosts accepted");
	j.nranks = 4097;
	CHECK(pattern_job_check(&j, 5000, err) == AN_E_RANGE, "4,097 hosts refused: %s", err);
	hosts[0] = 5000;
	j.nranks = 10;
	CHECK(pattern_job_check(&j, 5000, err) == AN_E_INVAL, "unknown host index refused");
	free(hosts);
	return TAP_DONE();
}
