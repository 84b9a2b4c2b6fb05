/* SPDX-License-Identifier: BSD-3-Clause */
/* opt.c - see opt.h. */
#include "opt.h"

#include <glpk.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int oerr(char *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, OPT_ERR_LEN, fmt, ap);
	va_end(ap);
	return -1;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* a message group on its way up: all of one layer's traffic on one switch for one destination */
struct grp {
	uint32_t mu, md, wt;   /* MT index of the up node and of the down node at this level; WT index */
	uint32_t d;            /* destination host */
	uint32_t delta;        /* level of the turn (lowest common ancestor) */
	uint64_t weight;
	uint8_t w;             /* chosen up link */
};

static int cmp_grp(const void *a, const void *b)
{
	const struct grp *x = a, *y = b;
	if (x->mu != y->mu) return x->mu < y->mu ? -1 : 1;
	if (x->wt != y->wt) return x->wt < y->wt ? -1 : 1;
	if (x->d != y->d) return x->d < y->d ? -1 : 1;
	return 0;
}

/* weight on one node from a sorted (node, weight) pair array, 0 if absent */
static uint64_t node_load(const uint64_t *a, size_t n, uint64_t node)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (a[2 * mid] < node) lo = mid + 1; else hi = mid;
	}
	return lo < n && a[2 * lo] == node ? a[2 * lo + 1] : 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int opt_path_exists(const struct xgft *x, int l, uint32_t mu, uint32_t md, uint32_t wt, int delta)
{
	if (l >= delta)
		return mu == md;
	if (!x->nfailed)
		return 1;
	uint32_t W = x->w[l + 1], M = x->m[l + 1];
	for (uint32_t w = 0; w < W; w++) {
		uint32_t uid = mu * x->wtn[l] + wt, pwt = wt * W + w;
		uint32_t pd = (md / M) * x->wtn[l + 1] + pwt;
		if (!x->up[l][(size_t)uid * W + w] || !x->down[l + 1][(size_t)pd * M + md % M])
			continue;
		if (opt_path_exists(x, l + 1, mu / M, md / M, pwt, delta))
			return 1;
	}
	return 0;
}

void opt_result_free(struct opt_result *r)
{
	for (int l = 0; l <= XGFT_HMAX; l++)
		free(r->choice[l]);
	memset(r, 0, sizeof(*r));
}

/* Row builder over GLPK's 1-based triplets. */
struct rows {
	int *ia, *ja;
	double *ar;
	size_t ne, cap;
};

static int rows_add(struct rows *r, int i, int j, double v)
{
	if (r->ne + 2 > r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 4096;
		int *a = realloc(r->ia, nc * sizeof(int)), *b = a ? realloc(r->ja, nc * sizeof(int)) : NULL;
		if (a) r->ia = a;
		if (b) r->ja = b;
		double *c = b ? realloc(r->ar, nc * sizeof(double)) : NULL;
		if (!c)
			return -1;
		r->ar = c;
		r->cap = nc;
	}
	r->ne++;
	r->ia[r->ne] = i;
	r->ja[r->ne] = j;
	r->ar[r->ne] = v;
	return 0;
}

/* One layer's ILP: column k*W + w + 1 chooses up link w for group k; with
 * soft, column ng*W + lam + 1 is the overflow of the rows of class size lam. */
struct layer {
	const struct xgft *x;
	int l;
	struct grp *g;
	size_t ng;
	const struct opt_params *par;
	int soft;
	uint32_t W;
	int lam_max;           /* links at layers l .. h-1 */
	glp_prob *P;
	struct rows R;
	uint64_t *keys;        /* (class key << 24) | group */
	int row, ncol;         /* last row added; columns */
	uint64_t *nl[2];       /* sorted (node, weight) totals of the up and down nodes */
	size_t nnl[2];
	char *err;
};

/* the choice columns, fixed at 0 where a failed link leaves no path, and
 * (15): exactly one up link per group */
