/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * place_cmds.c - topoquery order, pick and map (formats at the top of
 * main.c), and the host file formats they write:
 *   list      one host per line (per rank for map)
 *   slurm     SLURM_HOSTFILE for --distribution=arbitrary: line i is task
 *             i's host (order: each host repeated --slots times)
 *   openmpi   Open MPI hostfile: "HOST slots=N"
 *   rankfile  Open MPI rankfile: "rank R=HOST slot=K"
 *   mpich     MPICH/Hydra machinefile: "HOST:N"
 *   hostlist  one compressed Slurm hostlist (sbatch --nodelist)
 * Graph files for map: METIS (header "n m [fmt]", 1-based neighbours) or
 * Scotch .grf (first line "0"), read here and sent as edges.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"
#include "topoquery.h"

static int known_format(const char *f)
{
	static const char *const ok[] = { "text", "list", "slurm", "openmpi", "rankfile", "mpich", "hostlist" };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(f, ok[i]))
			return 1;
	return 0;
}

/* Hosts names[0..n) each with cnt[i] ranks, in this order. */
static void write_hostfile(FILE *o, const char *fmt, char *const *names, const int *cnt, size_t n)
{
	if (!strcmp(fmt, "hostlist")) {
		char *hl = hostlist_compress(names, n);
		fprintf(o, "%s\n", hl ? hl : "");
		free(hl);
		return;
	}
	size_t rank = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(fmt, "openmpi"))
			fprintf(o, "%s slots=%d\n", names[i], cnt[i]);
		else if (!strcmp(fmt, "mpich"))
			fprintf(o, "%s:%d\n", names[i], cnt[i]);
		else
			for (int k = 0; k < cnt[i] && (k == 0 || strcmp(fmt, "list")); k++, rank++)
				if (!strcmp(fmt, "rankfile"))
					fprintf(o, "rank %zu=%s slot=%d\n", rank, names[i], k);
				else
					fprintf(o, "%s\n", names[i]);
	}
}

static int collect(struct tq *q, int argc, char **argv, struct strv *out)
{
	for (int i = 0; i < argc; i++) {
		const char *why = NULL;
		if (hostlist_expand(out, argv[i], &why))
			return tq_usage_error("%s: %s", argv[i], why);
	}
	for (size_t i = 0; i < q->hosts.n; i++)
		if (strv_push(out, q->hosts.v[i], strlen(q->hosts.v[i])))
			return tq_nomem();
	if (!out->n)
		return tq_usage_error("no hosts given");
	if (out->n > TII_MATRIX_MAX)
		return tq_usage_error("%zu hosts, at most %d", out->n, TII_MATRIX_MAX);
	return EXIT_OK;
}

int cmd_order(struct tq *q, int argc, char **argv)
{
	if (!known_format(q->format))
		return tq_usage_error("order --format: text, list, slurm, openmpi, rankfile, mpich or hostlist");
	struct strv h = { 0 };
	int st = collect(q, argc, argv, &h);
	size_t *ord = st ? NULL : malloc(h.n * sizeof(*ord));
	char **names = st ? NULL : malloc(h.n * sizeof(*names));
	int *cnt = st ? NULL : malloc(h.n * sizeof(*cnt));
	if (!st && (!ord || !names || !cnt))
		st = tq_nomem();
	if (!st) {
		int rc = tii_order_hosts(q->t, (const char *const *)h.v, h.n, ord);
		if (rc) {
			st = tq_fail(q, "order", rc);
		} else {
			for (size_t i = 0; i < h.n; i++)
				names[i] = h.v[ord[i]], cnt[i] = q->slots;
			if (q->json) {
				fprintf(q->out, "{\"generation\":%" PRIu64 ",\"hosts\":[", tii_last_generation(q->t));
				for (size_t i = 0; i < h.n; i++) {
					if (i)
						fputc(',', q->out);
					json_str(q->out, names[i]);
				}
				fputs("]}\n", q->out);
			} else {
				write_hostfile(q->out, strcmp(q->format, "text") ? q->format : "list", names, cnt, h.n);
			}
		}
	}
	free(ord);
	free(names);
	free(cnt);
	strv_free(&h);
	return st;
}

