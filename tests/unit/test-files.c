/* SPDX-License-Identifier: MIT */
/* test-files.c - the files libctrace writes, as the program's owner would
 * want them:
 *   - traces and dumps are created 0600 (they hold the program's log
 *     messages), whatever the umask allows;
 *   - a symlink planted at the path is not followed: trace_start refuses it
 *     (ELOOP), a dump replaces the link and leaves its target alone;
 *   - eight threads dumping to one path at once: exactly one succeeds, the
 *     others get -EBUSY, and the file left is the winner's whole dump;
 *   - a dump returns in milliseconds while threads write flat out (the
 *     window is in memory; it does not wait for the collector's round);
 *   - the latency trigger's dumps are 0600 too. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "ctrace/flightrec.h"
#include "ctrace/trace.h"
#include "read/load.h"

#define MS (1000 * 1000ull)

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ctrace-files-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (flightrec_is_running())
        flightrec_stop();
    if (trace_is_running())
        trace_stop();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

static void in_dir(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode & 07777;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void assert_file_is(const char *path, const char *text)
{
    char buf[256] = {0};
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    assert_int_equal(n, strlen(text));
    assert_string_equal(buf, text);
}

/* A dump that reads whole, as every ctrace command would. */
static void assert_readable_trace(const char *path)
{
    struct ctr_trace tr;
    char err[256];
    if (ctr_trace_read(path, &tr, err, sizeof(err)) != 0)
        fail_msg("%s: %s", path, err);
    assert_string_equal(tr.damage, "");
    assert_true(tr.complete);
    ctr_trace_free(&tr);
}

/* ---------------------------------------------------------------------------
 * Modes and symlinks
 * ------------------------------------------------------------------------- */

static void test_trace_is_private_and_no_symlink_followed(void **state)
{
    (void)state;
    mode_t old = umask(022);
    char trace[96], victim[96], link[96];
    in_dir(trace, sizeof(trace), "trace.bin");
    in_dir(victim, sizeof(victim), "victim.txt");
    in_dir(link, sizeof(link), "link.bin");
    assert_int_equal(trace_start(trace), 0);
    trace_task_end(trace_task_begin("t", 0));
    assert_int_equal(trace_stop(), 0);
    assert_int_equal(mode_of(trace), 0600);
    assert_readable_trace(trace);

    write_file(victim, "precious data\n");
    assert_int_equal(symlink(victim, link), 0);
    assert_int_equal(trace_start(link), -ELOOP);
    assert_false(trace_is_running());
    assert_file_is(victim, "precious data\n");
    umask(old);
}

static void test_dump_is_private_and_replaces_a_symlink(void **state)
{
    (void)state;
    mode_t old = umask(022);
    char dump[96], victim[96];
    in_dir(dump, sizeof(dump), "dump.bin");
    in_dir(victim, sizeof(victim), "victim.txt");
    write_file(victim, "precious data\n");
    assert_int_equal(symlink(victim, dump), 0);
    struct flightrec_config c = {0};
    assert_int_equal(flightrec_start(&c), 0);
    trace_task_t t = trace_task_begin("req", 0);
    trace_log(t, "auth", "password=hunter2");
    trace_task_end(t);
    assert_int_equal(flightrec_dump(dump), 0);
    assert_file_is(victim, "precious data\n"); /* the target untouched */
    struct stat st;
    assert_int_equal(lstat(dump, &st), 0);
    assert_true(S_ISREG(st.st_mode)); /* the link itself was replaced */
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_readable_trace(dump);
    /* A dump that fails leaves the file it would have replaced. */
    assert_int_equal(flightrec_stop(), 0);
    assert_int_equal(flightrec_dump(dump), -ENOENT);
    assert_readable_trace(dump);
    umask(old);
}

/* ---------------------------------------------------------------------------
 * Concurrent dumps to one path
 * ------------------------------------------------------------------------- */

static pthread_barrier_t go;
static char same_path[96];

static void *dump_once(void *arg)
{
    int *rc = arg;
    pthread_barrier_wait(&go);
    *rc = flightrec_dump(same_path);
    return NULL;
}

static _Atomic int writers_stop;
static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;

static void *busy_writer(void *arg)
{
    (void)arg;
    for (long n = 0; !atomic_load_explicit(&writers_stop, memory_order_relaxed); n++) {
        trace_task_t t = trace_task_begin("w", 0);
        trace_region_begin(t, "r");
        pthread_mutex_lock(&busy_lock);
        pthread_mutex_unlock(&busy_lock);
        trace_logf(t, "c", "event %ld", n);
        trace_region_end(t, "r");
        trace_task_end(t);
    }
    return NULL;
}

