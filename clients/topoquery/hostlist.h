/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostlist.h - Slurm-style host lists for topoquery: expanding
 * "c401-[101-104,110]" into names, compressing names back into that form,
 * and reading host files.
 *
 * Errors: 0 or -1 with a static reason in *why; nothing is printed here.
 */
#ifndef TOPOQUERY_HOSTLIST_H
#define TOPOQUERY_HOSTLIST_H

#include <stddef.h>
#include <stdio.h>

/* Expanding "[1-1000000]" by accident must not eat the machine: a job list
 * longer than this is a typo, not a job (topod takes 16,383 at most). */
#define HOSTLIST_MAX 1000000

/* A growable list of owned strings. Invariant: v[0..n) are malloc()ed. */
struct strv {
	char **v;
	size_t n, cap;
};
void strv_free(struct strv *s);
int strv_push(struct strv *s, const char *str, size_t len);

/* Appends the expansion of one expression ("a[1-3]b,c" is two words: commas
 * outside brackets separate names, brackets hold ranges lo-hi whose width
 * follows lo's digits, several bracket groups multiply out). */
int hostlist_expand(struct strv *out, const char *expr, const char **why);

/* Appends every host of f: names or expressions separated by blanks or
 * newlines; "#" starts a comment to the end of the line. */
int hostlist_read(struct strv *out, FILE *f, const char **why);

/* The compressed form of names (any order, duplicates dropped):
 * "c401-[101-118],c402-[101,103],login1". Caller frees the result; NULL
 * when out of memory. */
char *hostlist_compress(char *const *names, size_t n);

#endif
