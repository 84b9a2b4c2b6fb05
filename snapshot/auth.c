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
