/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * an.c - the analyses libtopocoll runs itself (pure C, no I/O, no globals:
 * analysis/README.md): the cost model that times a collective's messages
 * as SMPI sends them (cost.h), ranks' programs (mprog.h) and the MPIs' own
 * collectives as programs (native.h, nativecoll.h). Compiled into the
 * library from here, so that every build of the coll sources (the PMPI libraries,
 * the profiler's, SMPI's benchmark, t_coll.sh) has them; it needs
 * -Ianalysis -Isnapshot for their headers.
 */
#include "../analysis/cost.c"
#include "../analysis/rate.c"
#include "../analysis/mprog.c"
#include "../analysis/native.c"
#include "../analysis/nativecoll.c"
#include "../analysis/nativecoll_reduce.c"
