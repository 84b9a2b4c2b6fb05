/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo-snap - inspect, convert and compare fabric snapshots.
 *
 *   topo-snap info FILE              header fields and counts
 *   topo-snap nodes FILE             one line per node
 *   topo-snap links FILE             one line per link, each listed once
 *   topo-snap lfts FILE              one line per routed (switch, LID)
 *   topo-snap diff A B               compare nodes, links and LFTs; exit 1 if they differ
 *   topo-snap from-text TOPO LFTS OUT   ibnetdiscover + ibroute dumps -> snapshot file
 *   topo-snap send SINK... FILE      deliver FILE to sinks (the plugin's key=value options,
 *                                    key_file=PATH to prove the key to a TCP ingest,
 *                                    plane=NAME to deliver only to that plane)
 *   topo-snap keygen FILE            write a new random ingest key (mode 0600)
 *   topo-snap export SRC OUT         SRC (a snapshot or a state directory) as one snapshot file
 *   topo-snap delta BASE NEW OUT     NEW as a delta against BASE (exit 3: needs a full snapshot)
 *   topo-snap apply BASE DELTA OUT   BASE with DELTA applied, as a snapshot file
 *
 * FILE may also be topod's state directory: the fabric it serves from there
 * (fabric.snap with its delta journal applied).
 *
 * Text output is meant for diff(1) and scripts: fixed columns, GUIDs as
 * 0x%016x, NodeDescriptions escaped (snap_escape) and quoted last.
 * Exit status: 0 ok, 1 failure or difference, 2 usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "delta.h"
#include "journal.h"
#include "sink.h"
#include "snapshot.h"
#include "textdump.h"

static const char *prog = "topo-snap";

/* A snapshot file, or a state directory: what topod serves from it
 * (fabric.snap and the deltas journalled since). */
static struct snap *load(const char *path)
{
	struct snap *s;
	char err[SNAP_ERR_LEN], why[SNAP_ERR_LEN];
	struct stat st;
	int dir = !stat(path, &st) && S_ISDIR(st.st_mode);
	if (dir ? snap_read_state(path, &s, NULL, why, err) : snap_read_file(path, &s, err)) {
		fprintf(stderr, "%s: %s\n", prog, err);
		exit(1);
	}
	if (dir && why[0])
		fprintf(stderr, "%s: warning: %s\n", prog, why);
	return s;
}

static void print_desc(FILE *f, const char *desc)
{
	char esc[SNAP_DESC_LEN * 4 + 1];
	snap_escape(desc, esc, sizeof(esc));
	fprintf(f, "\"%s\"", esc);
}

static int cmd_info(const struct snap *s)
{
	uint32_t sw = 0, ca = 0, links = snap_count_links(s);
	for (uint32_t i = 0; i < s->nnodes; i++) {
		sw += s->nodes[i].type == SNAP_NODE_SWITCH;
		ca += s->nodes[i].type == SNAP_NODE_CA;
	}
	printf("generation %" PRIu64 "\n", s->generation);
	printf("sweep %" PRIu64 "\n", s->sweep);
	printf("timestamp_us %" PRIu64 "\n", s->timestamp);
	printf("sm_guid 0x%016" PRIx64 "\n", s->sm_guid);
	printf("engine %s\n", s->engine[0] ? s->engine : "-");
	printf("nodes %u\nswitches %u\ncas %u\nlinks %u\nmax_lid %u\nlft_bytes %" PRIu64 "\n", s->nnodes,
	       sw, ca, links, s->max_lid, s->nlft);
	return 0;
}

static int cmd_nodes(const struct snap *s)
{
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		const struct snap_port *p0 = &s->ports[n->port0];
		printf("%-6s 0x%016" PRIx64 " ports %3u", snap_node_type_str(n->type), n->guid, n->nports);
		if (n->type == SNAP_NODE_SWITCH)
			printf(" lid %u", p0->lid);
		else
			for (unsigned p = 1; p <= n->nports; p++) {
				const struct snap_port *pt = &s->ports[n->port0 + p];
				if (pt->present && pt->lid)
					printf(" port%u:lid %u lmc %u guid 0x%016" PRIx64, p, pt->lid, pt->lmc, pt->guid);
			}
		printf(" ");
		print_desc(stdout, n->desc);
		printf("\n");
	}
	return 0;
}

static void print_links(FILE *f, const struct snap *s)
{
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		for (unsigned p = 1; p <= n->nports; p++) {
			const struct snap_port *pt = &s->ports[n->port0 + p];
			if (pt->peer_node == SNAP_NONE)
				continue;
			if (pt->peer_node < i || (pt->peer_node == i && pt->peer_port < p))
				continue; /* printed from the other end */
			fprintf(f, "0x%016" PRIx64 " %u 0x%016" PRIx64 " %u\n", n->guid, p,
				s->nodes[pt->peer_node].guid, pt->peer_port);
		}
	}
}

