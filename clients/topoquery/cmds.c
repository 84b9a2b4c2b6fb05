/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmds.c - topoquery's commands: one libtii call (or a few) each, then the
 * output formats documented at the top of main.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "out.h"
#include "picture.h"
#include "topoquery.h"

int tq_collect_hosts(struct tq *q, int argc, char **argv, struct strv *out, int allow_none)
{
	for (int i = 0; i < argc; i++) {
		const char *why = NULL;
		if (hostlist_expand(out, argv[i], &why))
			return tq_usage_error("%s: %s", argv[i], why);
	}
	for (size_t i = 0; i < q->hosts.n; i++)
		if (strv_push(out, q->hosts.v[i], strlen(q->hosts.v[i])))
			return tq_nomem();
	if (!out->n && !allow_none)
		return tq_usage_error("no hosts given");
	return EXIT_OK;
}

static const char *const *cv(const struct strv *s)
{
	return (const char *const *)s->v;
}

/* ---- info, hops, path, depth ------------------------------------------------- */

/* Seconds since the subnet manager took the snapshot, by this host's
 * clock (0 if it is ahead: clocks of two hosts disagree a little). */
static double age_s(uint64_t snapshot_us)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double now = (double)ts.tv_sec + ts.tv_nsec / 1e9, t = (double)snapshot_us / 1e6;
	return now > t ? now - t : 0;
}

/* "taken 2026-11-25T07:40:01Z (3h 12m ago)": how current the answers are. */
static void print_age(FILE *o, uint64_t snapshot_us)
{
	time_t t = (time_t)(snapshot_us / 1000000u);
	struct tm tm;
	char when[32] = "-";
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	unsigned long a = (unsigned long)age_s(snapshot_us);
	if (a < 60)
		fprintf(o, "taken %s (%lus ago)\n", when, a);
	else if (a < 3600)
		fprintf(o, "taken %s (%lum %lus ago)\n", when, a / 60, a % 60);
	else if (a < 86400)
		fprintf(o, "taken %s (%luh %lum ago)\n", when, a / 3600, a % 3600 / 60);
	else
		fprintf(o, "taken %s (%lud %luh ago)\n", when, a / 86400, a % 86400 / 3600);
}

int cmd_info(struct tq *q, int argc, char **argv)
{
	(void)argv;
	if (argc)
		return tq_usage_error("info takes no arguments");
	struct tii_info in;
	int rc = tii_get_info(q->t, &in);
	if (rc)
		return tq_fail(q, "info", rc);
	const char *srv = tii_current_server(q->t);
	/* topod answers info before its first fabric (generation 0, all
	 * zeros): that is no fabric to describe, not one from 1970. */
	if (!in.generation) {
		fprintf(stderr, "topoquery: info: %s (%s serves no generation: no snapshot received since it started)\n",
			tii_strerror(TII_E_NOFABRIC), srv ? srv : "topod");
		return tq_exit_status(TII_E_NOFABRIC);
	}
	FILE *o = q->out;
	if (q->json) {
		fputs("{\"server\":", o);
		json_str(o, srv ? srv : "");
		fprintf(o, ",\"generation\":%" PRIu64 ",\"nodes\":%u,\"switches\":%u,\"cas\":%u,\"links\":%u,"
			"\"hosts\":%u,\"max_lid\":%u,\"depth\":",
			in.generation, in.nodes, in.switches, in.cas, in.links, in.hosts, in.max_lid);
		if (in.depth >= 0)
			fprintf(o, "%d", in.depth);
		else
			fputs("null", o);
		fputs(",\"engine\":", o);
		json_str(o, in.engine);
		fputs(",\"sm_guid\":", o);
		json_guid(o, in.sm_guid);
		fprintf(o, ",\"sweep\":%" PRIu64 ",\"snapshot_us\":%" PRIu64 ",\"received_us\":%" PRIu64
			",\"held\":%" PRIu64 ",\"source\":", in.sweep, in.snapshot_us, in.received_us, in.held);
		json_str(o, in.source);
		fprintf(o, ",\"age_s\":%.1f}\n", age_s(in.snapshot_us));
		return EXIT_OK;
	}
	fprintf(o, "server %s\ngeneration %" PRIu64 "\nnodes %u\nswitches %u\ncas %u\nlinks %u\nhosts %u\nmax_lid %u\n",
		srv ? srv : "-", in.generation, in.nodes, in.switches, in.cas, in.links, in.hosts, in.max_lid);
	if (in.depth >= 0)
		fprintf(o, "depth %d\n", in.depth);
	else
		fputs("depth -\n", o);
	fputs("engine ", o);
	text_str(o, in.engine);
	fprintf(o, "\nsm_guid 0x%016" PRIx64 "\nsweep %" PRIu64 "\nsnapshot_us %" PRIu64 "\nreceived_us %" PRIu64
		"\nheld %" PRIu64 "\nsource ", in.sm_guid, in.sweep, in.snapshot_us, in.received_us, in.held);
	text_str(o, in.source);
	fputc('\n', o);
	print_age(o, in.snapshot_us);
	return EXIT_OK;
}

