/* SPDX-License-Identifier: BSD-3-Clause */
/* lft.c - see lft.h. */
#include "lft.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

static int lerr(char *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, LFT_ERR_LEN, fmt, ap);
	va_end(ap);
	return -1;
}

void lft_free(struct lfts *t)
{
	free(t->row);
	free(t->t);
	memset(t, 0, sizeof(*t));
}

static int lft_alloc(const struct snap *s, struct lfts *t, char *err)
{
	memset(t, 0, sizeof(*t));
	uint32_t maxlid = snap_max_lid(s);
	t->stride = maxlid + 1;
	t->row = malloc((size_t)s->nnodes * sizeof(uint32_t));
	if (!t->row)
		return lerr(err, "out of memory");
	for (uint32_t i = 0; i < s->nnodes; i++)
		t->row[i] = s->nodes[i].type == SNAP_NODE_SWITCH ? t->nrows++ : NONE;
	t->t = malloc((size_t)t->nrows * t->stride);
	if (!t->t) {
		lft_free(t);
		return lerr(err, "out of memory");
	}
	memset(t->t, SNAP_LFT_NONE, (size_t)t->nrows * t->stride);
	return 0;
}

int lft_from_snap(const struct snap *s, struct lfts *t, char err[LFT_ERR_LEN])
{
	if (lft_alloc(s, t, err))
		return -1;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		if (t->row[i] == NONE)
			continue;
		uint32_t len = s->nodes[i].lft_len < t->stride ? s->nodes[i].lft_len : t->stride;
		if (len)
			snap_lft_read(&s->nodes[i], 0, len, t->t + (size_t)t->row[i] * t->stride);
	}
	return 0;
}

static const struct snap_port *pt(const struct snap *s, uint32_t n, unsigned p)
{
	return &s->ports[s->nodes[n].port0 + p];
}

/* BFS over switches from node src (a switch, or a host: then from its leaf);
 * dist[] in hops, NONE where unreachable. */
static void bfs(const struct snap *s, uint32_t src, uint32_t *dist, uint32_t *q)
{
	for (uint32_t i = 0; i < s->nnodes; i++)
		dist[i] = NONE;
	uint32_t h = 0, tl = 0;
	dist[src] = 0;
	q[tl++] = src;
	while (h < tl) {
		uint32_t a = q[h++];
		if (a != src && s->nodes[a].type != SNAP_NODE_SWITCH)
			continue;   /* hosts are no transit */
		for (unsigned p = 1; p <= s->nodes[a].nports; p++) {
			const struct snap_port *x = pt(s, a, p);
			if (!x->present || x->peer_node == SNAP_NONE || dist[x->peer_node] != NONE)
				continue;
			dist[x->peer_node] = dist[a] + 1;
			q[tl++] = x->peer_node;
		}
	}
}

/* a port of switch a one hop closer to the BFS source; spread by key */
static unsigned closer(const struct snap *s, uint32_t a, const uint32_t *dist, uint32_t key)
{
	unsigned cand[256], nc = 0;
	if (dist[a] == NONE || dist[a] == 0)
		return 0;
	for (unsigned p = 1; p <= s->nodes[a].nports; p++) {
		const struct snap_port *x = pt(s, a, p);
		if (x->present && x->peer_node != SNAP_NONE && dist[x->peer_node] == dist[a] - 1)
			cand[nc++] = p;
	}
	return nc ? cand[key % nc] : 0;
}

