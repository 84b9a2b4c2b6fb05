/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo-routeopt - pattern-specific routes for an XGFT fabric (seed 001),
 * written as an LFT file that OpenSM's own `file` routing engine installs.
 *
 *   topo-routeopt [solve]  SOURCE --pattern P [--hosts H] [--phase K | --joint]
 *                          [--out FILE] [--time-limit S] [--strong] [--compare]
 *   topo-routeopt eval     SOURCE --pattern P [--hosts H] [--phase K | --joint]
 *   topo-routeopt describe SOURCE
 *   topo-routeopt revert   --out FILE
 * SOURCE: --snapshot FILE | --state-dir DIR (what topod serves: fabric.snap and its delta journal) | --xgft "h;m..;w.."
 *
 * Exit status: 0 done; 1 usage; 2 the fabric is not an XGFT; 3 infeasible or
 * solver time limit (nothing written); 4 other errors.  The LFT file is only
 * ever replaced atomically after a complete success, so a failure leaves the
 * routing OpenSM runs untouched.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "lft.h"
#include "opt.h"
#include "journal.h"
#include "pattern.h"
#include "snapshot.h"
#include "xgft.h"

enum { EX_OK = 0, EX_USAGE = 1, EX_NOTXGFT = 2, EX_SOLVE = 3, EX_ERR = 4 };

static const char *prog = "topo-routeopt";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [solve]  SOURCE --pattern P [--hosts H] [--phase K | --joint]\n"
		"                       [--out FILE] [--time-limit SECONDS] [--strong] [--compare]\n"
		"                       [--dump-flows FILE] [-v]\n"
		"       %s eval     SOURCE --pattern P [--hosts H] [--phase K | --joint]\n"
		"       %s describe SOURCE\n"
		"       %s revert   --out FILE\n"
		"       %s -h|--help | -V|--version\n"
		"SOURCE: --snapshot FILE | --state-dir DIR | --xgft \"h;m1,..,mh;w1,..,wh\"\n"
		"patterns: alltoall[:xor] (as phases), file:PATH (lines \"src dst [weight]\", ranks 0..N-1),\n"
		"          and topod's: shift:K, xor:K, bitrev, random:SEED, ring, allgather,\n"
		"          stencil2d:X,Y[:periodic], stencil3d:X,Y,Z[:periodic]\n"
		"hosts: H = name,name,... or @FILE (one name per line); default every host in tree order\n",
		prog, prog, prog, prog, prog);
}

struct opts {
	const char *cmd, *snapshot, *state_dir, *xgft, *pattern, *hosts, *out, *dump_flows;
	long phase;
	int joint, strong, compare, verbose;
	double time_limit;
};

static int host_name_eq(const char *desc, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(desc, name, n) && (desc[n] == 0 || desc[n] == ' ');
}

/* ranks -> host indices (XGFT order) */
static int map_hosts(const struct snap *s, const struct xgft *x, const char *spec, uint32_t **out,
		     uint32_t *n)
{
	uint32_t N = x->nhosts;
	uint32_t *r = malloc((size_t)N * sizeof(*r));
	if (!r)
		return -1;
	if (!spec) {
		for (uint32_t i = 0; i < N; i++)
			r[i] = i;
		*out = r;
		*n = N;
		return 0;
	}
	char *buf = NULL;
	if (spec[0] == '@') {
		FILE *f = fopen(spec + 1, "r");
		if (!f) {
			fprintf(stderr, "%s: hosts file %s: %s\n", prog, spec + 1, strerror(errno));
			free(r);
			return -1;
		}
		size_t cap = 0, len = 0;
		char line[256];
		while (fgets(line, sizeof(line), f)) {
			size_t l = strcspn(line, " \t\r\n#");
			if (!l)
				continue;
			if (len + l + 2 > cap) {
				cap = (len + l + 2) * 2;
				char *nb = realloc(buf, cap);
				if (!nb) { free(buf); free(r); fclose(f); return -1; }
				buf = nb;
			}
			memcpy(buf + len, line, l);
			len += l;
			buf[len++] = ',';
			buf[len] = 0;
		}
		fclose(f);
		if (!buf) {
			fprintf(stderr, "%s: hosts file %s names no host\n", prog, spec + 1);
			free(r);
			return -1;
		}
	} else if (!(buf = strdup(spec))) {
		free(r);
		return -1;
	}
	uint8_t *seen = calloc(N, 1);
	uint32_t k = 0;
	int rc = seen ? 0 : -1;
	for (char *sv, *t = strtok_r(buf, ",", &sv); t && !rc; t = strtok_r(NULL, ",", &sv)) {
		uint32_t h = UINT32_MAX;
		for (uint32_t i = 0; i < N && h == UINT32_MAX; i++)
			if (host_name_eq(s->nodes[x->node[0][i]].desc, t))
				h = i;
		if (h == UINT32_MAX) {
			fprintf(stderr, "%s: host %s is not a host of this fabric\n", prog, t);
			rc = -1;
		} else if (seen[h]) {
			fprintf(stderr, "%s: host %s is listed twice\n", prog, t);
			rc = -1;
		} else {
			seen[h] = 1;
			r[k++] = h;
		}
	}
	free(seen);
	free(buf);
	if (rc || k < 2) {
		if (!rc)
			fprintf(stderr, "%s: the host set needs at least 2 hosts\n", prog);
		free(r);
		return -1;
	}
	*out = r;
	*n = k;
	return 0;
}