/* "hops A B" as the "what" of an error message */
static void what2(char *buf, size_t n, const char *cmd, const char *a, const char *b)
{
	snprintf(buf, n, "%s %.100s %.100s", cmd, a, b);
}

int cmd_hops(struct tq *q, int argc, char **argv)
{
	if (argc != 2)
		return tq_usage_error("usage: hops A B");
	int hops;
	int rc = tii_get_hops(q->t, argv[0], argv[1], &hops);
	if (rc) {
		char w[256];
		what2(w, sizeof(w), "hops", argv[0], argv[1]);
		return tq_fail(q, w, rc);
	}
	if (q->json) {
		fputs("{\"src\":", q->out);
		json_str(q->out, argv[0]);
		fputs(",\"dst\":", q->out);
		json_str(q->out, argv[1]);
		fprintf(q->out, ",\"hops\":%d,\"generation\":%" PRIu64 "}\n", hops, tii_last_generation(q->t));
	} else {
		fprintf(q->out, "%d\n", hops);
	}
	return EXIT_OK;
}

int cmd_path(struct tq *q, int argc, char **argv)
{
	if (argc != 2)
		return tq_usage_error("usage: path A B");
	tii_path_t *p;
	int rc = tii_get_path(q->t, argv[0], argv[1], &p);
	if (rc) {
		char w[256];
		what2(w, sizeof(w), "path", argv[0], argv[1]);
		return tq_fail(q, w, rc);
	}
	FILE *o = q->out;
	if (q->json) {
		/* src and dst as asked (as "hops" does); topod's canonical
		 * names (host/HCA) are in p->src and p->dst */
		fputs("{\"src\":", o);
		json_str(o, argv[0]);
		fputs(",\"dst\":", o);
		json_str(o, argv[1]);
		fprintf(o, ",\"hops\":%zu,\"switches\":[", p->nswitches);
		for (size_t i = 0; i < p->nswitches; i++) {
			fputs(i ? ",{\"guid\":" : "{\"guid\":", o);
			json_guid(o, p->switches[i].guid);
			fputs(",\"name\":", o);
			json_str(o, p->switches[i].name);
			fputc('}', o);
		}
		fputs("]}\n", o);
	} else {
		fprintf(o, "%s %s %zu\n", argv[0], argv[1], p->nswitches);
		for (size_t i = 0; i < p->nswitches; i++) {
			fprintf(o, "0x%016" PRIx64 " %d %d ", p->switches[i].guid, p->switches[i].in_port,
				p->switches[i].out_port);
			text_str(o, p->switches[i].name);
			fputc('\n', o);
		}
	}
	tii_path_free(p);
	return EXIT_OK;
}

int cmd_depth(struct tq *q, int argc, char **argv)
{
	(void)argv;
	if (argc)
		return tq_usage_error("depth takes no arguments");
	int d;
	int rc = tii_get_network_depth(q->t, &d);
	if (rc)
		return tq_fail(q, "depth", rc);
	if (q->json)
		fprintf(q->out, "{\"depth\":%d,\"generation\":%" PRIu64 "}\n", d, tii_last_generation(q->t));
	else
		fprintf(q->out, "%d\n", d);
	return EXIT_OK;
}

/* ---- tree ------------------------------------------------------------------ */

void kids_free(struct kids *k)
{
	free(k->cfirst);
	free(k->cidx);
	free(k->hfirst);
	free(k->hidx);
}

