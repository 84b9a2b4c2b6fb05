/*
 * test_hostlist.c - topoquery's host-list folding (clients/topoquery/hostlist.c,
 * compiled in here: the unit objects do not hold topoquery): names fold
 * into Slurm's form as Slurm folds them (h0996..h1000 is one range of width
 * 4), and every folded list expands back to exactly the names it came from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../../clients/topoquery/hostlist.c"

static int fold_is(const char *names, const char *want)
{
	struct strv in = { 0 };
	const char *why = NULL;
	if (hostlist_expand(&in, names, &why)) {
		printf("# %s: %s\n", names, why);
		return 0;
	}
	char *got = hostlist_compress(in.v, in.n);
	int ok = got && !strcmp(got, want);
	if (!ok)
		printf("# %s folded to %s, want %s\n", names, got ? got : "(null)", want);
	free(got);
	strv_free(&in);
	return ok;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* names -> fold -> expand gives the same set */
static int round_trip(char **names, size_t n)
{
	char *f = hostlist_compress(names, n);
	struct strv back = { 0 };
	const char *why = NULL;
	int ok = f && !hostlist_expand(&back, f, &why);
	char **a = malloc(n * sizeof(*a));
	memcpy(a, names, n * sizeof(*a));
	qsort(a, n, sizeof(*a), cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || strcmp(a[u - 1], a[i]))
			a[u++] = a[i];
	if (ok) {
		qsort(back.v, back.n, sizeof(*back.v), cmp_str);
		ok = back.n == u;
		for (size_t i = 0; ok && i < u; i++)
			ok = !strcmp(a[i], back.v[i]);
	}
	if (!ok)
		printf("# folded to %s, expanded to %zu names (%zu given)\n", f ? f : "(null)", back.n, u);
	free(a);
	free(f);
	strv_free(&back);
	return ok;
}

int main(void)
{
	CHECK(fold_is("h[0996-0999],h1000", "h[0996-1000]"), "h0996..h0999 and h1000 fold into h[0996-1000]");
	CHECK(fold_is("h1000,h0999,h0998", "h[0998-1000]"), "in any order");
	CHECK(fold_is("h[998-1000]", "h[998-1000]"), "free width: h998..h1000 into h[998-1000]");
	CHECK(fold_is("h9,h10", "h[9-10]") && fold_is("h09,h10", "h[09-10]"), "h[9-10] and h[09-10]");
	CHECK(fold_is("c401-[101-104],c401-110,c402-101", "c401-[101-104,110],c402-101"), "Slurm's own example");
	CHECK(fold_is("h[0996-1000],h[10000-10002]", "h[10000-10002],h[0996-1000]"),
	      "five digits do not join a width of four");
	CHECK(fold_is("h7,h07,h8,h08", "h[7-8],h[07-08]"), "h7 and h07 are two names, both kept");
	CHECK(fold_is("n[001-003],n10,n11", "n[10-11],n[001-003]"), "n10 has 2 digits, not the padded 3");
	/* random sets of names around the width boundaries, each folded and expanded back */
	srand(21);
	int all = 1;
	char buf[64][16];
	char *names[64];
	for (int t = 0; t < 2000 && all; t++) {
		size_t n = 1 + (size_t)(rand() % 40);
		for (size_t i = 0; i < n; i++) {
			int v = rand() % 3 == 0 ? rand() % 12 : 90 + rand() % 20 + (rand() % 2) * 900;
			int w = rand() % 4;   /* 0: no padding, else pad to 2..4 */
			snprintf(buf[i], sizeof(buf[i]), "%s%0*d", rand() % 4 ? "h" : "g", w ? w + 1 : 0, v);
			names[i] = buf[i];
		}
		all = round_trip(names, n);
	}
	CHECK(all, "2,000 random sets (widths 1-5, padded or not, duplicates) expand back to exactly themselves");
	return TAP_DONE();
}
