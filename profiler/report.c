/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c - rank 0's report: folds each rank's counters into the hop
 * split, the fabric-level split, the host-pair matrix (for the link loads)
 * and the heatmap grid, then writes the text and JSON reports and calls the
 * picture writers. No MPI here: bench/prof_report feeds it synthetic rows.
 *
 * Memory on rank 0: names (n x 256 B), the host-pair matrix (hosts^2 x 8 B),
 * the hop matrix (hosts^2 x 2 B), the heatmap grid (at most 256^2 x 17 x 8
 * B = 8.5 MiB); never the n x n rank matrix (the seed's O(N^2) at rank 0,
 * 7.3.3, only at host granularity).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prof.h"

const char *const prof_coll_name[C_NCOLL] = {
	"barrier",   "bcast",     "gather",         "gatherv",
	"scatter",   "scatterv",  "allgather",      "allgatherv",
	"alltoall",  "alltoallv", "alltoallw",      "reduce",
	"allreduce", "reduce_scatter", "reduce_scatter_block", "scan",
	"exscan",    "neighbor_alltoall", "neighbor_alltoallv", "neighbor_allgather",
	"neighbor_allgatherv",
};

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int rep_init(struct prof_rep *R, int n, const char *names)
{
	memset(R, 0, sizeof(*R));
	R->n = n;
	R->fab.depth = -1;
	R->host_of = malloc((size_t)n * sizeof(int));
	R->hostname = malloc((size_t)n * sizeof(char *));
	size_t cap = 1;
	while (cap < 2 * (size_t)n)
		cap <<= 1;
	int *slot = malloc(cap * sizeof(int));   /* host index, -1 empty */
	if (!R->host_of || !R->hostname || !slot)
		goto oom;
	for (size_t i = 0; i < cap; i++)
		slot[i] = -1;
	/* hosts numbered in order of their first rank */
	for (int r = 0; r < n; r++) {
		const char *nm = names + (size_t)r * PROF_NAME_SLOT;
		size_t s = fnv(nm) & (cap - 1);
		while (slot[s] >= 0 && strcmp(R->hostname[slot[s]], nm))
			s = (s + 1) & (cap - 1);
		if (slot[s] < 0) {
			if (!(R->hostname[R->nh] = strdup(nm)))
				goto oom;
			slot[s] = R->nh++;
		}
		R->host_of[r] = slot[s];
	}
	free(slot);
	slot = NULL;
	size_t nh = (size_t)R->nh;
	/* the host-pair matrix feeds the link loads, which topod answers for at
	 * most TOPO_MATRIX_MAX hosts: beyond that it would be gigabytes for nothing */
	if (nh <= PROF_HOSTPAIR_MAX && !(R->hostpair = calloc(nh * nh, sizeof(uint64_t))))
		goto oom;
	R->grid = n < PROF_GRID_MAX ? n : PROF_GRID_MAX;
	R->block = (n + R->grid - 1) / R->grid;
	R->grid = (n + R->block - 1) / R->block;
	R->cell = calloc((size_t)R->grid * R->grid * PROF_NCLASS, sizeof(uint64_t));
	R->hostcls = calloc(nh * PROF_NCLASS, sizeof(uint64_t));
	if (!R->cell || !R->hostcls)
		goto oom;
	return 0;
oom:
	free(slot);
	rep_free(R);
	return -1;
}

void rep_free(struct prof_rep *R)
{
	for (int h = 0; R->hostname && h < R->nh; h++)
		free(R->hostname[h]);
	free(R->hostname);
	free(R->host_of);
	free(R->hostpair);
	free(R->cell);
	free(R->hostcls);
	free(R->fab.hops);
	free(R->fab.anc);
	free(R->fab.links);
	memset(R, 0, sizeof(*R));
}

int rep_class(const struct prof_rep *R, int ha, int hb)
{
	if (ha == hb)
		return 0;
	if (!R->fab.ok)
		return PROF_HOP_UNKNOWN;
	uint16_t h = R->fab.hops[(size_t)ha * R->nh + hb];
	if (h == UINT16_MAX)
		return PROF_HOP_UNKNOWN;
	/* 0 switches between two names of one host; longer routes than the
	 * table holds are lumped into its last class (none in real fabrics) */
	return h >= PROF_HOPS_MAX ? PROF_HOPS_MAX - 1 : h;
}