int kids_build(const tii_tree_t *tr, struct kids *k)
{
	size_t nc = tr->nclusters, nh = tr->nhosts;
	k->cfirst = calloc(nc + 1, sizeof(size_t));
	k->hfirst = calloc(nc + 1, sizeof(size_t));
	k->cidx = malloc((nc ? nc : 1) * sizeof(size_t));
	k->hidx = malloc((nh ? nh : 1) * sizeof(size_t));
	size_t *fill = calloc(nc + 1, sizeof(size_t));
	if (!k->cfirst || !k->hfirst || !k->cidx || !k->hidx || !fill) {
		free(fill);
		kids_free(k);
		return -1;
	}
	for (size_t i = 0; i < nc; i++)
		if (tr->clusters[i].parent >= 0)
			k->cfirst[tr->clusters[i].parent + 1]++;
	for (size_t i = 0; i < nh; i++)
		k->hfirst[tr->hosts[i].parent + 1]++;
	for (size_t i = 0; i < nc; i++) {
		k->cfirst[i + 1] += k->cfirst[i];
		k->hfirst[i + 1] += k->hfirst[i];
	}
	for (size_t i = 0; i < nc; i++) {
		long p = tr->clusters[i].parent;
		if (p >= 0)
			k->cidx[k->cfirst[p] + fill[p]++] = i;
	}
	memset(fill, 0, (nc + 1) * sizeof(size_t));
	for (size_t i = 0; i < nh; i++) {
		long p = tr->hosts[i].parent;
		k->hidx[k->hfirst[p] + fill[p]++] = i;
	}
	free(fill);
	return 0;
}

static void tree_text(FILE *o, const tii_tree_t *tr, const struct kids *k, size_t c, int indent)
{
	const struct tii_tree_cluster *cl = &tr->clusters[c];
	char dist[16] = "inf";   /* as topod spells it */
	if (cl->dist != TII_DIST_INF)
		snprintf(dist, sizeof(dist), "%d", cl->dist);
	fprintf(o, "%*scluster ", indent * 2, "");
	if (tr->names && tr->names[c][0]) {
		text_str(o, tr->names[c]);
		fputs(" (", o);
	}
	fprintf(o, "0x%016" PRIx64 "%s level=%d dist=%s hosts=%" PRIu32 "\n", cl->id,
		tr->names && tr->names[c][0] ? ")" : "", cl->level, dist, cl->nhosts);
	for (size_t i = k->cfirst[c]; i < k->cfirst[c + 1]; i++)
		tree_text(o, tr, k, k->cidx[i], indent + 1);
	for (size_t i = k->hfirst[c]; i < k->hfirst[c + 1]; i++) {
		fprintf(o, "%*shost ", (indent + 1) * 2, "");
		text_str(o, tr->hosts[k->hidx[i]].name);
		fputc('\n', o);
	}
	/* hosts earlier generations had under this leaf: where they come back */
	for (size_t i = 0; i < tr->ngone; i++)
		if (tr->gone[i].parent == (long)c) {
			fprintf(o, "%*shost ", (indent + 1) * 2, "");
			text_str(o, tr->gone[i].name);
			fprintf(o, " gone (last seen in generation %" PRIu64 ")\n", tr->gone[i].last_gen);
		}
}

static void tree_json(FILE *o, const tii_tree_t *tr)
{
	fprintf(o, "{\"generation\":%" PRIu64 ",\"depth\":%d,\"clusters\":[", tr->generation, tr->depth);
	for (size_t i = 0; i < tr->nclusters; i++) {
		const struct tii_tree_cluster *cl = &tr->clusters[i];
		fputs(i ? ",{\"id\":" : "{\"id\":", o);
		json_guid(o, cl->id);
		fputs(",\"parent\":", o);
		if (cl->parent >= 0)
			json_guid(o, tr->clusters[cl->parent].id);
		else
			fputs("null", o);
		fprintf(o, ",\"level\":%d,\"dist\":", cl->level);
		if (cl->dist == TII_DIST_INF)
			fputs("null", o);   /* JSON has no infinity */
		else
			fprintf(o, "%d", cl->dist);
		fprintf(o, ",\"hosts\":%" PRIu32 ",\"name\":", cl->nhosts);
		if (tr->names && tr->names[i][0])
			json_str(o, tr->names[i]);
		else
			fputs("null", o);
		fputc('}', o);
	}
	fputs("],\"hosts\":[", o);
	for (size_t i = 0; i < tr->nhosts; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", o);
		json_str(o, tr->hosts[i].name);
		fputs(",\"parent\":", o);
		json_guid(o, tr->clusters[tr->hosts[i].parent].id);
		fputc('}', o);
	}
	fputs("],\"gone\":[", o);
	for (size_t i = 0; i < tr->ngone; i++) {
		const struct tii_tree_gone *g = &tr->gone[i];
		fputs(i ? ",{\"name\":" : "{\"name\":", o);
		json_str(o, g->name);
		fputs(",\"parent\":", o);
		if (g->parent >= 0)
			json_guid(o, tr->clusters[g->parent].id);
		else
			fputs("null", o);
		fputs(",\"leaf\":", o);
		json_guid(o, g->leaf);
		fprintf(o, ",\"last_generation\":%" PRIu64 "}", g->last_gen);
	}
	fputs("]}\n", o);
}