static int layer_choices(struct layer *L)
{
	const struct xgft *x = L->x;
	const uint32_t W = L->W;
	const int l = L->l;
	const struct grp *g = L->g;
	for (size_t k = 0; k < L->ng; k++) {
		uint32_t uid = g[k].mu * x->wtn[l] + g[k].wt;
		for (uint32_t w = 0; w < W; w++) {
			int j = (int)(k * W + w) + 1;
			glp_set_col_kind(L->P, j, GLP_BV);
			if (x->nfailed) {
				uint32_t pwt = g[k].wt * W + w, M = x->m[l + 1];
				uint32_t pd = (g[k].md / M) * x->wtn[l + 1] + pwt;
				if (!x->up[l][(size_t)uid * W + w] ||
				    !x->down[l + 1][(size_t)pd * M + g[k].md % M] ||
				    !opt_path_exists(x, l + 1, g[k].mu / M, g[k].md / M, pwt, (int)g[k].delta))
					glp_set_col_bnds(L->P, j, GLP_FX, 0, 0);
			}
		}
		L->row = glp_add_rows(L->P, 1);
		glp_set_row_bnds(L->P, L->row, GLP_FX, 1, 1);
		for (uint32_t w = 0; w < W; w++)
			if (rows_add(&L->R, L->row, (int)(k * W + w) + 1, 1))
				return oerr(L->err, "out of memory");
	}
	return 0;
}

static void layer_overflow_cols(struct layer *L)
{
	for (int lam = 0; lam <= L->lam_max; lam++) {
		int j = (int)(L->ng * L->W) + lam + 1;
		glp_set_col_kind(L->P, j, GLP_IV);
		glp_set_col_bnds(L->P, j, GLP_LO, 0, 0);
		/* a layer-l overflow costs more than any higher one: it is certain,
		 * the higher ones may still be absorbed by later layers */
		glp_set_obj_coef(L->P, j, (double)(1u << (2 * (L->lam_max - lam))));
	}
}

/* per-node totals (lambda = 0 classes) for restriction elimination */
static int layer_node_totals(struct layer *L)
{
	const struct xgft *x = L->x;
	const struct grp *g = L->g;
	uint64_t *keys = L->keys;
	for (int dir = 0; dir < 2 && !L->par->strong; dir++) {
		uint64_t *nl = L->nl[dir] = malloc(L->ng * 2 * sizeof(uint64_t));
		if (!nl)
			return oerr(L->err, "out of memory");
		for (size_t k = 0; k < L->ng; k++)
			keys[k] = ((uint64_t)((dir ? g[k].md : g[k].mu) * x->wtn[L->l] + g[k].wt) << 24) | k;
		qsort(keys, L->ng, sizeof(*keys), cmp_u64);
		size_t *nn = &L->nnl[dir];
		for (size_t k = 0; k < L->ng; k++) {
			uint64_t node = keys[k] >> 24;
			if (*nn && nl[2 * (*nn - 1)] == node)
				nl[2 * (*nn - 1) + 1] += g[keys[k] & 0xFFFFFF].weight;
			else {
				nl[2 * *nn] = node;
				nl[2 * *nn + 1] = g[keys[k] & 0xFFFFFF].weight;
				(*nn)++;
			}
		}
	}
	return 0;
}

/* The W load rows of one class keys[a..b) of groups whose direction-dir
 * ancestors lam levels up are one node (div: hosts below such a node, Q:
 * its up links above layer l), unless the lambda = 0 rows already imply them. */