/* Predicted microseconds, "-" (null in JSON) when unknown. */
static void pick_json_us(FILE *o, const char *key, double s)
{
	if (s < 0)
		fprintf(o, "\"%s\":null,", key);
	else
		fprintf(o, "\"%s\":%.3f,", key, s * 1e6);
}

static void pick_text_us(FILE *o, const char *key, double s)
{
	if (s < 0)
		fprintf(o, "%s -\n", key);
	else
		fprintf(o, "%s %.3f\n", key, s * 1e6);
}

/* tii_pick_info_t.limit_why, as topod's reply words it */
static const char *const pick_why[] = { "at", "uplinks", "routes", "-" };

/* pick trade's answer: the allocation after the trade and the predicted
 * gain (what a reservation costs when it cannot be made: docs/protocol.md,
 * `pick trade`). */
static void trade_out(struct tq *q, const tii_pick_info_t *in, char **names, const int *cnt, long n, size_t nfree,
		      size_t trades)
{
	FILE *o = q->out;
	if (q->json) {
		fprintf(o, "{\"generation\":%" PRIu64 ",\"alloc\":%ld,\"free\":%zu,\"trades\":%zu,\"sharing\":%d,"
			"\"leaves\":%d,\"pods\":%d,\"max_hops\":%d,\"max_load\":%" PRIu64 ",", tii_last_generation(q->t), n,
			nfree, trades, in->sharing, in->leaves, in->pods, in->max_hops, in->max_load);
		pick_json_us(o, "time_us", in->time_s);
		pick_json_us(o, "alloc_time_us", in->first_fit_time_s);
		pick_json_us(o, "bottleneck_us", in->bottleneck_s);
		pick_json_us(o, "alloc_bottleneck_us", in->first_fit_bottleneck_s);
		pick_json_us(o, "limit_us", in->limit_s);
		fprintf(o, "\"limit\":\"%s\",\"hosts\":[", pick_why[in->limit_why & 3]);
		for (long i = 0; i < n; i++) {
			if (i)
				fputc(',', o);
			json_str(o, names[i]);
		}
		fputs("]}\n", o);
	} else if (!strcmp(q->format, "text")) {
		char *hl = hostlist_compress(names, (size_t)n);
		fprintf(o, "alloc %ld\nfree %zu\ntrades %zu\nsharing %d\nleaves %d\npods %d\nmax_hops %d\nmax_load %" PRIu64
			"\n", n, nfree, trades, in->sharing, in->leaves, in->pods, in->max_hops, in->max_load);
		pick_text_us(o, "time_us", in->time_s);
		pick_text_us(o, "alloc_time_us", in->first_fit_time_s);
		pick_text_us(o, "bottleneck_us", in->bottleneck_s);
		pick_text_us(o, "alloc_bottleneck_us", in->first_fit_bottleneck_s);
		pick_text_us(o, "limit_us", in->limit_s);
		fprintf(o, "limit %s\nnodelist %s\n", pick_why[in->limit_why & 3], hl ? hl : "");
		free(hl);
	} else {
		write_hostfile(o, q->format, names, cnt, (size_t)n);
	}
}