int lft_build(const struct snap *s, const struct xgft *x, const struct opt_result *res,
	      struct lfts *t, char err[LFT_ERR_LEN])
{
	if (lft_alloc(s, t, err))
		return -1;
	uint32_t n = s->nnodes;
	uint32_t *dist = malloc((size_t)n * sizeof(uint32_t)), *q = malloc((size_t)n * sizeof(uint32_t));
	uint32_t *lidnode = malloc((size_t)t->stride * sizeof(uint32_t));
	if (!dist || !q || !lidnode) {
		free(dist); free(q); free(lidnode);
		lft_free(t);
		return lerr(err, "out of memory");
	}
	for (uint32_t l = 0; l < t->stride; l++)
		lidnode[l] = NONE;
	for (uint32_t i = 0; i < n; i++)
		for (unsigned p = 0; p <= s->nodes[i].nports; p++) {
			const struct snap_port *x0 = pt(s, i, p);
			if (!snap_is_endport(s->nodes[i].type, p) || !x0->present || !x0->lid)
				continue;
			for (uint32_t l = x0->lid; l <= snap_port_top_lid(x0) && l < t->stride; l++)
				lidnode[l] = i;
		}
	uint64_t P[XGFT_HMAX + 2];
	P[0] = 1;
	for (int l = 1; l <= x->h; l++)
		P[l] = P[l - 1] * x->m[l];
	uint32_t bfs_for = NONE;
	for (uint32_t lid = 1; lid < t->stride; lid++) {
		uint32_t dn = lidnode[lid];
		if (dn == NONE)
			continue;
		int is_host = x->level_of[dn] == 0;
		uint32_t d = is_host ? x->id_of[dn] : NONE;
		if (!is_host || x->nfailed) {
			/* switch LIDs always, host LIDs when links failed: a BFS for detours */
			if (bfs_for != dn) {
				bfs(s, dn, dist, q);
				bfs_for = dn;
			}
		}
		for (int l = 1; l <= x->h; l++) {
			uint32_t cnt = x->mtn[l] * x->wtn[l];
			for (uint32_t id = 0; id < cnt; id++) {
				uint32_t sw = x->node[l][id];
				uint8_t *e = &t->t[(size_t)t->row[sw] * t->stride + lid];
				if (sw == dn) { *e = 0; continue; }
				unsigned port = 0;
				if (is_host) {
					uint32_t mt = id / x->wtn[l], wt = id % x->wtn[l];
					if (mt == d / P[l]) {
						uint32_t c = (uint32_t)((d / P[l - 1]) % x->m[l]);
						port = x->down[l][(size_t)id * x->m[l] + c];
					} else if (l < x->h) {
						uint32_t W = x->w[l + 1], M = x->m[l + 1];
						uint32_t delta = (uint32_t)l, a = mt, b = (uint32_t)(d / P[l]);
						while (a != b) { delta++; a /= x->m[delta]; b /= x->m[delta]; }
						uint8_t ch = res && res->choice[l] ? res->choice[l][(size_t)id * x->nhosts + d]
										   : OPT_NOCHOICE;
						uint32_t w0 = ch != OPT_NOCHOICE ? ch : (uint32_t)((d / x->wtn[l]) % W);
						for (uint32_t k = 0; k < W && !port; k++) {
							uint32_t w = (w0 + k) % W, pwt = wt * W + w;
							uint32_t md = (uint32_t)(d / P[l]);
							uint32_t pd = (md / M) * x->wtn[l + 1] + pwt;
							if (!x->up[l][(size_t)id * W + w] ||
							    !x->down[l + 1][(size_t)pd * M + md % M] ||
							    !opt_path_exists(x, l + 1, mt / M, md / M, pwt, (int)delta))
								continue;
							port = x->up[l][(size_t)id * W + w];
						}
					}
				}
				if (!port)
					port = closer(s, sw, dist, is_host ? d : lid);
				*e = port ? (uint8_t)port : SNAP_LFT_NONE;
			}
		}
	}
	free(dist); free(q); free(lidnode);
	return 0;
}

