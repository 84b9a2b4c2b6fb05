/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * load_cmd.c - the `load` command: a job's rank list and pattern in, link
 * loads out (load.h). Syntax and reply in docs/protocol.md.
 *
 *   load [bytes=N] [links=all|max|none] SPEC RANK [RANK ...] [-- S:D:B ...]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cost.h"
#include "query.h"
#include "load.h"
#include "route.h"
#include "topo_limits.h"
#include "util.h"

static uint64_t node_guid(const struct qctx *c, uint32_t node)
{
	return c->s->nodes[node].guid;
}

static void lvl_name(uint8_t l, char *b)
{
	if (l == LOAD_LVL_NONE)
		strcpy(b, "x");
	else
		snprintf(b, 4, "%u", l);
}

/* "S:D:B" with S, D < nranks and B <= TOPO_MSG_BYTES_MAX (2^53). */
static int parse_triple(const char *w, uint32_t nranks, struct pat_triple *t)
{
	const char *c1 = strchr(w, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	uint64_t s, d, b;
	if (!nranks || !c2 || util_parse_u64(w, c1, nranks - 1, &s) || util_parse_u64(c1 + 1, c2, nranks - 1, &d) ||
	    util_parse_u64(c2 + 1, NULL, TOPO_MSG_BYTES_MAX, &b))
		return -1;
	*t = (struct pat_triple){ (uint32_t)s, (uint32_t)d, b };
	return 0;
}

/* One `load` request: its words, the job and pattern they name, and what
 * it owns (freed by answer_load). */
struct load_req {
	uint64_t bytes;
	int links;              /* 0 all, 1 max, 2 none */
	int matrix;
	size_t r0, r1;          /* argv[r0 .. r1): the ranks; argv[r1], if any, is "--" */
	struct pattern p;
	struct pat_job job;
};

/* The bytes= and links= options ahead of SPEC; *i is the first other word.
 * -1 once the error is written. */
static int parse_opts(struct qctx *c, struct load_req *q, size_t *i)
{
	const struct proto_req *r = c->req;
	for (; *i < r->argc; (*i)++) {
		const char *a = r->argv[*i];
		if (!strncmp(a, "bytes=", 6)) {
			if (util_parse_u64(a + 6, NULL, TOPO_MSG_BYTES_MAX, &q->bytes) || !q->bytes) {
				query_error(c->out, "USAGE", "bytes=N needs an integer from 1 to 2^53 (%llu), got '%.40s'",
					    (unsigned long long)TOPO_MSG_BYTES_MAX, a + 6);
				return -1;
			}
		} else if (!strncmp(a, "links=", 6)) {
			if (!strcmp(a + 6, "all"))
				q->links = 0;
			else if (!strcmp(a + 6, "max"))
				q->links = 1;
			else if (!strcmp(a + 6, "none"))
				q->links = 2;
			else {
				query_error(c->out, "USAGE", "links=all|max|none");
				return -1;
			}
		} else {
			break;
		}
	}
	return 0;
}

/* Options, SPEC and where the ranks and triples lie; -1 once the error is
 * written. */
static int parse_words(struct qctx *c, struct load_req *q)
{
	const struct proto_req *r = c->req;
	size_t i = 0;
	if (parse_opts(c, q, &i))
		return -1;
	if (i + 2 > r->argc) {
		query_error(c->out, "USAGE", "load [bytes=N] [links=all|max|none] SPEC RANK [RANK ...] [-- S:D:B ...]");
		return -1;
	}
	const char *spec = r->argv[i++];
	char err[AN_ERR_LEN];
	q->matrix = !strcmp(spec, "matrix");
	if (!q->matrix && pattern_parse(spec, &q->p, err)) {
		query_error(c->out, "USAGE", "%s", err);
		return -1;
	}
	q->p.msg_bytes = q->bytes;
	q->r0 = q->r1 = i;
	while (q->r1 < r->argc && strcmp(r->argv[q->r1], "--"))
		q->r1++;
	if (q->r1 == q->r0) {
		query_error(c->out, "USAGE", "load needs at least one rank");
		return -1;
	}
	if (!q->matrix && q->r1 < r->argc) {
		query_error(c->out, "USAGE", "'--' and triples go with the matrix pattern only");
		return -1;
	}
	return 0;
}

/* The ranks (NAME or NAME*COUNT) to fabric hosts: counted and bounded
 * first, so that the job is allocated once. -1 once the error is written. */
static int build_job(struct qctx *c, struct load_req *q)
{
	const struct proto_req *r = c->req;
	uint64_t nranks = 0;
	char name[TOPO_QUERY_NAME_MAX + 1], err[AN_ERR_LEN];
	uint32_t cnt;
	for (size_t k = q->r0; k < q->r1; k++) {
		if (pattern_rank_token(r->argv[k], name, &cnt, err)) {
			query_error(c->out, "USAGE", "%s", err);
			return -1;
		}
		nranks += cnt;
		if (nranks > TOPO_RANKS_MAX) {
			query_error(c->out, "TOOMANY", "load takes at most %d ranks", TOPO_RANKS_MAX);
			return -1;
		}
	}
	q->job = (struct pat_job){ .nranks = (uint32_t)nranks, .host = malloc(nranks * sizeof(uint32_t)) };
	if (!q->job.host) {
		query_error(c->out, "NOMEM", "out of memory");
		return -1;
	}
	uint32_t at = 0;
	for (size_t k = q->r0; k < q->r1; k++) {
		pattern_rank_token(r->argv[k], name, &cnt, err);
		int64_t h = qctx_host_of(c, name);
		if (h < 0)
			return -1;
		for (uint32_t n = 0; n < cnt; n++)
			q->job.host[at++] = (uint32_t)h;
	}
	if (pattern_job_check(&q->job, c->rt->nhosts, err)) {
		query_error(c->out, "TOOMANY", "%s", err);
		return -1;
	}
	return 0;
}

/* The matrix from the S:D:B triples after "--", or the parsed pattern
 * checked against the job's size. -1 once the error is written. */
static int build_pattern(struct qctx *c, struct load_req *q)
{
	const struct proto_req *r = c->req;
	char err[AN_ERR_LEN];
	uint64_t total;
	if (!q->matrix) {
		if (pattern_check(&q->p, q->job.nranks, err)) {
			query_error(c->out, "USAGE", "%s", err);
			return -1;
		}
	} else {
		size_t nt = q->r1 < r->argc ? r->argc - q->r1 - 1 : 0;
		if (qctx_matrix(c, r->argv + q->r1 + 1, nt, q->job.nranks, &q->p))
			return -1;
	}
	/* Any message up to 2^53 bytes, but no total past what 64 bits carry. */
	if (pattern_total_bytes(&q->p, q->job.nranks, &total, err)) {
		query_error(c->out, "RANGE", "%s: fewer bytes or ranks", err);
		return -1;
	}
	return 0;
}

int qctx_matrix(struct qctx *c, const char *const *words, size_t nt, uint32_t nranks, struct pattern *p)
{
	char err[AN_ERR_LEN];
	struct pat_triple *tri = malloc((nt ? nt : 1) * sizeof *tri);
	if (!tri) {
		query_error(c->out, "NOMEM", "out of memory");
		return -1;
	}
	for (size_t k = 0; k < nt; k++)
		if (parse_triple(words[k], nranks, &tri[k])) {
			query_error(c->out, "USAGE",
				    "matrix entry %zu: '%.40s' is not S:D:BYTES with ranks < %" PRIu32
				    " and BYTES <= 2^53 (%llu)",
				    k + 1, words[k], nranks, (unsigned long long)TOPO_MSG_BYTES_MAX);
			free(tri);
			return -1;
		}
	/* pattern_set_matrix copies the triples */
	int rc = pattern_set_matrix(p, tri, nt, nranks, err);
	free(tri);
	if (rc)
		query_error(c->out, rc == AN_E_NOMEM ? "NOMEM" : "USAGE", "%s", err);
	return rc ? -1 : 0;
}

/* The tier, hops and max lines of the reply (tiers: docs/protocol.md,
 * "Levels, one vocabulary"). */
static void write_summary(struct qctx *c, const struct load *L)
{
	char a[4], b[4];
	for (uint32_t k = 0; k < L->nlevels; k++) {
		const struct load_level *lv = &L->levels[k];
		lvl_name(lv->from, a);
		lvl_name(lv->to, b);
		evbuffer_add_printf(c->out,
				    "tier %s>%s links=%" PRIu32 " used=%" PRIu32 " max_msgs=%" PRIu64
				    " max_bytes=%" PRIu64 " total_msgs=%" PRIu64 " total_bytes=%" PRIu64,
				    a, b, lv->nlinks, lv->nused, lv->max_msgs, lv->max_bytes, lv->tot_msgs,
				    lv->tot_bytes);
		if (lv->bound_msgs >= 0)
			evbuffer_add_printf(c->out, " bound_msgs=%" PRId64 " bound_bytes=%" PRId64 "\n",
					    lv->bound_msgs, lv->bound_bytes);
		else
			evbuffer_add_printf(c->out, " bound_msgs=- bound_bytes=-\n");
	}
	for (int h = 0; h <= LOAD_HOPS_MAX; h++)
		if (L->hop_msgs[h])
			evbuffer_add_printf(c->out, "hops %d msgs=%" PRIu64 " bytes=%" PRIu64 "\n", h,
					    L->hop_msgs[h], L->hop_bytes[h]);
	for (uint32_t k = 0; k < L->nmax; k++) {
		const struct load_link *ln = &L->links[L->max[k]];
		lvl_name(ln->from, a);
		lvl_name(ln->to, b);
		evbuffer_add_printf(c->out, "max 0x%016" PRIx64 ":%u %s>%s msgs=%" PRIu64 " bytes=%" PRIu64 " behind=",
				    node_guid(c, ln->node), ln->port, a, b, ln->msgs, ln->bytes);
		if (L->behind_off[k] == L->behind_off[k + 1])
			evbuffer_add(c->out, "-", 1);
		for (uint32_t q = L->behind_off[k]; q < L->behind_off[k + 1]; q++)
			evbuffer_add_printf(c->out, "%s%s", q > L->behind_off[k] ? "," : "",
					    c->rt->hosts[L->behind[q]].name);
		evbuffer_add(c->out, "\n", 1);
	}
}

/* links=all: every loaded link, then the job's hosts (in_job) with the node
 * of their default rail, so that a client can draw the links. */
static void write_links(struct qctx *c, const struct load *L, const uint8_t *in_job)
{
	char a[4], b[4];
	for (uint32_t k = 0; k < L->nlinks; k++) {
		const struct load_link *ln = &L->links[k];
		lvl_name(ln->from, a);
		lvl_name(ln->to, b);
		evbuffer_add_printf(c->out, "link 0x%016" PRIx64 ":%u %s>%s %" PRIu64 " %" PRIu64 " 0x%016" PRIx64 "\n",
				    node_guid(c, ln->node), ln->port, a, b, ln->msgs, ln->bytes,
				    ln->head == ROUTE_NONE ? 0 : node_guid(c, ln->head));
	}
	for (uint32_t k = 0; k < c->rt->nhosts; k++)
		if (in_job[k])
			evbuffer_add_printf(c->out, "host %s 0x%016" PRIx64 "\n", c->rt->hosts[k].name,
					    node_guid(c, c->rt->eps[route_host_ep(c->rt, k)].node));
}

/* The predicted time of the pattern posted at once (cost.h) as header
 * words: "-" where a loaded cable has no known rate (a text-dump fabric). */
static void put_time(struct qctx *c, const struct load *L)
{
	struct cost_time t;
	char err[AN_ERR_LEN];
	if (cost_load_time(c->rt, L, &t, err)) {
		evbuffer_add_printf(c->out, " time_us=- bottleneck=- bottleneck_bps=-");
		return;
	}
	evbuffer_add_printf(c->out, " time_us=%.3f", t.seconds * 1e6);
	if (t.link == UINT32_MAX) {
		evbuffer_add_printf(c->out, " bottleneck=- bottleneck_bps=0");
		return;
	}
	const struct load_link *ln = &L->links[t.link];
	evbuffer_add_printf(c->out, " bottleneck=0x%016" PRIx64 ":%u bottleneck_bps=%" PRIu64,
			    node_guid(c, ln->node), ln->port, t.link_bps);
}

/* The OK line announces the lines that follow, so everything that can fail
 * is done before it. */
static void write_reply(struct qctx *c, const struct load_req *q, const struct load *L)
{
	char pname[PAT_SPEC_MAX + 16];
	pattern_name(&q->p, pname, sizeof pname);
	uint32_t nhops = 0;
	for (int h = 0; h <= LOAD_HOPS_MAX; h++)
		nhops += L->hop_msgs[h] != 0;
	uint8_t *in_job = calloc(c->rt->nhosts ? c->rt->nhosts : 1, 1);
	if (!in_job) {
		query_error(c->out, "NOMEM", "out of memory");
		return;
	}
	for (uint32_t k = 0; k < q->job.nranks; k++)
		in_job[q->job.host[k]] = 1;
	uint32_t nlines = L->nlevels + nhops + L->nmax + (q->links == 0 ? L->nlinks + L->nhosts : 0);
	evbuffer_add_printf(c->out,
			    "OK gen=%" PRIu64 " pattern=%s ranks=%" PRIu32 " hosts=%" PRIu32 " flows=%" PRIu64
			    " msgs=%" PRIu64 " bytes=%" PRIu64 " intra_msgs=%" PRIu64 " intra_bytes=%" PRIu64
			    " failed_msgs=%" PRIu64 " failed_bytes=%" PRIu64 " max_msgs=%" PRIu64
			    " max_bytes=%" PRIu64 " max_links=%" PRIu32 " max_hops=%" PRIu32,
			    c->gen, pname, L->nranks, L->nhosts, L->flows, L->msgs, L->bytes, L->intra_msgs,
			    L->intra_bytes, L->fail_msgs, L->fail_bytes, L->max_msgs, L->max_bytes, L->nmax,
			    L->max_hops);
	put_time(c, L);
	evbuffer_add_printf(c->out, " links=%" PRIu32 " lines=%" PRIu32 "\n", L->nlinks, nlines);
	write_summary(c, L);
	if (q->links == 0)
		write_links(c, L, in_job);
	free(in_job);
}

void answer_load(struct qctx *c)
{
	struct load_req q = { .bytes = 1 };
	struct load *L = NULL;
	if (!parse_words(c, &q) && !build_job(c, &q) && !build_pattern(c, &q)) {
		int rc = load_build(c->rt, &q.job, &q.p, c->threads, &L);
		if (rc == AN_E_RANGE)
			query_error(c->out, "RANGE", "a level's links carry more than 2^62 bytes in all: fewer bytes or ranks");
		else if (rc)
			query_error(c->out, rc == AN_E_NOMEM ? "NOMEM" : "USAGE", "%s", an_strerror(rc));
		else
			write_reply(c, &q, L);
	}
	load_free(L);
	pattern_clear(&q.p);
	free(q.job.host);
}
