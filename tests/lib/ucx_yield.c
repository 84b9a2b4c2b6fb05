/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx_yield.c - libucx_yield.so, preloaded into the tests' MPICH jobs:
 * an MPICH rank (ch4:ucx) waiting for a message calls ucp_worker_progress()
 * in a loop and never gives up its core, so 7-16 ranks oversubscribed on 2
 * cores hand each message over one scheduler slice at a time (t_allgather's
 * MPICH jobs took 5-8x their Open MPI twins in a loaded make check, over
 * 20x on a quiet machine; Open MPI's ranks yield when oversubscribed). This
 * makes a progress call that found nothing yield, as Open MPI's
 * mpi_yield_when_idle does. It changes when ranks run, never what they
 * compute; it is not part of anything installed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

struct ucp_worker;

unsigned ucp_worker_progress(struct ucp_worker *w);

static unsigned (*real_progress)(struct ucp_worker *);
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Looked up at the first call, not in a constructor: libucp must be
 * loaded by then, and MPI_THREAD_MULTIPLE ranks may call from several
 * threads at once. */
static void resolve(void)
{
	*(void **)&real_progress = dlsym(RTLD_NEXT, "ucp_worker_progress");
}

unsigned ucp_worker_progress(struct ucp_worker *w)
{
	unsigned n;

	pthread_once(&once, resolve);
	n = real_progress ? real_progress(w) : 0;
	if (!n)
		sched_yield();
	return n;
}
