/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place.c - placement calls (protocol commands order, pick and map):
 * tii_order_hosts, tii_pick_hosts, tii_map_graph, tii_map_stencil and
 * tii_reorder_ranks for MPI libraries.
 *
 * topod names hosts as asked; replies are mapped back to request positions
 * through a sorted index of the request (a name not asked for, or one
 * answered twice where it cannot be, is TII_E_PROTO).
 */
#include "tii_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names tii.h sends new programs to: both forms are defined here (see
 * "ABI" in tii.h); the old ones fill only what 1.2's structs held. */
#undef tii_pick_hosts
#undef tii_map_graph
#undef tii_map_stencil
#undef tii_reorder_ranks
#define PICK_INFO_12 offsetof(tii_pick_info_t, min_leaves)
#define PICK_INFO_13 offsetof(tii_pick_info_t, balanced)
#define MAP_INFO_12 offsetof(tii_map_info_t, method)

struct names {
	const char *const *v;
	size_t n;
	size_t *sorted;
};

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const char *const *v = ctx;
	return strcmp(v[*(const size_t *)a], v[*(const size_t *)b]);
}

static int names_init(struct names *nm, const char *const *v, size_t n)
{
	nm->v = v;
	nm->n = n;
	nm->sorted = malloc((n ? n : 1) * sizeof(*nm->sorted));
	if (!nm->sorted)
		return TII_E_NOMEM;
	for (size_t i = 0; i < n; i++)
		nm->sorted[i] = i;
	qsort_r(nm->sorted, n, sizeof(*nm->sorted), cmp_name, (void *)v);
	return 0;
}