static struct snap *load_source(const struct opts *o)
{
	char err[XGFT_ERR_LEN];
	struct snap *s = NULL;
	int srcs = !!o->snapshot + !!o->state_dir + !!o->xgft;
	if (srcs != 1) {
		fprintf(stderr, "%s: give exactly one of --snapshot, --state-dir, --xgft\n", prog);
		return NULL;
	}
	if (o->xgft) {
		if (xgft_build_snap(o->xgft, &s, err)) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return NULL;
		}
		return s;
	}
	if (o->state_dir) {
		/* What topod serves: fabric.snap and the deltas journalled since. */
		char why[SNAP_ERR_LEN];
		if (snap_read_state(o->state_dir, &s, NULL, why, err)) {
			fprintf(stderr, "%s: %s: %s\n", prog, o->state_dir, err);
			return NULL;
		}
		if (why[0])
			fprintf(stderr, "%s: warning: %s\n", prog, why);
		return s;
	}
	if (snap_read_file(o->snapshot, &s, err)) {
		fprintf(stderr, "%s: %s: %s\n", prog, o->snapshot, err);
		return NULL;
	}
	return s;
}

/* the flows of one phase (or all phases joined), ranks mapped to hosts */
static struct flow *phase_flows(const struct ro_pattern *p, long phase, int joint, const uint32_t *rank,
				size_t *n)
{
	size_t tot = 0, k = 0;
	for (size_t i = 0; i < p->nphases; i++)
		if (joint || (long)i == phase)
			tot += p->phases[i].n;
	struct flow *f = malloc((tot ? tot : 1) * sizeof(*f));
	if (!f)
		return NULL;
	for (size_t i = 0; i < p->nphases; i++) {
		if (!joint && (long)i != phase)
			continue;
		for (size_t j = 0; j < p->phases[i].n; j++) {
			f[k] = p->phases[i].flows[j];
			f[k].src = rank[f[k].src];
			f[k].dst = rank[f[k].dst];
			k++;
		}
	}
	*n = k;
	return f;
}

/* "srcname dstname weight" per flow, for checking the routes with other tools */
static int dump_flows(const struct snap *s, const uint32_t *host_node, const struct flow *f, size_t n,
		      const char *path)
{
	FILE *o = fopen(path, "w");
	if (!o) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(o, "%.*s %.*s %u\n", (int)strcspn(s->nodes[host_node[f[i].src]].desc, " "),
			s->nodes[host_node[f[i].src]].desc, (int)strcspn(s->nodes[host_node[f[i].dst]].desc, " "),
			s->nodes[host_node[f[i].dst]].desc, f[i].weight);
	return fclose(o) ? -1 : 0;
}

static int cmd_revert(const struct opts *o)
{
	if (!o->out) {
		fprintf(stderr, "%s: revert needs --out FILE (the lfts_file of opensm.conf)\n", prog);
		return EX_USAGE;
	}
	char off[4096];
	snprintf(off, sizeof(off), "%s.off", o->out);
	if (rename(o->out, off)) {
		if (errno == ENOENT) {
			printf("%s: %s does not exist: OpenSM already routes with its next engine\n", prog, o->out);
			return EX_OK;
		}
		fprintf(stderr, "%s: rename %s: %s\n", prog, o->out, strerror(errno));
		return EX_ERR;
	}
	printf("moved %s to %s: at its next heavy sweep (kill -HUP the OpenSM) OpenSM cannot open "
	       "the file and routes with the next engine of routing_engine (e.g. file,ftree -> ftree)\n",
	       o->out, off);
	return EX_OK;
}