int cmd_pick(struct tq *q, int argc, char **argv)
{
	if (!known_format(q->format))
		return tq_usage_error("pick --format: text, list, slurm, openmpi, rankfile, mpich or hostlist");
	const char *pattern = argc && !strncmp(argv[0], "pattern=", 8) ? argv[0] + 8 : NULL;
	argc -= pattern != NULL, argv += pattern != NULL;
	const char *leaves = argc && !strncmp(argv[0], "leaves=", 7) ? argv[0] + 7 : NULL;
	argc -= leaves != NULL, argv += leaves != NULL;
	int rule = TII_LEAVES_ANY;
	if (leaves && (rule = !strcmp(leaves, "fewest") ? TII_LEAVES_FEWEST
			      : !strcmp(leaves, "any")  ? TII_LEAVES_ANY
			      : !strcmp(leaves, "auto") ? TII_LEAVES_AUTO : -1) < 0)
		return tq_usage_error("pick leaves=any|fewest|auto, got '%.40s'", leaves);
	/* run=NAME [bytes=B] (libtii 1.8): what every candidate is judged by,
	 * at the job's block size */
	static const char *const runs[] = { "bound", "route", "xor", "smpi-ompi", "smpi-mpich", "ompi", "mpich" };
	const char *run = argc && !strncmp(argv[0], "run=", 4) ? argv[0] + 4 : NULL;
	argc -= run != NULL, argv += run != NULL;
	int judge = run ? -1 : TII_PICK_RUN_BOUND;
	for (int i = 0; run && i < (int)(sizeof(runs) / sizeof(runs[0])); i++)
		if (!strcmp(run, runs[i]))
			judge = i;   /* TII_PICK_RUN_*, then TII_PICK_RUN_NATIVE + TII_NATIVE_* */
	if (judge < 0)
		return tq_usage_error("pick run=bound|route|xor|smpi-ompi|smpi-mpich|ompi|mpich, got '%.40s'", run);
	unsigned long long bytes = 0;
	if (run && argc && !strncmp(argv[0], "bytes=", 6)) {
		char *e;
		bytes = strtoull(argv[0] + 6, &e, 10);
		if (*e || !bytes || bytes > (1ull << 40))
			return tq_usage_error("pick run=%s bytes=B: B is 1..2^40, got '%.40s'", run, argv[0]);
		argc--, argv++;
	}
	int trade = argc && !strcmp(argv[0], "trade");
	argc -= trade, argv += trade;
	if (trade && (pattern || leaves || run))
		return tq_usage_error("pick trade judges an all-to-all on the allocation's leaves: no pattern=, leaves= or run=");
	if (tii_set_pick_run(q->t, judge) || (bytes && tii_set_schedule_advice(q->t, bytes, 1)))
		return tq_usage_error("pick run=%s: not accepted by libtii", run);
	char *end;
	long want = argc ? strtol(argv[0], &end, 10) : 0;
	if (!argc || *end || want < 1 || want > TII_MATRIX_MAX)
		return tq_usage_error("pick [pattern=P] [leaves=any|fewest|auto] [run=R [bytes=B]] [trade] N HOSTS...: N is 1..%d",
				      TII_MATRIX_MAX);
	struct strv h = { 0 };
	int st = collect(q, argc - 1, argv + 1, &h);
	size_t *ch = st ? NULL : malloc((size_t)want * sizeof(*ch));
	char **names = st ? NULL : malloc((size_t)want * sizeof(*names));
	int *cnt = st ? NULL : malloc((size_t)want * sizeof(*cnt));
	if (!st && (!ch || !names || !cnt))
		st = tq_nomem();
	if (!st && (size_t)want > h.n) {
		fprintf(stderr, "topoquery: pick: asked for %ld hosts, %zu are free\n", want, h.n);
		st = EXIT_FAIL;
	}
	tii_pick_info_t in;
	tii_pick_wider_t wd = { 0, 0, -1 };
	size_t trades = 0;
	if (!st) {
		const char *const *v = (const char *const *)h.v;
		int rc = trade ? tii_pick_trade(q->t, v, (size_t)want, v + want, h.n - (size_t)want, ch, &trades, &in)
			       : tii_pick_hosts_leaves(q->t, pattern, rule, v, h.n, (size_t)want, ch, &in, &wd);
		if (rc)
			st = tq_fail(q, "pick", rc);
	}
	if (!st && trade) {
		for (long i = 0; i < want; i++)
			names[i] = h.v[ch[i]], cnt[i] = q->slots;
		trade_out(q, &in, names, cnt, want, h.n - (size_t)want, trades);
	} else if (!st) {
		for (long i = 0; i < want; i++)
			names[i] = h.v[ch[i]], cnt[i] = q->slots;
		FILE *o = q->out;
		if (q->json) {
			fprintf(o, "{\"generation\":%" PRIu64 ",\"picked\":%ld,\"free\":%zu,\"sharing_free\":%s,"
				"\"sharing\":%d,\"leaves\":%d,\"pods\":%d,\"max_hops\":%d,\"max_load\":%" PRIu64 ",",
				tii_last_generation(q->t), want, h.n, in.sharing_free ? "true" : "false", in.sharing, in.leaves,
				in.pods, in.max_hops, in.max_load);
			fprintf(o, "\"min_leaves\":%d,\"min_pods\":%d,\"sharing_free_wider\":%s,\"method\":\"%s\",",
				in.min_leaves, in.min_pods, in.sharing_free_wider ? "true" : "false",
				in.first_fit ? "first_fit" : "pick");
			pick_json_us(o, "time_us", in.time_s);
			pick_json_us(o, "pick_time_us", in.pick_time_s);
			pick_json_us(o, "first_fit_time_us", in.first_fit_time_s);
			fprintf(o, "\"balanced\":%s,\"swaps\":%d,", in.balanced ? "true" : "false", in.swaps);
			pick_json_us(o, "bottleneck_us", in.bottleneck_s);
			pick_json_us(o, "limit_us", in.limit_s);
			pick_json_us(o, "first_fit_bottleneck_us", in.first_fit_bottleneck_s);
			fprintf(o, "\"limit\":\"%s\",\"widened\":%s,\"wider_leaves\":%d,", pick_why[in.limit_why & 3],
				wd.widened ? "true" : "false", wd.wider_leaves);
			pick_json_us(o, "wider_time_us", wd.wider_time_s);
			fputs("\"hosts\":[", o);
			for (long i = 0; i < want; i++) {
				if (i)
					fputc(',', o);
				json_str(o, names[i]);
			}
			fputs("]}\n", o);
		} else if (!strcmp(q->format, "text")) {
			char *hl = hostlist_compress(names, (size_t)want);
			fprintf(o, "picked %ld\nfree %zu\nsharing_free %d\nsharing %d\nleaves %d\npods %d\nmax_hops %d\n"
				"max_load %" PRIu64 "\nmin_leaves %d\nmin_pods %d\nsharing_free_wider %d\nmethod %s\n",
				want, h.n, in.sharing_free, in.sharing, in.leaves, in.pods, in.max_hops, in.max_load, in.min_leaves,
				in.min_pods, in.sharing_free_wider, in.first_fit ? "first_fit (pick predicted slower)" : "pick");
			pick_text_us(o, "time_us", in.time_s);
			pick_text_us(o, "pick_time_us", in.pick_time_s);
			pick_text_us(o, "first_fit_time_us", in.first_fit_time_s);
			fprintf(o, "balanced %d\nswaps %d\n", in.balanced, in.swaps);
			pick_text_us(o, "bottleneck_us", in.bottleneck_s);
			pick_text_us(o, "limit_us", in.limit_s);
			pick_text_us(o, "first_fit_bottleneck_us", in.first_fit_bottleneck_s);
			fprintf(o, "limit %s\nwidened %d\nwider_leaves %d\n", pick_why[in.limit_why & 3], wd.widened,
				wd.wider_leaves);
			pick_text_us(o, "wider_time_us", wd.wider_time_s);
			fprintf(o, "nodelist %s\n", hl ? hl : "");
			free(hl);
		} else {
			write_hostfile(o, q->format, names, cnt, (size_t)want);
		}
	}
	free(ch);
	free(names);
	free(cnt);
	strv_free(&h);
	return st;
}