static int layer_class(struct layer *L, int dir, int lam, uint64_t div, uint64_t Q, size_t a,
		       size_t b)
{
	const struct xgft *x = L->x;
	const uint32_t W = L->W;
	const uint64_t *keys = L->keys;
	const int strong = L->par->strong;
	uint64_t c = 0, local = 0;
	for (size_t k = a; k < b; k++)
		c += L->g[keys[k] & 0xFFFFFF].weight;
	if (lam > 0 && !strong) {
		/* elimination: the lambda = 0 rows already bound a group by the
		 * sum over this class's nodes of ceil(c0 / W) */
		uint64_t anc = (keys[a] >> 24) / x->wtn[L->l], wt = (keys[a] >> 24) % x->wtn[L->l];
		for (uint64_t node = anc * div; node < (anc + 1) * div; node++) {
			uint64_t c0 = node_load(L->nl[dir], L->nnl[dir], node * x->wtn[L->l] + wt);
			local += (c0 + W - 1) / W;
		}
	}
	uint64_t bound = strong || lam == 0 ? (c + W - 1) / W : (c + W * Q - 1) / (W * Q) * Q;
	if (lam > 0 && !strong && local <= bound)
		return 0;
	for (uint32_t w = 0; w < W; w++) {
		L->row = glp_add_rows(L->P, 1);
		glp_set_row_bnds(L->P, L->row, GLP_UP, 0, (double)bound);
		for (size_t k = a; k < b; k++) {
			size_t gi = keys[k] & 0xFFFFFF;
			if (rows_add(&L->R, L->row, (int)(gi * W + w) + 1, (double)L->g[gi].weight))
				return oerr(L->err, "out of memory");
		}
		if (L->soft && rows_add(&L->R, L->row, (int)(L->ng * W) + lam + 1, -1.0))
			return oerr(L->err, "out of memory");
	}
	return 0;
}

/* the load rows: for each direction and class size lam, the groups
 * grouped by their ancestor lam levels up */
static int layer_bounds(struct layer *L)
{
	const struct xgft *x = L->x;
	const struct grp *g = L->g;
	const int l = L->l;
	uint64_t *keys = L->keys;
	for (int dir = 0; dir < 2; dir++) {
		for (int lam = 0; lam <= L->lam_max; lam++) {
			uint64_t div = 1, Q = 1;
			for (int i = l + 1; i <= l + lam; i++) div *= x->m[i];
			for (int i = l + 2; i <= l + lam + 1; i++) Q *= x->w[i];
			size_t nk = 0;
			for (size_t k = 0; k < L->ng; k++) {
				if (g[k].delta <= (uint32_t)(l + lam))
					continue;
				uint64_t anc = (dir ? g[k].md : g[k].mu) / div;
				uint64_t key = anc * x->wtn[l] + g[k].wt;
				keys[nk++] = (key << 24) | k;   /* ng < 2^24 (checked by the caller) */
			}
			qsort(keys, nk, sizeof(*keys), cmp_u64);
			for (size_t a = 0; a < nk;) {
				size_t b = a;
				while (b < nk && (keys[b] >> 24) == (keys[a] >> 24))
					b++;
				if (layer_class(L, dir, lam, div, Q, a, b))
					return -1;
				a = b;
			}
		}
	}
	return 0;
}

static int layer_build(struct layer *L)
{
	if (!L->keys)
		return oerr(L->err, "out of memory");
	glp_set_obj_dir(L->P, GLP_MIN);
	L->ncol = (int)(L->ng * L->W) + (L->soft ? L->lam_max + 1 : 0);
	glp_add_cols(L->P, L->ncol);
	if (layer_choices(L))
		return -1;
	if (L->soft)
		layer_overflow_cols(L);
	if (layer_node_totals(L) || layer_bounds(L))
		return -1;
	return 0;
}

/* each group's up link from the solution */
static int layer_read(struct layer *L)
{
	struct grp *g = L->g;
	for (size_t k = 0; k < L->ng; k++) {
		g[k].w = OPT_NOCHOICE;
		for (uint32_t w = 0; w < L->W; w++)
			if (glp_mip_col_val(L->P, (int)(k * L->W + w) + 1) > 0.5)
				g[k].w = (uint8_t)w;
		if (g[k].w == OPT_NOCHOICE)
			return oerr(L->err, "solver returned no up link for a group in layer %d", L->l);
	}
	return 0;
}

/* GLPK keeps tm_lim for its branch and bound, but its heuristics (the
 * feasibility pump, rounding) between them can run on: every callback
 * checks the clock itself and ends the search at the deadline. */
