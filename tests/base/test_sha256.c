/*
 * test_sha256.c — the base layer's SHA-256 (sha256.c): the FIPS 180-4 / NIST example
 * vectors, the incremental API split at every offset, and agreement with libcrypto
 * (linked for this test only; the library never links it for hashing) on random inputs
 * of random lengths fed in random pieces.
 *
 * `test_sha256 --bench` prints the throughput of both on 64 MiB instead (not run by CTest).
 */
#include "peri/base.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

/* A deterministic generator (xorshift64*): a failure reproduces from the printed seed. */
static uint64_t rng_next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static void hex_of(const void *data, size_t n, char out[65]) {
    uint8_t d[PB_SHA256_LEN];
    pb_sha256(data, n, d);
    pb_hex(d, sizeof d, out);
}

static void nist_vectors(void **st) {
    (void)st;
    char hex[65];
    hex_of("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(m448, strlen(m448), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnop"
        "qklmnopqrlmnopqrsmnopqrstnopqrstu";
    hex_of(m896, strlen(m896), hex);
    assert_string_equal(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void million_a_in_pieces(void **st) {
    (void)st;
    char chunk[1000];
    memset(chunk, 'a', sizeof chunk);
    pb_sha256_ctx c;
    pb_sha256_init(&c);
    for (int i = 0; i < 1000; i++)
        pb_sha256_update(&c, chunk, sizeof chunk);
    uint8_t d[PB_SHA256_LEN];
    char hex[65];
    pb_sha256_final(&c, d);
    pb_hex(d, sizeof d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* final re-initialised the context: hashing "abc" with it now is the plain digest */
    pb_sha256_update(&c, "abc", 3);
    pb_sha256_final(&c, d);
    pb_hex(d, sizeof d, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* Every split point of inputs around the block and padding boundaries (55, 56, 63, 64,
 * 119, 120 bytes ...) gives the one-shot digest, also with empty updates between. */
static void every_split_matches_one_shot(void **st) {
    (void)st;
    uint8_t msg[200];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    for (size_t n = 0; n <= sizeof msg; n++) {
        uint8_t want[PB_SHA256_LEN];
        pb_sha256(msg, n, want);
        for (size_t cut = 0; cut <= n; cut++) {
            pb_sha256_ctx c;
            uint8_t got[PB_SHA256_LEN];
            pb_sha256_init(&c);
            pb_sha256_update(&c, msg, cut);
            pb_sha256_update(&c, msg + cut, 0);
            pb_sha256_update(&c, msg + cut, n - cut);
            pb_sha256_final(&c, got);
            assert_memory_equal(got, want, sizeof want);
        }
    }
}

static void agrees_with_libcrypto(void **st) {
    (void)st;
    uint64_t seed = (uint64_t)time(NULL) * 2654435761u | 1;
    printf("# seed %llu\n", (unsigned long long)seed);
    uint64_t s = seed;
    enum { MAXN = 70000 };
    uint8_t *buf = malloc(MAXN);
    assert_non_null(buf);
    for (int round = 0; round < 400; round++) {
        /* mostly short inputs (the padding cases), some long ones */
        size_t n = round % 4 ? rng_next(&s) % 300 : rng_next(&s) % MAXN;
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)rng_next(&s);
        uint8_t want[SHA256_DIGEST_LENGTH], got[PB_SHA256_LEN], one[PB_SHA256_LEN];
        unsigned wl = 0;
        assert_int_equal(EVP_Digest(buf, n, want, &wl, EVP_sha256(), NULL), 1);
        assert_int_equal(wl, 32);
        pb_sha256(buf, n, one);
        assert_memory_equal(one, want, 32);
        pb_sha256_ctx c;
        pb_sha256_init(&c);
        for (size_t off = 0; off < n;) {
            size_t piece = rng_next(&s) % 150;
            if (piece > n - off) piece = n - off;
            pb_sha256_update(&c, buf + off, piece);
            off += piece;
        }
        pb_sha256_final(&c, got);
        if (memcmp(got, want, 32) != 0)
            fprintf(stderr, "length %zu, seed %llu\n", n, (unsigned long long)seed);
        assert_memory_equal(got, want, 32);
    }
    free(buf);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Throughput over 64 MiB, median of five runs each. */
static int bench(void) {
    enum { N = 64 << 20 };
    uint8_t *buf = malloc(N);
    if (!buf) return 1;
    for (size_t i = 0; i < N; i++)
        buf[i] = (uint8_t)(i * 131);
    double ours[5], theirs[5];
    uint8_t d[32];
    unsigned wl;
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        pb_sha256(buf, N, d);
        double t1 = now_s();
        EVP_Digest(buf, N, d, &wl, EVP_sha256(), NULL);
        double t2 = now_s();
        ours[r] = (N / 1048576.0) / (t1 - t0);
        theirs[r] = (N / 1048576.0) / (t2 - t1);
    }
    for (int i = 0; i < 5; i++) /* insertion sort for the median */
        for (int j = i; j > 0 && ours[j] < ours[j - 1]; j--) {
            double t = ours[j];
            ours[j] = ours[j - 1], ours[j - 1] = t;
        }
    for (int i = 0; i < 5; i++)
        for (int j = i; j > 0 && theirs[j] < theirs[j - 1]; j--) {
            double t = theirs[j];
            theirs[j] = theirs[j - 1], theirs[j - 1] = t;
        }
    printf("sha256 64 MiB: pb_sha256 %.0f MB/s, libcrypto %.0f MB/s (median of 5)\n", ours[2],
           theirs[2]);
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) return bench();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nist_vectors),
        cmocka_unit_test(million_a_in_pieces),
        cmocka_unit_test(every_split_matches_one_shot),
        cmocka_unit_test(agrees_with_libcrypto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