/* ---- graph files ---------------------------------------------------------------- */

struct graph {
	size_t n;
	int *xadj, *adj, *w;   /* w NULL when unweighted */
};

static void graph_free(struct graph *g)
{
	free(g->xadj);
	free(g->adj);
	free(g->w);
	memset(g, 0, sizeof(*g));   /* a second free is harmless */
}

/* Next integer of the file, skipping blanks (and newlines if nl); 0 ok,
 * 1 end of line (when !nl), -1 end of file or garbage. */
static int next_int(FILE *f, int nl, long *v)
{
	int c;
	do
		c = getc(f);
	while (c == ' ' || c == '\t' || c == '\r' || (nl && c == '\n'));
	if (c == '\n')
		return 1;
	if (c == '%' || c == '#') {   /* METIS comment line */
		while ((c = getc(f)) != '\n' && c != EOF)
			;
		return nl ? next_int(f, nl, v) : 1;
	}
	if (c == EOF)
		return -1;
	if (c < '0' || c > '9')
		return -1;
	long x = c - '0';
	while ((c = getc(f)) >= '0' && c <= '9')
		if ((x = x * 10 + (c - '0')) > 1L << 40)
			return -1;
	ungetc(c, f);
	*v = x;
	return 0;
}

/* What a graph file's header says about the lines that follow. */
struct ghead {
	int scotch;      /* Scotch .grf, else METIS */
	long n, m;       /* vertices; edges (METIS) or arcs (Scotch) */
	long base;       /* Scotch: the first vertex number (0 or 1); METIS: 1 */
	int labels;      /* Scotch: each vertex line starts with its label */
	int vsize;       /* METIS: each vertex line starts with its size */
	long nvw;        /* vertex weights per vertex: METIS ncon, Scotch 0 or 1 */
	int ew;          /* edge weights: Scotch before each neighbour, METIS after */
};