static void deadline_cb(glp_tree *tree, void *info)
{
	const double *deadline = info;
	if (*deadline > 0 && now_ms() >= *deadline)
		glp_ios_terminate(tree);
}

static int layer_solve(struct layer *L, double deadline, struct opt_result *res)
{
	glp_load_matrix(L->P, (int)L->R.ne, L->R.ia, L->R.ja, L->R.ar);
	if ((uint64_t)L->row > res->rows) res->rows = (uint64_t)L->row;
	if ((uint64_t)L->ncol > res->cols) res->cols = (uint64_t)L->ncol;
	glp_iocp iocp;
	glp_init_iocp(&iocp);
	iocp.presolve = GLP_ON;
	iocp.msg_lev = L->par->verbose > 1 ? GLP_MSG_ON : GLP_MSG_OFF;
	iocp.fp_heur = GLP_ON;     /* the seed's --fpump: feasible = optimal here */
	iocp.br_tech = GLP_BR_DTH;
	iocp.bt_tech = GLP_BT_DFS;
	if (deadline > 0) {
		double left = deadline - now_ms();
		if (left < 1)
			return oerr(L->err, "solver time limit reached before layer %d", L->l);
		iocp.tm_lim = left > 2e9 ? 2000000000 : (int)left;
		iocp.cb_func = deadline_cb;
		iocp.cb_info = &deadline;
	}
	int r = glp_intopt(L->P, &iocp);
	if (r == GLP_ESTOP)   /* our deadline_cb: the time limit, as GLPK's own */
		r = GLP_ETMLIM;
	int st = glp_mip_status(L->P);
	if (st == GLP_OPT || st == GLP_FEAS) {
		/* a feasible point of the hard formulation is optimal; a soft one stopped
		 * by the clock is only the best found */
		if (L->soft && st != GLP_OPT && r == GLP_ETMLIM)
			return oerr(L->err, "solver time limit reached in layer %d (no optimum yet)", L->l);
		return layer_read(L);
	}
	if (r == GLP_ETMLIM)
		return oerr(L->err, "solver time limit reached in layer %d (%zu pairs, %d rows)", L->l,
			    L->ng, L->row);
	if (r == GLP_ENOPFS || st == GLP_NOFEAS || r == 0)
		return 1;
	return oerr(L->err, "GLPK failed in layer %d (glp_intopt returned %d)", L->l, r);
}

/*
 * One layer: groups g[0..ng) at level l (all with delta > l), choose w for each.
 * soft = 0: the seed's feasibility formulation (any feasible point is optimal);
 * soft = 1: the same rows with one overflow variable per lambda, minimised
 * (used only when the bounds cannot all be met: weighted pairs or failed links).
 * Returns 0 solved, 1 infeasible, -1 error (time limit, memory).
 */
static int solve_layer(const struct xgft *x, int l, struct grp *g, size_t ng,
		       const struct opt_params *par, int soft, double deadline,
		       struct opt_result *res, char *err)
{
	struct layer L = { .x = x, .l = l, .g = g, .ng = ng, .par = par, .soft = soft,
			   .W = x->w[l + 1], .lam_max = x->h - 1 - l, .err = err };
	L.P = glp_create_prob();
	L.keys = malloc(ng * sizeof(*L.keys));
	int rc = layer_build(&L) ? -1 : layer_solve(&L, deadline, res);
	free(L.nl[0]);
	free(L.nl[1]);
	glp_delete_prob(L.P);
	free(L.R.ia); free(L.R.ja); free(L.R.ar);
	free(L.keys);
	return rc;
}

static uint32_t lca_level(const struct xgft *x, uint32_t s, uint32_t d)
{
	uint32_t l = 0;
	while (s != d) {
		l++;
		s /= x->m[l];
		d /= x->m[l];
	}
	return l;
}