int lft_load(const struct snap *s, const struct lfts *t, const uint32_t *host_node,
	     const struct flow *f, size_t n, uint64_t *maxload, char err[LFT_ERR_LEN])
{
	uint64_t *load = calloc(s->nports, sizeof(uint64_t));
	if (!load)
		return lerr(err, "out of memory");
	uint64_t mx = 0;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		uint32_t a = host_node[f[i].src], z = host_node[f[i].dst];
		if (a == z)
			continue;
		unsigned p = 0;
		uint16_t dlid = 0;
		for (unsigned q = 1; q <= s->nodes[z].nports && !dlid; q++)
			if (pt(s, z, q)->present && pt(s, z, q)->peer_node != SNAP_NONE)
				dlid = pt(s, z, q)->lid;
		for (unsigned q = 1; q <= s->nodes[a].nports && !p; q++)
			if (pt(s, a, q)->present && pt(s, a, q)->peer_node != SNAP_NONE)
				p = q;
		if (!p || !dlid) {
			rc = lerr(err, "flow %zu: a host has no linked port or no LID", i);
			break;
		}
		uint32_t cur = a;
		for (int hop = 0;; hop++) {
			uint32_t gi = s->nodes[cur].port0 + p;
			load[gi] += f[i].weight;
			if (load[gi] > mx)
				mx = load[gi];
			cur = s->ports[gi].peer_node;
			if (cur == z)
				break;
			if (s->nodes[cur].type != SNAP_NODE_SWITCH || hop > 64 || t->row[cur] == NONE ||
			    dlid >= t->stride) {
				rc = lerr(err, "flow %zu (%s -> %s): the tables do not deliver it", i,
					  s->nodes[a].desc, s->nodes[z].desc);
				break;
			}
			p = t->t[(size_t)t->row[cur] * t->stride + dlid];
			if (p == SNAP_LFT_NONE || p == 0 || p > s->nodes[cur].nports ||
			    s->ports[s->nodes[cur].port0 + p].peer_node == SNAP_NONE) {
				rc = lerr(err, "flow %zu (%s -> %s): no route at %s", i, s->nodes[a].desc,
					  s->nodes[z].desc, s->nodes[cur].desc);
				break;
			}
		}
	}
	free(load);
	*maxload = mx;
	return rc;
}

static void clean_desc(const char *in, char *out, size_t n)
{
	size_t k = 0;
	for (; *in && k + 1 < n; in++)
		out[k++] = (*in >= 0x20 && *in < 0x7f && *in != '\'') ? *in : '?';
	out[k] = 0;
}

int lft_write_opensm(const struct snap *s, const struct lfts *t, FILE *out, const char *comment)
{
	uint32_t *lidnode = malloc((size_t)t->stride * sizeof(uint32_t));
	uint8_t *lidport = malloc(t->stride);
	if (!lidnode || !lidport) {
		free(lidnode); free(lidport);
		return -1;
	}
	for (uint32_t l = 0; l < t->stride; l++)
		lidnode[l] = NONE;
	for (uint32_t i = 0; i < s->nnodes; i++)
		for (unsigned p = 0; p <= s->nodes[i].nports; p++) {
			const struct snap_port *x0 = pt(s, i, p);
			if (!snap_is_endport(s->nodes[i].type, p) || !x0->present || !x0->lid)
				continue;
			for (uint32_t l = x0->lid; l <= snap_port_top_lid(x0) && l < t->stride; l++) {
				lidnode[l] = i;
				lidport[l] = (uint8_t)p;
			}
		}
	fprintf(out, "# %s\n", comment);
	char d1[SNAP_DESC_LEN + 1], d2[SNAP_DESC_LEN + 1];
	for (uint32_t i = 0; i < s->nnodes; i++) {
		if (t->row[i] == NONE)
			continue;
		clean_desc(s->nodes[i].desc, d1, sizeof(d1));
		fprintf(out, "Unicast lids [0x0-0x%x] of switch Lid %u guid 0x%016llx ('%s'):\n",
			t->stride - 1, pt(s, i, 0)->lid, (unsigned long long)s->nodes[i].guid, d1);
		const uint8_t *r = t->t + (size_t)t->row[i] * t->stride;
		for (uint32_t l = 1; l < t->stride; l++) {
			if (r[l] == SNAP_LFT_NONE || lidnode[l] == NONE)
				continue;
			uint32_t o = lidnode[l];
			clean_desc(s->nodes[o].desc, d2, sizeof(d2));
			fprintf(out, "0x%04x %03u : (%s portguid 0x%016llx: '%s')\n", l, r[l],
				s->nodes[o].type == SNAP_NODE_SWITCH ? "Switch" : "Channel Adapter",
				(unsigned long long)pt(s, o, lidport[l])->guid, d2);
		}
	}
	free(lidnode);
	free(lidport);
	return ferror(out) ? -1 : 0;
}
