/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wrap_p2p.c - PMPI wrappers for point-to-point sends, MPI_Init/Finalize
 * and MPI_Pcontrol.
 *
 * Every message is counted once, by its sender, when the send is issued
 * (MPI_Send, MPI_Isend, ... or MPI_Start of a persistent send): bytes =
 * count x the datatype's size (MPI_Type_size, the packed size, not the
 * extent), to the destination's MPI_COMM_WORLD rank. Receives (MPI_Recv,
 * MPI_Irecv, MPI_Mrecv, persistent receives, the receive half of
 * MPI_Sendrecv) are not counted: they would count the same message twice,
 * and a receive posted with MPI_ANY_SOURCE does not know its peer before it
 * completes. A send that is cancelled later is still counted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "prof.h"

/* The size of the last predefined type sent: most programs send one or two
 * types, and MPI_Type_size (a library call with argument checks) is a
 * visible part of an 8-byte send. Only predefined types are remembered (a
 * derived type's handle may be freed and reused for another type), and only
 * without MPI_THREAD_MULTIPLE (the pair is not updated atomically). */
static MPI_Datatype last_type = MPI_DATATYPE_NULL;
static int last_size;

static int predefined(MPI_Datatype t)
{
	const MPI_Datatype list[] = { MPI_BYTE, MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT,
				      MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG,
				      MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE,
				      MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T,
				      MPI_UINT32_T, MPI_UINT64_T, MPI_C_BOOL, MPI_PACKED };
	for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
		if (t == list[i])
			return 1;
	return 0;
}

static uint64_t tbytes(int count, MPI_Datatype t)
{
	int sz = 0;
	if (count <= 0)
		return 0;
	if (t == last_type && !prof.threads)
		return (uint64_t)count * (uint64_t)last_size;
	if (PMPI_Type_size(t, &sz) != MPI_SUCCESS || sz <= 0)
		return 0;
	if (!prof.threads && predefined(t)) {
		last_type = t;
		last_size = sz;
	}
	return (uint64_t)count * (uint64_t)sz;
}

static void send_one(int count, MPI_Datatype t, int dest, MPI_Comm comm)
{
	if (!prof.active || prof.paused || dest == MPI_PROC_NULL)
		return;
	/* MPI_COMM_WORLD, the common case, needs no translation */
	int w = comm == MPI_COMM_WORLD && dest >= 0 && dest < prof.n ? dest : prof_world_rank(&comm, dest);
	prof_p2p(w, tbytes(count, t));
}

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS)
		prof_init();
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS) {
		prof.threads = *provided == MPI_THREAD_MULTIPLE;
		prof_init();
	}
	return rc;
}

int MPI_Finalize(void)
{
	const char *at = getenv("TOPOPROF_AT_FINALIZE");
	if (prof.active && !(at && !strcmp(at, "0")))
		prof_report("");
	prof_fini();
	return PMPI_Finalize();
}

/* MPI_Pcontrol(0) stops counting, (1) resumes, (2) writes a report now,
 * collectively: every rank of MPI_COMM_WORLD must call it (as with any
 * collective). The reports are PREFIX.1.*, PREFIX.2.*, ... */
int MPI_Pcontrol(const int level, ...)
{
	if (!prof.active)
		return MPI_SUCCESS;
	if (level == 0)
		prof.paused = 1;
	else if (level == 1)
		prof.paused = 0;
	else if (level == 2) {
		char tag[24];
		snprintf(tag, sizeof(tag), ".%d", ++prof.reports);
		prof_report(tag);
	}
	return MPI_SUCCESS;
}

#define SEND_WRAPPER(NAME)                                                                         \
	int MPI_##NAME(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm) \
	{                                                                                          \
		send_one(count, t, dest, comm);                                                    \
		return PMPI_##NAME(buf, count, t, dest, tag, comm);                                \
	}
SEND_WRAPPER(Send)
SEND_WRAPPER(Bsend)
SEND_WRAPPER(Ssend)
SEND_WRAPPER(Rsend)

#define ISEND_WRAPPER(NAME)                                                                         \
	int MPI_##NAME(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,  \
		       MPI_Request *req)                                                            \
	{                                                                                           \
		send_one(count, t, dest, comm);                                                     \
		return PMPI_##NAME(buf, count, t, dest, tag, comm, req);                            \
	}
ISEND_WRAPPER(Isend)
ISEND_WRAPPER(Ibsend)
ISEND_WRAPPER(Issend)
ISEND_WRAPPER(Irsend)

/* A request handle as the persistent table's key: a pointer in Open MPI,
 * an int in MPICH; both are never 0 for a live request. */
static void *req_key(MPI_Request r)
{
	uintptr_t k = 0;
	memcpy(&k, &r, sizeof(r) < sizeof(k) ? sizeof(r) : sizeof(k));
	return (void *)k;
}

/* Persistent sends: nothing moves at *_init; each MPI_Start sends once. */
#define PSEND_WRAPPER(NAME)                                                                         \
	int MPI_##NAME(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,  \
		       MPI_Request *req)                                                            \
	{                                                                                           \
		int rc = PMPI_##NAME(buf, count, t, dest, tag, comm, req);                          \
		if (rc == MPI_SUCCESS && prof.active && dest != MPI_PROC_NULL)                      \
			prof_persist_add(req_key(*req), prof_world_rank(&comm, dest), tbytes(count, t)); \
		return rc;                                                                          \
	}
PSEND_WRAPPER(Send_init)
PSEND_WRAPPER(Bsend_init)
PSEND_WRAPPER(Ssend_init)
PSEND_WRAPPER(Rsend_init)

int MPI_Start(MPI_Request *req)
{
	if (prof.active && !prof.paused)
		prof_persist_start(req_key(*req));
	return PMPI_Start(req);
}

int MPI_Startall(int n, MPI_Request reqs[])
{
	for (int i = 0; prof.active && !prof.paused && i < n; i++)
		prof_persist_start(req_key(reqs[i]));
	return PMPI_Startall(n, reqs);
}

int MPI_Request_free(MPI_Request *req)
{
	if (prof.active && req)
		prof_persist_del(req_key(*req));
	return PMPI_Request_free(req);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype st, int dest, int stag, void *rbuf, int rcount,
		 MPI_Datatype rt, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
	send_one(scount, st, dest, comm);
	return PMPI_Sendrecv(sbuf, scount, st, dest, stag, rbuf, rcount, rt, source, rtag, comm, status);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype t, int dest, int stag, int source, int rtag,
			 MPI_Comm comm, MPI_Status *status)
{
	send_one(count, t, dest, comm);
	return PMPI_Sendrecv_replace(buf, count, t, dest, stag, source, rtag, comm, status);
}
