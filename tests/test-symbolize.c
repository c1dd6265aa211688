/* test-symbolize.c - unit tests for analyze/symbolize.c, run against this test
 * binary's own mappings (as the tracer would record them) and a few bogus ones.
 *
 * Expects to be built with -g (any -O): line numbers are checked against
 * __LINE__ markers written on the same line as the calls they describe.
 */
#include "maps.h"
#include "symbolize.h"

#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_MAPS 64
#define NOINLINE __attribute__((noinline))

/* ---------------------------------------------------------------------------
 * This process's executable mappings, read by the tracer's ctr__maps_scan
 * ------------------------------------------------------------------------- */

struct maps {
    struct ctr_sym_mapping m[MAX_MAPS];
    char paths[MAX_MAPS][PATH_MAX];
    uint8_t build_ids[MAX_MAPS][64];
    size_t n;
};

/* The mappings as the tracer records them (tracer/maps.c), so the test also
 * checks that what the tracer writes is what the symbolizer needs. */
static void add_mapping(void *arg, const struct ctr_map_info *mi)
{
    struct maps *ms = arg;
    if (ms->n == MAX_MAPS || mi->path[0] != '/')
        return;
    snprintf(ms->paths[ms->n], PATH_MAX, "%s", mi->path);
    memcpy(ms->build_ids[ms->n], mi->build_id, mi->build_id_len);
    ms->m[ms->n] = (struct ctr_sym_mapping){
        .start = mi->start,
        .limit = mi->limit,
        .file_offset = mi->file_offset,
        .bias = mi->bias,
        .path = ms->paths[ms->n],
        .build_id = mi->build_id_len ? ms->build_ids[ms->n] : NULL,
        .build_id_len = mi->build_id_len,
    };
    ms->n++;
}

static struct maps *self;   /* read once, by group_setup() */

static int group_setup(void **state)
{
    (void)state;
    if ((self = calloc(1, sizeof *self)) == NULL)
        return -1;
    ctr__maps_scan(add_mapping, self);
    return self->n >= 2 ? 0 : -1;   /* at least the executable and libc */
}

static int group_teardown(void **state)
{
    (void)state;
    free(self);
    return 0;
}

static uint64_t fn_pc(void (*fn)(void))
{
    return (uint64_t)(uintptr_t)fn;
}

/* ---------------------------------------------------------------------------
 * Code with known lines
 * ------------------------------------------------------------------------- */

static volatile uint64_t probe_pc;   /* pc of the call that reached probe() */
static int call_line, inner_line, outer_line;

static NOINLINE void probe(void)
{
    probe_pc = (uint64_t)(uintptr_t)__builtin_return_address(0) - 1;
    __asm__ volatile("" ::: "memory");
}

enum { KNOWN_DECL_LINE = __LINE__ + 1 };
static NOINLINE void known_function(void)
{
    probe(); call_line = __LINE__;
}

enum { INNER_DECL_LINE = __LINE__ + 1 };
static inline __attribute__((always_inline)) void inner(void)
{
    probe(); inner_line = __LINE__;
}

enum { OUTER_DECL_LINE = __LINE__ + 1 };
static NOINLINE void outer(void)
{
    inner(); outer_line = __LINE__;
}

/* __FILE__ is whatever the compiler was given; DWARF must give it absolute. */
static void assert_this_file(const char *file)
{
    assert_non_null(file);
    assert_int_equal(file[0], '/');
    if (__FILE__[0] == '/') {
        assert_string_equal(file, __FILE__);
    } else {
        size_t n = strlen(file), m = strlen(__FILE__);
        assert_true(n > m && strcmp(file + n - m, __FILE__) == 0 && file[n - m - 1] == '/');
    }
}

/* ---------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------- */

static void test_function_file_line(void **state)
{
    (void)state;
    struct ctr_symbolizer *s = ctr_symbolizer_new(self->m, self->n);
    assert_non_null(s);
    known_function();

    struct ctr_sym_frame f[8];
    int k = ctr_symbolize(s, probe_pc, f, 8);
    assert_int_equal(k, 1);
    assert_string_equal(f[0].function, "known_function");
    assert_this_file(f[0].file);
    assert_int_equal(f[0].line, call_line);
    assert_int_equal(f[0].function_line, KNOWN_DECL_LINE);
    int idx = ctr_symbolizer_mapping(s, probe_pc);
    assert_true(idx >= 0 && (size_t)idx < self->n);
    assert_true(probe_pc >= self->m[idx].start && probe_pc < self->m[idx].limit);

    /* The entry point of a function is inside it too. */
    struct ctr_sym_frame g[8];
    assert_int_equal(ctr_symbolize(s, fn_pc(known_function), g, 8), 1);
    assert_string_equal(g[0].function, "known_function");

    /* Cached: same answer, same strings. */
    assert_int_equal(ctr_symbolize(s, probe_pc, g, 8), 1);
    assert_ptr_equal(g[0].function, f[0].function);
    assert_ptr_equal(g[0].file, f[0].file);
    assert_string_equal(ctr_symbolizer_warnings(s), "");
    ctr_symbolizer_free(s);
}

