/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * auth.c - see auth.h. The cryptography is libsodium's; this file is glue.
 */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "util.h"

#define AUTH_VERSION 1
#define AUTH_ALG_HMAC_SHA256 1

static int sodium_ready(char err[SNAP_ERR_LEN])
{
	/* sodium_init() is thread-safe and idempotent (>= 0 once set up). */
	if (sodium_init() < 0)
		return util_fail(err, SNAP_ERR_LEN, "libsodium cannot initialise");
	return 0;
}

int snap_key_load(const char *path, struct snap_key *key, char err[SNAP_ERR_LEN])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return util_fail(err, SNAP_ERR_LEN, "key file %.200s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return util_fail(err, SNAP_ERR_LEN, "key file %.200s: not a regular file", path);
	}
	/* Whoever owns the file can rewrite the key, and so feed topod
	 * whatever it likes: like OpenSSH's StrictModes, only root or the
	 * user reading it may own it. */
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		close(fd);
		return util_fail(err, SNAP_ERR_LEN,
				 "key file %.200s: owned by uid %u, neither root nor this process's user (chown)", path,
				 (unsigned)st.st_uid);
	}
	/* A key others can read authenticates nobody. */
	if (st.st_mode & 077) {
		close(fd);
		return util_fail(err, SNAP_ERR_LEN, "key file %.200s: mode %03o lets group or others read it (chmod 600)",
				 path, (unsigned)(st.st_mode & 0777));
	}
	ssize_t n = read(fd, key->k, sizeof(key->k));
	uint8_t extra;
	ssize_t more = n == (ssize_t)sizeof(key->k) ? read(fd, &extra, 1) : 0;
	close(fd);
	if (n < 0)
		return util_fail(err, SNAP_ERR_LEN, "key file %.200s: %s", path, strerror(errno));
	/* A trailing newline from an editor or echo is not key material. */
	while (n > 0 && (key->k[n - 1] == '\n' || key->k[n - 1] == '\r'))
		n--;
	if (more > 0 || n < SNAP_KEY_MIN) {
		sodium_memzero(key->k, sizeof(key->k));
		return util_fail(err, SNAP_ERR_LEN, "key file %.200s: a key is %d to %d bytes", path, SNAP_KEY_MIN,
				 SNAP_KEY_MAX);
	}
	key->len = (size_t)n;
	return 0;
}

int snap_key_generate(const char *path, char err[SNAP_ERR_LEN])
{
	if (sodium_ready(err))
		return -1;
	uint8_t raw[32];
	char hex[2 * sizeof(raw) + 2];
	randombytes_buf(raw, sizeof(raw));
	sodium_bin2hex(hex, sizeof(hex), raw, sizeof(raw));
	strcat(hex, "\n");
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return util_fail(err, SNAP_ERR_LEN, "%.200s: %s", path, strerror(errno));
	size_t len = strlen(hex);
	int rc = write(fd, hex, len) == (ssize_t)len && fsync(fd) == 0 ? 0 : -1;
	close(fd);
	sodium_memzero(raw, sizeof(raw));
	sodium_memzero(hex, sizeof(hex));
	if (rc)
		return util_fail(err, SNAP_ERR_LEN, "%.200s: %s", path, strerror(errno));
	return 0;
}

static void tag_of(const struct snap_key *key, const uint8_t *buf, size_t len, uint8_t tag[SNAP_AUTH_TAG_LEN])
{
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, key->k, key->len);
	crypto_auth_hmacsha256_update(&st, buf, len);
	crypto_auth_hmacsha256_final(&st, tag);
	sodium_memzero(&st, sizeof(st));
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int snap_auth_sign(const struct snap_key *key, const uint8_t *buf, size_t len, uint8_t pre[SNAP_AUTH_LEN])
{
	char err[SNAP_ERR_LEN];
	if (sodium_ready(err))
		return -1;
	memcpy(pre, SNAP_AUTH_MAGIC, 8);
	wr32(pre + 8, AUTH_VERSION);
	wr32(pre + 12, AUTH_ALG_HMAC_SHA256);
	tag_of(key, buf, len, pre + 16);
	return 0;
}

