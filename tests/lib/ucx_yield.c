/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx_yield.c - libucx_yield.so, preloaded into the tests' MPICH jobs:
 * an MPICH rank (ch4:ucx) waiting for a message calls ucp_worker_progress()
 * in a loop and never gives up its core, so 16 ranks oversubscribed on 2
 * cores hand each message over one scheduler slice at a time (t_allgather's
 * MPICH jobs took 4-8x their Open MPI twins, whose ranks yield when
 * oversubscribed). This makes a progress call that found nothing yield, as
 * Open MPI's mpi_yield_when_idle does. It changes when ranks run, never
 * what they compute; it is not part of anything installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

struct ucp_worker;

unsigned ucp_worker_progress(struct ucp_worker *w);

unsigned ucp_worker_progress(struct ucp_worker *w)
{
	static unsigned (*real)(struct ucp_worker *);
	unsigned n;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "ucp_worker_progress");
	n = real ? real(w) : 0;
	if (!n)
		sched_yield();
	return n;
}