int rep_level(const struct prof_rep *R, int ha, int hb)
{
	/* Two names of one host (TII_HOSTMAP, host/HCA) are 0 hops apart:
	 * their traffic turns at no switch, as one name's does. */
	if (ha == hb || rep_class(R, ha, hb) == 0)
		return LV_HOST;
	if (!R->fab.anc)
		return LV_UNKNOWN;
	const long *a = R->fab.anc + (size_t)ha * PROF_LEVELS_MAX, *b = R->fab.anc + (size_t)hb * PROF_LEVELS_MAX;
	for (int l = PROF_LEVELS_MAX - 1; l >= 0; l--)
		if (a[l] >= 0 && a[l] == b[l])
			return l;
	return LV_UNKNOWN;
}

void rep_add_row(struct prof_rep *R, int src, const uint64_t *row)
{
	size_t n = (size_t)R->n, nh = (size_t)R->nh;
	int hs = R->host_of[src];
	uint64_t *cellrow = R->cell + (size_t)(src / R->block) * R->grid * PROF_NCLASS;
	for (size_t d = 0; d < n; d++) {
		uint64_t v[4] = { row[ROW_P2P_BYTES * n + d], row[ROW_P2P_MSGS * n + d], row[ROW_COLL_BYTES * n + d],
				  row[ROW_COLL_MSGS * n + d] };
		if (!(v[0] | v[1] | v[2] | v[3]))
			continue;
		int hd = R->host_of[d];
		int cls = rep_class(R, hs, hd), lv = rep_level(R, hs, hd);
		for (int k = 0; k < 4; k++) {
			R->byhop[cls][k] += v[k];
			R->bylevel[lv][k] += v[k];
			R->total[k] += v[k];
		}
		if (R->hostpair)
			R->hostpair[(size_t)hs * nh + hd] += v[0] + v[2];
		cellrow[(d / R->block) * PROF_NCLASS + cls] += v[0] + v[2];
		R->hostcls[(size_t)hs * PROF_NCLASS + cls] += v[0] + v[2];
	}
}

