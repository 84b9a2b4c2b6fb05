/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * schedule.c - `topoquery schedule`: an all-to-all schedule's per-step link
 * figures, and with --plot FILE.svg seed 004's Figure 6.5 picture (links
 * between switches shared by two or more host pairs, per step) for XOR, TACS1 and
 * OPT on the same ranks, drawn by gnuplot.
 *
 *   topoquery schedule ALGO [conflicts=N] [sparsity=X] [k=N] [bytes=B] [fallback=0] [window=W|auto]
 *                           [native=MODEL] RANKS...
 *
 * RANKS: hostlist expressions (c401-[101-104]) or HOST*N for N ranks on one
 * host; ranks are numbered in order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "out.h"
#include "picture.h"
#include "topoquery.h"

static int rank_list(struct tq *q, int argc, char **argv, struct strv *out)
{
	for (int i = 0; i < argc; i++) {
		const char *why = NULL, *star = strchr(argv[i], '*');
		if (star) {
			char *end;
			long n = strtol(star + 1, &end, 10);
			if (*end || n < 1 || n > TII_SCHED_RANKS_MAX || star == argv[i])
				return tq_usage_error("%s: HOST*N needs N = 1..%d", argv[i], TII_SCHED_RANKS_MAX);
			for (long k = 0; k < n; k++)
				if (strv_push(out, argv[i], (size_t)(star - argv[i])))
					return tq_nomem();
			continue;
		}
		if (hostlist_expand(out, argv[i], &why))
			return tq_usage_error("%s: %s", argv[i], why);
	}
	for (size_t i = 0; i < q->hosts.n; i++)
		if (strv_push(out, q->hosts.v[i], strlen(q->hosts.v[i])))
			return tq_nomem();
	if (out->n < 2)
		return tq_usage_error("schedule needs at least 2 ranks");
	if (out->n > TII_SCHED_RANKS_MAX)
		return tq_usage_error("schedule: %zu ranks, at most %d", out->n, TII_SCHED_RANKS_MAX);
	return EXIT_OK;
}

static double mean_fabric(const tii_schedule_t *s)
{
	double t = 0;
	for (int i = 0; i < s->nsteps; i++)
		t += s->steps[i].fabric_conflicts;
	return s->nsteps ? t / s->nsteps : 0;
}

/* The picture: picture.c draws it. */
static int plot(struct tq *q, tii_schedule_t *const *s, const char *const *label, int n)
{
	return pic_schedule_plot(q, s, label, n);
}

static void json_seconds(FILE *o, const char *key, double t)
{
	if (t < 0)
		fprintf(o, "\"%s\":null,", key);
	else
		fprintf(o, "\"%s\":%.9g,", key, t);
}

static void text_us(FILE *o, const char *key, double t)
{
	if (t < 0)
		fprintf(o, "%s -\n", key);
	else
		fprintf(o, "%s %.3f\n", key, t * 1e6);
}

static const char *const ag_state[] = { "offered", "slower", "notapplicable" };

static int is_allgather(const tii_schedule_t *s)
{
	return s->requested >= TII_SCHED_ALLGATHER && s->requested != TII_SCHED_ROUTE;
}

/* The allgathers: the baseline ring's time and the variants considered. */
static void print_ag(FILE *o, const tii_schedule_t *s, int json)
{
	if (json) {
		json_seconds(o, "ring_time_s", s->ring_time_s);
		fputs("\"variants\":[", o);
		for (int i = 0; i < s->nvariants; i++) {
			fprintf(o, "%s{\"algo\":\"%s\",\"state\":\"%s\",", i ? "," : "",
				tii_schedule_algo_name(s->variants[i].algo), ag_state[s->variants[i].state]);
			if (s->variants[i].time_s < 0)
				fputs("\"time_s\":null}", o);
			else
				fprintf(o, "\"time_s\":%.9g}", s->variants[i].time_s);
		}
		fputs("],", o);
		return;
	}
	text_us(o, "ring_time_us", s->ring_time_s);
	for (int i = 0; i < s->nvariants; i++) {
		fprintf(o, "variant %s %s ", tii_schedule_algo_name(s->variants[i].algo), ag_state[s->variants[i].state]);
		text_us(o, "time_us", s->variants[i].time_s);
	}
}

/* TII_NATIVE_* as topod names them (docs/protocol.md `schedule native=`) */
static const char *const native_names[] = { "smpi-ompi", "smpi-mpich", "ompi", "mpich" };