/* getopt: -1 to go on, or the exit status */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "snapshot", 1, 0, 's' }, { "state-dir", 1, 0, 'd' }, { "xgft", 1, 0, 'x' },
		{ "pattern", 1, 0, 'p' }, { "hosts", 1, 0, 'H' }, { "out", 1, 0, 'o' },
		{ "phase", 1, 0, 'k' }, { "joint", 0, 0, 'j' }, { "time-limit", 1, 0, 't' },
		{ "strong", 0, 0, 'S' }, { "compare", 0, 0, 'c' }, { "verbose", 0, 0, 'v' },
		{ "dump-flows", 1, 0, 'F' }, { "help", 0, 0, 'h' }, { "version", 0, 0, 'V' },
		{ 0, 0, 0, 0 }
	};
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "s:d:x:p:H:o:k:jt:ScvF:hV", lo, NULL)) != -1) {
		switch (c) {
		case 's': o->snapshot = optarg; break;
		case 'd': o->state_dir = optarg; break;
		case 'x': o->xgft = optarg; break;
		case 'p': o->pattern = optarg; break;
		case 'H': o->hosts = optarg; break;
		case 'o': o->out = optarg; break;
		case 'k':
			o->phase = strtol(optarg, &end, 10);
			if (*end || o->phase < 1) {
				fprintf(stderr, "%s: --phase wants a phase number 1..P\n", prog);
				return EX_USAGE;
			}
			break;
		case 'j': o->joint = 1; break;
		case 't':
			o->time_limit = strtod(optarg, &end);
			if (*end || !(o->time_limit > 0) || o->time_limit > 1e7) {
				fprintf(stderr, "%s: --time-limit wants seconds > 0\n", prog);
				return EX_USAGE;
			}
			break;
		case 'S': o->strong = 1; break;
		case 'c': o->compare = 1; break;
		case 'v': o->verbose++; break;
		case 'F': o->dump_flows = optarg; break;
		case 'h': usage(stdout); return EX_OK;
		case 'V': printf("topo-routeopt %s\n", TOPO_VERSION); return EX_OK;
		default: usage(stderr); return EX_USAGE;
		}
	}
	o->cmd = optind < argc ? argv[optind++] : "solve";
	if (optind < argc) {
		usage(stderr);
		return EX_USAGE;
	}
	return -1;
}

/* One solve, eval or describe run, from the loaded fabric to the written tables. */
struct run {
	const struct opts *o;
	int solve, eval;
	struct snap *s;
	struct xgft x;
	char desc[256];
	uint32_t *rank, nr, *host_node;
	struct ro_pattern pat;
	struct lfts cur, best;         /* the fabric's own tables; the ones to write */
	struct opt_result keep;        /* the result behind best */
	char err[OPT_ERR_LEN > LFT_ERR_LEN ? OPT_ERR_LEN : LFT_ERR_LEN];
	double total_ms;
	uint64_t worst;
};

static int check_cmd(const struct run *r)
{
	const struct opts *o = r->o;
	if (!r->solve && !r->eval && strcmp(o->cmd, "describe")) {
		usage(stderr);
		return EX_USAGE;
	}
	if ((r->solve || r->eval) && !o->pattern) {
		fprintf(stderr, "%s: %s needs --pattern\n", prog, o->cmd);
		return EX_USAGE;
	}
	if (o->joint && o->phase > 0) {
		fprintf(stderr, "%s: --phase and --joint exclude each other\n", prog);
		return EX_USAGE;
	}
	return EX_OK;
}

/* The running routing's tables are read for eval and --compare, and for a
 * solve whose tables would be written over a fabric that has tables (a
 * state directory or snapshot; --xgft has none): never worse than them. */
static int need_current(const struct run *r)
{
	return r->eval || r->o->compare || (r->o->out && r->s->engine[0] && strcmp(r->s->engine, "none"));
}

/* hosts, pattern and phase choice, and the fabric's own tables when asked for */
static int run_prepare(struct run *r)
{
	const struct opts *o = r->o;
	if (map_hosts(r->s, &r->x, o->hosts, &r->rank, &r->nr))
		return EX_USAGE;
	char pe[PATTERN_ERR_LEN];
	if (ro_pattern_parse(o->pattern, r->nr, &r->pat, pe)) {
		fprintf(stderr, "%s: %s\n", prog, pe);
		return EX_USAGE;
	}
	if (o->phase > (long)r->pat.nphases) {
		fprintf(stderr, "%s: pattern %s has %zu phases\n", prog, o->pattern, r->pat.nphases);
		return EX_USAGE;
	}
	if (o->out && r->pat.nphases > 1 && !o->joint && o->phase < 0) {
		fprintf(stderr, "%s: %s has %zu phases and one set of tables serves one workload: "
			"pick --phase K or --joint (all phases at once)\n", prog, o->pattern, r->pat.nphases);
		return EX_USAGE;
	}
	if (need_current(r) && lft_from_snap(r->s, &r->cur, r->err)) {
		fprintf(stderr, "%s: %s\n", prog, r->err);
		return EX_ERR;
	}
	return EX_OK;
}