static void test_inline_chain(void **state)
{
    (void)state;
    struct ctr_symbolizer *s = ctr_symbolizer_new(self->m, self->n);
    assert_non_null(s);
    outer();

    struct ctr_sym_frame f[8];
    int k = ctr_symbolize(s, probe_pc, f, 8);
    assert_int_equal(k, 2);
    assert_string_equal(f[0].function, "inner");
    assert_this_file(f[0].file);
    assert_int_equal(f[0].line, inner_line);
    assert_int_equal(f[0].function_line, INNER_DECL_LINE);
    assert_string_equal(f[1].function, "outer");
    assert_this_file(f[1].file);
    assert_int_equal(f[1].line, outer_line);
    assert_int_equal(f[1].function_line, OUTER_DECL_LINE);

    /* max cuts the chain from the outside: the innermost frame stays. */
    assert_int_equal(ctr_symbolize(s, probe_pc, f, 1), 1);
    assert_string_equal(f[0].function, "inner");
    ctr_symbolizer_free(s);
}

/* A non-PIE executable's own PLT stub stands for an imported function's
 * address; RTLD_NEXT finds the definition in the library. */
static uint64_t next_definition(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    assert_non_null(p);
    return (uint64_t)(uintptr_t)p;
}

static void test_shared_libraries(void **state)
{
    (void)state;
    struct ctr_symbolizer *s = ctr_symbolizer_new(self->m, self->n);
    assert_non_null(s);
    uint64_t pc = next_definition("getpid");
    int idx = ctr_symbolizer_mapping(s, pc);
    assert_true(idx >= 0);
    assert_non_null(strstr(self->m[idx].path, "libc"));

    struct ctr_sym_frame f[8];
    int k = ctr_symbolize(s, pc, f, 8);
    assert_true(k >= 1);
    assert_non_null(f[k - 1].function);
    assert_non_null(strstr(f[k - 1].function, "getpid"));

    /* Distributions rarely ship debug info for cmocka: the symbol table
     * still names its functions. */
    pc = next_definition("_cmocka_run_group_tests");
    idx = ctr_symbolizer_mapping(s, pc);
    assert_true(idx >= 0);
    assert_non_null(strstr(self->m[idx].path, "cmocka"));
    k = ctr_symbolize(s, pc, f, 8);
    assert_true(k >= 1);
    assert_string_equal(f[k - 1].function, "_cmocka_run_group_tests");
    ctr_symbolizer_free(s);
}