static void print_lfts(FILE *f, const struct snap *s)
{
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		if (n->type != SNAP_NODE_SWITCH)
			continue;
		for (uint32_t l = 1; l < n->lft_len; l++)
			if (snap_lft_get(n, l) != SNAP_LFT_NONE)
				fprintf(f, "0x%016" PRIx64 " %u %u\n", n->guid, l, snap_lft_get(n, l));
	}
}

struct diff_print {
	const struct snap *a, *b;
	uint64_t shown;
};

/* Prints the first few differences; the rest are only counted. */
static int print_diff(void *ctx, const struct snap_diff_item *d)
{
	struct diff_print *dp = ctx;
	const int show = 20;
	if (dp->shown++ >= show)
		return 0;
	const struct snap_node *x = &dp->a->nodes[d->node], *y = &dp->b->nodes[d->node];
	switch (d->kind) {
	case SNAP_DIFF_NODES:
		printf("node count %u != %u\n", dp->a->nnodes, dp->b->nnodes);
		break;
	case SNAP_DIFF_NODE:
		printf("node %u: 0x%016" PRIx64 " %s/%u \"%s\" != 0x%016" PRIx64 " %s/%u \"%s\"\n", d->node, x->guid,
		       snap_node_type_str(x->type), x->nports, x->desc, y->guid, snap_node_type_str(y->type), y->nports,
		       y->desc);
		break;
	case SNAP_DIFF_PORT: {
		const struct snap_port *u = &dp->a->ports[x->port0 + d->port], *v = &dp->b->ports[y->port0 + d->port];
		printf("0x%016" PRIx64 " port %u: lid %u/%u guid 0x%" PRIx64 "/0x%" PRIx64 " peer %d/%u vs %d/%u\n",
		       x->guid, d->port, u->lid, v->lid, u->guid, v->guid, (int)u->peer_node, u->peer_port,
		       (int)v->peer_node, v->peer_port);
		break;
	}
	case SNAP_DIFF_LFT: {
		uint8_t ex = snap_lft_get(x, d->lid);
		uint8_t ey = snap_lft_get(y, d->lid);
		printf("switch 0x%016" PRIx64 " LID %u: port %u != %u\n", x->guid, d->lid, ex, ey);
		break;
	}
	case SNAP_DIFF_ENGINE:
		break;
	}
	return 0;
}

/* Compares what routes depend on; generation, sweep, timestamp, engine and
 * port states legitimately differ between producers and are ignored. */
static int cmd_diff(const struct snap *a, const struct snap *b)
{
	struct diff_print dp = { a, b, 0 };
	uint64_t diffs = snap_diff(a, b, 0, print_diff, &dp);
	if (diffs > 20)
		printf("... %" PRIu64 " differences in all\n", diffs);
	if (!diffs)
		printf("same fabric: %u nodes, identical links and LFTs\n", a->nnodes);
	return diffs ? 1 : 0;
}

/* Reads a whole file, whatever it holds (a delta is not a snapshot, so
 * load() cannot), from any stream: send re-sends bytes as they are. */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return NULL;
	}
	uint8_t *buf = NULL;
	size_t cap = 0;
	*len = 0;
	for (;;) {
		if (*len == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				fprintf(stderr, "%s: out of memory\n", prog);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		size_t r = fread(buf + *len, 1, cap - *len, f);
		*len += r;
		if (r == 0)
			break;
	}
	fclose(f);
	return buf;
}

/* Re-sends a saved snapshot, byte for byte, as a producer would; a state
 * directory's fabric (as load() reads it) is encoded as one snapshot. */
static int cmd_send(int argc, char **argv)
{
	const char *file = argv[argc - 1];
	char opts[4096] = "", err[SNAP_ERR_LEN];
	for (int i = 2; i < argc - 1; i++) {
		if (strlen(opts) + strlen(argv[i]) + 2 > sizeof(opts)) {
			fprintf(stderr, "%s: options too long\n", prog);
			return 2;
		}
		strcat(opts, argv[i]);
		strcat(opts, " ");
	}
	struct sink_opts so;
	if (sink_parse_options(opts, &so, err)) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	size_t len;
	uint8_t *buf = NULL;
	struct stat st;
	if (!stat(file, &st) && S_ISDIR(st.st_mode)) {
		/* A state directory holds fabric.snap and a delta journal: what
		 * topod serves from it is sent as one snapshot (its bytes alone
		 * would be read as an empty file). */
		struct snap *sv = load(file);
		int erc = snap_encode(sv, &buf, &len, err);
		snap_free(sv);
		if (erc) {
			fprintf(stderr, "%s: %s: %s\n", prog, file, err);
			return 1;
		}
	} else if (!(buf = slurp(file, &len))) {
		return 1;
	}
	int rc = 0;
	for (int i = 0; i < so.nsinks; i++) {
		char what[SINK_ADDR_LEN + 16];
		if (sink_deliver(&so.sinks[i], buf, len, so.timeout_ms, err)) {
			fprintf(stderr, "%s: %s\n", prog, err);
			rc = 1;
		} else {
			printf("delivered to %s\n", sink_describe(&so.sinks[i], what, sizeof(what)));
		}
	}
	free(buf);
	return rc;
}