int snap_auth_is_preamble(const uint8_t *pre, size_t have)
{
	return have >= 8 && !memcmp(pre, SNAP_AUTH_MAGIC, 8);
}

int snap_auth_verify(const struct snap_key *key, const uint8_t pre[SNAP_AUTH_LEN], const uint8_t *buf, size_t len,
		     char err[SNAP_ERR_LEN])
{
	if (sodium_ready(err))
		return -1;
	if (!snap_auth_is_preamble(pre, SNAP_AUTH_LEN) || rd32(pre + 8) != AUTH_VERSION ||
	    rd32(pre + 12) != AUTH_ALG_HMAC_SHA256)
		return util_fail(err, SNAP_ERR_LEN, "unknown authentication preamble (version %u, algorithm %u)",
				 rd32(pre + 8), rd32(pre + 12));
	uint8_t tag[SNAP_AUTH_TAG_LEN];
	tag_of(key, buf, len, tag);
	int bad = crypto_verify_32(tag, pre + 16);
	sodium_memzero(tag, sizeof(tag));
	if (bad)
		return util_fail(err, SNAP_ERR_LEN, "the snapshot's HMAC does not match the ingest key");
	return 0;
}

/* ---- version 2: challenge-response ---------------------------------------- */

#define AUTH_VERSION_2 2
/* Labels keep a head tag, a body tag and a version 1 tag apart although
 * one key makes them all. */
static const char LABEL_HEAD[] = "topod-ingest-v2 head";
static const char LABEL_BODY[] = "topod-ingest-v2 body";

static void v2_start(crypto_auth_hmacsha256_state *st, const struct snap_key *key, const char *label,
		     const uint8_t chal[SNAP_AUTH_CHAL_LEN])
{
	crypto_auth_hmacsha256_init(st, key->k, key->len);
	crypto_auth_hmacsha256_update(st, (const uint8_t *)label, strlen(label) + 1);
	crypto_auth_hmacsha256_update(st, chal, SNAP_AUTH_CHAL_LEN);
}

void snap_auth_hello(uint8_t hello[SNAP_AUTH_HELLO_LEN])
{
	memcpy(hello, SNAP_AUTH_MAGIC, 8);
	wr32(hello + 8, AUTH_VERSION_2);
	wr32(hello + 12, AUTH_ALG_HMAC_SHA256);
}

uint32_t snap_auth_version(const uint8_t pre[SNAP_AUTH_HELLO_LEN])
{
	return rd32(pre + 8);
}

int snap_auth_challenge(const char *plane, uint8_t chal[SNAP_AUTH_CHAL_LEN], char err[SNAP_ERR_LEN])
{
	size_t pl = strlen(plane);
	if (pl < 1 || pl > SNAP_AUTH_PLANE_MAX)
		return util_fail(err, SNAP_ERR_LEN, "plane name of %zu bytes", pl);
	if (sodium_ready(err))
		return -1;
	memset(chal, 0, SNAP_AUTH_CHAL_LEN);
	memcpy(chal, SNAP_AUTH_CHAL_MAGIC, 8);
	wr32(chal + 8, AUTH_VERSION_2);
	wr32(chal + 12, AUTH_ALG_HMAC_SHA256);
	randombytes_buf(chal + 16, SNAP_AUTH_NONCE_LEN);
	chal[48] = (uint8_t)pl;
	memcpy(chal + 49, plane, pl);
	return 0;
}