static void test_pc_outside_mappings(void **state)
{
    (void)state;
    struct ctr_symbolizer *s = ctr_symbolizer_new(self->m, self->n);
    assert_non_null(s);
    struct ctr_sym_frame f[4];
    const uint64_t bogus[] = { 0, 16, UINT64_MAX, UINT64_MAX - 4096 };
    for (size_t i = 0; i < sizeof bogus / sizeof bogus[0]; i++) {
        assert_int_equal(ctr_symbolizer_mapping(s, bogus[i]), -1);
        assert_int_equal(ctr_symbolize(s, bogus[i], f, 4), 0);
    }
    assert_int_equal(ctr_symbolize(s, fn_pc(known_function), f, 0), 0);
    ctr_symbolizer_free(s);

    /* An empty table works too. */
    s = ctr_symbolizer_new(NULL, 0);
    assert_non_null(s);
    assert_int_equal(ctr_symbolize(s, 0x1000, f, 4), 0);
    assert_int_equal(ctr_symbolizer_mapping(s, 0x1000), -1);
    ctr_symbolizer_free(s);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void test_bad_files(void **state)
{
    (void)state;
    char text[] = "/tmp/test-symbolize-text-XXXXXX";
    char trunc[] = "/tmp/test-symbolize-trunc-XXXXXX";
    int fd = mkstemp(text);
    assert_true(fd >= 0);
    close(fd);
    write_file(text, "not an ELF file\n", 16);

    /* The first 200 bytes of a real ELF: a valid header, nothing behind it. */
    fd = mkstemp(trunc);
    assert_true(fd >= 0);
    close(fd);
    char head[200];
    FILE *exe = fopen("/proc/self/exe", "rb");
    assert_non_null(exe);
    assert_int_equal(fread(head, 1, sizeof head, exe), sizeof head);
    fclose(exe);
    write_file(trunc, head, sizeof head);

    const char *missing = "/nonexistent/test-symbolize/libmissing.so";
    const struct ctr_sym_mapping maps[] = {   /* deliberately not sorted */
        { .start = 0x50000, .limit = 0x60000, .bias = 0x50000, .path = trunc },
        { .start = 0x10000, .limit = 0x20000, .bias = 0x10000, .path = text },
        { .start = 0x30000, .limit = 0x40000, .bias = 0x30000, .path = missing },
        { .start = 0x60000, .limit = 0x70000, .bias = 0x50000, .path = trunc },
        { .start = 0x70000, .limit = 0x80000, .bias = 0x70000, .path = NULL },
    };
    struct ctr_symbolizer *s = ctr_symbolizer_new(maps, sizeof maps / sizeof maps[0]);
    assert_non_null(s);
    struct ctr_sym_frame f[4];
    for (int round = 0; round < 2; round++) {
        assert_int_equal(ctr_symbolize(s, 0x10010, f, 4), 0);
        assert_int_equal(ctr_symbolize(s, 0x10020, f, 4), 0);
        assert_int_equal(ctr_symbolize(s, 0x30010, f, 4), 0);
        assert_int_equal(ctr_symbolize(s, 0x50010, f, 4), 0);
        assert_int_equal(ctr_symbolize(s, 0x60010, f, 4), 0);
        assert_int_equal(ctr_symbolize(s, 0x70010, f, 4), 0);
    }
    /* Indices are into the caller's array, not the sorted copy. */
    assert_int_equal(ctr_symbolizer_mapping(s, 0x10010), 1);
    assert_int_equal(ctr_symbolizer_mapping(s, 0x30010), 2);
    assert_int_equal(ctr_symbolizer_mapping(s, 0x65000), 3);
    assert_int_equal(ctr_symbolizer_mapping(s, 0x20000), -1);   /* limit is exclusive */
    /* One line per bad file, however many addresses and mappings hit it. */
    const char *w = ctr_symbolizer_warnings(s);
    assert_int_equal(count(w, text), 1);
    assert_int_equal(count(w, missing), 1);
    assert_true(count(w, trunc) <= 1);
    ctr_symbolizer_free(s);
    unlink(text);
    unlink(trunc);
}

static void test_build_id_mismatch(void **state)
{
    (void)state;
    struct ctr_sym_mapping m[MAX_MAPS];
    memcpy(m, self->m, sizeof m);
    known_function();
    int idx = -1;
    for (size_t i = 0; i < self->n; i++)
        if (probe_pc >= m[i].start && probe_pc < m[i].limit)
            idx = (int)i;
    assert_true(idx >= 0);
    assert_true(m[idx].build_id_len > 0);   /* gcc/ld on Linux add one */

    uint8_t wrong[64];
    size_t len = m[idx].build_id_len;
    assert_true(len <= sizeof wrong);
    memcpy(wrong, m[idx].build_id, len);
    wrong[0] ^= 0xff;
    m[idx].build_id = wrong;
    struct ctr_symbolizer *s = ctr_symbolizer_new(m, self->n);
    assert_non_null(s);
    struct ctr_sym_frame f[4];
    assert_int_equal(ctr_symbolize(s, probe_pc, f, 4), 0);
    assert_int_equal(ctr_symbolize(s, fn_pc(known_function), f, 4), 0);
    const char *w = ctr_symbolizer_warnings(s);
    assert_int_equal(count(w, "build-id"), 1);
    assert_int_equal(count(w, m[idx].path), 1);
    ctr_symbolizer_free(s);

    /* Without a recorded build-id, the file is trusted. */
    m[idx].build_id = NULL;
    m[idx].build_id_len = 0;
    s = ctr_symbolizer_new(m, self->n);
    assert_non_null(s);
    assert_int_equal(ctr_symbolize(s, probe_pc, f, 4), 1);
    assert_string_equal(f[0].function, "known_function");
    ctr_symbolizer_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_function_file_line),
        cmocka_unit_test(test_inline_chain),
        cmocka_unit_test(test_shared_libraries),
        cmocka_unit_test(test_pc_outside_mappings),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_build_id_mismatch),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
