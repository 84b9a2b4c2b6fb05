/*
 * matrix.c - see matrix.h.
 */
#include "matrix.h"

#include <stdlib.h>
#include <string.h>

int matrix_hops(const struct route_tab *rt, const uint32_t *eps, const uint16_t *dlids, size_t n, int16_t *out)
{
	/* The host whose row each leaf's hosts copy: a job on 288 leaves
	 * walks 288 rows, not 1,024. */
	uint32_t *rep_of_leaf = malloc((size_t)rt->snap->nnodes * sizeof(*rep_of_leaf));
	if (!rep_of_leaf)
		return AN_E_NOMEM;
	memset(rep_of_leaf, 0xff, (size_t)rt->snap->nnodes * sizeof(*rep_of_leaf));
	for (size_t i = 0; i < n; i++) {
		const struct route_ep *e = &rt->eps[eps[i]];
		int16_t *row = out + i * n;
		int shared = e->up == AN_OK && e->leaf != ROUTE_NONE && e->host != ROUTE_NONE;
		if (shared && rep_of_leaf[e->leaf] != UINT32_MAX) {
			uint32_t r = eps[rep_of_leaf[e->leaf]];
			memcpy(row, out + (size_t)rep_of_leaf[e->leaf] * n, n * sizeof(*row));
			/* The shared route ends where the two rows differ: to the
			 * representative's port (0 in its row) and to this port
			 * itself (0 here, a port to itself crossing nothing). */
			for (size_t j = 0; j < n; j++)
				if (eps[j] == r || eps[j] == eps[i]) {
					int h = route_hops(rt, eps[i], dlids[j]);
					row[j] = (int16_t)(h < 0 || h > INT16_MAX ? -1 : h);
				}
			continue;
		}
		if (shared)
			rep_of_leaf[e->leaf] = (uint32_t)i;
		for (size_t j = 0; j < n; j++) {
			int h = route_hops(rt, eps[i], dlids[j]);
			row[j] = (int16_t)(h < 0 || h > INT16_MAX ? -1 : h);
		}
	}
	/* Only now: a copied row needs its representative's own entry. */
	for (size_t i = 0; i < n; i++)
		out[i * n + i] = 0;
	free(rep_of_leaf);
	return AN_OK;
}

int matrix_groups_build(const struct share *sh, struct matrix_groups *mg)
{
	uint32_t G = sh->G;
	memset(mg, 0, sizeof(*mg));
	mg->start = calloc((size_t)G + 1, sizeof(*mg->start));
	mg->members = malloc((sh->n ? sh->n : 1) * sizeof(*mg->members));
	uint32_t *fill = calloc((size_t)G + 1, sizeof(*fill));
	if (!mg->start || !mg->members || !fill) {
		free(fill);
		matrix_groups_free(mg);
		return AN_E_NOMEM;
	}
	/* A counting sort on grp_of keeps each group's members ascending. */
	for (uint32_t i = 0; i < sh->n; i++)
		mg->start[sh->grp_of[i] + 1]++;
	for (uint32_t g = 0; g < G; g++)
		mg->start[g + 1] += mg->start[g];
	for (uint32_t i = 0; i < sh->n; i++) {
		uint32_t g = sh->grp_of[i];
		mg->members[mg->start[g] + fill[g]++] = i;
	}
	free(fill);
	mg->G = G;
	return AN_OK;
}

void matrix_groups_free(struct matrix_groups *mg)
{
	free(mg->start);
	free(mg->members);
	memset(mg, 0, sizeof(*mg));
}