/* Scotch: "0", "n arcs", "base flags" with flags' digits hundreds = vertex
 * labels, tens = edge weights, units = vertex weights (Scotch's graphLoad).
 * METIS: "n m [fmt [ncon]]" with fmt's digits hundreds = vertex sizes,
 * tens = vertex weights, units = edge weights. */
static int graph_head(FILE *f, struct ghead *h)
{
	long first, x, flags;
	memset(h, 0, sizeof(*h));
	h->base = 1;
	if (next_int(f, 1, &first))
		return -1;
	if (first == 0) {
		h->scotch = 1;
		if (next_int(f, 1, &h->n) || next_int(f, 1, &h->m) || next_int(f, 1, &h->base) ||
		    next_int(f, 1, &flags) || h->base > 1 || flags > 111)
			return -1;
		h->labels = (flags / 100) % 10 != 0;
		h->ew = (flags / 10) % 10 != 0;
		h->nvw = flags % 10 != 0;
		return 0;
	}
	h->n = first;
	if (next_int(f, 1, &h->m))
		return -1;
	int r = next_int(f, 0, &x);
	if (r == 0) {
		if (x > 111)
			return -1;
		h->vsize = (x / 100) % 10 != 0;
		h->nvw = (x / 10) % 10 != 0;
		h->ew = x % 10 != 0;
		if ((r = next_int(f, 0, &x)) == 0) {
			if (x < 1 || x > 64)
				return -1;
			if (h->nvw)
				h->nvw = x;   /* ncon: that many weights per vertex */
			r = next_int(f, 0, &x);
		}
	}
	return r == 1 || r == -1 ? 0 : -1;   /* nothing else on the header line */
}

/* One vertex line: its leading numbers, then its neighbours (Scotch: a
 * degree and [weight] neighbour pairs; METIS: neighbour [weight] to the
 * end of the line). Raw neighbour numbers go to adj; relabel() maps them. */
static int graph_vertex(FILE *f, const struct ghead *h, struct graph *g, size_t v, size_t cap, long *label)
{
	long x, deg = -1;
	if (h->labels && next_int(f, 1, label))
		return -1;
	for (long k = 0; k < h->vsize + h->nvw; k++)
		if (next_int(f, 1, &x))
			return -1;
	if (h->scotch && next_int(f, 1, &deg))
		return -1;
	size_t m = (size_t)g->xadj[v];
	for (long k = 0; deg < 0 || k < deg; k++) {
		long u, wt = 1;
		if (h->scotch && h->ew && next_int(f, 1, &wt))
			return -1;
		int r = next_int(f, h->scotch, &u);
		if (!h->scotch && (r == 1 || r == -1))
			break;   /* a METIS line ends at its newline (the last one may lack it) */
		if (r || (!h->scotch && h->ew && next_int(f, 0, &wt)) || m == cap || wt < 1 || wt > 1L << 30 ||
		    u > INT32_MAX)
			return -1;
		g->adj[m] = (int)u;
		if (h->ew)
			g->w[m] = (int)wt;
		m++;
	}
	g->xadj[v + 1] = (int)m;
	return 0;
}