int cmd_tree(struct tq *q, int argc, char **argv)
{
	(void)argv;
	if (argc)
		return tq_usage_error("tree takes no arguments");
	if (q->json && !strcmp(q->format, "dot"))
		return tq_usage_error("--json and --format dot exclude each other");
	tii_tree_t *tr;
	int rc = tii_get_tree(q->t, &tr);
	if (rc)
		return tq_fail(q, "tree", rc);
	int status = EXIT_OK;
	if (q->json) {
		tree_json(q->out, tr);
	} else if (!strcmp(q->format, "dot") || q->output) {
		struct kids k;
		if (kids_build(tr, &k)) {
			status = tq_nomem();
		} else {
			status = pic_tree(q, tr, &k);
			kids_free(&k);
		}
	} else {
		struct kids k;
		if (kids_build(tr, &k)) {
			fprintf(stderr, "topoquery: tree: out of memory\n");
			status = EXIT_ERROR;
		} else {
			for (size_t i = 0; i < tr->nclusters; i++)
				if (tr->clusters[i].parent < 0)
					tree_text(q->out, tr, &k, i, 0);
			for (size_t i = 0; i < tr->ngone; i++)
				if (tr->gone[i].parent < 0) {
					fputs("host ", q->out);
					text_str(q->out, tr->gone[i].name);
					fprintf(q->out, " gone (last seen in generation %" PRIu64 ", leaf 0x%016" PRIx64
						" has no host now)\n", tr->gone[i].last_gen, tr->gone[i].leaf);
				}
			kids_free(&k);
		}
	}
	tii_tree_free(tr);
	return status;
}

/* ---- clusters ---------------------------------------------------------------- */

/* A level word (docs/protocol.md, "Levels"): 0..65535 from the top, "top",
 * "leaf", or -1..-64 from the leaves (-1 = the leaf switches). 0, or -1. */
int tq_parse_level(const char *s, long *level)
{
	char *end;
	if (!strcmp(s, "top")) {
		*level = TII_LEVEL_TOP;
		return 0;
	}
	if (!strcmp(s, "leaf")) {
		*level = TII_LEVEL_LEAF;
		return 0;
	}
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < -TII_LEVELS_MAX || v > 65535)
		return -1;
	*level = v;
	return 0;
}

/* The name topod's tree gives cluster id, or NULL: a linear scan, as the
 * tree has a few clusters per leaf switch. */
static const char *cluster_name(const tii_tree_t *tr, uint64_t id)
{
	for (size_t i = 0; tr && tr->names && i < tr->nclusters; i++)
		if (tr->clusters[i].id == id)
			return tr->names[i][0] ? tr->names[i] : NULL;
	return NULL;
}

