/*
 * test_estimate.c - the heavy requests' cost estimates (topod/estimate.h):
 * every CMD_HEAVY row of the command table has one, they grow with the
 * request, and the light lane takes what is cheap and nothing else. (Their
 * figures against real peak RSS: tests/integration/t_budget_estimate.py.)
 */
#include <stdio.h>
#include <string.h>

#include "estimate.h"
#include "fabric.h"
#include "schedule.h"
#include "testfab.h"

static struct proto_req req; /* large: not on the stack */
static char words[4096][24], pre_buf[256];

static struct estimate est(const struct fabric *f, const char *cmd, const char *pre, size_t n, const char *suffix)
{
	memset(&req, 0, sizeof(req));
	req.cmd = cmd;
	if (pre)
		for (char *w = strtok(strcpy(pre_buf, pre), " "); w; w = strtok(NULL, " "))
			req.argv[req.argc++] = w;
	for (size_t i = 0; i < n; i++) {
		snprintf(words[i], sizeof(words[i]), "h%04zu%s", i, suffix);
		req.argv[req.argc++] = words[i];
	}
	struct estimate e = { 0, 0 };
	if (estimate_request(cmd_find(cmd), &req, f, &e))
		e.mem = e.work_us = 0;
	return e;
}

int main(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 8, 8, 4, 1);
	tf_finish(s, 0);
	struct fabric_index *x;
	char err[AN_ERR_LEN];
	if (fabric_index_build(s, NULL, 1, &x, err))
		tf_die("index");
	struct fabric f = { .snap = s, .index = x };
	size_t missing = 0, heavy = 0, stray = 0;
	for (size_t i = 0; i < cmd_count; i++) {
		const struct cmd *k = &cmd_table[i];
		/* a row is one description: an estimator exactly on the heavy
		 * rows, a server handler exactly on the admin ones */
		if (!(k->flags & CMD_HEAVY) != !k->estimate || !(k->flags & CMD_ADMIN) != !k->admin ||
		    !(k->flags & CMD_ADMIN) != !!k->answer) {
			printf("# %s: flags %u, estimate %s, admin %s, answer %s\n", k->name, k->flags,
			       k->estimate ? "set" : "NULL", k->admin ? "set" : "NULL", k->answer ? "set" : "NULL");
			stray++;
		}
		if (!(cmd_table[i].flags & CMD_HEAVY))
			continue;
		heavy++;
		struct estimate e;
		memset(&req, 0, sizeof(req));
		req.cmd = cmd_table[i].name;
		if (estimate_request(&cmd_table[i], &req, &f, &e) || !e.mem) {
			printf("# %s has no estimator\n", cmd_table[i].name);
			missing++;
		}
	}
	tf_check(heavy >= 10 && !missing, "each of the %zu heavy commands has an estimate", heavy);
	tf_check(!stray, "every row's estimator and handlers agree with its flags (%zu rows)", cmd_count);
	struct estimate a = est(&f, "hopsmatrix", NULL, 64, ""), b = est(&f, "hopsmatrix", NULL, 3456, "");
	tf_check(a.mem < b.mem && a.work_us < b.work_us && estimate_light(&a) && !estimate_light(&b),
		 "hopsmatrix: 64 hosts light (%llu KiB), 3,456 heavy (%llu MiB)", (unsigned long long)a.mem >> 10,
		 (unsigned long long)b.mem >> 20);
	a = est(&f, "schedule", "tacs1 form=hosts", 1024, "*4");
	b = est(&f, "schedule", "xor form=hosts", 1024, "*4");
	struct estimate c = est(&f, "schedule", "xor", 1024, "*2"), r = est(&f, "schedule", "route", 1024, "");
	tf_check(a.mem > b.mem && c.mem > b.mem && !estimate_light(&r) && r.work_us > 10000000,
		 "schedule: tacs1 (%llu MiB) and rank flows (%llu MiB) above xor form=hosts (%llu MiB); route 1,024 "
		 "ranks ~%llu s of work", (unsigned long long)a.mem >> 20, (unsigned long long)c.mem >> 20,
		 (unsigned long long)b.mem >> 20, (unsigned long long)r.work_us / 1000000);
	/* every name of the algorithms' table has properties and an estimate
	 * that reads them: the rank form costs more than form=hosts, except
	 * where there is no compact form (names stop at sched_algo_name's "?") */
	size_t names = 0, odd = 0;
	for (int i = 0; strcmp(sched_algo_name((enum sched_algo)i), "?"); i++, names++) {
		const char *name = sched_algo_name((enum sched_algo)i);
		struct sched_algo_props pr;
		char pre[64];
		snprintf(pre, sizeof(pre), "%s form=hosts", name);
		struct estimate rk = est(&f, "schedule", name, 64, "*2"), hs = est(&f, "schedule", pre, 64, "*2");
		if (sched_algo_props(name, &pr) || pr.algo != (enum sched_algo)i || !pr.pair_bytes || !rk.mem ||
		    (pr.ranks_only ? rk.mem != hs.mem : rk.mem <= hs.mem)) {
			printf("# %s: props %s, rank form %llu B, form=hosts %llu B\n", name,
			       sched_algo_props(name, &pr) ? "missing" : "found", (unsigned long long)rk.mem,
			       (unsigned long long)hs.mem);
			odd++;
		}
	}
	tf_check(names >= 10 && !odd, "schedule: each of the %zu algorithm names gets an estimate from its properties",
		 names);
	a = est(&f, "map", "stencil:128x128", 3456, "*5");
	b = est(&f, "map", "stencil:4x4", 4, "*4");
	tf_check(a.mem > b.mem && !estimate_light(&b), "map: grows with the graph, never light (Scotch)");
	a = est(&f, "order", NULL, 64, "");
	tf_check(estimate_light(&a), "order of 64 hosts is light");
	fabric_index_free(x);
	snap_free(s);
	return tf_failures ? 1 : 0;
}