static void print_one(struct tq *q, const tii_schedule_t *s)
{
	FILE *o = q->out;
	int ag = is_allgather(s);
	if (q->json) {
		fprintf(o, "{\"generation\":%" PRIu64 ",\"algo\":\"%s\",\"requested\":\"%s\",\"fallback\":%s,"
			   "\"slower\":%s,\"ranks\":%d,\"steps\":%d,\"multi\":%s,\"host_steps\":%d,\"extra_steps\":%d,",
			s->generation, tii_schedule_algo_name(s->algo), tii_schedule_algo_name(s->requested),
			s->fallback ? "true" : "false", s->slower ? "true" : "false", s->nranks, s->nsteps,
			s->multi ? "true" : "false", s->host_steps, s->extra_steps);
		fprintf(o, "\"bytes\":%" PRIu64 ",", s->bytes);
		json_seconds(o, "time_s", s->time_s);
		json_seconds(o, "xor_time_s", s->xor_time_s);
		json_seconds(o, "bound_s", s->bound_s);
		fprintf(o, "\"window\":%d,", s->window);
		if (s->native >= 0) {
			fprintf(o, "\"native\":\"%s\",\"native_algo\":\"%s\",\"native_faster\":%s,", native_names[s->native],
				s->native_algo, s->native_faster ? "true" : "false");
			json_seconds(o, "native_time_s", s->native_time_s);
		}
		if (ag)
			print_ag(o, s, 1);
		if (s->time_s >= 0 && s->bound_s > 0)
			fprintf(o, "\"ratio\":%.4f,", s->time_s / s->bound_s);
		else
			fputs("\"ratio\":null,", o);
		fputs("\"per_step\":[", o);
		for (int i = 0; i < s->nsteps; i++)
			fprintf(o, "%s[%d,%d,%d,%d]", i ? "," : "", s->steps[i].flows, s->steps[i].maxload,
				s->steps[i].conflicts, s->steps[i].fabric_conflicts);
		fputs("]}\n", o);
		return;
	}
	fprintf(o, "algo %s\nrequested %s\nfallback %s\nranks %d\nsteps %d\nmulti %d\nhost_steps %d\nextra_steps %d\n"
		   "mean_switch_link_conflicts %.2f\n",
		tii_schedule_algo_name(s->algo), tii_schedule_algo_name(s->requested),
		s->fallback ? (ag ? "ring" : "xor") : "none",
		s->nranks, s->nsteps, s->multi, s->host_steps, s->extra_steps, mean_fabric(s));
	/* the model's prediction on the real routes and rates (docs/cost-model.md) */
	fprintf(o, "bytes %" PRIu64 "\n", s->bytes);
	text_us(o, "time_us", s->time_s);
	text_us(o, "xor_time_us", s->xor_time_s);
	text_us(o, "bound_us", s->bound_s);
	fprintf(o, "window %d\n", s->window);
	if (s->native >= 0) {
		fprintf(o, "native %s\nnative_algo %s\n", native_names[s->native], s->native_algo);
		text_us(o, "native_time_us", s->native_time_s);
	}
	if (ag)
		print_ag(o, s, 0);
	/* how far from the lower bound of any schedule on these routes (1 = at it) */
	if (s->time_s >= 0 && s->bound_s > 0)
		fprintf(o, "ratio %.4f\n", s->time_s / s->bound_s);
	else
		fputs("ratio -\n", o);
	if (s->slower && ag)
		fputs("# every variant asked for is predicted slower than the MPI's own ring in rank order: the ring is "
		      "the answer (fallback=0 to see it)\n",
		      o);
	else if (s->native_faster)
		fputs("# the MPI's own Alltoall is predicted no slower than this schedule by topod's rule (the model's "
		      "measured error): keep MPI_Alltoall\n",
		      o);
	else if (s->slower)
		fputs("# the requested algorithm may run below 0.98x XOR (the model's measured error): XOR is the answer "
		      "(fallback=0 to see it)\n",
		      o);
	for (int l = 1; l <= s->nlevels; l++)
		fprintf(o, "tier %d bound %d\n", l, s->level_bound[l < TII_SCHED_LEVELS ? l : 0]);
	fputs("# step flows maxload conflicts switch_link_conflicts\n", o);
	for (int i = 0; i < s->nsteps; i++)
		fprintf(o, "step %d %d %d %d %d\n", i, s->steps[i].flows, s->steps[i].maxload, s->steps[i].conflicts,
			s->steps[i].fabric_conflicts);
	if (s->nlevels) {
		fputs("# OPT: busiest link per step at tier 1..T (host cable, leaf uplink, ...)\n", o);
		for (int i = 0; i < s->nsteps; i++) {
			fprintf(o, "tier_max %d", i);
			for (int l = 0; l < s->nlevels; l++)
				fprintf(o, " %d", s->level_max[(size_t)i * s->nlevels + l]);
			fputc('\n', o);
		}
	}
}

