/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fabric.c - what topod says about the job's hosts, asked by rank 0 only,
 * once per report, over one libtii handle (seed 5.2.2: one process asks for
 * the whole job): the hop matrix of the distinct hosts (the hop split), and
 * the switch-cluster tree (which fabric level each host pair's traffic turns
 * at). links.c then asks for the routes on the same handle.
 *
 * The servers are $TII_SERVERS and the timeout $TII_TIMEOUT_MS, as for any
 * libtii client. A failure leaves fab.ok = 0 and a sentence in fab.why; the
 * report is then written without its fabric part.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"
#include "tii.h"

static int cmpstr(const void *a, const void *b)
{
	return strcmp(((const struct tii_tree_host *)a)->name, ((const struct tii_tree_host *)b)->name);
}

/* Fills fab.anc from topod's tree; on failure says why in levels_why. */
static void levels(struct prof_rep *R, tii_t *t)
{
	struct prof_fabric *F = &R->fab;
	tii_tree_t *tree = NULL;
	int rc = tii_get_tree(t, &tree);
	if (rc) {
		snprintf(F->levels_why, PROF_WHY, "tree: %s (%s)", tii_strerror(rc), tii_last_message(t));
		return;
	}
	F->depth = tree->depth;
	F->anc = malloc((size_t)R->nh * PROF_LEVELS_MAX * sizeof(long));
	/* the tree's hosts sorted by name, each remembering its parent */
	struct tii_tree_host *s = malloc((tree->nhosts ? tree->nhosts : 1) * sizeof(*s));
	if (!F->anc || !s) {
		free(F->anc);
		F->anc = NULL;
		free(s);
		tii_tree_free(tree);
		snprintf(F->levels_why, PROF_WHY, "out of memory");
		return;
	}
	memcpy(s, tree->hosts, tree->nhosts * sizeof(*s));
	qsort(s, tree->nhosts, sizeof(*s), cmpstr);
	for (int h = 0; h < R->nh; h++) {
		long *a = F->anc + (size_t)h * PROF_LEVELS_MAX;
		for (int l = 0; l < PROF_LEVELS_MAX; l++)
			a[l] = -1;
		struct tii_tree_host key = { .name = R->hostname[h] };
		struct tii_tree_host *th = bsearch(&key, s, tree->nhosts, sizeof(*s), cmpstr);
		/* walk up; bounded by the cluster count against a malformed tree */
		for (long c = th ? th->parent : -1, k = 0; c >= 0 && (size_t)c < tree->nclusters &&
							      k < (long)tree->nclusters; c = tree->clusters[c].parent, k++)
			if (tree->clusters[c].level >= 0 && tree->clusters[c].level < PROF_LEVELS_MAX)
				a[tree->clusters[c].level] = c;
	}
	free(s);
	tii_tree_free(tree);
}

void fab_query(struct prof_rep *R, void **handle)
{
	struct prof_fabric *F = &R->fab;
	tii_t *t = NULL;
	*handle = NULL;
	const char *srv = getenv("TII_SERVERS");
	snprintf(F->server, sizeof(F->server), "%s", srv && *srv ? srv : TII_DEFAULT_SERVERS);
	int rc = tii_open(&t, NULL);
	if (rc) {
		snprintf(F->why, PROF_WHY, "TII_SERVERS \"%s\": %s", F->server, tii_strerror(rc));
		return;
	}
	*handle = t;
	if ((size_t)R->nh > TII_MATRIX_MAX) {
		snprintf(F->why, PROF_WHY, "%d hosts, more than topod's matrix limit (%d)", R->nh, TII_MATRIX_MAX);
		return;
	}
	const char **hosts = malloc((size_t)R->nh * sizeof(*hosts));
	F->hops = malloc((size_t)R->nh * R->nh * sizeof(uint16_t));
	if (!hosts || !F->hops) {
		free(hosts);
		snprintf(F->why, PROF_WHY, "out of memory for the hop matrix of %d hosts", R->nh);
		return;
	}
	for (int h = 0; h < R->nh; h++)
		hosts[h] = R->hostname[h];
	rc = tii_get_hop_matrix(t, hosts, (size_t)R->nh, F->hops);
	free(hosts);
	if (rc) {
		const char *m = tii_last_message(t);
		snprintf(F->why, PROF_WHY, "topod (%s) could not give the hop matrix of the job's %d host%s: %s%s%s%s",
			 F->server, R->nh, R->nh == 1 ? "" : "s", tii_strerror(rc), *m ? " (" : "", m, *m ? ")" : "");
		if (rc == TII_E_NOTFOUND)
			strncat(F->why, "; the job's hosts must be the fabric's (TII_HOST, TII_HOSTMAP)",
				PROF_WHY - strlen(F->why) - 1);
		return;
	}
	if (tii_current_server(t))
		snprintf(F->server, sizeof(F->server), "%s", tii_current_server(t));
	F->generation = tii_last_generation(t);
	F->ok = 1;
	levels(R, t);
}

void fab_close(void *handle)
{
	tii_close(handle);
}
