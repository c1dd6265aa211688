/* SPDX-License-Identifier: MIT */
/* test-symbolize.c - unit tests for analyze/symbols/symbolize.c, run against this test
 * binary's own mappings (as the tracer would record them) and a few bogus ones.
 *
 * Expects to be built with -g (any -O): line numbers are checked against
 * __LINE__ markers written on the same line as the calls they describe.
 */
#include "core/maps.h"
#include "symbols/symbolize.h"
#include "symbols/symname.h"

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

/* The mappings as the tracer records them (tracer/core/maps.c), so the test also
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

static struct maps *self; /* read once, by group_setup() */

static int group_setup(void **state)
{
    (void)state;
    if ((self = calloc(1, sizeof *self)) == NULL)
        return -1;
    ctr__maps_scan(add_mapping, self);
    return self->n >= 2 ? 0 : -1; /* at least the executable and libc */
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

static volatile uint64_t probe_pc; /* pc of the call that reached probe() */
static int call_line, inner_line, outer_line;

static NOINLINE void probe(void)
{
    probe_pc = (uint64_t)(uintptr_t)__builtin_return_address(0) - 1;
    __asm__ volatile("" ::: "memory");
}

/* clang-format off */
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

/* C functions that carry C++ linkage names, as methods of two classes
 * with one name would: DWARF has both the linkage name and "lock". (An
 * inlined C function has no linkage name: tests/e2e/cxx.sh checks C++'s.) */
NOINLINE void widget_lock(void) __asm__("_ZN7ctrtest6Widget4lockEv");
NOINLINE void door_lock(void) __asm__("_ZNK7ctrtest4Door4lockEv");
static int widget_line, door_line;

static inline __attribute__((always_inline)) void widget_check(void)
{
    probe(); widget_line = __LINE__;
}

NOINLINE void widget_lock(void)
{
    widget_check();
}

NOINLINE void door_lock(void)
{
    probe(); door_line = __LINE__;
}
/* clang-format on */

/* In symbolize-nodwarf.c, built without DWARF but for its hand-made unit. */
void nodwarf_member(int x) __asm__("_ZN7nodwarf3Gap5probeEi");
void ctr_gap_a(void), ctr_gap_b(void), ctr_gap_c(void);

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
    const uint64_t bogus[] = {0, 16, UINT64_MAX, UINT64_MAX - 4096};
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
    const struct ctr_sym_mapping maps[] = {
        /* deliberately not sorted */
        {.start = 0x50000, .limit = 0x60000, .bias = 0x50000, .path = trunc},
        {.start = 0x10000, .limit = 0x20000, .bias = 0x10000, .path = text},
        {.start = 0x30000, .limit = 0x40000, .bias = 0x30000, .path = missing},
        {.start = 0x60000, .limit = 0x70000, .bias = 0x50000, .path = trunc},
        {.start = 0x70000, .limit = 0x80000, .bias = 0x70000, .path = NULL},
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
    assert_int_equal(ctr_symbolizer_mapping(s, 0x20000), -1); /* limit is exclusive */
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
    assert_true(m[idx].build_id_len > 0); /* gcc/ld on Linux add one */

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

/* DWARF names functions by their linkage names, demangled: two "lock"s
 * of two classes stay apart, and an inlined function is qualified too. */
static void test_dwarf_qualified_names(void **state)
{
    (void)state;
    struct ctr_symbolizer *s = ctr_symbolizer_new(self->m, self->n);
    assert_non_null(s);
    struct ctr_sym_frame f[8];
    widget_lock();
    assert_int_equal(ctr_symbolize(s, probe_pc, f, 8), 2);
    assert_string_equal(f[0].function, "widget_check");
    assert_int_equal(f[0].line, widget_line);
    assert_string_equal(f[1].function, "ctrtest::Widget::lock");
    assert_this_file(f[1].file);
    door_lock();
    assert_int_equal(ctr_symbolize(s, probe_pc, f, 8), 1);
    assert_string_equal(f[0].function, "ctrtest::Door::lock");
    assert_this_file(f[0].file);
    assert_int_equal(f[0].line, door_line);
    ctr_symbolizer_free(s);
}

/* Asserts that pc symbolizes to one frame, `function`, without file:line. */
static void assert_symbol_only(struct ctr_symbolizer *s, uint64_t pc, const char *function)
{
    struct ctr_sym_frame f[8];
    assert_int_equal(ctr_symbolize(s, pc, f, 8), 1);
    assert_string_equal(f[0].function, function);
    assert_null(f[0].file);
    assert_int_equal(f[0].line, 0);
}

/* Code without DWARF between two units: named from the symbol table,
 * demangled as DWARF names are, and with no file:line. */
static void test_no_dwarf_in_a_gap(void **state)
{
    (void)state;
    struct ctr_symbolizer *s = ctr_symbolizer_new(self->m, self->n);
    assert_non_null(s);
    nodwarf_member(1);
    uint64_t pc = fn_pc((void (*)(void))nodwarf_member);
    assert_symbol_only(s, pc, "nodwarf::Gap::probe");
    assert_symbol_only(s, pc + 2, "nodwarf::Gap::probe");
    ctr_symbolizer_free(s);
}

/* An address that a unit's line table covers but its ranges do not gets no
 * file:line (symbolize-nodwarf.c describes the unit). */
static void test_unit_ranges_gap(void **state)
{
    (void)state;
    struct ctr_symbolizer *s = ctr_symbolizer_new(self->m, self->n);
    assert_non_null(s);
    struct ctr_sym_frame f[8];
    /* The unit is read: its ranges give a and c their lines. */
    assert_int_equal(ctr_symbolize(s, fn_pc(ctr_gap_a), f, 8), 1);
    assert_string_equal(f[0].function, "ctr_gap_a");
    assert_string_equal(f[0].file, "/ctrace-test/gap-unit.c");
    assert_int_equal(f[0].line, 10);
    assert_int_equal(ctr_symbolize(s, fn_pc(ctr_gap_c) + 1, f, 8), 1);
    assert_string_equal(f[0].file, "/ctrace-test/gap-unit.c");
    assert_int_equal(f[0].line, 31);
    for (uint64_t pc = fn_pc(ctr_gap_b); pc < fn_pc(ctr_gap_c); pc++)
        assert_symbol_only(s, pc, "ctr_gap_b");
    ctr_symbolizer_free(s);
}

/* An address without a symbol is shown as its file and the address in that
 * file (what addr2line -e takes), not as an address ASLR picked. */
static void test_module_offset(void **state)
{
    (void)state;
    const struct ctr_sym_mapping maps[] = {
        {.start = 0x7f0000001000,
         .limit = 0x7f0000009000,
         .file_offset = 0x1000,
         .bias = 0x7f0000000000,
         .path = "/nonexistent/libfoo.so"},
        {.start = 0x400000, .limit = 0x401000, .bias = 0, .path = "/nonexistent/exe"},
    };
    struct ctr_symbolizer *s = ctr_symbolizer_new(maps, 2);
    assert_non_null(s);
    char buf[64];
    assert_string_equal(ctr_symbolizer_module_offset(s, 0x7f0000001234, buf, sizeof buf),
                        "/nonexistent/libfoo.so+0x1234");
    assert_string_equal(ctr_symbolizer_module_offset(s, 0x400010, buf, sizeof buf),
                        "/nonexistent/exe+0x400010");
    assert_string_equal(ctr_symbolizer_module_offset(s, 0x7f0000009000, buf, sizeof buf),
                        "0x7f0000009000");
    char tiny[8]; /* cut, as snprintf cuts */
    assert_string_equal(ctr_symbolizer_module_offset(s, 0x400010, tiny, sizeof tiny), "/nonexi");
    ctr_symbolizer_free(s);
    assert_string_equal(ctr_symbolizer_module_offset(NULL, 0x1000, buf, sizeof buf), "0x1000");
}

/* Checks that fn (called `name`) turns cases[i][0] into cases[i][1]. */
static void check_names(const char *name, char *(*fn)(const char *), const char *const (*cases)[2],
                        size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *r = fn(cases[i][0]);
        assert_non_null(r);
        if (strcmp(r, cases[i][1]) != 0)
            fail_msg("%s(\"%s\") = \"%s\", want \"%s\"", name, cases[i][0], r, cases[i][1]);
        free(r);
    }
}

/* The reduction of demangled names, case by case (symname.h). */
static void test_symname_reduce(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"store::Table::put(int, std::__cxx11::basic_string<char, std::char_traits<char>, "
         "std::allocator<char> >)",
         "store::Table::put"},
        {"store::Table::get[abi:cxx11](int) const", "store::Table::get"},
        {"store::Queue<int>::pop(int&)", "store::Queue<int>::pop"},
        {"void f<int>(int)", "f<int>"},
        {"std::vector<int, std::allocator<int> > make<int>()", "make<int>"},
        {"char const* name<char>()", "name<char>"},
        {"main::{lambda()#1}::operator()() const", "main::{lambda()#1}::operator()"},
        {"store::f()::Local::g()", "store::f::Local::g"},
        {"foo(int) [clone .constprop.0] [clone .cold]", "foo"},
        {"(anonymous namespace)::foo()", "(anonymous namespace)::foo"},
        {"bool operator< <int>(X<int> const&, X<int> const&)", "operator< <int>"},
        {"X::operator<<(int)", "X::operator<<"},
        {"X::operator->() const", "X::operator->"},
        {"X::operator()(int) &&", "X::operator()"},
        {"X::operator new[](unsigned long)", "X::operator new[]"},
        {"X::operator std::vector<int, std::allocator<int> >() const",
         "X::operator std::vector<int, std::allocator<int> >"},
        {"operator\"\" _km(unsigned long long)", "operator\"\" _km"},
        {"non-virtual thunk to store::B::f(int)", "non-virtual thunk to store::B::f"},
        /* Not functions, or not understood: whole. */
        {"vtable for store::Table", "vtable for store::Table"},
        {"guard variable for store::f()::x", "guard variable for store::f()::x"},
        {"main", "main"},
        {"f(int", "f(int"},
        {"f<int>>(int)", "f<int>>(int)"},
        {"()", "()"},
        {"", ""},
    };
    check_names("ctr_symname_reduce", ctr_symname_reduce, cases, sizeof cases / sizeof cases[0]);
    assert_null(ctr_symname_reduce(NULL));
}