int cmd_schedule(struct tq *q, int argc, char **argv)
{
	if (argc < 1)
		return tq_usage_error("schedule ALGO [conflicts=N] [sparsity=X] [k=N] [bytes=B] [fallback=0] [window=W|auto] "
				      "[native=MODEL] RANKS...");
	struct tii_schedule_params p = { .algo = -1, .conflicts = 1 };
	/* every name libtii knows (it lists topod's algorithms) */
	for (int a = 0; tii_schedule_algo_name(a); a++)
		if (!strcmp(argv[0], tii_schedule_algo_name(a)))
			p.algo = a;
	if (p.algo < 0)
		return tq_usage_error("schedule: unknown algorithm '%s' (xor, tacs1, tacs2, opt, route, allgather, kshift, agring, ring, agbest)",
				      argv[0]);
	int i = 1, advice = 1, window = -1, native = -1;
	unsigned long long bytes = 0;
	for (; i < argc && strchr(argv[i], '='); i++) {
		char *end;
		uint64_t v;
		const char *a = argv[i], *val = strchr(a, '=') + 1;
		char name[16];
		snprintf(name, sizeof(name), "%.*s", (int)(val - 1 - a) < 15 ? (int)(val - 1 - a) : 15, a);
		if (!strcmp(a, "window=auto")) {
			window = TII_SCHED_WINDOW_AUTO;
			continue;
		}
		if (!strncmp(a, "native=", 7)) {
			for (int m = 0; m < 4; m++)
				if (!strcmp(val, native_names[m]))
					native = m;
			if (native < 0)
				return tq_usage_error("schedule: %s: native=smpi-ompi, smpi-mpich, ompi or mpich", a);
			continue;
		}
		/* every number exactly in its range: 4294967297 is no 1 */
		if (!strcmp(name, "window")) {
			if (tq_parse_num(name, val, 1, TOPO_SCHED_WINDOW_MAX, &v))
				return EXIT_USAGE;
			window = (int)v;
		} else if (!strcmp(name, "bytes")) {
			if (tq_parse_num(name, val, 1, TII_MSG_BYTES_MAX, &v))
				return EXIT_USAGE;
			bytes = v;
		} else if (!strcmp(a, "fallback=0") || !strcmp(a, "fallback=1")) {
			advice = a[9] == '1';
		} else if (!strcmp(name, "conflicts")) {
			if (tq_parse_num(name, val, 0, TOPO_SCHED_CONFLICTS_MAX, &v))
				return EXIT_USAGE;
			p.conflicts = (int)v;
		} else if (!strcmp(name, "k")) {
			if (tq_parse_num(name, val, 0, TOPO_SCHED_K_MAX, &v))
				return EXIT_USAGE;
			p.k = (int)v;
		} else if (!strcmp(name, "sparsity")) {
			p.sparsity = strtod(val, &end);
			if (*end || end == val || !(p.sparsity >= 0 && p.sparsity <= 1e6))
				return tq_usage_error("schedule: %s: sparsity=0..1e6", a);
		} else {
			return tq_usage_error("schedule: unknown option '%s'", a);
		}
	}
	if (bytes > TII_MSG_BYTES_MAX || tii_set_schedule_advice(q->t, bytes, advice))
		return tq_usage_error("schedule: bytes=1..2^53");
	if ((window >= 0 || native >= 0) && tii_set_schedule_run(q->t, window < 0 ? 1 : window, native))
		return tq_usage_error("schedule: window=1..%d|auto, native=MODEL", TOPO_SCHED_WINDOW_MAX);
	struct strv ranks = { 0 };
	int status = rank_list(q, argc - i, argv + i, &ranks);
	if (status) {
		strv_free(&ranks);
		return status;
	}
	const char *const *rh = (const char *const *)ranks.v;
	tii_schedule_t *s = NULL;
	int rc = tii_get_schedule(q->t, &p, rh, ranks.n, &s);
	if (rc) {
		strv_free(&ranks);
		return tq_fail(q, "schedule", rc);
	}
	print_one(q, s);
	if (q->plot) {
		/* The picture compares the three on the same ranks. */
		tii_schedule_t *cmp[3] = { NULL, NULL, NULL };
		static const char *const label[3] = { "XOR (MPI default)", "TACS1", "OPT (Prisacari et al. 2013)" };
		int algos[3] = { TII_SCHED_XOR, TII_SCHED_TACS1, TII_SCHED_OPT };
		tii_set_schedule_advice(q->t, bytes, 0);   /* the picture shows each as asked */
		for (int a = 0; a < 3 && !status; a++) {
			struct tii_schedule_params pa = p;
			pa.algo = algos[a];
			rc = tii_get_schedule(q->t, &pa, rh, ranks.n, &cmp[a]);
			if (rc && a == 2 && rc == TII_E_SERVER) {
				fprintf(stderr, "topoquery: schedule --plot: OPT left out: %s\n", tii_last_message(q->t));
				cmp[a] = NULL;
			} else if (rc) {
				status = tq_fail(q, "schedule", rc);
			}
		}
		if (!status)
			status = plot(q, cmp, label, 3);
		for (int a = 0; a < 3; a++)
			tii_schedule_free(cmp[a]);
	}
	tii_schedule_free(s);
	strv_free(&ranks);
	return status;
}