int cmd_clusters(struct tq *q, int argc, char **argv)
{
	long level = q->level;
	int have_level = q->have_level;
	if (!have_level && argc >= 1 && (argc >= 2 || q->have_file) && !tq_parse_level(argv[0], &level)) {
		have_level = 1;
		argc--;
		argv++;
	}
	struct strv hosts = { 0 };
	int status = tq_collect_hosts(q, argc, argv, &hosts, 0);
	if (status) {
		strv_free(&hosts);
		return status;
	}
	size_t n = hosts.n;
	int depth = -1, rc = 0;
	long lo = level, nl = 1;
	if (!have_level || level < 0) {
		rc = tii_get_network_depth(q->t, &depth);
		if (rc) {
			strv_free(&hosts);
			return tq_fail(q, "clusters: depth", rc);
		}
		/* every level, or one counted from the leaves, resolved here so
		 * that the output names the level as topod numbers it */
		lo = have_level ? depth + level : 0;
		nl = have_level ? 1 : depth;
		if (lo < 0) {
			strv_free(&hosts);
			return tq_usage_error("clusters: level %ld: the hierarchy has %d levels (-1..-%d from the leaves)",
					      level, depth, depth);
		}
	}
	/* Every level is asked before anything is printed, so a failure
	 * leaves stdout empty rather than half a JSON object. */
	uint64_t *ids = malloc((nl ? (size_t)nl : 1) * n * sizeof(*ids));
	int *colors = malloc((nl ? (size_t)nl : 1) * n * sizeof(*colors));
	int *counts = calloc(nl ? (size_t)nl : 1, sizeof(*counts));
	uint64_t gen = tii_last_generation(q->t);
	if (!ids || !colors || !counts) {
		fprintf(stderr, "topoquery: clusters: out of memory\n");
		status = EXIT_ERROR;
	}
	for (long k = 0; !status && k < nl; k++) {
		rc = tii_connected_switch_clusters_at_depth(q->t, cv(&hosts), n, (int)(lo + k), ids + k * n, &counts[k]);
		if (!rc)
			rc = tii_cluster_colors(ids + k * n, n, colors + k * n, NULL);
		if (rc) {
			char w[64];
			snprintf(w, sizeof(w), "clusters at level %ld", lo + k);
			status = tq_fail(q, w, rc);
		}
		gen = tii_last_generation(q->t);
	}
	/* names come with the tree; one of another generation names nothing */
	tii_tree_t *tr = NULL;
	if (!status && (tii_get_tree(q->t, &tr) || tr->generation != gen)) {
		tii_tree_free(tr);
		tr = NULL;
	}
	FILE *o = q->out;
	if (!status && q->json) {
		fprintf(o, "{\"generation\":%" PRIu64 ",\"depth\":", gen);
		if (depth >= 0)
			fprintf(o, "%d", depth);
		else
			fputs("null", o);
		fputs(",\"levels\":[", o);
		for (long k = 0; k < nl; k++) {
			fprintf(o, "%s{\"level\":%ld,\"count\":%d,\"hosts\":[", k ? "," : "", lo + k, counts[k]);
			for (size_t i = 0; i < n; i++) {
				fputs(i ? ",{\"host\":" : "{\"host\":", o);
				json_str(o, hosts.v[i]);
				fputs(",\"cluster\":", o);
				json_guid(o, ids[k * n + i]);
				fputs(",\"name\":", o);
				const char *nm = cluster_name(tr, ids[k * n + i]);
				if (nm)
					json_str(o, nm);
				else
					fputs("null", o);
				fprintf(o, ",\"color\":%d}", colors[k * n + i]);
			}
			fputs("]}", o);
		}
		fputs("]}\n", o);
	} else if (!status) {
		for (long k = 0; k < nl; k++) {
			fprintf(o, "level %ld clusters %d\n", lo + k, counts[k]);
			for (size_t i = 0; i < n; i++) {
				/* the name last: the first three columns stay what they were */
				const char *nm = cluster_name(tr, ids[k * n + i]);
				fprintf(o, "%s 0x%016" PRIx64 " %d ", hosts.v[i], ids[k * n + i], colors[k * n + i]);
				text_str(o, nm ? nm : "-");
				fputc('\n', o);
			}
		}
	}
	tii_tree_free(tr);
	free(ids);
	free(colors);
	free(counts);
	strv_free(&hosts);
	return status;
}

/* ---- matrix -------------------------------------------------------------------- */

/* Entry (i, j) of a hop (m16) or delay (m64) matrix, or -1 where the route
 * fails. */
static long long matrix_at(const uint16_t *m16, const uint64_t *m64, size_t k)
{
	if (m16)
		return m16[k] == UINT16_MAX ? -1 : (long long)m16[k];
	return m64[k] == UINT64_MAX ? -1 : (long long)m64[k];
}

static void matrix_print(struct tq *q, const struct strv *hosts, const uint16_t *m16, const uint64_t *m64)
{
	size_t n = hosts->n;
	FILE *o = q->out;
	if (q->json) {
		fprintf(o, "{\"generation\":%" PRIu64 ",\"hosts\":[", tii_last_generation(q->t));
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputc(',', o);
			json_str(o, hosts->v[i]);
		}
		if (m64)
			fprintf(o, "],\"bytes\":%" PRIu64 ",\"unit\":\"ns\",\"delay_ns\":[", q->delay_bytes);
		else
			fputs("],\"hops\":[", o);
	}
	for (size_t i = 0; i < n; i++) {
		if (q->json)
			fputs(i ? ",[" : "[", o);
		else
			fputs(hosts->v[i], o);
		for (size_t j = 0; j < n; j++) {
			long long v = matrix_at(m16, m64, i * n + j);
			if (q->json)
				fprintf(o, v < 0 ? "%snull" : "%s%lld", j ? "," : "", v);
			else if (v < 0)
				fputs(" -", o);
			else
				fprintf(o, " %lld", v);
		}
		fputs(q->json ? "]" : "\n", o);
	}
	if (q->json)
		fputs("]}\n", o);
}

