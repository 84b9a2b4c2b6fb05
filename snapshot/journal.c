/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * journal.c - see journal.h.
 */
#include "journal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
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

int journal_read(const char *dir, uint64_t gen, uint8_t **buf, size_t *len, char err[SNAP_ERR_LEN])
{
	char path[4200];
	entry_path(dir, gen, path, sizeof(path));
	return snap_read_bytes(path, buf, len, err);
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

/* One replay: the directory's entries and which of them proved bad. */
struct replay {
	const char *dir;
	const struct snap *snap; /* fabric.snap */
	const uint64_t *g;
	size_t n, first;         /* g[first..n) are above fabric.snap's generation */
	unsigned char *bad;
	struct journal_replay *jr;
};

static void say(struct replay *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct replay *r, const char *fmt, ...)
{
	char msg[SNAP_ERR_LEN + 256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->jr->report)
		r->jr->report(r->jr->arg, msg);
}

/* Entry i is damaged or does not apply: renamed aside (never deleted: it
 * is the evidence, and an operator may still want its bytes), reported. */
static void quarantine(struct replay *r, size_t i, const char *why)
{
	char path[4200], dst[4300] = "";
	entry_path(r->dir, r->g[i], path, sizeof(path));
	r->bad[i] = 1;
	r->jr->bad++;
	snprintf(r->jr->why, SNAP_ERR_LEN, JOURNAL_PREFIX "%020" PRIu64 ": %.190s", r->g[i], why);
	if (!r->jr->quarantine) {
		say(r, "journal: %s: %s", path, why);
		return;
	}
	for (int k = 0; k < 1000; k++) {
		if (k)
			snprintf(dst, sizeof(dst), "%s" JOURNAL_CORRUPT ".%d", path, k);
		else
			snprintf(dst, sizeof(dst), "%s" JOURNAL_CORRUPT, path);
		if (access(dst, F_OK) && errno == ENOENT)
			break;
		dst[0] = '\0';
	}
	if (dst[0] && !rename(path, dst))
		say(r, "journal: %s: %s; quarantined as %s", path, why, dst);
	else
		say(r, "journal: %s: %s; could not rename it aside: %s", path, why, strerror(errno));
}

static int same_base(const struct snap_delta_info *in, const struct snap *s)
{
	return in->base_generation == s->generation && in->base_sm_guid == s->sm_guid &&
	       in->base_timestamp == s->timestamp;
}

/* The fabric entry i holds: applied to fabric.snap, or (an earlier
 * version's chain) to the fabric of the entry it names. NULL when it
 * cannot be had (then it is quarantined). *depth gets the entries applied;
 * *bytes the entry when it applied to fabric.snap directly. */
static struct snap *resolve(struct replay *r, size_t i, int *depth, uint8_t **bytes, size_t *blen)
{
	char path[4200], err[SNAP_ERR_LEN];
	uint8_t *buf = NULL;
	size_t len = 0;
	struct snap_delta_info info = { 0 };
	struct snap *chain = NULL, *out = NULL;
	*depth = 0;
	entry_path(r->dir, r->g[i], path, sizeof(path));
	if (snap_read_bytes(path, &buf, &len, err) || snap_delta_peek(buf, len, &info, err))
		goto bad;
	if (info.generation != r->g[i]) {
		snprintf(err, sizeof(err), "holds generation %" PRIu64 ", not the one its name says", info.generation);
		goto bad;
	}
	if (!same_base(&info, r->snap)) {
		size_t j = r->first;
		while (j < i && (r->g[j] != info.base_generation || r->bad[j]))
			j++;
		if (j == i) {
			snprintf(err, sizeof(err),
				 "a delta against generation %" PRIu64 " (SM 0x%016" PRIx64 ", taken %" PRIu64
				 "), which neither fabric.snap (generation %" PRIu64 ") nor an intact entry holds",
				 info.base_generation, info.base_sm_guid, info.base_timestamp, r->snap->generation);
			goto bad;
		}
		if (!(chain = resolve(r, j, depth, NULL, NULL))) {
			snprintf(err, sizeof(err), "the entry it applies to (generation %" PRIu64 ") is quarantined",
				 r->g[j]);
			goto bad;
		}
	}
	int rc = snap_delta_apply(chain ? chain : r->snap, buf, len, &out, NULL, err);
	snap_free(chain);
	if (rc)
		goto bad;
	(*depth)++;
	if (bytes && *depth == 1) {
		*bytes = buf;
		*blen = len;
	} else {
		free(buf);
	}
	return out;
bad:
	free(buf);
	quarantine(r, i, err);
	return NULL;
}

int journal_replay(const char *dir, struct snap **s, struct journal_replay *jr)
{
	uint64_t *g;
	size_t n;
	jr->applied = jr->chained = jr->bad = jr->stale = 0;
	jr->entry = NULL;
	jr->entry_len = 0;
	jr->why[0] = '\0';
	if (list(dir, &g, &n))
		return 0;
	struct replay r = { dir, *s, g, n, 0, calloc(n ? n : 1, 1), jr };
	if (!r.bad) {
		free(g);
		return 0;
	}
	/* What a compaction left when a crash came between writing
	 * fabric.snap and removing the entries: already in fabric.snap. */
	for (; r.first < n && g[r.first] <= (*s)->generation; r.first++) {
		char path[4200];
		entry_path(dir, g[r.first], path, sizeof(path));
		jr->stale++;
		if (jr->quarantine && !unlink(path))
			say(&r, "journal: %s: generation %" PRIu64 " is already in fabric.snap (generation %" PRIu64
				"): removed", path, g[r.first], (*s)->generation);
	}
	for (size_t i = n; i-- > r.first;) {
		if (r.bad[i])
			continue;
		int depth;
		uint8_t *bytes = NULL;
		size_t blen = 0;
		struct snap *next = resolve(&r, i, &depth, &bytes, &blen);
		if (!next)
			continue;
		snap_free(*s);
		*s = next;
		jr->applied = depth;
		jr->chained = depth > 1;
		jr->entry = bytes;
		jr->entry_len = blen;
		break;
	}
	free(r.bad);
	free(g);
	return jr->applied;
}

int snap_read_state(const char *dir, struct snap **out, int *ndeltas, char why[SNAP_ERR_LEN],
		    char err[SNAP_ERR_LEN])
{
	char path[4200];
	struct snap *s;
	struct journal_replay jr = { 0 };
	snprintf(path, sizeof(path), "%s/fabric.snap", dir);
	if (why)
		why[0] = '\0';
	if (snap_read_file(path, &s, err))
		return -1;
	int n = journal_replay(dir, &s, &jr);
	free(jr.entry);
	if (why && jr.bad)
		snprintf(why, SNAP_ERR_LEN, "journal: %d entr%s damaged or inapplicable, the last %.200s", jr.bad,
			 jr.bad == 1 ? "y" : "ies", jr.why);
	if (ndeltas)
		*ndeltas = n;
	*out = s;
	return 0;
}