int opt_solve(const struct xgft *x, const struct flow *flows, size_t nflows,
	      const struct opt_params *par, struct opt_result *res, char err[OPT_ERR_LEN])
{
	memset(res, 0, sizeof(*res));
	const uint32_t N = x->nhosts;
	double t0 = now_ms();
	double deadline = par->time_limit > 0 ? t0 + par->time_limit * 1e3 : 0;
	res->nhosts = N;
	res->proven = 1;
	struct grp *g = malloc((nflows ? nflows : 1) * sizeof(*g));
	if (!g)
		return oerr(err, "out of memory");
	size_t ng = 0;
	for (size_t i = 0; i < nflows; i++) {
		if (flows[i].src >= N || flows[i].dst >= N)
			return free(g), oerr(err, "flow %zu: host out of range", i);
		if (flows[i].src == flows[i].dst)
			continue;
		g[ng++] = (struct grp){ .mu = flows[i].src, .md = flows[i].dst, .wt = 0, .d = flows[i].dst,
					.delta = lca_level(x, flows[i].src, flows[i].dst),
					.weight = flows[i].weight };
	}
	for (int l = 0; l < x->h; l++) {
		res->choice[l] = malloc((size_t)x->mtn[l] * x->wtn[l] * N);
		if (!res->choice[l]) {
			opt_result_free(res);
			free(g);
			return oerr(err, "out of memory");
		}
		memset(res->choice[l], OPT_NOCHOICE, (size_t)x->mtn[l] * x->wtn[l] * N);
	}
	int rc = 0;
	for (int l = 0; l < x->h && !rc; l++) {
		/* keep the groups still going up; merge those on one switch for one destination */
		size_t k = 0;
		for (size_t i = 0; i < ng; i++)
			if (g[i].delta > (uint32_t)l)
				g[k++] = g[i];
		ng = k;
		if (!ng)
			break;
		qsort(g, ng, sizeof(*g), cmp_grp);
		k = 0;
		for (size_t i = 0; i < ng; i++) {
			if (k && g[k - 1].mu == g[i].mu && g[k - 1].wt == g[i].wt && g[k - 1].d == g[i].d)
				g[k - 1].weight += g[i].weight;
			else
				g[k++] = g[i];
		}
		ng = k;
		if (ng >= (1u << 24)) {
			rc = oerr(err, "layer %d has %zu (switch, destination) pairs (limit 2^24)", l, ng);
			break;
		}
		uint32_t W = x->w[l + 1];
		if (W == 1) {
			for (size_t i = 0; i < ng; i++)
				g[i].w = 0;
			if (x->nfailed)
				for (size_t i = 0; i < ng; i++) {
					uint32_t M = x->m[l + 1];
					uint32_t uid = g[i].mu * x->wtn[l] + g[i].wt;
					uint32_t pd = (g[i].md / M) * x->wtn[l + 1] + g[i].wt;
					if (!x->up[l][uid] || !x->down[l + 1][(size_t)pd * M + g[i].md % M]) {
						rc = oerr(err, "no path: a failed link leaves host %u unreachable", g[i].d);
						break;
					}
				}
		} else {
			int r = solve_layer(x, l, g, ng, par, 0, deadline, res, err);
			res->ilps++;
			if (r == 1) {
				/* the seed's bounds cannot all be met (pairs of weight > 1 or
				 * failed links): minimise the overflow instead, not proven optimal */
				res->proven = 0;
				r = solve_layer(x, l, g, ng, par, 1, deadline, res, err);
				if (r == 1)
					r = oerr(err, "layer %d is infeasible: failed links leave some pattern "
						 "pair without any up*/down* path", l);
			}
			if (r)
				rc = -1;
		}
		if (rc)
			break;
		for (size_t i = 0; i < ng; i++) {
			uint32_t uid = g[i].mu * x->wtn[l] + g[i].wt;
			res->choice[l][(size_t)uid * N + g[i].d] = g[i].w;
			uint32_t M = x->m[l + 1];
			g[i].mu /= M;
			g[i].md /= M;
			g[i].wt = g[i].wt * W + g[i].w;
		}
	}
	free(g);
	res->solve_ms = now_ms() - t0;
	if (rc)
		opt_result_free(res);
	return rc;
}