int cmd_matrix(struct tq *q, int argc, char **argv)
{
	struct strv hosts = { 0 };
	int status = tq_collect_hosts(q, argc, argv, &hosts, 0);
	if (status) {
		strv_free(&hosts);
		return status;
	}
	size_t n = hosts.n;
	if (n > TII_MATRIX_MAX) {
		strv_free(&hosts);
		return tq_usage_error("matrix: %zu hosts, at most %d", n, TII_MATRIX_MAX);
	}
	uint16_t *m16 = q->delay ? NULL : malloc(n * n * sizeof(*m16));
	uint64_t *m64 = q->delay ? malloc(n * n * sizeof(*m64)) : NULL;
	if (!m16 && !m64) {
		strv_free(&hosts);
		fprintf(stderr, "topoquery: matrix: out of memory\n");
		return EXIT_ERROR;
	}
	/* Up to 15 bytes an entry: a large delay matrix passes the default
	 * reply limit that a hop matrix fits in. */
	if (m64 && tii_get_max_reply_bytes(q->t) < n * n * 15 + 4096)
		tii_set_max_reply_bytes(q->t, n * n * 15 + 4096);
	int rc = m64 ? tii_get_delay_matrix(q->t, cv(&hosts), n, q->delay_bytes, m64)
		     : tii_get_hop_matrix(q->t, cv(&hosts), n, m16);
	if (rc)
		status = tq_fail(q, "matrix", rc);
	else
		matrix_print(q, &hosts, m16, m64);
	free(m16);
	free(m64);
	strv_free(&hosts);
	return status;
}

/* ---- shared ---------------------------------------------------------------------- */

int cmd_shared(struct tq *q, int argc, char **argv)
{
	struct strv hosts = { 0 };
	int status = tq_collect_hosts(q, argc, argv, &hosts, 0);
	if (status) {
		strv_free(&hosts);
		return status;
	}
	if (hosts.n > TII_MATRIX_MAX) {
		size_t n = hosts.n;
		strv_free(&hosts);
		return tq_usage_error("shared: %zu hosts, at most %d", n, TII_MATRIX_MAX);
	}
	tii_sharing_t *sh;
	int rc = tii_get_link_sharing(q->t, cv(&hosts), hosts.n, &sh);
	if (rc) {
		strv_free(&hosts);
		return tq_fail(q, "shared", rc);
	}
	FILE *o = q->out;
	char *const *h = hosts.v;
	struct swnames sn;
	swnames_get(q->t, &sn);
	if (q->json) {
		fprintf(o, "{\"generation\":%" PRIu64 ",\"hosts\":%zu,\"leaves\":%d,\"avg_hosts_per_leaf\":%.2f,"
			"\"pairs_ok\":%" PRIu64 ",\"pairs_failed\":%" PRIu64 ",\"num_sharing\":%zu,\"sharing\":[",
			sh->generation, sh->n, sh->leaves, sh->avg_hosts_per_leaf, sh->pairs_ok, sh->pairs_failed,
			sh->nsharing);
		for (size_t i = 0; i < sh->nsharing; i++) {
			if (i)
				fputc(',', o);
			json_str(o, h[sh->sharing[i]]);
		}
		fputs("],\"groups\":[", o);
		for (size_t g = 0; g < sh->ngroups; g++) {
			fputs(g ? ",{\"switch\":" : "{\"switch\":", o);
			json_guid(o, sh->groups[g].guid);
			fputs(",\"name\":", o);
			json_swname(o, &sn, sh->groups[g].guid);
			fprintf(o, ",\"port\":%d,\"hosts\":[", sh->groups[g].port);
			for (size_t i = 0; i < sh->groups[g].nhosts; i++) {
				if (i)
					fputc(',', o);
				json_str(o, h[sh->groups[g].hosts[i]]);
			}
			fputs("]}", o);
		}
		fputc(']', o);
		if (q->loads) {
			fputs(",\"loads\":[", o);
			for (size_t i = 0; i < sh->nloads; i++) {
				fputs(i ? ",{\"node\":" : "{\"node\":", o);
				json_guid(o, sh->loads[i].guid);
				fputs(",\"name\":", o);
				json_swname(o, &sn, sh->loads[i].guid);
				fprintf(o, ",\"port\":%d,\"count\":%" PRIu64 "}", sh->loads[i].port, sh->loads[i].count);
			}
			fputc(']', o);
		}
		fputs("}\n", o);
	} else {
		fprintf(o, "hosts %zu\nleaves %d\navg_hosts_per_leaf %.2f\npairs_ok %" PRIu64 "\npairs_failed %" PRIu64
			"\nsharing %zu", sh->n, sh->leaves, sh->avg_hosts_per_leaf, sh->pairs_ok, sh->pairs_failed,
			sh->nsharing);
		for (size_t i = 0; i < sh->nsharing; i++)
			fprintf(o, " %s", h[sh->sharing[i]]);
		fputc('\n', o);
		for (size_t g = 0; g < sh->ngroups; g++) {
			fputs("group ", o);
			text_port(o, &sn, sh->groups[g].guid, sh->groups[g].port);
			for (size_t i = 0; i < sh->groups[g].nhosts; i++)
				fprintf(o, " %s", h[sh->groups[g].hosts[i]]);
			fputc('\n', o);
		}
		if (q->loads)
			for (size_t i = 0; i < sh->nloads; i++) {
				fputs("load ", o);
				text_port(o, &sn, sh->loads[i].guid, sh->loads[i].port);
				fprintf(o, " %" PRIu64 "\n", sh->loads[i].count);
			}
	}
	swnames_free(&sn);
	tii_sharing_free(sh);
	strv_free(&hosts);
	return EXIT_OK;
}

