/*
 * pgwire_scram.c — the client side of SCRAM-SHA-256 (RFC 5802, RFC 7677) for the wire
 * client: client-first, client-final with the proof, and the check of the server's
 * signature. No channel binding (gs2 header "n,,", so c=biws).
 *
 * Owns no memory: the pst__scram state is the caller's; derived keys live on the stack
 * and are wiped before returning. Invariant: verified is set only by a server-final
 * message whose signature equals the one computed from our password and the exchange.
 */
#include "pgwire.h"

#include <stdio.h>
#include <string.h>

#define SALT_MAX 128 /* PostgreSQL uses 16 bytes; anything past this is refused */

bool pst__scram_first(pst__scram *s, const char *user, const char *nonce, char *out, size_t cap) {
    memset(s, 0, sizeof *s);
    if (strpbrk(user, ",=") || strchr(nonce, ',') || !*nonce) return false;
    int n = snprintf(s->client_first_bare, sizeof s->client_first_bare, "n=%s,r=%s", user, nonce);
    if (n < 0 || (size_t)n >= sizeof s->client_first_bare) return false;
    n = snprintf(out, cap, "n,,%s", s->client_first_bare);
    return n >= 0 && (size_t)n < cap;
}

/* The value of attribute `a` ("a=value" between commas) in msg[0..n): its start and
 * length, or false. Only the first occurrence counts. */
static bool attr(const char *msg, size_t n, char a, const char **v, size_t *vl) {
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && msg[j] != ',')
            j++;
        if (j - i >= 2 && msg[i] == a && msg[i + 1] == '=') {
            *v = msg + i + 2;
            *vl = j - i - 2;
            return true;
        }
        i = j + 1;
    }
    return false;
}

static bool printable(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x21 || s[i] > 0x7e || s[i] == ',') return false;
    return true;
}

/* HMAC(key, AuthMessage), AuthMessage = client-first-bare "," server-first ","
 * client-final-without-proof. */
static void auth_mac(const uint8_t key[PB_SHA256_LEN], const pst__scram *s, const char *sf,
                     size_t n, const char *without, size_t wl, uint8_t out[PB_SHA256_LEN]) {
    pb_hmac_sha256_ctx h;
    pb_hmac_sha256_init(&h, key, PB_SHA256_LEN);
    pb_hmac_sha256_update(&h, s->client_first_bare, strlen(s->client_first_bare));
    pb_hmac_sha256_update(&h, ",", 1);
    pb_hmac_sha256_update(&h, sf, n);
    pb_hmac_sha256_update(&h, ",", 1);
    pb_hmac_sha256_update(&h, without, wl);
    pb_hmac_sha256_final(&h, out);
}

bool pst__scram_final(pst__scram *s, const char *sf, size_t n, const char *password,
                      uint32_t max_iterations, char *out, size_t cap, const char **why) {
    const char *r, *salt64, *it;
    size_t rl, sl, il;
    *why = "malformed server-first-message";
    if (n && sf[0] == 'm') {
        *why = "the server requires an unsupported SCRAM extension";
        return false;
    }
    if (!attr(sf, n, 'r', &r, &rl) || !attr(sf, n, 's', &salt64, &sl) ||
        !attr(sf, n, 'i', &it, &il))
        return false;
    /* our nonce, then at least one character of the server's */
    const char *cn = strstr(s->client_first_bare, ",r=");
    if (!cn) return false; /* pst__scram_first did not run */
    cn += 3;
    size_t cnl = strlen(cn);
    if (rl <= cnl || memcmp(r, cn, cnl) != 0 || !printable(r, rl)) {
        *why = "the server's nonce does not extend the client's";
        return false;
    }
    uint8_t salt[SALT_MAX];
    size_t saltn = 0;
    if (!sl || !pb_base64_decode(salt64, sl, salt, sizeof salt, &saltn) || !saltn) {
        *why = "bad salt in server-first-message";
        return false;
    }
    uint64_t iter = 0;
    if (!il || il > 10) return false;
    for (size_t i = 0; i < il; i++) {
        if (it[i] < '0' || it[i] > '9') return false;
        iter = iter * 10 + (uint64_t)(it[i] - '0');
    }
    if (iter < 1 || iter > max_iterations) {
        *why = "SCRAM iteration count out of bounds";
        return false;
    }
    /* client-final-message-without-proof, then the AuthMessage */
    char without[300];
    int wl = snprintf(without, sizeof without, "c=biws,r=%.*s", (int)rl, r);
    if (wl < 0 || (size_t)wl >= sizeof without) {
        *why = "server nonce too long";
        return false;
    }
    uint8_t salted[PB_SHA256_LEN], ckey[PB_SHA256_LEN], stored[PB_SHA256_LEN], csig[PB_SHA256_LEN],
        skey[PB_SHA256_LEN], proof[PB_SHA256_LEN];
    if (!pb_pbkdf2_sha256(password, strlen(password), salt, saltn, (uint32_t)iter, salted,
                          sizeof salted))
        return false;
    pb_hmac_sha256(salted, sizeof salted, "Client Key", 10, ckey);
    pb_sha256(ckey, sizeof ckey, stored);
    auth_mac(stored, s, sf, n, without, (size_t)wl, csig);
    for (size_t i = 0; i < sizeof proof; i++)
        proof[i] = ckey[i] ^ csig[i];
    pb_hmac_sha256(salted, sizeof salted, "Server Key", 10, skey);
    auth_mac(skey, s, sf, n, without, (size_t)wl, s->server_signature);
    char p64[PB_BASE64_LEN(PB_SHA256_LEN) + 1];
    pb_base64_encode(proof, sizeof proof, p64);
    int ol = snprintf(out, cap, "%s,p=%s", without, p64);
    pb_wipe(salted, sizeof salted);
    pb_wipe(ckey, sizeof ckey);
    pb_wipe(stored, sizeof stored);
    pb_wipe(csig, sizeof csig);
    pb_wipe(skey, sizeof skey);
    pb_wipe(proof, sizeof proof);
    if (ol < 0 || (size_t)ol >= cap) {
        *why = "client-final-message too long";
        return false;
    }
    return true;
}

bool pst__scram_verify(pst__scram *s, const char *msg, size_t n, const char **why) {
    const char *v;
    size_t vl;
    uint8_t sig[PB_SHA256_LEN];
    size_t sigl = 0;
    if (n >= 2 && msg[0] == 'e' && msg[1] == '=') {
        *why = "the server reported a SCRAM error";
        return false;
    }
    if (!attr(msg, n, 'v', &v, &vl) || msg[0] != 'v' ||
        !pb_base64_decode(v, vl, sig, sizeof sig, &sigl) || sigl != sizeof sig) {
        *why = "malformed server-final-message";
        return false;
    }
    if (!pb_ct_equal(sig, s->server_signature, sizeof sig)) {
        *why = "the server's SCRAM signature is wrong: it does not know the password verifier";
        return false;
    }
    s->verified = true;
    return true;
}