int snap_auth_parse_challenge(const uint8_t chal[SNAP_AUTH_CHAL_LEN], char *plane, char err[SNAP_ERR_LEN])
{
	if (memcmp(chal, SNAP_AUTH_CHAL_MAGIC, 8))
		return util_fail(err, SNAP_ERR_LEN, "the receiver sent no authentication challenge");
	if (rd32(chal + 8) != AUTH_VERSION_2 || rd32(chal + 12) != AUTH_ALG_HMAC_SHA256)
		return util_fail(err, SNAP_ERR_LEN, "unknown challenge (version %u, algorithm %u)", rd32(chal + 8),
				 rd32(chal + 12));
	size_t pl = chal[48];
	if (pl < 1 || pl > SNAP_AUTH_PLANE_MAX)
		return util_fail(err, SNAP_ERR_LEN, "the challenge names no valid plane");
	memcpy(plane, chal + 49, pl);
	plane[pl] = '\0';
	/* The name ends up in OpenSM's log: only a plane name's characters. */
	if (strspn(plane, TOPO_PLANE_NAME_CHARS) != pl) {
		strcpy(plane, "?");
		return util_fail(err, SNAP_ERR_LEN, "the challenge names no valid plane");
	}
	return 0;
}

int snap_auth_prove(const struct snap_key *key, const uint8_t chal[SNAP_AUTH_CHAL_LEN], const uint8_t *buf,
		    size_t len, uint8_t proof[SNAP_AUTH_PROOF_LEN], char err[SNAP_ERR_LEN])
{
	if (sodium_ready(err))
		return -1;
	if (len < SNAP_HEADER_LEN)
		return util_fail(err, SNAP_ERR_LEN, "%zu bytes: shorter than a snapshot header", len);
	crypto_auth_hmacsha256_state st;
	v2_start(&st, key, LABEL_HEAD, chal);
	crypto_auth_hmacsha256_update(&st, buf, SNAP_HEADER_LEN);
	crypto_auth_hmacsha256_final(&st, proof);
	v2_start(&st, key, LABEL_BODY, chal);
	crypto_auth_hmacsha256_update(&st, buf, len);
	crypto_auth_hmacsha256_final(&st, proof + SNAP_AUTH_TAG_LEN);
	sodium_memzero(&st, sizeof(st));
	return 0;
}

int snap_auth_verify_head(const struct snap_key *key, const uint8_t chal[SNAP_AUTH_CHAL_LEN],
			  const uint8_t proof[SNAP_AUTH_PROOF_LEN], const uint8_t *hdr, struct snap_auth_body *body,
			  char err[SNAP_ERR_LEN])
{
	if (sodium_ready(err))
		return -1;
	uint8_t tag[SNAP_AUTH_TAG_LEN];
	crypto_auth_hmacsha256_state st;
	v2_start(&st, key, LABEL_HEAD, chal);
	crypto_auth_hmacsha256_update(&st, hdr, SNAP_HEADER_LEN);
	crypto_auth_hmacsha256_final(&st, tag);
	sodium_memzero(&st, sizeof(st));
	int bad = crypto_verify_32(tag, proof);
	sodium_memzero(tag, sizeof(tag));
	if (bad) {
		char plane[SNAP_AUTH_PLANE_MAX + 1] = "?";
		snap_auth_parse_challenge(chal, plane, err);
		return util_fail(err, SNAP_ERR_LEN,
				 "wrong proof for plane %s: another key, a replayed recording, or a snapshot meant for "
				 "another plane",
				 plane);
	}
	v2_start(&body->st, key, LABEL_BODY, chal);
	memcpy(body->want, proof + SNAP_AUTH_TAG_LEN, SNAP_AUTH_TAG_LEN);
	return 0;
}

void snap_auth_body_update(struct snap_auth_body *body, const uint8_t *p, size_t n)
{
	crypto_auth_hmacsha256_update(&body->st, p, n);
}

int snap_auth_body_verify(struct snap_auth_body *body, char err[SNAP_ERR_LEN])
{
	uint8_t tag[SNAP_AUTH_TAG_LEN];
	crypto_auth_hmacsha256_final(&body->st, tag);
	int bad = crypto_verify_32(tag, body->want);
	sodium_memzero(tag, sizeof(tag));
	sodium_memzero(body, sizeof(*body));
	if (bad)
		return util_fail(err, SNAP_ERR_LEN, "the snapshot's body does not match its proof");
	return 0;
}
