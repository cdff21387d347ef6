/*
 * test_sha256.c — the base layer's SHA-256 (sha256.c), the integrity sum (sum.c), HMAC-SHA-256 and
 * PBKDF2 (hmac.c) and strict Base64 (base64.c): the FIPS 180-4 / NIST, RFC 4231 and RFC 7914
 * vectors, the incremental API split at every offset, and agreement with libcrypto (linked for this
 * test only; the library never links it for these) on random inputs of random lengths fed in random
 * pieces.
 *
 * `test_sha256 --bench` prints the throughput of both on 64 MiB instead (not run by CTest).
 */
#include "peri/base.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
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

static void unhex(const char *h, uint8_t *out) {
    for (size_t i = 0; h[2 * i]; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

static void check_hmac(const void *key, size_t kl, const void *data, size_t n, const char *want) {
    uint8_t mac[PB_SHA256_LEN];
    char hex[65];
    pb_hmac_sha256(key, kl, data, n, mac);
    pb_hex(mac, sizeof mac, hex);
    assert_string_equal(hex, want);
}

/* RFC 4231 test cases 1-4, 6 and 7 (case 5 is a truncated MAC). */
static void hmac_rfc4231(void **st) {
    (void)st;
    uint8_t k[131], d[50];
    memset(k, 0x0b, 20);
    check_hmac(k, 20, "Hi There", 8,
               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    check_hmac("Jefe", 4, "what do ya want for nothing?", 28,
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, 20);
    memset(d, 0xdd, 50);
    check_hmac(k, 20, d, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k[i] = (uint8_t)(i + 1);
    memset(d, 0xcd, 50);
    check_hmac(k, 25, d, 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    memset(k, 0xaa, 131);
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    check_hmac(k, 131, t6, strlen(t6),
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    const char *t7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the HMAC "
                     "algorithm.";
    check_hmac(k, 131, t7, strlen(t7),
               "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* RFC 7914 section 11 (PBKDF2-HMAC-SHA256), and the refused arguments. */
static void pbkdf2_rfc7914(void **st) {
    (void)st;
    uint8_t out[64], want[64];
    assert_true(pb_pbkdf2_sha256("passwd", 6, "salt", 4, 1, out, 64));
    unhex("55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645"
          "991664b39d77ef317c71b845b1e30bd509112041d3a19783",
          want);
    assert_memory_equal(out, want, 64);
    assert_true(pb_pbkdf2_sha256("Password", 8, "NaCl", 4, 80000, out, 64));
    unhex("4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549a"
          "db841b51c9b3176a272bdebba1d078478f62b397f33c8d",
          want);
    assert_memory_equal(out, want, 64);
    memset(out, 0x77, sizeof out);
    assert_false(pb_pbkdf2_sha256("p", 1, "s", 1, 0, out, 32)); /* zero iterations */
    assert_int_equal(out[0], 0x77);
}

/* Random keys (short, block-sized and longer), data, salts, iteration counts and output
 * lengths against HMAC() and PKCS5_PBKDF2_HMAC(); the incremental HMAC in pieces. */
static void hmac_pbkdf2_agree_with_libcrypto(void **st) {
    (void)st;
    uint64_t s = (uint64_t)time(NULL) * 40503u | 1;
    printf("# seed %llu\n", (unsigned long long)s);
    uint8_t key[200], data[1000], a[PB_SHA256_LEN], b[EVP_MAX_MD_SIZE], dk[100], dk2[100];
    for (int round = 0; round < 300; round++) {
        size_t kl = rng_next(&s) % sizeof key, n = rng_next(&s) % sizeof data;
        for (size_t i = 0; i < kl; i++)
            key[i] = (uint8_t)rng_next(&s);
        for (size_t i = 0; i < n; i++)
            data[i] = (uint8_t)rng_next(&s);
        unsigned bl = 0;
        assert_non_null(HMAC(EVP_sha256(), key, (int)kl, data, n, b, &bl));
        pb_hmac_sha256_ctx c;
        pb_hmac_sha256_init(&c, key, kl);
        for (size_t off = 0; off < n;) {
            size_t piece = rng_next(&s) % 100;
            if (piece > n - off) piece = n - off;
            pb_hmac_sha256_update(&c, data + off, piece);
            off += piece;
        }
        pb_hmac_sha256_final(&c, a);
        assert_memory_equal(a, b, 32);
        if (round % 10 == 0) {
            uint32_t iter = 1 + (uint32_t)(rng_next(&s) % 3000);
            size_t dl = 1 + rng_next(&s) % sizeof dk, sl = rng_next(&s) % 40;
            assert_true(pb_pbkdf2_sha256(key, kl, data, sl, iter, dk, dl));
            assert_int_equal(PKCS5_PBKDF2_HMAC((const char *)key, (int)kl, data, (int)sl, (int)iter,
                                               EVP_sha256(), (int)dl, dk2),
                             1);
            assert_memory_equal(dk, dk2, dl);
        }
    }
}

static void ct_equal_and_wipe(void **st) {
    (void)st;
    uint8_t a[32], b[32];
    memset(a, 5, sizeof a);
    memset(b, 5, sizeof b);
    assert_true(pb_ct_equal(a, b, sizeof a));
    assert_true(pb_ct_equal(a, b, 0));
    for (size_t i = 0; i < sizeof a; i++) {
        b[i] ^= 0x80;
        assert_false(pb_ct_equal(a, b, sizeof a));
        b[i] ^= 0x80;
    }
    pb_wipe(a, sizeof a);
    for (size_t i = 0; i < sizeof a; i++)
        assert_int_equal(a[i], 0);
}

/* RFC 4648 section 10 vectors both ways, and the texts the strict decoder refuses. */
static void base64_strict(void **st) {
    (void)st;
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const text[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                       "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char out[16];
        uint8_t back[16];
        size_t n = strlen(plain[i]), bl = 99;
        assert_int_equal(pb_base64_encode(plain[i], n, out), strlen(text[i]));
        assert_int_equal(PB_BASE64_LEN(n), strlen(text[i]));
        assert_string_equal(out, text[i]);
        assert_true(pb_base64_decode(text[i], strlen(text[i]), back, sizeof back, &bl));
        assert_int_equal(bl, n);
        assert_memory_equal(back, plain[i], n);
    }
    static const char *const bad[] = {"Zg=",    "Zg",   "Z===", "====", "Zh==", "Zm9=",    "Zm 9v",
                                      "Zm9v\n", "Z=g=", "=Zm9", "Zm9-", "Zm9_", "Zg==Zg=="};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint8_t back[16];
        size_t bl;
        assert_false(pb_base64_decode(bad[i], strlen(bad[i]), back, sizeof back, &bl));
    }
    uint8_t small[5];
    size_t bl;
    assert_false(pb_base64_decode("Zm9vYmFy", 8, small, sizeof small, &bl)); /* over max */
    assert_true(pb_base64_decode("Zm9vYg==", 8, small, 4, &bl));
    /* every byte string of random length round-trips */
    uint64_t s = 12345;
    for (int r = 0; r < 2000; r++) {
        uint8_t in[64], back[64];
        char t[PB_BASE64_LEN(64) + 1];
        size_t n = rng_next(&s) % 64;
        for (size_t i = 0; i < n; i++)
            in[i] = (uint8_t)rng_next(&s);
        size_t tl = pb_base64_encode(in, n, t);
        assert_true(pb_base64_decode(t, tl, back, n, &bl));
        assert_int_equal(bl, n);
        assert_memory_equal(back, in, n);
    }
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sort5(double v[5]) { /* insertion sort, for the median */
    for (int i = 0; i < 5; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
}

/* Throughput over 64 MiB and the time of one SCRAM key derivation, median of five runs
 * each. */
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
    sort5(ours);
    sort5(theirs);
    printf("sha256 64 MiB: pb_sha256 %.0f MB/s, libcrypto %.0f MB/s (median of 5)\n", ours[2],
           theirs[2]);
    /* SCRAM's cost: PBKDF2 with PostgreSQL's default 4096 iterations, 32 bytes */
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        pb_pbkdf2_sha256("password", 8, "saltsaltsaltsalt", 16, 4096, d, 32);
        double t1 = now_s();
        PKCS5_PBKDF2_HMAC("password", 8, (const unsigned char *)"saltsaltsaltsalt", 16, 4096,
                          EVP_sha256(), 32, d);
        double t2 = now_s();
        ours[r] = (t1 - t0) * 1e3;
        theirs[r] = (t2 - t1) * 1e3;
    }
    sort5(ours);
    sort5(theirs);
    printf("pbkdf2-sha256 4096 iterations: pb_pbkdf2_sha256 %.2f ms, libcrypto %.2f ms (median "
           "of 5)\n",
           ours[2], theirs[2]);
    free(buf);
    return 0;
}

/* The integrity sum (sum.c): the crc32 instruction and the bit-by-bit form agree; the
 * incremental API split anywhere gives the one-shot value; every single-bit flip,
 * a trailing zero byte and a cut byte all change it. */
static void sum_of(const uint8_t *p, size_t n, bool portable, size_t piece,
                   uint8_t out[PB_SUM_LEN]) {
    pb_sum_ctx c;
    if (portable)
        pb_sum_init_portable(&c);
    else
        pb_sum_init(&c);
    for (size_t at = 0; at < n;) {
        size_t k = piece && piece < n - at ? piece : n - at;
        pb_sum_update(&c, p + at, k);
        at += k;
    }
    pb_sum_final(&c, out);
}

static void integrity_sum(void **state) {
    (void)state;
    uint64_t seed = 0x5eed5u;
    uint8_t buf[700], a[PB_SUM_LEN], b[PB_SUM_LEN];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)rng_next(&seed);
    for (size_t n = 0; n <= sizeof buf; n += 37) {
        pb_sum(buf, n, a);
        sum_of(buf, n, true, 0, b);
        assert_memory_equal(a, b, PB_SUM_LEN);
        for (size_t piece = 1; piece < 130; piece += 7) {
            sum_of(buf, n, false, piece, b);
            assert_memory_equal(a, b, PB_SUM_LEN);
            sum_of(buf, n, true, piece, b);
            assert_memory_equal(a, b, PB_SUM_LEN);
        }
    }
    uint8_t base[PB_SUM_LEN];
    pb_sum(buf, 300, base);
    for (size_t bit = 0; bit < 300 * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        pb_sum(buf, 300, a);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_memory_not_equal(a, base, PB_SUM_LEN);
    }
    buf[300] = 0;
    pb_sum(buf, 301, a);
    assert_memory_not_equal(a, base, PB_SUM_LEN);
    pb_sum(buf, 299, a);
    assert_memory_not_equal(a, base, PB_SUM_LEN);
    uint8_t z[PB_SUM_LEN];
    pb_sum(buf, 0, z);
    pb_sum((const uint8_t[64]){0}, 64, a);
    assert_memory_not_equal(a, z, PB_SUM_LEN);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) return bench();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nist_vectors),
        cmocka_unit_test(million_a_in_pieces),
        cmocka_unit_test(every_split_matches_one_shot),
        cmocka_unit_test(agrees_with_libcrypto),
        cmocka_unit_test(hmac_rfc4231),
        cmocka_unit_test(pbkdf2_rfc7914),
        cmocka_unit_test(hmac_pbkdf2_agree_with_libcrypto),
        cmocka_unit_test(ct_equal_and_wipe),
        cmocka_unit_test(base64_strict),
        cmocka_unit_test(integrity_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