static long names_find(const struct names *nm, const char *s)
{
	size_t lo = 0, hi = nm->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = strcmp(s, nm->v[nm->sorted[mid]]);
		if (!r)
			return (long)nm->sorted[mid];
		if (r < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* ---- order and pick --------------------------------------------------------- */

struct list_ctx {
	struct names nm;
	size_t want;       /* lines expected */
	size_t *out;       /* positions, in reply order */
	unsigned char *seen;
	int rank_lines;    /* map: "RANK NAME" */
	tii_pick_info_t pinfo;
	tii_pick_wider_t wider;   /* pick: leaves= figures (absent from a topod before them: none) */
	tii_map_info_t minfo;
	int is_pick, is_map;
	int leaves;        /* pick: the rule on leaves asked (TII_LEAVES_*; nothing sent: topod's
			    * default, ANY since 1.6, FEWEST before: ANY's checks hold for both) */
	int run;           /* pick: TII_PICK_RUN_* asked (BOUND when nothing is sent) */
	int is_trade;      /* pick trade: want = the allocation's hosts */
	long trades;       /* pick trade: hosts the reply says it swaps out */
};

/* protocol `pick run=`, by TII_PICK_RUN_* (then the TII_NATIVE_* models) */
static const char *const run_names[] = { "bound", "route", "xor", "smpi-ompi", "smpi-mpich", "ompi", "mpich" };

int tii_set_pick_run(tii_t *t, int run)
{
	if (!t || run < TII_PICK_RUN_BOUND || run > TII_PICK_RUN_NATIVE + TII_NATIVE_MPICH)
		return TII_E_INVAL;
	/* bound is topod's default: not sent, so a topod before run= answers */
	t->pick_run = run == TII_PICK_RUN_BOUND ? -1 : run;
	return 0;
}

/* Index of w in names[0..n), -1 if none. */
static int word_of(const char *w, const char *const *names, int n)
{
	for (int i = 0; w && i < n; i++)
		if (!strcmp(w, names[i]))
			return i;
	return -1;
}

/* A topod before 1.3: hop-bytes and loads only, method scotch or block. */
static int map_head_12(const struct tii__kv *kv, tii_map_info_t *i)
{
	const char *m = tii__kv_get(kv, "method");
	long moved;
	if (!m || (strcmp(m, "scotch") && strcmp(m, "block")) || tii__kv_u64(kv, "hop_bytes", &i->hop_bytes) ||
	    tii__kv_u64(kv, "max_load", &i->max_load) || tii__kv_u64(kv, "block_hop_bytes", &i->block_hop_bytes) ||
	    tii__kv_u64(kv, "block_max_load", &i->block_max_load) || tii__kv_u64(kv, "rr_hop_bytes", &i->rr_hop_bytes) ||
	    tii__kv_u64(kv, "rr_max_load", &i->rr_max_load) || tii__kv_int(kv, "moved", 0, 1 << 30, &moved))
		return TII_E_PROTO;
	i->scotch = !strcmp(m, "scotch");
	i->method = i->scotch ? TII_MAP_SCOTCH : TII_MAP_BLOCK;
	i->reason = TII_MAP_UNKNOWN;
	i->moved = (int)moved;
	i->time_s = i->block_time_s = i->rr_time_s = i->scotch_time_s = -1;
	return 0;
}

/* map's OK line: the figures, the predicted times, the bottleneck. */
static int map_head(const struct tii__kv *kv, tii_map_info_t *i)
{
	static const char *const method[] = { "scotch", "block", "rr" };   /* TII_MAP_SCOTCH.. */
	static const char *const reason[] = { "faster", "slower", "equal", "unknown" };
	long moved, swaps;
	memset(i, 0, sizeof(*i));
	if (!tii__kv_get(kv, "swaps") && !tii__kv_get(kv, "time_us"))
		return map_head_12(kv, i);
	i->method = word_of(tii__kv_get(kv, "method"), method, 3);
	i->reason = word_of(tii__kv_get(kv, "reason"), reason, 4);
	if (i->method < 0 || i->reason < 0 || tii__kv_u64(kv, "hop_bytes", &i->hop_bytes) ||
	    tii__kv_u64(kv, "max_load", &i->max_load) || tii__kv_u64(kv, "block_hop_bytes", &i->block_hop_bytes) ||
	    tii__kv_u64(kv, "block_max_load", &i->block_max_load) || tii__kv_u64(kv, "rr_hop_bytes", &i->rr_hop_bytes) ||
	    tii__kv_u64(kv, "rr_max_load", &i->rr_max_load) || tii__kv_int(kv, "moved", 0, 1 << 30, &moved) ||
	    tii__kv_int(kv, "swaps", 0, 1 << 30, &swaps) || tii__kv_u64(kv, "bytes", &i->bytes) || !i->bytes ||
	    tii__parse_us(tii__kv_get(kv, "time_us"), &i->time_s) ||
	    tii__parse_us(tii__kv_get(kv, "block_time_us"), &i->block_time_s) ||
	    tii__parse_us(tii__kv_get(kv, "rr_time_us"), &i->rr_time_s) ||
	    tii__parse_us(tii__kv_get(kv, "scotch_time_us"), &i->scotch_time_s))
		return TII_E_PROTO;
	i->scotch = i->method == TII_MAP_SCOTCH;
	i->moved = (int)moved;
	i->swaps = (int)swaps;
	/* "-": unknown (time -) or no loaded cable (rate 0) */
	const char *b = tii__kv_get(kv, "bottleneck"), *r = tii__kv_get(kv, "bottleneck_bps");
	if (!b || !r)
		return TII_E_PROTO;
	if (!strcmp(b, "-"))
		return !strcmp(r, "-") ? (i->time_s < 0 ? 0 : TII_E_PROTO) : strcmp(r, "0") ? TII_E_PROTO : 0;
	if (tii__guid_port(b, &i->bottleneck_guid, &i->bottleneck_port) || tii__parse_u64(r, 10, &i->bottleneck_bps) ||
	    !i->bottleneck_bps)
		return TII_E_PROTO;
	return 0;
}

/* pick's compactness and prediction fields (1.3); method and reason
 * must agree. */
static int pick_advice(const struct tii__kv *kv, long nfree, tii_pick_info_t *i)
{
	long ml, mp, w;
	const char *m = tii__kv_get(kv, "method"), *r = tii__kv_get(kv, "reason");
	const char *t = tii__kv_get(kv, "time_us"), *pt = tii__kv_get(kv, "pick_time_us");
	const char *ft = tii__kv_get(kv, "first_fit_time_us");
	if (!m && !tii__kv_get(kv, "min_leaves")) {
		/* a topod before 1.3: its pick, without advice */
		i->time_s = i->pick_time_s = i->first_fit_time_s = -1;
		return 0;
	}
	if (tii__kv_int(kv, "min_leaves", 0, nfree, &ml) || tii__kv_int(kv, "min_pods", 0, nfree, &mp) ||
	    tii__kv_int(kv, "sharing_free_wider", 0, 1, &w) || !m || !r || !t || !pt || !ft ||
	    tii__parse_us(t, &i->time_s) || tii__parse_us(pt, &i->pick_time_s) ||
	    tii__parse_us(ft, &i->first_fit_time_s))
		return -1;
	if (!strcmp(m, "first_fit") && !strcmp(r, "slower"))
		i->first_fit = 1;
	else if (strcmp(m, "pick") || strcmp(r, "none"))
		return -1;
	i->min_leaves = (int)ml, i->min_pods = (int)mp, i->sharing_free_wider = (int)w;
	return 0;
}

/* pick's balance fields (1.4); absent from an older topod. */
static int pick_balance(const struct tii__kv *kv, tii_pick_info_t *i)
{
	static const char *const why[] = { "at", "uplinks", "routes", "-" };   /* TII_PICK_AT_LIMIT.. */
	long bal, sw;
	const char *b = tii__kv_get(kv, "bottleneck");
	if (!tii__kv_get(kv, "balanced"))
		return 0;
	if (tii__kv_int(kv, "balanced", 0, 1, &bal) || tii__kv_int(kv, "swaps", 0, 1L << 30, &sw) || !b ||
	    tii__parse_us(tii__kv_get(kv, "bottleneck_us"), &i->bottleneck_s) ||
	    tii__parse_us(tii__kv_get(kv, "limit_us"), &i->limit_s) ||
	    tii__parse_us(tii__kv_get(kv, "first_fit_bottleneck_us"), &i->first_fit_bottleneck_s) ||
	    (i->limit_why = word_of(tii__kv_get(kv, "limit"), why, 4)) < 0)
		return -1;
	i->balanced = (int)bal, i->swaps = (int)sw;
	if (strcmp(b, "-"))
		return tii__guid_port(b, &i->bottleneck_guid, &i->bottleneck_port) ? -1 : 0;
	return 0;
}

/* pick's wider-pick fields (protocol `pick leaves=`); absent from an
 * older topod: no wider pick known. A widened answer on exactly
 * wider_leaves leaves, more than the fewest, and only where the rule asked
 * allows it: never under leaves=fewest (the promise), under leaves=auto
 * only when the fewest-leaves pick was predicted slower than the random
 * picks' mean (random_time_us, 1.6). */
static int pick_wider(const struct tii__kv *kv, long nfree, int rule, const tii_pick_info_t *i, tii_pick_wider_t *w)
{
	long wd, wl, ml, mp;
	double rnd = -1;
	*w = (tii_pick_wider_t){ 0, 0, -1 };
	if (!tii__kv_get(kv, "widened"))
		return 0;
	if (tii__kv_int(kv, "widened", 0, 1, &wd) || tii__kv_int(kv, "wider_leaves", 0, nfree, &wl) ||
	    tii__parse_us(tii__kv_get(kv, "wider_time_us"), &w->wider_time_s) || (wd && !wl) ||
	    (!wl) != (w->wider_time_s < 0) || (wd && rule == TII_LEAVES_FEWEST) ||
	    (tii__kv_get(kv, "random_time_us") && tii__parse_us(tii__kv_get(kv, "random_time_us"), &rnd)))
		return -1;
	/* times come rounded to the nanosecond: topod's "slower by more than a
	 * millionth" may print as equal */
	if (wd && rule == TII_LEAVES_AUTO && !(rnd >= 0 && i->pick_time_s >= rnd - 1e-9))
		return -1;
	if (wd && (tii__kv_int(kv, "min_leaves", 0, nfree, &ml) || tii__kv_int(kv, "min_pods", 0, nfree, &mp) ||
		   wl != i->leaves || (wl <= ml && i->pods <= mp)))
		return -1;
	w->widened = (int)wd, w->wider_leaves = (int)wl;
	return 0;
}

/* pick trade's OK line (1.4): the answer's figures, its and the
 * allocation's predictions (alloc_*), the balance fields. */
static int trade_head(const struct tii__kv *kv, struct list_ctx *c)
{
	long a, sh, lv, pd, mh, n = (long)c->want;
	uint64_t ml;
	tii_pick_info_t *i = &c->pinfo;
	if (tii__kv_int(kv, "alloc", n, n, &a) || tii__kv_int(kv, "trades", 0, n, &c->trades) ||
	    tii__kv_int(kv, "sharing", 0, n, &sh) || tii__kv_int(kv, "leaves", 0, n, &lv) ||
	    tii__kv_int(kv, "pods", 0, n, &pd) || tii__kv_int(kv, "max_hops", 0, 65535, &mh) ||
	    tii__kv_u64(kv, "max_load", &ml) || !tii__kv_get(kv, "balanced"))
		return TII_E_PROTO;
	*i = (tii_pick_info_t){ !sh, (int)sh, (int)lv, (int)pd, (int)mh, ml, 0, 0, 0, 0, -1, -1, -1,
				0, 0, -1, -1, -1, TII_PICK_NOLIMIT, 0, 0 };
	if (tii__parse_us(tii__kv_get(kv, "time_us"), &i->time_s) ||
	    tii__parse_us(tii__kv_get(kv, "alloc_time_us"), &i->first_fit_time_s) || pick_balance(kv, i))
		return TII_E_PROTO;
	i->pick_time_s = i->time_s;
	return 0;
}

static int list_head(void *ctx, const struct tii__kv *kv, size_t nlines)
{
	struct list_ctx *c = ctx;
	if (nlines != c->want)
		return TII_E_PROTO;
	memset(c->seen, 0, c->nm.n);
	if (c->is_trade)
		return trade_head(kv, c);
	if (c->is_pick) {
		long sf, sh, lv, pd, mh;
		uint64_t ml;
		if (tii__kv_int(kv, "sharing_free", 0, 1, &sf) || tii__kv_int(kv, "sharing", 0, (long)c->nm.n, &sh) ||
		    tii__kv_int(kv, "leaves", 0, (long)c->nm.n, &lv) || tii__kv_int(kv, "pods", 0, (long)c->nm.n, &pd) ||
		    tii__kv_int(kv, "max_hops", 0, 65535, &mh) || tii__kv_u64(kv, "max_load", &ml))
			return TII_E_PROTO;
		c->pinfo = (tii_pick_info_t){ (int)sf, (int)sh, (int)lv, (int)pd, (int)mh, ml, 0, 0, 0, 0, -1, -1, -1,
					      0, 0, -1, -1, -1, TII_PICK_NOLIMIT, 0, 0 };
		if (pick_advice(kv, (long)c->nm.n, &c->pinfo) || pick_balance(kv, &c->pinfo) ||
		    pick_wider(kv, (long)c->nm.n, c->leaves, &c->pinfo, &c->wider))
			return TII_E_PROTO;
		/* judged=, 1.8: what the times are of; a topod before it judged
		 * by the bound (and refuses run=) */
		const char *j = tii__kv_get(kv, "judged");
		if (j ? strcmp(j, run_names[c->run]) : c->run != TII_PICK_RUN_BOUND)
			return TII_E_PROTO;
	}
	if (c->is_map)
		return map_head(kv, &c->minfo);
	return 0;
}

static int list_line(void *ctx, size_t i, char *line, size_t len)
{
	struct list_ctx *c = ctx;
	char *p = line, *w;
	(void)len;
	if (c->rank_lines) {
		long r;
		if (tii__parse_long(tii__word(&p), 0, (long)c->want - 1, &r) || (size_t)r != i)
			return TII_E_PROTO;
	}
	long pos = names_find(&c->nm, (w = tii__word(&p)) ? w : "");
	if (pos < 0)
		return TII_E_PROTO;
	/* a host appears once in order and pick; in map, once per rank it takes */
	if (!c->rank_lines) {
		if (c->seen[pos])
			return TII_E_PROTO;
		c->seen[pos] = 1;
	}
	c->out[i] = (size_t)pos;
	return 0;
}

static int run_list(tii_t *t, struct list_ctx *c, const char *const *names, size_t n, size_t *out)
{
	static const struct tii__handler h = { list_head, list_line, 0 };
	int rc = names_init(&c->nm, names, n);
	if (rc)
		return rc;
	size_t *tmp = malloc((c->want ? c->want : 1) * sizeof(*tmp));
	c->seen = malloc(n ? n : 1);
	if (!tmp || !c->seen) {
		rc = TII_E_NOMEM;
	} else {
		c->out = tmp;
		rc = tii__request(t, &h, c);
		if (!rc)
			memcpy(out, tmp, c->want * sizeof(*out));
	}
	free(tmp);
	free(c->seen);
	free(c->nm.sorted);
	return rc;
}

int tii_order_hosts(tii_t *t, const char *const *hosts, size_t n, size_t *order)
{
	if (!t || !hosts || !n || !order)
		return TII_E_INVAL;
	if (n > TII_MATRIX_MAX)
		return TII_E_TOOMANY;
	struct list_ctx c = { .want = n };
	int rc = tii__req_begin(t, TII__ORDER);
	rc = rc ? rc : tii__req_hosts(t, hosts, n);
	return rc ? rc : run_list(t, &c, hosts, n, order);
}

static int pick_hosts_opt(tii_t *t, const char *pattern, const char *leaves, const char *const *free_hosts,
			  size_t nfree, size_t want, size_t *chosen, tii_pick_info_t *info, size_t infolen,
			  tii_pick_wider_t *wider)
{
	if (!t || !free_hosts || !nfree || !want || !chosen || want > nfree)
		return TII_E_INVAL;
	if (nfree > TII_MATRIX_MAX)
		return TII_E_TOOMANY;
	/* one word of a pattern spec (load's, at most 64 bytes): no blanks */
	char word[8 + 64 + 1];
	if (pattern && (strlen(pattern) > 64 || !*pattern || strpbrk(pattern, " \t\r\n")))
		return TII_E_INVAL;
	struct list_ctx c = { .want = want, .is_pick = 1, .leaves = TII_LEAVES_ANY };
	if (leaves)
		c.leaves = !strcmp(leaves, "fewest") ? TII_LEAVES_FEWEST
			 : !strcmp(leaves, "auto") ? TII_LEAVES_AUTO : TII_LEAVES_ANY;
	int rc = tii__req_begin(t, TII__PICK);
	/* a judged run's times are at the schedules' block size; the bound's
	 * stay at topod's default, as before 1.8 */
	if (!rc && t->pick_run >= 0 && t->sched_bytes) {
		int len = snprintf(word, sizeof(word), "bytes=%llu", (unsigned long long)t->sched_bytes);
		rc = tii__req_word(t, word, (size_t)len);
	}
	if (!rc && pattern) {
		int len = snprintf(word, sizeof(word), "pattern=%s", pattern);
		rc = tii__req_word(t, word, (size_t)len);
	}
	if (!rc && leaves) {
		int len = snprintf(word, sizeof(word), "leaves=%s", leaves);
		rc = tii__req_word(t, word, (size_t)len);
	}
	if (!rc && t->pick_run >= 0) {
		c.run = t->pick_run;
		int len = snprintf(word, sizeof(word), "run=%s", run_names[t->pick_run]);
		rc = tii__req_word(t, word, (size_t)len);
	}
	rc = rc ? rc : tii__req_int(t, (long)want);
	rc = rc ? rc : tii__req_hosts(t, free_hosts, nfree);
	rc = rc ? rc : run_list(t, &c, free_hosts, nfree, chosen);
	if (!rc && info)
		memcpy(info, &c.pinfo, infolen);
	if (!rc && wider)
		*wider = c.wider;
	return rc;
}

static int pick_hosts_pat(tii_t *t, const char *pattern, const char *const *free_hosts, size_t nfree, size_t want,
			  size_t *chosen, tii_pick_info_t *info, size_t infolen)
{
	return pick_hosts_opt(t, pattern, NULL, free_hosts, nfree, want, chosen, info, infolen, NULL);
}

int tii_pick_hosts_leaves(tii_t *t, const char *pattern, int any_leaves, const char *const *free_hosts, size_t nfree,
			  size_t want, size_t *chosen, tii_pick_info_t *info, tii_pick_wider_t *wider)
{
	/* any is topod's default from 1.6: not sent, so a topod before
	 * leaves= answers too (with the fewest leaves it then kept) */
	static const char *const rule[] = { "fewest", NULL, "auto" };   /* TII_LEAVES_* */
	if (any_leaves < TII_LEAVES_FEWEST || any_leaves > TII_LEAVES_AUTO)
		return TII_E_INVAL;
	return pick_hosts_opt(t, pattern, rule[any_leaves], free_hosts, nfree, want, chosen, info, sizeof(*info),
			      wider);
}

static int pick_hosts(tii_t *t, const char *const *free_hosts, size_t nfree, size_t want, size_t *chosen,
		      tii_pick_info_t *info, size_t infolen)
{
	return pick_hosts_pat(t, NULL, free_hosts, nfree, want, chosen, info, infolen);
}

int tii_pick_hosts_pattern(tii_t *t, const char *pattern, const char *const *free_hosts, size_t nfree, size_t want,
			   size_t *chosen, tii_pick_info_t *info)
{
	return pick_hosts_pat(t, pattern, free_hosts, nfree, want, chosen, info, sizeof(*info));
}

int tii_pick_hosts(tii_t *t, const char *const *free_hosts, size_t nfree, size_t want, size_t *chosen,
		   tii_pick_info_t *info)
{
	return pick_hosts(t, free_hosts, nfree, want, chosen, info, PICK_INFO_12);
}

int tii_pick_hosts_13(tii_t *t, const char *const *free_hosts, size_t nfree, size_t want, size_t *chosen,
		      tii_pick_info_t *info)
{
	return pick_hosts(t, free_hosts, nfree, want, chosen, info, PICK_INFO_13);
}

int tii_pick_hosts_14(tii_t *t, const char *const *free_hosts, size_t nfree, size_t want, size_t *chosen,
		      tii_pick_info_t *info)
{
	return pick_hosts(t, free_hosts, nfree, want, chosen, info, sizeof(*info));
}

int tii_pick_trade(tii_t *t, const char *const *alloc, size_t nalloc, const char *const *free_hosts, size_t nfree,
		   size_t *out, size_t *trades, tii_pick_info_t *info)
{
	if (!t || !alloc || !nalloc || (nfree && !free_hosts) || !out)
		return TII_E_INVAL;
	if (nalloc > TII_MATRIX_MAX || nfree > TII_MATRIX_MAX - nalloc)
		return TII_E_TOOMANY;
	const char **all = malloc((nalloc + nfree) * sizeof(*all));
	if (!all)
		return TII_E_NOMEM;
	memcpy(all, alloc, nalloc * sizeof(*all));
	if (nfree)
		memcpy(all + nalloc, free_hosts, nfree * sizeof(*all));
	struct list_ctx c = { .want = nalloc, .is_trade = 1 };
	int rc = tii__req_begin(t, TII__PICK);
	rc = rc ? rc : tii__req_word(t, "trade", 5);
	rc = rc ? rc : tii__req_int(t, (long)nalloc);
	rc = rc ? rc : tii__req_hosts(t, all, nalloc + nfree);
	rc = rc ? rc : run_list(t, &c, all, nalloc + nfree, out);
	free(all);
	/* the count topod states must be the free hosts it answered */
	size_t k = 0;
	for (size_t i = 0; !rc && i < nalloc; i++)
		k += out[i] >= nalloc;
	if (!rc && k != (size_t)c.trades) {
		tii__set_msg(t, "pick trade: trades=%ld, but %zu free hosts answered", c.trades, k);
		rc = TII_E_PROTO;
	}
	if (!rc && trades)
		*trades = k;
	if (!rc && info)
		*info = c.pinfo;
	return rc;
}

/* ---- map -------------------------------------------------------------------- */

/* "map GRAPHWORD host*slots ..." */
static int map_begin(tii_t *t, const char *graph, const char *const *hosts, const int *slots, size_t nh)
{
	if (nh > TII_MATRIX_MAX)
		return TII_E_TOOMANY;
	int rc = tii__req_begin(t, TII__MAP);
	rc = rc ? rc : tii__req_word(t, graph, strlen(graph));
	for (size_t i = 0; !rc && i < nh; i++) {
		char w[TII_NAME_MAX + 24];
		if (tii__check_name(hosts[i]) || (slots && slots[i] < 1))
			return TII_E_INVAL;
		int len = snprintf(w, sizeof(w), "%s*%d", hosts[i], slots ? slots[i] : 1);
		rc = tii__req_word(t, w, (size_t)len);
	}
	return rc;
}

static int map_run(tii_t *t, const char *const *hosts, size_t nh, size_t nranks, size_t *rank_host,
		   tii_map_info_t *info, size_t infolen)
{
	struct list_ctx c = { .want = nranks, .rank_lines = 1, .is_map = 1 };
	int rc = run_list(t, &c, hosts, nh, rank_host);
	if (!rc && info)
		memcpy(info, &c.minfo, infolen);
	return rc;
}

static int map_stencil(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, const int dims[3],
		       int periodic, size_t *rank_host, tii_map_info_t *info, size_t infolen)
{
	if (!t || !hosts || !nhosts || !dims || !rank_host || dims[0] < 1 || dims[1] < 1 || dims[2] < 1)
		return TII_E_INVAL;
	uint64_t n = (uint64_t)dims[0] * (uint64_t)dims[1] * (uint64_t)dims[2];
	if (n > TII_MAP_RANKS_MAX)
		return TII_E_TOOMANY;
	char g[96];
	snprintf(g, sizeof(g), "stencil:%dx%dx%d%s", dims[0], dims[1], dims[2], periodic ? ":periodic" : "");
	int rc = map_begin(t, g, hosts, slots, nhosts);
	return rc ? rc : map_run(t, hosts, nhosts, (size_t)n, rank_host, info, infolen);
}

int tii_map_stencil(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, const int dims[3],
		    int periodic, size_t *rank_host, tii_map_info_t *info)
{
	return map_stencil(t, hosts, slots, nhosts, dims, periodic, rank_host, info, MAP_INFO_12);
}

int tii_map_stencil_13(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, const int dims[3],
		       int periodic, size_t *rank_host, tii_map_info_t *info)
{
	return map_stencil(t, hosts, slots, nhosts, dims, periodic, rank_host, info, sizeof(*info));
}

static int map_graph(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, size_t nranks,
		     const int *xadj, const int *adjncy, const int *adjwgt, size_t *rank_host, tii_map_info_t *info,
		     size_t infolen)
{
	if (!t || !hosts || !nhosts || !nranks || !xadj || !rank_host || (xadj[nranks] > 0 && !adjncy))
		return TII_E_INVAL;
	if (nranks > TII_MAP_RANKS_MAX)
		return TII_E_TOOMANY;
	char g[32];
	snprintf(g, sizeof(g), "csr:%zu", nranks);
	int rc = map_begin(t, g, hosts, slots, nhosts);
	rc = rc ? rc : tii__req_word(t, "--", 2);
	char *w = NULL;
	size_t cap = 0;
	for (size_t r = 0; !rc && r < nranks; r++) {
		if (xadj[r] < 0 || xadj[r + 1] < xadj[r]) {
			rc = TII_E_INVAL;
			break;
		}
		size_t len = 0, need = 2 + (size_t)(xadj[r + 1] - xadj[r]) * 24;
		if (need > cap) {
			char *nw = realloc(w, need);
			if (!nw) {
				rc = TII_E_NOMEM;
				break;
			}
			w = nw;
			cap = need;
		}
		for (int e = xadj[r]; e < xadj[r + 1]; e++) {
			if (adjncy[e] < 0 || (size_t)adjncy[e] >= nranks || (adjwgt && adjwgt[e] < 1)) {
				rc = TII_E_INVAL;
				break;
			}
			len += (size_t)snprintf(w + len, cap - len, adjwgt ? "%s%d:%d" : "%s%d", len ? "," : "", adjncy[e],
						adjwgt ? adjwgt[e] : 0);
		}
		if (!len)
			w[len++] = '-';
		if (!rc)
			rc = tii__req_word(t, w, len);
	}
	free(w);
	return rc ? rc : map_run(t, hosts, nhosts, nranks, rank_host, info, infolen);
}

int tii_map_graph(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, size_t nranks,
		  const int *xadj, const int *adjncy, const int *adjwgt, size_t *rank_host, tii_map_info_t *info)
{
	return map_graph(t, hosts, slots, nhosts, nranks, xadj, adjncy, adjwgt, rank_host, info, MAP_INFO_12);
}

int tii_map_graph_13(tii_t *t, const char *const *hosts, const int *slots, size_t nhosts, size_t nranks,
		     const int *xadj, const int *adjncy, const int *adjwgt, size_t *rank_host, tii_map_info_t *info)
{
	return map_graph(t, hosts, slots, nhosts, nranks, xadj, adjncy, adjwgt, rank_host, info, sizeof(*info));
}

/* ---- MPI reorder -------------------------------------------------------------- */

static int reorder_ranks(tii_t *t, const char *const *rank_hosts, int nranks, int n, const int *sources,
			 const int *degrees, const int *destinations, const int *weights, int *newrank,
			 tii_map_info_t *info, size_t infolen)
{
	if (!t || !rank_hosts || nranks < 1 || n < 0 || (n && (!sources || !degrees)) || !newrank)
		return TII_E_INVAL;
	size_t N = (size_t)nranks, m = 0;
	for (int i = 0; i < n; i++) {
		if (degrees[i] < 0 || sources[i] < 0 || sources[i] >= nranks)
			return TII_E_INVAL;
		m += (size_t)degrees[i];
	}
	if (m && !destinations)
		return TII_E_INVAL;
	int rc = TII_E_NOMEM;
	/* distinct hosts in first-appearance order, with their process counts */
	struct names nm = { 0 };
	const char **hosts = malloc(N * sizeof(*hosts));
	int *slots = calloc(N, sizeof(*slots)), *xadj = calloc(N + 1, sizeof(*xadj));
	int *adj = malloc((m ? m : 1) * sizeof(*adj)), *wt = weights ? malloc((m ? m : 1) * sizeof(*wt)) : NULL;
	size_t *hostof = malloc(N * sizeof(*hostof)), *rank_host = malloc(N * sizeof(*rank_host)), nh = 0;
	size_t *fill = calloc(N, sizeof(*fill));
	if (!hosts || !slots || !xadj || !adj || (weights && !wt) || !hostof || !rank_host || !fill ||
	    names_init(&nm, rank_hosts, N))
		goto out;
	/* the first position of each name: equal names are adjacent in the
	 * sorted order, and qsort_r's order among them does not matter */
	for (size_t k = 0, run; k < N; k = run) {
		size_t first = nm.sorted[k];
		for (run = k + 1; run < N && !strcmp(rank_hosts[nm.sorted[run]], rank_hosts[first]); run++)
			if (nm.sorted[run] < first)
				first = nm.sorted[run];
		for (size_t j = k; j < run; j++)
			hostof[nm.sorted[j]] = first;
	}
	size_t *hidx = fill;   /* reuse: host index of a first position, + 1 */
	for (size_t p = 0; p < N; p++) {
		if (!hidx[hostof[p]]) {
			hosts[nh] = rank_hosts[p];
			hidx[hostof[p]] = ++nh;
		}
		slots[hidx[hostof[p]] - 1]++;
	}
	/* CSR by source vertex (several sources may repeat a vertex) */
	size_t e = 0;
	for (int i = 0; i < n; i++)
		xadj[sources[i] + 1] += degrees[i];
	for (size_t v = 0; v < N; v++)
		xadj[v + 1] += xadj[v];
	int *pos = calloc(N, sizeof(*pos));
	if (!pos)
		goto out;
	for (int i = 0; i < n; i++)
		for (int d = 0; d < degrees[i]; d++, e++) {
			int s = sources[i], at = xadj[s] + pos[s]++;
			if (destinations[e] < 0 || destinations[e] >= nranks || (weights && weights[e] < 1)) {
				free(pos);
				rc = TII_E_INVAL;
				goto out;
			}
			adj[at] = destinations[e];
			if (wt)
				wt[at] = weights[e];
		}
	free(pos);
	rc = map_graph(t, hosts, slots, nh, N, xadj, adj, wt, rank_host, info, infolen);
	if (rc)
		goto out;
	/* vertices mapped to a host go, ascending, to its processes, ascending */
	{
		size_t *next = calloc(nh, sizeof(*next)), *vert = malloc(N * sizeof(*vert)), *start = calloc(nh + 1, sizeof(*start));
		if (!next || !vert || !start) {
			free(next), free(vert), free(start);
			rc = TII_E_NOMEM;
			goto out;
		}
		for (size_t v = 0; v < N; v++)
			start[rank_host[v] + 1]++;
		for (size_t k = 0; k < nh; k++) {
			start[k + 1] += start[k];
			if (start[k + 1] - start[k] != (size_t)slots[k])
				rc = TII_E_PROTO;   /* topod must fill every process */
		}
		if (!rc) {
			for (size_t v = 0; v < N; v++)
				vert[start[rank_host[v]] + next[rank_host[v]]++] = v;
			memset(next, 0, nh * sizeof(*next));
			for (size_t p = 0; p < N; p++) {
				size_t k = hidx[hostof[p]] - 1;
				newrank[p] = (int)vert[start[k] + next[k]++];
			}
		}
		free(next), free(vert), free(start);
	}
out:
	free(nm.sorted);
	free(hosts);
	free(slots);
	free(xadj);
	free(adj);
	free(wt);
	free(hostof);
	free(rank_host);
	free(fill);
	return rc;
}

int tii_reorder_ranks(tii_t *t, const char *const *rank_hosts, int nranks, int n, const int *sources,
		      const int *degrees, const int *destinations, const int *weights, int *newrank,
		      tii_map_info_t *info)
{
	return reorder_ranks(t, rank_hosts, nranks, n, sources, degrees, destinations, weights, newrank, info,
			     MAP_INFO_12);
}

int tii_reorder_ranks_13(tii_t *t, const char *const *rank_hosts, int nranks, int n, const int *sources,
			 const int *degrees, const int *destinations, const int *weights, int *newrank,
			 tii_map_info_t *info)
{
	return reorder_ranks(t, rank_hosts, nranks, n, sources, degrees, destinations, weights, newrank, info,
			     sizeof(*info));
}