/* GLPK checks the clock only between its own steps: the root LP's simplex
 * and the MIP preprocessor run on past any tm_lim (seen: 5.1 s with a 2 s
 * limit). The solver's own deadline stops it cleanly where it can; this
 * alarm, a little later, ends the process wherever GLPK is. Nothing has
 * been written then (the LFT file is replaced only after every phase). */
#define OVERRUN_GRACE_S 0.25

static void solve_overrun(int sig)
{
	static const char msg[] = "topo-routeopt: solver time limit reached (GLPK ran past it and was stopped); "
				  "nothing written, the running routing is untouched\n";
	(void)sig;
	ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)w;
	_exit(EX_SOLVE);
}

static void overrun_alarm(double seconds)
{
	struct itimerval it = { 0 };
	if (seconds > 0) {
		double t = seconds + OVERRUN_GRACE_S;
		it.it_value.tv_sec = (time_t)t;
		it.it_value.tv_usec = (suseconds_t)((t - (double)(time_t)t) * 1e6);
		struct sigaction sa = { .sa_handler = solve_overrun };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGALRM, &sa, NULL);
		fflush(stdout);   /* the phases printed so far survive _exit */
	}
	setitimer(ITIMER_REAL, &it, NULL);
}

/* solve one phase's flows, build and check its tables, keep the last for --out */
static int phase_solve(struct run *r, int last, const struct flow *f, size_t nf, const char *label,
		       uint64_t curload)
{
	const struct opts *o = r->o;
	struct opt_params par = { .strong = o->strong, .time_limit = o->time_limit, .verbose = o->verbose };
	struct opt_result res;
	overrun_alarm(o->time_limit);
	int failed = opt_solve(&r->x, f, nf, &par, &res, r->err);
	overrun_alarm(0);
	if (failed) {
		fprintf(stderr, "%s: phase %s: %s; nothing written, the running routing is "
			"untouched\n", prog, label, r->err);
		return EX_SOLVE;
	}
	struct lfts t;
	if (lft_build(r->s, &r->x, &res, &t, r->err) ||
	    lft_load(r->s, &t, r->host_node, f, nf, &res.maxload, r->err)) {
		fprintf(stderr, "%s: phase %s: %s\n", prog, label, r->err);
		opt_result_free(&res);
		return EX_ERR;
	}
	printf("phase %s flows %zu maxload %llu proven %s solve_ms %.1f ilps %u rows %llu cols %llu",
	       label, nf, (unsigned long long)res.maxload, res.proven ? "yes" : "no", res.solve_ms,
	       res.ilps, (unsigned long long)res.rows, (unsigned long long)res.cols);
	if (need_current(r))
		printf(" current %llu", (unsigned long long)curload);
	printf("\n");
	/* Without proof (failed links, weighted pairs: the soft formulation)
	 * the solve can lose to the running engine: then it is not written. */
	if (o->out && last && need_current(r) && res.maxload > curload) {
		fprintf(stderr, "%s: phase %s: the solved routes load a link with %llu, the running routing (%s) "
			"with %llu%s: nothing written, the running routing is kept\n", prog, label,
			(unsigned long long)res.maxload, r->s->engine, (unsigned long long)curload,
			res.proven ? "" : " (not proven optimal: failed links or weighted pairs)");
		lft_free(&t);
		opt_result_free(&res);
		return EX_SOLVE;
	}
	r->total_ms += res.solve_ms;
	if (res.maxload > r->worst)
		r->worst = res.maxload;
	if (o->out && last) {
		r->best = t;
		r->keep = res;
	} else {
		lft_free(&t);
		opt_result_free(&res);
	}
	return EX_OK;
}

