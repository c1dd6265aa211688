/* SPDX-License-Identifier: MIT */
/* cputrace.h - a synthetic CPU-sampled trace (format 1.3, FORMAT.md §4.1)
 * with known answers, for the tests of what the analyzer makes of CPU
 * samples (tests/test-cpu.c, tests/e2e/cpu.sh) while the tracer cannot take
 * them yet, or not deterministically.
 *
 * The trace is written by the tracer's own record writer (record.h). Its
 * stacks are addresses of the functions in cputrace.c, and its MAPPING
 * records the executable segments of the running program, so the analyzer
 * symbolizes them to cpu_regcomp, cpu_hash, ... as long as the program
 * that wrote the trace is there to read.
 *
 * The scenario, in ms after the trace's start, one sample per 10 ms of CPU:
 *   thread 2 "worker" (start cpu_worker): task 1 "request" from 100 to 350,
 *     region "parse" 100-250: 15 samples at cpu_regcomp < cpu_redact <
 *     cpu_worker (110 .. 250); region "hash" 250-350: 10 samples at
 *     cpu_hash < cpu_worker (260 .. 350), the last one of 2 periods; then 5
 *     samples at cpu_spin < cpu_worker (410 .. 450), for no task.
 *   thread 3 "worker" (start cpu_worker): task 2 "request" from 100 to 120
 *     (no region): 2 samples at cpu_hash (110, 120); then 3 at cpu_spin
 *     (200 .. 220).
 *   thread 1 "main" (running before the trace): 2 samples at cpu_spin <
 *     cpu_main (50, 60).
 * The CPU_SAMPLE events go in the threads' BATCH records for the timer
 * source, in SWITCHES records for perf_event.
 */
#ifndef CTR_TEST_CPUTRACE_H
#define CTR_TEST_CPUTRACE_H

#include <stdint.h>

#define CPU_PERIOD_NS 10000000ull /* 100 Hz */

/* The scenario's answers (see above). */
enum {
    CPU_ALL_SAMPLES = 37, /* CPU ns: 38 periods */
    CPU_ALL_PERIODS = 38,
    CPU_TASKS_SAMPLES = 27, /* -task request: 25 of task 1, 2 of task 2 */
    CPU_TASKS_PERIODS = 28,
    CPU_SLOW_SAMPLES = 25, /* -latmin 100ms: task 1 only */
    CPU_SLOW_PERIODS = 26,
    CPU_PARSE_SAMPLES = 15,      /* -region parse */
    CPU_HASH_TASK1_SAMPLES = 10, /* -region hash */
    CPU_HASH_TASK1_PERIODS = 11,
};

enum cpu_trace_source {
    CPU_TRACE_NONE = 0, /* no SAMPLING, no samples: an unsampled trace */
    CPU_TRACE_PERF = 1, /* = CTR_CPU_PERF */
    CPU_TRACE_TIMER = 2 /* = CTR_CPU_TIMER */
};

/* cpu_trace_write() : writes the scenario to path, sampled by `source`,
 * with SAMPLING's lost count `lost`. @return 0, or -1 with errno set. */
int cpu_trace_write(const char *path, enum cpu_trace_source source, uint64_t lost);

/* The functions the samples' stacks are in (their names are what the
 * tests look for). */
void cpu_regcomp(void);
void cpu_redact(void);
void cpu_hash(void);
void cpu_spin(void);
void cpu_worker(void);
void cpu_main(void);

#endif
