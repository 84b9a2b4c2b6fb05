/*
 * testhier.h - comparing two hierarchies, for the tests that check an
 * updated or reused one against a fresh build.
 */
#ifndef TESTHIER_H
#define TESTHIER_H

#include <stdint.h>

#include "hier.h"

/* Every host's cluster ID at every level, as a fingerprint. */
static inline int tf_same_hier(const struct hier *a, const struct hier *b)
{
	if (a->nhosts != b->nhosts || a->depth != b->depth || a->nclusters != b->nclusters)
		return 0;
	for (uint32_t h = 0; h < a->nhosts; h++)
		for (uint32_t l = 0; l < a->depth; l++) {
			uint64_t x, y;
			if (hier_cluster_at(a, h, l, &x) || hier_cluster_at(b, h, l, &y) || x != y)
				return 0;
		}
	return 1;
}

#endif