/* one phase (or all joined): the fabric's own load for eval and --compare, else a solve */
static int run_phase(struct run *r, long ph, int last, const struct flow *f, size_t nf)
{
	const struct opts *o = r->o;
	if (o->dump_flows && last && dump_flows(r->s, r->host_node, f, nf, o->dump_flows))
		return EX_ERR;
	char label[32];
	if (o->joint)
		snprintf(label, sizeof(label), "joint");
	else
		snprintf(label, sizeof(label), "%ld", ph + 1);
	uint64_t curload = 0;
	if (need_current(r)) {
		if (lft_load(r->s, &r->cur, r->host_node, f, nf, &curload, r->err)) {
			fprintf(stderr, "%s: the fabric's own tables: %s\n", prog, r->err);
			return EX_ERR;
		}
		if (r->eval) {
			printf("phase %s flows %zu maxload %llu routes %s\n", label, nf,
			       (unsigned long long)curload, r->s->engine[0] ? r->s->engine : "-");
			return EX_OK;
		}
	}
	return phase_solve(r, last, f, nf, label, curload);
}

/* the kept tables, atomically, as OpenSM's file engine reads them */
static int write_tables(struct run *r)
{
	const struct opts *o = r->o;
	int rc = EX_OK;
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);
	char comment[512];
	snprintf(comment, sizeof(comment),
		 "topo-routeopt: %s, pattern %s%s%s, %u hosts, generation %llu, max link load %llu%s",
		 r->desc, o->pattern, o->joint ? " (all phases)" : "", o->phase > 0 ? " (one phase)" : "",
		 r->nr, (unsigned long long)r->s->generation, (unsigned long long)r->keep.maxload,
		 r->keep.proven ? " (optimal)" : "");
	char se[SNAP_ERR_LEN];
	if (!mf || lft_write_opensm(r->s, &r->best, mf, comment) || fclose(mf)) {
		fprintf(stderr, "%s: cannot format the tables\n", prog);
		rc = EX_ERR;
	} else if (snap_write_atomic(o->out, buf, len, se)) {
		fprintf(stderr, "%s: %s: %s\n", prog, o->out, se);
		rc = EX_ERR;
	} else {
		printf("wrote %s (%u switches, max link load %llu)\n", o->out, r->best.nrows,
		       (unsigned long long)r->keep.maxload);
	}
	free(buf);
	return rc;
}

/* solve or eval: the phases in turn, the summary, the tables */
static int run_pattern(struct run *r)
{
	const struct opts *o = r->o;
	int rc = run_prepare(r);
	if (rc != EX_OK)
		return rc;
	long first = o->joint ? 0 : (o->phase > 0 ? o->phase - 1 : 0);
	long last = o->joint ? 0 : (o->phase > 0 ? o->phase - 1 : (long)r->pat.nphases - 1);
	for (long ph = first; ph <= last && rc == EX_OK; ph++) {
		size_t nf;
		struct flow *f = phase_flows(&r->pat, ph, o->joint, r->rank, &nf);
		if (!f)
			return EX_ERR;
		rc = run_phase(r, ph, ph == last, f, nf);
		free(f);
	}
	if (rc == EX_OK && r->solve && !o->joint && o->phase < 0 && r->pat.nphases > 1)
		printf("phases %zu mean_solve_ms %.1f worst_maxload %llu\n", r->pat.nphases,
		       r->total_ms / (double)r->pat.nphases, (unsigned long long)r->worst);
	if (rc == EX_OK && o->out)
		rc = write_tables(r);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { .phase = -1, .time_limit = 600 };
	int rc = parse_opts(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (!strcmp(o.cmd, "revert"))
		return cmd_revert(&o);
	struct run r = { .o = &o, .solve = !strcmp(o.cmd, "solve"), .eval = !strcmp(o.cmd, "eval") };
	if ((rc = check_cmd(&r)) != EX_OK)
		return rc;
	if (!(r.s = load_source(&o)))
		return EX_ERR;
	char xe[XGFT_ERR_LEN];
	if (xgft_recognise(r.s, &r.x, xe)) {
		fprintf(stderr, "%s: %s\n", prog, xe);
		snap_free(r.s);
		return EX_NOTXGFT;
	}
	xgft_describe(&r.x, r.desc, sizeof(r.desc));
	printf("fabric %s hosts %u switches %u failed-links %u engine %s generation %llu\n", r.desc,
	       r.x.nhosts, (unsigned)(r.s->nnodes - r.x.nhosts), r.x.nfailed,
	       r.s->engine[0] ? r.s->engine : "-", (unsigned long long)r.s->generation);
	r.host_node = r.x.node[0];
	rc = strcmp(o.cmd, "describe") ? run_pattern(&r) : EX_OK;
	lft_free(&r.best);
	lft_free(&r.cur);
	opt_result_free(&r.keep);
	ro_pattern_free(&r.pat);
	free(r.rank);
	xgft_free(&r.x);
	snap_free(r.s);
	return rc;
}
