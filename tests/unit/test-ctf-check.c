/* SPDX-License-Identifier: MIT */
/* test-ctf-check.c - the checks made before babeltrace2 reads a CTF trace
 * (analyze/read/ctf_check.c), on files made here: packetized metadata whole
 * (both byte orders), cut inside a packet (babeltrace2 2.0 spins on it) or
 * inside a header, text metadata, a FIFO; an LTTng index whose packets lie
 * in the stream file, one whose packet lies past its end (babeltrace2
 * aborts on it), one without its stream file, one of a stream cut short
 * (babeltrace2 does without it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <byteswap.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read/ctf_check.h"

static char dir[] = "/tmp/ctrace-ctf-check-XXXXXX";
static char path[256], err[512];

static void put(const char *name, const void *p, size_t len)
{
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, len, f), len);
    fclose(f);
}

/* n metadata packets of 100 bytes, 80 of them content, in the host's byte
 * order or the other. */
static size_t packets(uint8_t *b, int n, int swap)
{
    memset(b, ' ', (size_t)n * 100);
    for (int i = 0; i < n; i++) {
        uint32_t h[3] = {0x75d11d57u, 80 * 8, 100 * 8};
        for (int k = 0; k < 3 && swap; k++)
            h[k] = bswap_32(h[k]);
        memcpy(b + i * 100, &h[0], 4);
        memcpy(b + i * 100 + 24, &h[1], 8);
    }
    return (size_t)n * 100;
}

static void test_metadata(void **state)
{
    (void)state;
    uint8_t b[300];
    for (int swap = 0; swap < 2; swap++) {
        put("metadata", b, packets(b, 3, swap));
        assert_int_equal(ctr_ctf_check_metadata(path, err, sizeof(err)), 0);
        put("metadata", b, 280); /* the last packet's padding cut: whole */
        assert_int_equal(ctr_ctf_check_metadata(path, err, sizeof(err)), 0);
    }
    put("metadata", b, 250); /* in the last packet's content */
    assert_int_equal(ctr_ctf_check_metadata(path, err, sizeof(err)), -EINVAL);
    assert_non_null(
        strstr(err, "metadata: metadata cut short at byte 250: its packet at byte 200"));
    put("metadata", b, 220); /* in its header */
    assert_int_equal(ctr_ctf_check_metadata(path, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "cut short at byte 220, in the header of the packet at byte 200"));
    const char text[] = "/* CTF 1.8 */\ntrace { major = 1; ";
    put("metadata", text, sizeof(text) - 1); /* babeltrace2 says what is wrong */
    assert_int_equal(ctr_ctf_check_metadata(path, err, sizeof(err)), 0);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0); /* refused, not waited on */
    assert_int_equal(ctr_ctf_check_metadata(path, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
}

/* An index of two packets of 1000 bytes, the second at offset second. */
static void index_put(uint64_t second)
{
    uint8_t b[16 + 2 * 64] = {0};
    uint32_t h[4] = {bswap_32(0xc1f1dcc1u), bswap_32(1), bswap_32(1), bswap_32(64)};
    memcpy(b, h, sizeof(h));
    uint64_t e[4] = {0, bswap_64(8000), bswap_64(second), bswap_64(8000)};
    memcpy(b + 16, e, 16);
    memcpy(b + 16 + 64, e + 2, 16);
    put("index/ch_0.idx", b, sizeof(b));
}

static void test_index(void **state)
{
    (void)state;
    char sub[300];
    snprintf(sub, sizeof(sub), "%s/index", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    index_put(1000);
    assert_int_equal(ctr_ctf_check_index(path, err, sizeof(err)), 0); /* no stream file */
    static uint8_t stream[2000];
    put("ch_0", stream, sizeof(stream));
    index_put(1000);
    assert_int_equal(ctr_ctf_check_index(path, err, sizeof(err)), 0);
    for (uint64_t bad = 1001; bad; bad = bad == 1001 ? 1ull << 63 : 0) {
        index_put(bad);
        assert_int_equal(ctr_ctf_check_index(path, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "ch_0.idx: a damaged index: its packet 1 lies past the end"));
    }
    put("ch_0", stream, 1500); /* cut short: babeltrace2 indexes it itself */
    index_put(1000);
    assert_int_equal(ctr_ctf_check_index(path, err, sizeof(err)), 0);
    unlink(path);
    snprintf(path, sizeof(path), "%s/ch_0", dir);
    unlink(path);
    rmdir(sub);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_index),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
