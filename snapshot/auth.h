/*
 * auth.h - authenticated snapshot delivery: a producer that holds the shared
 * ingest key proves it with an HMAC-SHA256 (libsodium) over the whole
 * snapshot, sent in a 48-byte preamble before it:
 *
 *    0  "TOPOAUTH"
 *    8  u32 version (1), little-endian
 *   12  u32 algorithm (1 = HMAC-SHA256)
 *   16  32-byte tag over the snapshot's header and payload
 *
 * topod tells the two apart by the first 8 bytes ("TOPOSNAP" is a bare
 * snapshot). A replayed snapshot carries a valid tag: generations that
 * never go backwards (topod/build.c) are what make a replay harmless.
 *
 * The key file holds 32 to 1,024 bytes (topo-snap keygen writes 64 random
 * hex digits); it must be a regular file not readable by group or others.
 *
 * Functions return 0, or -1 with a reason in err[SNAP_ERR_LEN]. No I/O
 * besides the key file; runs inside OpenSM (the plugin), so no printing.
 */
#ifndef TOPOD_AUTH_H
#define TOPOD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

#define SNAP_AUTH_MAGIC "TOPOAUTH"
#define SNAP_AUTH_LEN 48
#define SNAP_AUTH_TAG_LEN 32
#define SNAP_KEY_MIN 32
#define SNAP_KEY_MAX 1024

struct snap_key {
	uint8_t k[SNAP_KEY_MAX];
	size_t len;
};

/* Reads a key file, refusing one that group or others may read. */
int snap_key_load(const char *path, struct snap_key *key, char err[SNAP_ERR_LEN]);
/* Writes a new random key (64 hex digits) to path, mode 0600, O_EXCL. */
int snap_key_generate(const char *path, char err[SNAP_ERR_LEN]);

/* The preamble for the snapshot buf[0..len). */
int snap_auth_sign(const struct snap_key *key, const uint8_t *buf, size_t len, uint8_t pre[SNAP_AUTH_LEN]);
/* 1 if pre[0..8) is the preamble's magic. */
int snap_auth_is_preamble(const uint8_t *pre, size_t have);
/* 0 if pre is a valid preamble for buf under key (constant-time compare). */
int snap_auth_verify(const struct snap_key *key, const uint8_t pre[SNAP_AUTH_LEN], const uint8_t *buf, size_t len,
		     char err[SNAP_ERR_LEN]);

#endif