static int cmd_delta(const char *base, const char *next, const char *out)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = load(base), *b = load(next);
	uint8_t *d = NULL;
	size_t dl = 0;
	int rc = snap_delta_encode(a, b, &d, &dl, err);
	if (rc == SNAP_DELTA_FULL)
		fprintf(stderr, "%s: %s: send the full snapshot\n", prog, err);
	else if (rc || snap_write_atomic(out, d, dl, err))
		fprintf(stderr, "%s: %s\n", prog, err);
	else
		printf("delta of generation %" PRIu64 " against %" PRIu64 ": %zu bytes\n", b->generation, a->generation,
		       dl);
	free(d);
	snap_free(a);
	snap_free(b);
	return rc == SNAP_DELTA_FULL ? 3 : rc ? 1 : 0;
}

static int cmd_apply(const char *base, const char *delta, const char *out)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = load(base), *b = NULL;
	size_t dl;
	uint8_t *d = slurp(delta, &dl);
	int rc = d ? snap_delta_apply(a, d, dl, &b, NULL, err) : -1;
	if (d && rc)
		fprintf(stderr, "%s: %s\n", prog, err);
	if (!rc && snap_write_file(b, out, err)) {
		fprintf(stderr, "%s: %s\n", prog, err);
		rc = -1;
	}
	free(d);
	snap_free(a);
	snap_free(b);
	return rc ? 1 : 0;
}

/* To stdout with exit 0 when asked for (-h), to stderr with 2 on a mistake. */
static int usage_to(FILE *out, int rc)
{
	fprintf(out, "usage: %s info|nodes|links|lfts FILE\n"
			"       %s diff A B\n"
			"       %s from-text TOPOLOGY LFTS OUT\n"
			"       %s send sink=unix:PATH|sink=tcp:HOST:PORT|spool=DIR... [key_file=KEY [plane=NAME]] FILE\n"
			"       %s keygen FILE\n"
			"       %s delta BASE NEW OUT | apply BASE DELTA OUT | export SRC OUT\n"
			"       %s -h|--help | -V|--version\n"
			"(FILE, A, B, BASE and SRC may be topod's state directory: what it serves from there)\n",
		prog, prog, prog, prog, prog, prog, prog);
	return rc;
}

static int usage(void)
{
	return usage_to(stderr, 2);
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")))
		return usage_to(stdout, 0);
	if (argc == 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("topo-snap %s\n", TOPO_VERSION);
		return 0;
	}
	if (argc < 3)
		return usage();
	const char *cmd = argv[1];
	if (!strcmp(cmd, "from-text")) {
		if (argc != 5)
			return usage();
		struct snap *s;
		char err[SNAP_ERR_LEN];
		if (snap_load_text(argv[2], argv[3], &s, err) || snap_write_file(s, argv[4], err)) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return 1;
		}
		snap_free(s);
		return 0;
	}
	if (!strcmp(cmd, "keygen")) {
		char err[SNAP_ERR_LEN];
		if (argc != 3)
			return usage();
		if (snap_key_generate(argv[2], err)) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return 1;
		}
		printf("wrote a new ingest key to %s (mode 0600): give topod --ingest-key %s and producers key_file=%s\n",
		       argv[2], argv[2], argv[2]);
		return 0;
	}
	if (!strcmp(cmd, "export")) {
		char err[SNAP_ERR_LEN];
		if (argc != 4)
			return usage();
		struct snap *s = load(argv[2]);
		int rc = snap_write_file(s, argv[3], err);
		if (rc)
			fprintf(stderr, "%s: %s\n", prog, err);
		else
			printf("generation %" PRIu64 " written to %s\n", s->generation, argv[3]);
		snap_free(s);
		return rc ? 1 : 0;
	}
	if (!strcmp(cmd, "delta") || !strcmp(cmd, "apply")) {
		if (argc != 5)
			return usage();
		return cmd[0] == 'd' ? cmd_delta(argv[2], argv[3], argv[4]) : cmd_apply(argv[2], argv[3], argv[4]);
	}
	if (!strcmp(cmd, "send"))
		return argc < 4 ? usage() : cmd_send(argc, argv);
	if (!strcmp(cmd, "diff")) {
		if (argc != 4)
			return usage();
		struct snap *a = load(argv[2]), *b = load(argv[3]);
		int rc = cmd_diff(a, b);
		snap_free(a);
		snap_free(b);
		return rc;
	}
	if (argc != 3)
		return usage();
	struct snap *s = load(argv[2]);
	int rc = 0;
	if (!strcmp(cmd, "info"))
		rc = cmd_info(s);
	else if (!strcmp(cmd, "nodes"))
		rc = cmd_nodes(s);
	else if (!strcmp(cmd, "links"))
		print_links(stdout, s);
	else if (!strcmp(cmd, "lfts"))
		print_lfts(stdout, s);
	else
		rc = usage();
	snap_free(s);
	return rc;
}