static int cmp_label(const void *a, const void *b)
{
	const long *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Neighbour numbers into vertex indices: by label where the file has
 * labels (each distinct), else number - base. */
static int relabel(const struct ghead *h, struct graph *g, long (*lab)[2])
{
	if (lab) {
		qsort(lab, g->n, sizeof(*lab), cmp_label);
		for (size_t i = 1; i < g->n; i++)
			if (lab[i][0] == lab[i - 1][0])
				return -1;
	}
	for (int k = 0; k < g->xadj[g->n]; k++) {
		long u = g->adj[k], key[2] = { u, 0 };
		if (lab) {
			long(*hit)[2] = bsearch(key, lab, g->n, sizeof(*lab), cmp_label);
			if (!hit)
				return -1;
			u = (*hit)[1];
		} else {
			u -= h->base;
		}
		if (u < 0 || (size_t)u >= g->n)
			return -1;
		g->adj[k] = (int)u;
	}
	return 0;
}

static int graph_body(FILE *f, const struct ghead *h, struct graph *g)
{
	g->n = (size_t)h->n;
	size_t cap = 2 * (size_t)h->m + 1;
	g->xadj = calloc(g->n + 1, sizeof(*g->xadj));
	g->adj = malloc(cap * sizeof(*g->adj));
	g->w = h->ew ? malloc(cap * sizeof(*g->w)) : NULL;
	long(*lab)[2] = h->labels ? malloc(g->n * sizeof(*lab)) : NULL;
	int rc = -1;
	if (g->xadj && g->adj && (!h->ew || g->w) && (!h->labels || lab)) {
		rc = 0;
		for (size_t v = 0; v < g->n && !rc; v++) {
			long label = 0;
			rc = graph_vertex(f, h, g, v, cap, &label);
			if (lab)
				lab[v][0] = label, lab[v][1] = (long)v;
		}
		if (!rc)
			rc = relabel(h, g, lab);
	}
	free(lab);
	return rc;
}

static int graph_read(const char *path, struct graph *g, char *why, size_t wl)
{
	memset(g, 0, sizeof(*g));
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(why, wl, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct ghead h;
	int rc = graph_head(f, &h);
	if (!rc && (h.n < 1 || h.n > TII_MAP_RANKS_MAX || h.m < 0 || h.m > (1L << 24)))
		rc = -1;
	if (!rc)
		rc = graph_body(f, &h, g);
	if (rc) {
		snprintf(why, wl, "%s: not a METIS or Scotch graph file (or more than %d vertices)", path, TII_MAP_RANKS_MAX);
		graph_free(g);
	}
	fclose(f);
	return rc;
}

/* ---- map ----------------------------------------------------------------------- */

/* map's hosts with their slots, and its answer. */
struct mapjob {
	struct strv h;
	int *slots;          /* [h.n] */
	size_t ns, cap;      /* slots filled, allocated */
	size_t nranks, *rh;  /* rank -> index into h */
	tii_map_info_t in;
	struct graph g;      /* a graph file's */
};

/* Room in slots for every host listed so far. */
static int map_slots_room(struct mapjob *j)
{
	if (j->h.n <= j->cap)
		return EXIT_OK;
	j->cap = j->h.n * 2;
	int *ns2 = realloc(j->slots, j->cap * sizeof(*j->slots));
	if (!ns2)
		return tq_nomem();
	j->slots = ns2;
	return EXIT_OK;
}

/* HOSTLIST[*SLOTS] words, then -f hosts with --slots. */
static int map_hosts(struct tq *q, int argc, char **argv, struct mapjob *j)
{
	int st = EXIT_OK;
	for (int i = 1; i < argc && !st; i++) {
		char *star = strrchr(argv[i], '*'), *end;
		long s = q->slots;
		if (star) {
			s = strtol(star + 1, &end, 10);
			if (*end || s < 1 || s > TII_MAP_RANKS_MAX)
				st = tq_usage_error("%s: want HOSTS*SLOTS", argv[i]);
			*star = '\0';
		}
		const char *why = NULL;
		if (!st && hostlist_expand(&j->h, argv[i], &why))
			st = tq_usage_error("%s: %s", argv[i], why);
		if (!st)
			st = map_slots_room(j);
		for (; !st && j->ns < j->h.n; j->ns++)
			j->slots[j->ns] = (int)s;
	}
	for (size_t i = 0; !st && i < q->hosts.n; i++) {
		if (strv_push(&j->h, q->hosts.v[i], strlen(q->hosts.v[i])))
			st = tq_nomem();
		if (!st)
			st = map_slots_room(j);
		if (!st)
			j->slots[j->ns++] = q->slots;
	}
	if (!st && !j->h.n)
		st = tq_usage_error("no hosts given");
	if (!st && j->h.n > TII_MATRIX_MAX)
		st = tq_usage_error("%zu hosts, at most %d", j->h.n, TII_MATRIX_MAX);
	return st;
}

/* "stencil:X[xY[xZ]][:periodic]", sent as its dimensions; *rc is the
 * library's answer. */
static int map_stencil(struct tq *q, const char *gspec, struct mapjob *j, int *rc)
{
	int d[3] = { 1, 1, 1 }, k = 0, periodic = 0;
	const char *p = gspec + 8;
	char *e;
	while (k < 3 && *p >= '0' && *p <= '9') {
		long x = strtol(p, &e, 10);
		d[k++] = x > TII_MAP_RANKS_MAX ? TII_MAP_RANKS_MAX + 1 : (int)x;
		p = e;
		if (*p != 'x')
			break;
		p++;
	}
	if (!strcmp(p, ":periodic"))
		periodic = 1, p += 9;
	if (!k || *p || d[0] < 1 || d[1] < 1 || d[2] < 1 || (long)d[0] * d[1] * d[2] > TII_MAP_RANKS_MAX)
		return tq_usage_error("bad stencil %s: stencil:X[xY[xZ]][:periodic]", gspec);
	j->nranks = (size_t)d[0] * d[1] * d[2];
	j->rh = malloc(j->nranks * sizeof(*j->rh));
	*rc = j->rh ? tii_map_stencil(q->t, (const char *const *)j->h.v, j->slots, j->h.n, d, periodic, j->rh, &j->in)
		    : TII_E_NOMEM;
	return EXIT_OK;
}

/* A METIS or Scotch graph file, sent as CSR; *rc is the library's answer. */
static int map_file(struct tq *q, const char *gspec, struct mapjob *j, int *rc)
{
	char why[256];
	if (graph_read(gspec, &j->g, why, sizeof(why))) {
		fprintf(stderr, "topoquery: map: %s\n", why);
		return EXIT_FAIL;
	}
	j->nranks = j->g.n;
	j->rh = malloc(j->nranks * sizeof(*j->rh));
	*rc = j->rh ? tii_map_graph(q->t, (const char *const *)j->h.v, j->slots, j->h.n, j->g.n, j->g.xadj, j->g.adj,
				    j->g.w, j->rh, &j->in)
		    : TII_E_NOMEM;
	return EXIT_OK;
}

static const char *map_method(const tii_map_info_t *in)
{
	return in->method == TII_MAP_SCOTCH ? "scotch" : in->method == TII_MAP_RR ? "rr" : "block";
}

static const char *map_reason(const tii_map_info_t *in)
{
	static const char *const r[] = { "faster", "slower", "equal", "unknown" };
	return in->reason >= 0 && in->reason < 4 ? r[in->reason] : "unknown";
}

/* A time in seconds as JSON (null if unknown). */
static void json_time(FILE *o, const char *key, double s)
{
	if (s < 0)
		fprintf(o, ",\"%s\":null", key);
	else
		fprintf(o, ",\"%s\":%.9g", key, s);
}

/* The predicted times as JSON members (after the figures). */
static void map_json_times(FILE *o, const tii_map_info_t *in)
{
	fprintf(o, ",\"reason\":\"%s\",\"swaps\":%d,\"bytes\":%" PRIu64, map_reason(in), in->swaps, in->bytes);
	json_time(o, "time_s", in->time_s);
	json_time(o, "block_time_s", in->block_time_s);
	json_time(o, "rr_time_s", in->rr_time_s);
	json_time(o, "scotch_time_s", in->scotch_time_s);
	if (in->bottleneck_bps)
		fprintf(o, ",\"bottleneck\":{\"node\":\"0x%016" PRIx64 "\",\"port\":%d,\"bps\":%" PRIu64 "}",
			in->bottleneck_guid, in->bottleneck_port, in->bottleneck_bps);
	else
		fputs(",\"bottleneck\":null", o);
}

/* "time_us T" lines of the text format ("-" if unknown). */
static void text_time(FILE *o, const char *key, double s)
{
	if (s < 0)
		fprintf(o, "%s -\n", key);
	else
		fprintf(o, "%s %.3f\n", key, s * 1e6);
}

static void map_text_times(FILE *o, const tii_map_info_t *in)
{
	fprintf(o, "reason %s\nswaps %d\nbytes %" PRIu64 "\n", map_reason(in), in->swaps, in->bytes);
	text_time(o, "time_us", in->time_s);
	text_time(o, "block_time_us", in->block_time_s);
	text_time(o, "rr_time_us", in->rr_time_s);
	text_time(o, "scotch_time_us", in->scotch_time_s);
	if (in->bottleneck_bps)
		fprintf(o, "bottleneck 0x%016" PRIx64 ":%d at %.3g Gb/s\n", in->bottleneck_guid, in->bottleneck_port,
			(double)in->bottleneck_bps / 1e9);
	else
		fputs("bottleneck -\n", o);
}

static void map_write(struct tq *q, const struct mapjob *j)
{
	FILE *o = q->out;
	const tii_map_info_t *in = &j->in;
	char *const *hv = j->h.v;
	if (q->json) {
		fprintf(o, "{\"generation\":%" PRIu64 ",\"ranks\":%zu,\"hosts\":%zu,\"method\":\"%s\",\"moved\":%d,"
			"\"hop_bytes\":%" PRIu64 ",\"max_load\":%" PRIu64 ",\"block\":{\"hop_bytes\":%" PRIu64
			",\"max_load\":%" PRIu64 "},\"round_robin\":{\"hop_bytes\":%" PRIu64 ",\"max_load\":%" PRIu64 "}",
			tii_last_generation(q->t), j->nranks, j->h.n, map_method(in), in->moved, in->hop_bytes,
			in->max_load, in->block_hop_bytes, in->block_max_load, in->rr_hop_bytes, in->rr_max_load);
		map_json_times(o, in);
		fputs(",\"rank_host\":[", o);
		for (size_t r = 0; r < j->nranks; r++) {
			if (r)
				fputc(',', o);
			json_str(o, hv[j->rh[r]]);
		}
		fputs("]}\n", o);
	} else if (!strcmp(q->format, "text")) {
		fprintf(o, "ranks %zu\nhosts %zu\nmethod %s\nmoved %d\nhop_bytes %" PRIu64 "\nmax_load %" PRIu64
			"\nblock_hop_bytes %" PRIu64 "\nblock_max_load %" PRIu64 "\nrr_hop_bytes %" PRIu64
			"\nrr_max_load %" PRIu64 "\n",
			j->nranks, j->h.n, map_method(in), in->moved, in->hop_bytes, in->max_load, in->block_hop_bytes,
			in->block_max_load, in->rr_hop_bytes, in->rr_max_load);
		map_text_times(o, in);
		for (size_t r = 0; r < j->nranks; r++)
			fprintf(o, "rank %zu %s\n", r, hv[j->rh[r]]);
	} else if (!strcmp(q->format, "rankfile")) {
		int *used = calloc(j->h.n, sizeof(*used));
		for (size_t r = 0; r < j->nranks && used; r++)
			fprintf(o, "rank %zu=%s slot=%d\n", r, hv[j->rh[r]], used[j->rh[r]]++);
		free(used);
	} else {
		for (size_t r = 0; r < j->nranks; r++)
			fprintf(o, "%s\n", hv[j->rh[r]]);
	}
}

int cmd_map(struct tq *q, int argc, char **argv)
{
	if (strcmp(q->format, "text") && strcmp(q->format, "list") && strcmp(q->format, "slurm") &&
	    strcmp(q->format, "rankfile"))
		return tq_usage_error("map --format: text, list (= slurm: one line per rank) or rankfile");
	if (argc < 1)
		return tq_usage_error("map GRAPH HOSTS...: GRAPH is stencil:X[xY[xZ]][:periodic] or a METIS/Scotch file");
	const char *gspec = argv[0];
	struct mapjob j = { .h = { 0 } };
	int rc = 0, st = map_hosts(q, argc, argv, &j);
	if (!st)
		st = !strncmp(gspec, "stencil:", 8) ? map_stencil(q, gspec, &j, &rc) : map_file(q, gspec, &j, &rc);
	if (!st && rc)
		st = tq_fail(q, "map", rc);
	if (!st)
		map_write(q, &j);
	graph_free(&j.g);
	free(j.rh);
	free(j.slots);
	strv_free(&j.h);
	return st;
}
