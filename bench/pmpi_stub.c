/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmpi_stub.c - the fake MPI job of pmpi_stub.h.
 */
#include <stddef.h>

#include "pmpi_stub.h"

static int N = 4096;
static struct fake { int used; void *attr; } fakes[PMPI_STUB_NCOMM];

static struct fake *F(MPI_Comm c)
{
	for (int i = 0; i < PMPI_STUB_NCOMM; i++)
		if ((void *)c == (void *)&fakes[i])
			return &fakes[i];
	return NULL;
}

int PMPI_Comm_rank(MPI_Comm c, int *r) { (void)c; *r = 0; return MPI_SUCCESS; }
int PMPI_Comm_size(MPI_Comm c, int *s) { (void)c; *s = N; return MPI_SUCCESS; }
int PMPI_Comm_remote_size(MPI_Comm c, int *s) { (void)c; *s = N; return MPI_SUCCESS; }
int PMPI_Comm_test_inter(MPI_Comm c, int *f) { (void)c; *f = 0; return MPI_SUCCESS; }
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *cp, MPI_Comm_delete_attr_function *del, int *k, void *x)
{
	(void)cp, (void)del, (void)x;
	*k = 77;
	return MPI_SUCCESS;
}
int PMPI_Comm_free_keyval(int *k) { *k = MPI_KEYVAL_INVALID; return MPI_SUCCESS; }
int PMPI_Comm_get_attr(MPI_Comm c, int k, void *v, int *flag)
{
	(void)k;
	struct fake *f = F(c);
	*flag = f && f->attr;
	if (*flag)
		*(void **)v = f->attr;
	return MPI_SUCCESS;
}
int PMPI_Comm_set_attr(MPI_Comm c, int k, void *v)
{
	(void)k;
	F(c)->attr = v;
	return MPI_SUCCESS;
}
int PMPI_Comm_group(MPI_Comm c, MPI_Group *g) { (void)c; *g = MPI_GROUP_NULL; return MPI_SUCCESS; }
int PMPI_Comm_remote_group(MPI_Comm c, MPI_Group *g) { (void)c; *g = MPI_GROUP_NULL; return MPI_SUCCESS; }
int PMPI_Group_free(MPI_Group *g) { *g = MPI_GROUP_NULL; return MPI_SUCCESS; }
int PMPI_Group_translate_ranks(MPI_Group a, int n, const int r[], MPI_Group b, int out[])
{
	(void)a, (void)b;
	for (int i = 0; i < n; i++)   /* reversed, like tests/mpi/prof_stencil.c */
		out[i] = N - 1 - r[i];
	return MPI_SUCCESS;
}

void pmpi_stub_set_size(int n)
{
	N = n;
}

MPI_Comm pmpi_stub_comm(int i)
{
	return (MPI_Comm)(void *)&fakes[i];
}