/* ---- slurm ------------------------------------------------------------------------ */

/* A cluster's SwitchName: topod's name for it (its switch, hier.h
 * "Names"); an older topod gives none, then sLEVEL_ID as before. */
static void switch_name(char *buf, size_t n, const tii_tree_t *tr, size_t c)
{
	if (tr->names && tr->names[c][0])
		snprintf(buf, n, "%s", tr->names[c]);
	else
		snprintf(buf, n, "s%d_%016" PRIx64, tr->clusters[c].level, tr->clusters[c].id);
}

struct slurm_sw {
	const tii_tree_t *tr;
	size_t c;
	char name[80];
};

/* Children before parents (Slurm's Level counts from the leaves), then by
 * name: nothing that depends on which hosts are up. */
static int cmp_slurm_sw(const void *pa, const void *pb)
{
	const struct slurm_sw *a = pa, *b = pb;
	int la = a->tr->clusters[a->c].level, lb = b->tr->clusters[b->c].level;
	if (la != lb)
		return la > lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One switch's lines; names[] has room for its hosts and the gone ones. */
static int slurm_switch(FILE *o, const tii_tree_t *tr, const struct kids *k, const struct slurm_sw *sw,
			const struct slurm_sw *all, size_t nall, char **names)
{
	size_t c = sw->c, nkc = k->cfirst[c + 1] - k->cfirst[c], nkh = 0;
	for (size_t i = k->hfirst[c]; i < k->hfirst[c + 1]; i++)
		names[nkh++] = tr->hosts[k->hidx[i]].name;
	for (size_t i = 0; i < tr->ngone; i++)
		if (tr->gone[i].parent == (long)c) {
			/* kept where Slurm expects it, and said so */
			fprintf(o, "# %s: not in the fabric now (last seen in generation %" PRIu64 "), kept under %s\n",
				tr->gone[i].name, tr->gone[i].last_gen, sw->name);
			names[nkh++] = tr->gone[i].name;
		}
	char *nodes = nkh ? hostlist_compress(names, nkh) : NULL;
	if (nkh && !nodes)
		return -1;
	if (nkh && nkc)   /* Slurm takes Nodes= or Switches=, not both */
		fprintf(o, "SwitchName=%s_hosts Nodes=%s\n", sw->name, nodes);
	if (nkc || !nkh) {
		const char **kn = malloc((nkc ? nkc : 1) * sizeof(*kn));
		if (!kn) {
			free(nodes);
			return -1;
		}
		for (size_t i = 0; i < nkc; i++) {
			size_t kc = k->cidx[k->cfirst[c] + i];
			for (size_t j = 0; j < nall; j++)
				if (all[j].c == kc)
					kn[i] = all[j].name;
		}
		qsort(kn, nkc, sizeof(*kn), cmp_str);
		fprintf(o, "SwitchName=%s Switches=", sw->name);
		for (size_t i = 0; i < nkc; i++)
			fprintf(o, "%s%s", i ? "," : "", kn[i]);
		if (nkh)
			fprintf(o, ",%s_hosts", sw->name);
		fputc('\n', o);
		free(kn);
	} else {
		fprintf(o, "SwitchName=%s Nodes=%s\n", sw->name, nodes);
	}
	free(nodes);
	return 0;
}

/* topology.conf. Nothing in it depends on the generation or on which hosts
 * are up at the moment, so a cron job rewrites the same bytes until the
 * fabric's switches change: hosts topod remembers from earlier generations
 * stay under their leaf (with a comment). */
static int slurm_write(FILE *o, const tii_tree_t *tr, const struct kids *k, const char *server)
{
	size_t roots = 0, placed = 0, nc = tr->nclusters;
	for (size_t i = 0; i < nc; i++)
		roots += tr->clusters[i].parent < 0;
	for (size_t i = 0; i < tr->ngone; i++)
		placed += tr->gone[i].parent >= 0;
	struct slurm_sw *sw = malloc((nc ? nc : 1) * sizeof(*sw));
	char **names = malloc((tr->nhosts + tr->ngone + 1) * sizeof(*names));
	if (!sw || !names) {
		free(sw);
		free(names);
		return -1;
	}
	for (size_t i = 0; i < nc; i++) {
		sw[i].tr = tr;
		sw[i].c = i;
		switch_name(sw[i].name, sizeof(sw[i].name), tr, i);
	}
	qsort(sw, nc, sizeof(*sw), cmp_slurm_sw);
	fprintf(o, "# topology.conf for Slurm's topology/tree plugin, written by topoquery\n"
		"# from topod %s: %zu switch clusters, %zu hosts, %zu tree%s.\n"
		"# Switches are named after the fabric's switches (topoquery(1), slurm).\n",
		server ? server : "-", nc, tr->nhosts + placed, roots, roots == 1 ? "" : "s");
	for (size_t i = 0; i < tr->ngone; i++)
		if (tr->gone[i].parent < 0)
			fprintf(o, "# %s: not in the fabric now (last seen in generation %" PRIu64
				"), its leaf switch 0x%016" PRIx64 " has no host now: left out\n",
				tr->gone[i].name, tr->gone[i].last_gen, tr->gone[i].leaf);
	int rc = 0;
	for (size_t i = 0; i < nc && !rc; i++)
		rc = slurm_switch(o, tr, k, &sw[i], sw, nc, names);
	free(sw);
	free(names);
	return rc;
}

/* One plane's topology.conf to path (atomically), or to stdout. */
static int slurm_one(struct tq *q, const char *path, const char *plane)
{
	tii_tree_t *tr;
	int rc = tii_get_tree(q->t, &tr);
	if (rc)
		return tq_fail(q, "slurm", rc);
	struct kids k;
	if (kids_build(tr, &k)) {
		tii_tree_free(tr);
		fprintf(stderr, "topoquery: slurm: out of memory\n");
		return EXIT_ERROR;
	}
	int status = EXIT_OK;
	FILE *o = stdout;
	char *tmp = NULL;
	if (path) {
		/* write a temporary file and rename it: slurmctld never reads a
		 * half-written topology.conf */
		size_t n = strlen(path) + 16;
		tmp = malloc(n);
		if (tmp) {
			snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
			o = fopen(tmp, "w");
		}
		if (!tmp || !o) {
			fprintf(stderr, "topoquery: %s: %s\n", tmp ? tmp : path, strerror(errno));
			free(tmp);
			kids_free(&k);
			tii_tree_free(tr);
			return EXIT_FAIL;
		}
	}
	if (plane)
		fprintf(o, "# fabric plane %s\n", plane);
	if (slurm_write(o, tr, &k, tii_current_server(q->t))) {
		fprintf(stderr, "topoquery: slurm: out of memory\n");
		status = EXIT_ERROR;
	}
	if (path) {
		if (fclose(o) && status == EXIT_OK) {
			fprintf(stderr, "topoquery: %s: %s\n", tmp, strerror(errno));
			status = EXIT_ERROR;
		}
		if (status == EXIT_OK && rename(tmp, path)) {
			fprintf(stderr, "topoquery: %s: %s\n", path, strerror(errno));
			status = EXIT_ERROR;
		}
		if (status != EXIT_OK)
			remove(tmp);
		free(tmp);
	}
	kids_free(&k);
	tii_tree_free(tr);
	return status;
}

int cmd_slurm(struct tq *q, int argc, char **argv)
{
	(void)argv;
	if (argc)
		return tq_usage_error("slurm takes no arguments (-o FILE for a file)");
	struct tii_plane pl[TOPO_PLANES_MAX];
	size_t n = 0;
	/* One tree per plane: a host on two rails is a leaf of each, and
	 * Slurm's topology/tree takes a node under one leaf only, so each
	 * plane gets its own file (FILE.PLANE), or its own section. */
	if (q->plane || tii_get_planes(q->t, NULL, pl, &n) || n < 2)
		return slurm_one(q, q->output, NULL);
	int status = EXIT_OK;
	for (size_t i = 0; i < n && status == EXIT_OK; i++) {
		char path[4096];
		if (q->output)
			snprintf(path, sizeof(path), "%s.%s", q->output, pl[i].name);
		int rc = tii_set_plane(q->t, pl[i].name);
		status = rc ? tq_fail(q, "slurm", rc) : slurm_one(q, q->output ? path : NULL, pl[i].name);
	}
	tii_set_plane(q->t, NULL);
	return status;
}