const char *prof_class_name(int cls, char *buf, size_t n)
{
	if (cls == 0)
		snprintf(buf, n, "intra-host");
	else if (cls == PROF_HOP_UNKNOWN)
		snprintf(buf, n, "unknown");
	else
		snprintf(buf, n, "%d hop%s", cls, cls == 1 ? "" : "s");
	return buf;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static const char *level_name(int lv, char *buf, size_t n)
{
	if (lv == LV_HOST)
		snprintf(buf, n, "intra-host");
	else if (lv == LV_UNKNOWN)
		snprintf(buf, n, "unknown");
	else
		snprintf(buf, n, "level %d", lv);
	return buf;
}

/* k = 0 point-to-point, 2 collective */
static void text_split(FILE *f, const struct prof_rep *R, int k)
{
	char nm[32];
	fprintf(f, "  %-12s %16s %7s %14s\n", "hops", "bytes", "%", "messages");
	for (int c = 0; c < PROF_NCLASS; c++)
		if (R->byhop[c][k] || R->byhop[c][k + 1])
			fprintf(f, "  %-12s %16" PRIu64 " %6.2f%% %14" PRIu64 "\n", prof_class_name(c, nm, sizeof(nm)),
				R->byhop[c][k], pct(R->byhop[c][k], R->total[k]), R->byhop[c][k + 1]);
	fprintf(f, "  %-12s %16s %7s %14s\n", "where", "bytes", "%", "messages");
	for (int l = 0; l < PROF_LEVELS_MAX + 2; l++)
		if (R->bylevel[l][k] || R->bylevel[l][k + 1])
			fprintf(f, "  %-12s %16" PRIu64 " %6.2f%% %14" PRIu64 "\n", level_name(l, nm, sizeof(nm)),
				R->bylevel[l][k], pct(R->bylevel[l][k], R->total[k]), R->bylevel[l][k + 1]);
}

static int write_text(const struct prof_rep *R, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	const struct prof_fabric *F = &R->fab;
	fprintf(f, "topoprof report: %d rank%s on %d host%s\n", R->n, R->n == 1 ? "" : "s", R->nh, R->nh == 1 ? "" : "s");
	if (F->ok)
		fprintf(f, "fabric: topod %s, generation %" PRIu64 ", depth %d\n", F->server, F->generation, F->depth);
	else
		fprintf(f, "fabric: NONE - %s\n  (bytes and messages are complete; hops, levels and links are not)\n",
			F->why);
	if (F->ok && !F->anc)
		fprintf(f, "levels: none - %s\n", F->levels_why);
	fprintf(f, "\npoint-to-point (measured, counted once at the sender): %" PRIu64 " bytes, %" PRIu64
		   " messages\n", R->total[0], R->total[1]);
	text_split(f, R, 0);
	fprintf(f, "\ncollectives (LOGICAL traffic of each operation, not the MPI library's messages): %" PRIu64
		   " bytes, %" PRIu64 " logical messages\n", R->total[2], R->total[3]);
	text_split(f, R, 2);
	fprintf(f, "  calls (summed over ranks):");
	for (int c = 0; c < C_NCOLL; c++)
		if (R->coll_calls[c])
			fprintf(f, " %s %" PRIu64, prof_coll_name[c], R->coll_calls[c]);
	fprintf(f, "\n\nmost loaded links (point-to-point + logical collective bytes):");
	if (!F->links_ok)
		fprintf(f, " none - %s\n", F->links_why);
	else {
		fprintf(f, " %zu of %zu loaded links, by %s\n", F->nlinks, F->links_total, F->links_how);
		for (size_t i = 0; i < F->nlinks; i++) {
			const struct prof_link *L = &F->links[i];
			fprintf(f, "  %2zu. %s -> %s  %" PRIu64 " bytes, %" PRIu64 " host pairs; largest:", i + 1, L->from,
				L->to, L->bytes, L->pairs);
			for (int j = 0; j < L->nflows; j++)
				fprintf(f, "%s %s->%s %" PRIu64, j ? "," : "", R->hostname[L->flows[j].src],
					R->hostname[L->flows[j].dst], L->flows[j].bytes);
			fputc('\n', f);
		}
	}
	if (R->untracked || R->untranslated)
		fprintf(f, "\nWARNING: %" PRIu64 " persistent sends untracked (table full), %" PRIu64
			   " peers without a world rank: their bytes are missing\n", R->untracked, R->untranslated);
	fprintf(f, "\nprofiler memory: at most %" PRIu64 " bytes on any rank\n", R->max_rank_heap);
	fprintf(f, "report time: gather %.3f s, topod %.3f s, pictures %.3f s\n", R->secs_gather, R->secs_fabric,
		R->secs_write);
	return fclose(f) ? -1 : 0;
}

static void json_split(FILE *f, const struct prof_rep *R, int k)
{
	char nm[32];
	fprintf(f, "\"bytes\": %" PRIu64 ", \"messages\": %" PRIu64 ",\n    \"by_hops\": [", R->total[k],
		R->total[k + 1]);
	int first = 1;
	for (int c = 0; c < PROF_NCLASS; c++) {
		if (!(R->byhop[c][k] || R->byhop[c][k + 1]))
			continue;
		fprintf(f, "%s\n      {\"hops\": %d, \"class\": \"%s\", \"bytes\": %" PRIu64 ", \"messages\": %" PRIu64 "}",
			first ? "" : ",", c == PROF_HOP_UNKNOWN ? -1 : c, prof_class_name(c, nm, sizeof(nm)),
			R->byhop[c][k], R->byhop[c][k + 1]);
		first = 0;
	}
	fprintf(f, "],\n    \"by_level\": [");
	first = 1;
	for (int l = 0; l < PROF_LEVELS_MAX + 2; l++) {
		if (!(R->bylevel[l][k] || R->bylevel[l][k + 1]))
			continue;
		fprintf(f, "%s\n      {\"level\": %d, \"name\": \"%s\", \"bytes\": %" PRIu64 ", \"messages\": %" PRIu64 "}",
			first ? "" : ",", l == LV_HOST ? -1 : l == LV_UNKNOWN ? -2 : l, level_name(l, nm, sizeof(nm)),
			R->bylevel[l][k], R->bylevel[l][k + 1]);
		first = 0;
	}
	fprintf(f, "]");
}

static int write_json(const struct prof_rep *R, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	const struct prof_fabric *F = &R->fab;
	fprintf(f, "{\n  \"format\": \"topoprof/1\",\n  \"ranks\": %d,\n  \"hosts\": [", R->n);
	for (int h = 0; h < R->nh; h++) {
		fputs(h ? ", " : "", f);
		json_str(f, R->hostname[h]);
	}
	fprintf(f, "],\n  \"rank_host\": [");
	for (int r = 0; r < R->n; r++)
		fprintf(f, "%s%d", r ? "," : "", R->host_of[r]);
	fprintf(f, "],\n  \"fabric\": {\"ok\": %s, \"why\": ", F->ok ? "true" : "false");
	json_str(f, F->ok ? "" : F->why);
	fprintf(f, ", \"server\": ");
	json_str(f, F->server);
	fprintf(f, ", \"generation\": %" PRIu64 ", \"depth\": %d, \"levels\": %s, \"levels_why\": ", F->generation,
		F->depth, F->anc ? "true" : "false");
	json_str(f, F->anc ? "" : F->levels_why);
	fprintf(f, "},\n  \"p2p\": {\"counted_at\": \"sender\", ");
	json_split(f, R, 0);
	fprintf(f, "},\n  \"collective\": {\"logical\": true, ");
	json_split(f, R, 2);
	fprintf(f, ",\n    \"calls\": {");
	int first = 1;
	for (int c = 0; c < C_NCOLL; c++)
		if (R->coll_calls[c]) {
			fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", prof_coll_name[c], R->coll_calls[c]);
			first = 0;
		}
	fprintf(f, "}},\n  \"links\": {\"ok\": %s, \"why\": ", F->links_ok ? "true" : "false");
	json_str(f, F->links_ok ? "" : F->links_why);
	fprintf(f, ", \"how\": ");
	json_str(f, F->links_how);
	fprintf(f, ", \"traffic\": \"p2p+collective\", \"loaded\": %zu, \"top\": [", F->links_total);
	for (size_t i = 0; F->links_ok && i < F->nlinks; i++) {
		const struct prof_link *L = &F->links[i];
		fprintf(f, "%s\n    {\"from\": ", i ? "," : "");
		json_str(f, L->from);
		fprintf(f, ", \"to\": ");
		json_str(f, L->to);
		fprintf(f, ", \"bytes\": %" PRIu64 ", \"pairs\": %" PRIu64 ", \"flows\": [", L->bytes, L->pairs);
		for (int j = 0; j < L->nflows; j++) {
			fprintf(f, "%s{\"src\": ", j ? ", " : "");
			json_str(f, R->hostname[L->flows[j].src]);
			fprintf(f, ", \"dst\": ");
			json_str(f, R->hostname[L->flows[j].dst]);
			fprintf(f, ", \"bytes\": %" PRIu64 "}", L->flows[j].bytes);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]},\n  \"untracked_persistent\": %" PRIu64 ", \"untranslated_peers\": %" PRIu64
		   ",\n  \"max_rank_heap_bytes\": %" PRIu64 ",\n  \"seconds\": {\"gather\": %.6f, \"topod\": %.6f, \"pictures\": %.6f}\n}\n",
		R->untracked, R->untranslated, R->max_rank_heap, R->secs_gather, R->secs_fabric, R->secs_write);
	return fclose(f) ? -1 : 0;
}

int rep_write(struct prof_rep *R, const char *prefix, char *why)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	char path[4200];
	/* the pictures first, so that the JSON and the text report, written
	 * last, can say how long the pictures took */
	static const char *const ext[] = { "-hops.svg", "-heatmap.svg", "-links.svg", "-hosts.svg", ".json", ".txt" };
	int (*const fn[])(const struct prof_rep *, const char *) = { svg_hops, svg_heatmap, svg_links, svg_hosts,
								      write_json, write_text };
	for (size_t i = 0; i < sizeof(fn) / sizeof(fn[0]); i++) {
		if (i == 4) {
			clock_gettime(CLOCK_MONOTONIC, &b);
			R->secs_write = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
		}
		snprintf(path, sizeof(path), "%s%s", prefix, ext[i]);
		if (fn[i](R, path)) {
			snprintf(why, PROF_WHY, "%.400s: %s", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}