static void writers(pthread_t *th, int n)
{
    atomic_store(&writers_stop, 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&th[i], NULL, busy_writer, NULL), 0);
}

static void writers_end(pthread_t *th, int n)
{
    atomic_store(&writers_stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

static void test_concurrent_dumps_to_one_path(void **state)
{
    (void)state;
    /* Each round reads the winner's dump back: under TSan, fewer rounds. */
    enum { DUMPERS = 8, ROUNDS = CTR_TEST_TSAN ? 3 : 10 };
    struct flightrec_config c = {.min_age_ns = 200 * MS, .max_bytes = 1u << 20};
    assert_int_equal(flightrec_start(&c), 0);
    pthread_t w[2];
    writers(w, 2);
    in_dir(same_path, sizeof(same_path), "same.bin");
    for (int round = 0; round < ROUNDS; round++) {
        unlink(same_path);
        pthread_barrier_init(&go, NULL, DUMPERS);
        pthread_t d[DUMPERS];
        int rc[DUMPERS];
        for (int i = 0; i < DUMPERS; i++)
            assert_int_equal(pthread_create(&d[i], NULL, dump_once, &rc[i]), 0);
        int ok = 0, busy = 0;
        for (int i = 0; i < DUMPERS; i++) {
            pthread_join(d[i], NULL);
            ok += rc[i] == 0;
            busy += rc[i] == -EBUSY;
        }
        pthread_barrier_destroy(&go);
        for (int i = 0; i < DUMPERS; i++)
            if (rc[i] != 0 && rc[i] != -EBUSY)
                print_message("dumper %d: %s\n", i, strerror(-rc[i]));
        /* At least one wins; every other call was told another dump ran;
         * whatever won, the file is a whole dump. */
        assert_true(ok >= 1);
        assert_int_equal(ok + busy, DUMPERS);
        assert_readable_trace(same_path);
    }
    writers_end(w, 2);
    assert_int_equal(flightrec_stop(), 0);
}

/* ---------------------------------------------------------------------------
 * Dump latency while threads write flat out
 * ------------------------------------------------------------------------- */

static void test_dump_returns_quickly_under_writers(void **state)
{
    (void)state;
    struct flightrec_config c = {.min_age_ns = 200 * MS, .max_bytes = 4u << 20};
    assert_int_equal(flightrec_start(&c), 0);
    pthread_t w[3];
    writers(w, 3);
    usleep(300 * 1000); /* a window, and a collector far behind the writers */
    char dump[96];
    in_dir(dump, sizeof(dump), "quick.bin");
    uint64_t worst = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = ctr_test_now_ns();
        assert_int_equal(flightrec_dump(dump), 0);
        uint64_t took = ctr_test_now_ns() - t0;
        worst = took > worst ? took : worst;
        usleep(20 * 1000);
    }
    writers_end(w, 3);
    assert_int_equal(flightrec_stop(), 0);
    print_message("dump under 3 writers: worst %.1f ms\n", worst / 1e6);
    /* The old dump waited for a collector round: seconds here. A few
     * megabytes from memory take milliseconds; 1 s leaves room for a very
     * busy machine. */
    assert_true(worst < 1000 * MS);
    assert_readable_trace(dump);
}

/* ---------------------------------------------------------------------------
 * The latency trigger's files
 * ------------------------------------------------------------------------- */

static void test_trigger_dumps_are_private(void **state)
{
    (void)state;
    mode_t old = umask(0);
    struct flightrec_config c = {0};
    assert_int_equal(flightrec_start(&c), 0);
    struct flightrec_trigger t = {.dir = dir, .latency_ns = 1000};
    assert_int_equal(flightrec_trigger_latency(&t), 0);
    trace_task_end(trace_task_begin("slow", 0));
    assert_int_equal(flightrec_latency(5000), 1);
    /* The collector writes it in its next round; stop waits for that. */
    struct flightrec_stats st;
    for (int i = 0; i < 500; i++) {
        flightrec_get_stats(&st);
        if (st.dumps_written + st.dumps_failed > 0)
            break;
        usleep(10 * 1000);
    }
    assert_int_equal(st.dumps_written, 1);
    assert_int_equal(flightrec_stop(), 0);
    char cmd[160], name[256] = {0};
    snprintf(cmd, sizeof(cmd), "ls %s | grep '^ctrace-'", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(name, sizeof(name), p));
    pclose(p);
    name[strcspn(name, "\n")] = 0;
    char path[400];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_int_equal(mode_of(path), 0600);
    assert_readable_trace(path);
    umask(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_trace_is_private_and_no_symlink_followed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dump_is_private_and_replaces_a_symlink, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_dumps_to_one_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dump_returns_quickly_under_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trigger_dumps_are_private, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
