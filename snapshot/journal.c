/*
 * journal.c - see journal.h.
 */
#include "journal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "delta.h"

static void entry_path(const char *dir, uint64_t gen, char *buf, size_t n)
{
	snprintf(buf, n, "%s/" JOURNAL_PREFIX "%020" PRIu64, dir, gen);
}

int journal_append(const char *dir, uint64_t gen, const uint8_t *buf, size_t len, char err[SNAP_ERR_LEN])
{
	char path[4200];
	entry_path(dir, gen, path, sizeof(path));
	return snap_write_atomic_mode(path, buf, len, 0600, err);
}

/* Generations of the entries in dir, sorted; -1 on error. */
static int list(const char *dir, uint64_t **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -1;
	size_t cap = 0;
	struct dirent *de;
	const size_t pl = strlen(JOURNAL_PREFIX);
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		/* Exactly the prefix and 20 digits: temporary files of an
		 * interrupted write (".tmp.XXXXXX") are not entries. */
		if (strncmp(name, JOURNAL_PREFIX, pl) || strlen(name) != pl + 20 || strspn(name + pl, "0123456789") != 20)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			uint64_t *ng = realloc(*out, cap * sizeof(*ng));
			if (!ng) {
				closedir(d);
				return -1;
			}
			*out = ng;
		}
		(*out)[(*n)++] = strtoull(name + pl, NULL, 10);
	}
	closedir(d);
	for (size_t i = 1; i < *n; i++)
		for (size_t k = i; k > 0 && (*out)[k - 1] > (*out)[k]; k--) {
			uint64_t t = (*out)[k];
			(*out)[k] = (*out)[k - 1];
			(*out)[k - 1] = t;
		}
	return 0;
}

int journal_clear(const char *dir, uint64_t upto)
{
	uint64_t *g;
	size_t n;
	int removed = 0;
	/* Temporary files of a journal write a crash interrupted: never
	 * entries, so nothing else would remove them. */
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, JOURNAL_PREFIX, strlen(JOURNAL_PREFIX)) && strstr(de->d_name, SNAP_TMP_SUFFIX)) {
			char path[4400];
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	if (list(dir, &g, &n))
		return -1;
	for (size_t i = 0; i < n && g[i] <= upto; i++) {
		char path[4200];
		entry_path(dir, g[i], path, sizeof(path));
		removed += unlink(path) == 0;
	}
	free(g);
	return removed;
}

int journal_replay(const char *dir, struct snap **s, char why[SNAP_ERR_LEN])
{
	uint64_t *g;
	size_t n;
	int applied = 0;
	if (list(dir, &g, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (g[i] <= (*s)->generation)
			continue;
		char path[4200], err[SNAP_ERR_LEN];
		size_t len = 0;
		uint8_t *buf = NULL;
		entry_path(dir, g[i], path, sizeof(path));
		struct snap *next = NULL;
		if (snap_read_bytes(path, &buf, &len, err) || snap_delta_apply(*s, buf, len, &next, NULL, err)) {
			if (why)
				snprintf(why, SNAP_ERR_LEN, "journal: %.80s does not apply to generation %" PRIu64 ": %.100s",
					 path, (*s)->generation, err);
			free(buf);
			break;
		}
		free(buf);
		snap_free(*s);
		*s = next;
		applied++;
	}
	free(g);
	return applied;
}

int snap_read_state(const char *dir, struct snap **out, int *ndeltas, char why[SNAP_ERR_LEN],
		    char err[SNAP_ERR_LEN])
{
	char path[4200];
	struct snap *s;
	snprintf(path, sizeof(path), "%s/fabric.snap", dir);
	if (why)
		why[0] = '\0';
	if (snap_read_file(path, &s, err))
		return -1;
	int n = journal_replay(dir, &s, why);
	if (ndeltas)
		*ndeltas = n;
	*out = s;
	return 0;
}