/* Mangled names demangled, then reduced; anything else as it is. */
static void test_symname(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"_ZNSt6thread4joinEv", "std::thread::join"},
        {"_ZNK5store5Table3getB5cxx11Ei", "store::Table::get"},
        {"_ZN5store5QueueIiE3popERi", "store::Queue<int>::pop"},
        {"_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()"},
        {"_Z3fooi.constprop.0", "foo"},
        {"_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo"},
        {"cache_get_slow", "cache_get_slow"},
        {"_Zbogus", "_Zbogus"},
        {"_Z", "_Z"},
        {"_ZL3buf", "buf"},
    };
    check_names("ctr_symname", ctr_symname, cases, sizeof cases / sizeof cases[0]);
    assert_null(ctr_symname(NULL));
    /* A hostile file's names: very long, or deeply nested. */
    size_t n = 1 << 16;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memcpy(big, "_Z", 2);
    memset(big + 2, 'P', n - 2);
    big[n] = '\0';
    char *r = ctr_symname(big);
    assert_string_equal(r, big);
    free(r);
    memcpy(big, "_Z1f", 4);
    memset(big + 4, 'P', 4000);
    memcpy(big + 4004, "v", 2);
    free(ctr_symname(big)); /* any answer; no crash */
    free(big);
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
        cmocka_unit_test(test_dwarf_qualified_names),
        cmocka_unit_test(test_no_dwarf_in_a_gap),
        cmocka_unit_test(test_unit_ranges_gap),
        cmocka_unit_test(test_module_offset),
        cmocka_unit_test(test_symname_reduce),
        cmocka_unit_test(test_symname),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
