/* SPDX-License-Identifier: MIT */
/* stats.c - `ctrace stats`: the summary of a trace: extent, threads, events by
 * type, bytes per event, and every count of what the trace lost (dropped
 * events, stack-table overflows, untraced threads), so that a reader knows
 * how far to trust the rest. */
#include "report/stats.h"

#include "model/cpucheck.h"
#include "profile/text.h"

const char *ctr_stats_empty(const struct ctr_trace *t)
{
    if (t->nthreads > 0 && t->nevents > 0)
        return NULL;
    if (t->complete)
        return "no threads or no events: the program ran to its end without a traced "
               "event (no thread created, no wait, no I/O over the threshold)";
    return "no threads or no events, and no end record: the traced process ended "
           "(_exit, a signal, an exec) before its first flush, or it forked into the "
           "background and exited (a daemon: its forked child is not traced; run it in "
           "the foreground)";
}

int ctr_stats_sampled(const struct ctr_trace *t)
{
    return t->cpu_source != 0 || t->events_by_type[CTR_EV_CPU_SAMPLE] != 0;
}

const char *ctr_stats_cpu_source(const struct ctr_trace *t)
{
    /* SAMPLING's sources are bits (FORMAT.md §3): both when threads whose
     * perf event could not open were sampled by the timer. */
    switch (t->cpu_source) {
    case CTR_CPU_PERF:
        return "perf_event";
    case CTR_CPU_TIMER:
        return "timer";
    case CTR_CPU_PERF | CTR_CPU_TIMER:
        return "perf_event, and the timer where it could not open";
    case 0:
        return "no source could start";
    default:
        return "unknown source";
    }
}

/* "cpu samples: N (perf_event, 100 Hz, M lost)", and what the loss means;
 * nothing for a trace that was not sampled (FORMAT.md §4.1). */
static void print_sampling(const struct ctr_trace *t, FILE *out)
{
    if (!ctr_stats_sampled(t))
        return;
    fprintf(out, "cpu samples:  %llu (%s", (unsigned long long)t->events_by_type[CTR_EV_CPU_SAMPLE],
            ctr_stats_cpu_source(t));
    if (t->cpu_period_ns)
        fprintf(out, ", %.4g Hz", 1e9 / (double)t->cpu_period_ns);
    fprintf(out, ", %llu lost)\n", (unsigned long long)t->cpu_lost);
    if (t->cpu_lost)
        fprintf(out,
                "              %llu CPU samples lost (the kernel's ring was full, or the "
                "signal came while the tracer was writing): the CPU profile undercounts\n",
                (unsigned long long)t->cpu_lost);
}

void ctr_stats_warn_offcpu(FILE *out, const struct ctr_time_totals *time)
{
    uint64_t off = time->times[CTR_TIME_OFFCPU];
    if (off * 100 <= time->modelled_ns * CTR_OFFCPU_WARN_PCT)
        return;
    char d[32];
    fprintf(out,
            "\nwarning: %s (%.1f%%) of the time no recorded wait explains was off the CPU "
            "(off-cpu): a blocking call ctrace does not wrap (docs/status.md)\n",
            ctr_text_ns((int64_t)off, d, sizeof(d)),
            time->modelled_ns ? 100.0 * (double)off / (double)time->modelled_ns : 0.0);
}

/* "thread time:  running 1.2s, runnable ..., off-cpu ..." summed over the
 * threads; off-cpu only where CPU readings bound running time. */
static void print_time(const struct ctr_time_totals *time, FILE *out)
{
    char d[32];
    fputs("thread time: ", out);
    int ncols = time->checked ? CTR_TIME_N : CTR_TIME_OFFCPU;
    for (int k = 0; k < ncols; k++)
        fprintf(out, "%s %s %s", k ? "," : "", ctr_time_names[k],
                ctr_text_ns((int64_t)time->times[k], d, sizeof(d)));
    fprintf(out, " (summed over %zu threads)\n", time->nthreads);
    if (!time->checked)
        fputs("              no CPU-time readings (a trace before format 1.4, or from LTTng): "
              "running may include time off the CPU\n",
              out);
}

