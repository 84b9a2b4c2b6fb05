/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * auth.h - authenticated snapshot delivery: a producer proves it holds the
 * shared ingest key with HMAC-SHA256 (libsodium) before topod buffers more
 * than a few bytes of what it sends (docs/snapshot-format.md,
 * "Authentication"). Version 2, a challenge-response per connection:
 *
 *   producer -> topod   hello, 16 bytes:     "TOPOAUTH" u32 version (2) u32 algorithm (1)
 *   topod -> producer   challenge, 96 bytes: "TOPOCHAL" u32 2 u32 1, 32-byte random nonce,
 *                                            u8 plane name length, plane name (NUL-padded to 32),
 *                                            15 bytes zero
 *   producer -> topod   proof, 64 bytes:     head tag, body tag
 *                       then the snapshot or delta (64-byte header, payload)
 *
 *   head tag = HMAC(key, "topod-ingest-v2 head\0" || challenge || the 64-byte header)
 *   body tag = HMAC(key, "topod-ingest-v2 body\0" || challenge || header and payload)
 *
 * The header holds the generation, the kind (magic TOPOSNAP: full, TOPODLTA:
 * delta) and the payload length, so the head tag covers all three, and the
 * challenge holds the nonce and the plane: a recording replayed to a new
 * connection (new nonce) or sent to another plane's listener fails after
 * 16 + 64 + 64 bytes. topod checks the head tag before it accepts a byte of
 * payload, the body tag once the payload is in.
 *
 * Version 1 (a 48-byte preamble "TOPOAUTH" u32 1 u32 1 and an HMAC over the
 * snapshot alone) is refused on TCP: replayable, not bound to a plane, and
 * checkable only after the whole snapshot is buffered.
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

#include <sodium.h>

#include "snapshot.h"
#include "topo_limits.h"

#define SNAP_AUTH_MAGIC "TOPOAUTH"
#define SNAP_AUTH_LEN 48
#define SNAP_AUTH_TAG_LEN 32
#define SNAP_KEY_MIN 32
#define SNAP_KEY_MAX 1024
/* Version 2 (above). */
#define SNAP_AUTH_CHAL_MAGIC "TOPOCHAL"
#define SNAP_AUTH_HELLO_LEN 16
#define SNAP_AUTH_NONCE_LEN 32
#define SNAP_AUTH_PLANE_MAX TOPO_PLANE_NAME_MAX
#define SNAP_AUTH_CHAL_LEN 96
#define SNAP_AUTH_PROOF_LEN 64
/* What topod holds of a peer that has not proved the key: the bytes read
 * into its input buffer (a read watermark), whatever the peer sends. */
#define SNAP_AUTH_PREAUTH_MAX 4096

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

/* Version 2: the producer's side. */
void snap_auth_hello(uint8_t hello[SNAP_AUTH_HELLO_LEN]);
/* The plane a challenge announces, into plane[SNAP_AUTH_PLANE_MAX + 1]. */
int snap_auth_parse_challenge(const uint8_t chal[SNAP_AUTH_CHAL_LEN], char *plane, char err[SNAP_ERR_LEN]);
/* The proof for the snapshot buf[0..len) (len >= SNAP_HEADER_LEN) under chal. */
int snap_auth_prove(const struct snap_key *key, const uint8_t chal[SNAP_AUTH_CHAL_LEN], const uint8_t *buf,
		    size_t len, uint8_t proof[SNAP_AUTH_PROOF_LEN], char err[SNAP_ERR_LEN]);

/* Version 2: topod's side. */
/* The version an opening "TOPOAUTH" announces (pre holds 16 bytes). */
uint32_t snap_auth_version(const uint8_t pre[SNAP_AUTH_HELLO_LEN]);
/* A fresh challenge (libsodium's randombytes) for plane (a plane name). */
int snap_auth_challenge(const char *plane, uint8_t chal[SNAP_AUTH_CHAL_LEN], char err[SNAP_ERR_LEN]);

/* The body tag in progress, fed with every byte of the snapshot as it
 * arrives, so that no pass over the whole buffer runs at the end. */
struct snap_auth_body {
	crypto_auth_hmacsha256_state st;
	uint8_t want[SNAP_AUTH_TAG_LEN];
};

/* Checks proof's head tag against hdr (the snapshot's first SNAP_HEADER_LEN
 * bytes) and starts body (constant-time compare). */
int snap_auth_verify_head(const struct snap_key *key, const uint8_t chal[SNAP_AUTH_CHAL_LEN],
			  const uint8_t proof[SNAP_AUTH_PROOF_LEN], const uint8_t *hdr, struct snap_auth_body *body,
			  char err[SNAP_ERR_LEN]);
void snap_auth_body_update(struct snap_auth_body *body, const uint8_t *p, size_t n);
/* 0 if everything fed matches the body tag; wipes body either way. */
int snap_auth_body_verify(struct snap_auth_body *body, char err[SNAP_ERR_LEN]);

#endif