void ctr_stats_print(const struct ctr_trace *t, const char *name,
                     const struct ctr_time_totals *time, FILE *out)
{
    double secs = (double)(t->end_ns - t->start_ns) / 1e9;
    size_t with_events = 0;
    uint64_t dropped = 0, lost = 0;
    for (size_t i = 0; i < t->nthreads; i++) {
        with_events += t->threads[i].seen > 0;
        dropped += t->threads[i].dropped;
        lost += t->threads[i].lost;
    }
    if (t->complete && t->end_dropped > dropped)
        dropped = t->end_dropped;
    if (dropped < t->lttng_discarded) /* an LTTng trace without its END */
        dropped = t->lttng_discarded;
    uint64_t odd = t->odd;

    fprintf(out, "trace:        %s (%s)\n", name,
            t->damage[0]  ? "damaged: read up to the damage"
            : t->complete ? "complete"
                          : "incomplete: no end record");
    fprintf(out, "program:      %s (pid %llu)\n", t->exe && t->exe[0] ? t->exe : "?",
            (unsigned long long)t->pid);
    fprintf(out, "duration:     %.6f s in %llu generations\n", secs,
            (unsigned long long)t->generations);
    uint64_t switches = 0, switches_lost = 0;
    for (size_t i = 0; i < t->nthreads; i++) {
        switches += t->threads[i].nswitches;
        switches_lost += t->threads[i].switches_lost;
    }
    if (t->flags & CTR_INFO_SCHED_SWITCHES)
        fprintf(out, "sched:        release events and %llu context switches (perf_event)\n",
                (unsigned long long)switches);
    else
        fprintf(out, "sched:        release events only (context switches not recorded)\n");
    if (t->end_sched_failed)
        fprintf(out, "              %llu threads without context switches (perf_event refused)\n",
                (unsigned long long)t->end_sched_failed);
    if (switches_lost)
        fprintf(out, "              %llu context switches lost (the kernel's ring was full)\n",
                (unsigned long long)switches_lost);
    print_sampling(t, out);
    fprintf(out, "clock:        %s, %zu calibration points\n",
            t->tick_source == CTR_TICKS_TSC ? "tsc" : "monotonic", t->nclocks);
    unsigned fp = !!(t->flags & CTR_INFO_STACKS_FRAME_POINTER);
    unsigned dwarf = !!(t->flags & CTR_INFO_STACKS_DWARF);
    fprintf(out, "stacks taken: %s\n",
            fp && dwarf ? "frame-pointer walk, and eh_frame unwinding (libunwind) where it "
                          "fell short"
            : fp        ? "frame-pointer walk"
            : dwarf     ? "eh_frame unwinding (libunwind)"
                        : "unknown");
    fprintf(out, "I/O waits:    calls shorter than %.1f us not recorded\n",
            (double)t->io_min_ns / 1e3);
    fprintf(out, "threads:      %zu (%zu with events)\n", t->nthreads, with_events);
    if (time)
        print_time(time, out);
    fprintf(out, "tables:       %zu stacks, %zu strings, %zu mappings\n", t->nstacks, t->nstrings,
            t->nmappings);
    fprintf(out, "events:       %llu\n", (unsigned long long)t->nevents);
    for (int ty = 1; ty < CTR_EV_LIMIT; ty++)
        if (ctr_event_specs[ty].name && (ty != CTR_EV_CPU_SAMPLE || ctr_stats_sampled(t)))
            fprintf(out, "  %-14s %llu\n", ctr_event_specs[ty].name,
                    (unsigned long long)t->events_by_type[ty]);
    if (t->ctf_tracepoints)
        fprintf(out,
                "source:       an LTTng trace: %llu ctrace tracepoints read through "
                "babeltrace2\n",
                (unsigned long long)t->ctf_tracepoints);
    else if (t->nevents == 0)
        fprintf(out, "bytes:        %llu in the file (no events)\n",
                (unsigned long long)t->file_bytes);
    else
        fprintf(out, "bytes:        %llu in the file, %.2f per event (%.2f before compression)\n",
                (unsigned long long)t->file_bytes, (double)t->file_bytes / (double)t->nevents,
                (double)t->batch_bytes / (double)t->nevents);
    fprintf(out, "dropped:      %llu events%s\n", (unsigned long long)dropped,
            dropped ? " (buffers full, or a signal handler's events in the middle of "
                      "another event: the trace has gaps)"
                    : "");
    if (t->lttng_discarded)
        fprintf(out,
                "              %llu of them discarded by LTTng: its sub-buffers were full "
                "(give the channel more, or bigger, sub-buffers)\n",
                (unsigned long long)t->lttng_discarded);
    if (lost != dropped)
        fprintf(out, "              %llu of them marked in place by Lost events\n",
                (unsigned long long)lost);
    if (t->end_stack_overflows)
        fprintf(out, "stack table:  %llu stacks not recorded (table full)\n",
                (unsigned long long)t->end_stack_overflows);
    if (t->end_untraced)
        fprintf(out, "untraced:     %llu threads (thread table full)\n",
                (unsigned long long)t->end_untraced);
    if (odd)
        fprintf(out, "inconsistent: %llu events out of place (after drops)\n",
                (unsigned long long)odd);
    const char *empty = ctr_stats_empty(t);
    if (empty)
        fprintf(out, "empty:        %s\n", empty);
    if (t->warning[0])
        fprintf(out, "warning:      %s\n", t->warning);
    if (t->damage[0])
        fprintf(out, "damage:       %s\n", t->damage);
    if (t->gaps)
        fprintf(out, "missing:      %llu span%s of %.6f s in all%s, skipped for damage\n",
                (unsigned long long)t->gaps, t->gaps == 1 ? "" : "s", (double)t->missing_ns / 1e9,
                t->starts_damaged ? " (and, the first, what came before the trace's start: "
                                    "for how long, not known)"
                                  : "");
    if (time)
        ctr_stats_warn_offcpu(out, time);
}
