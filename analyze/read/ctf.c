/* SPDX-License-Identifier: MIT */
/* ctf.c - LTTng traces read back as native frames (see ctf.h): the
 * babeltrace2 side. A graph: source.ctf.fs over every trace found under the
 * directory, flt.utils.muxer to merge their streams by time, and a simple
 * sink whose consume step (one bt_graph_run_once) reads each `ctrace`
 * tracepoint's fields and process and hands them to the rebuilding
 * (ctf_rebuild.h), which makes the frames. ctr_ctf_next runs the graph until
 * a frame is ready, then hands it out as source.c hands out a file's.
 * babeltrace2 2.0 is not trusted with damage (issue 29): the damage it
 * spins or aborts on is looked for first (ctf_check.h), the error it leaves
 * is taken after each call (take_bt_error), and each call is bounded by a
 * watchdog (watchdog.h) that ends the process, said, when one never returns.
 */
#include "read/ctf.h"

#include <babeltrace2/babeltrace.h>
#include <errno.h>
#include <stdarg.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "read/ctf_check.h"
#include "read/ctf_rebuild.h"
#include "read/watchdog.h"
#include "ctrace_format.h"
#include "read/idmap.h"
#include "read/pbwrite.h"
#include "read/frame.h"

struct ctr_ctf {
    char *dir;
    uint64_t want_pid; /* as ctr_ctf_open() was given */
    bt_graph *graph;
    bt_message_iterator *it; /* the simple sink's */
    struct ctr_rebuild *rb;
    uint64_t nevents;
    char error[160]; /* babeltrace2's (the rebuilding has its own) */
    /* Event class -> what it is (ctr_rebuild_classify). */
    struct ctr_idmap kinds;
    /* Where an event's process is: its stream class's context member
     * `vpid` (index + 1; 0: none), else its trace's environment. */
    const void *ctx_class;
    uint64_t ctx_vpid;
    const void *env_trace;
    uint64_t env_pid;
    struct ctr_pb seq; /* the sequence of the tracepoint being read */
    /* Bounds each call into babeltrace2 (NULL: CTRACE_CTF_TIMEOUT=0). */
    struct ctr_watchdog *dog;
};

__attribute__((format(printf, 2, 3))) static void fail(struct ctr_ctf *c, const char *fmt, ...)
{
    if (!c->error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->error, sizeof(c->error), fmt, ap);
        va_end(ap);
    }
}

/* Takes the error babeltrace2 left on this thread, if any, and says it in
 * buf after prefix ("PREFIX: CAUSE"; buf is left alone when there is none).
 * babeltrace2 aborts the process when one of its functions is called while
 * the thread has an error, and its ctf plugin (2.0) can leave one behind a
 * call that returned OK (a damaged packet, issue 29): so each call is
 * followed by this, whatever it returned. @return 1 if there was an error. */
static int take_bt_error(char *buf, size_t len, const char *prefix)
{
    const bt_error *e = bt_current_thread_take_error();
    if (!e)
        return 0;
    snprintf(buf, len, "%s: %s", prefix,
             bt_error_get_cause_count(e)
                 ? bt_error_cause_get_message(bt_error_borrow_cause_by_index(e, 0))
                 : "failed");
    bt_error_release(e);
    return 1;
}

/* ---------------------------------------------------------------------------
 * Reading a tracepoint's fields
 * ------------------------------------------------------------------------- */

static int read_fields(const bt_field *payload, uint64_t *v, int max, struct ctr_pb *seq)
{
    const bt_field_class *sc = bt_field_borrow_class_const(payload);
    uint64_t n = bt_field_class_structure_get_member_count(sc);
    int nv = 0;
    seq->len = 0;
    for (uint64_t i = 0; i < n; i++) {
        const bt_field_class_structure_member *m =
            bt_field_class_structure_borrow_member_by_index_const(sc, i);
        if (bt_field_class_structure_member_get_name(m)[0] == '_')
            continue;
        const bt_field *f = bt_field_structure_borrow_member_field_by_index_const(payload, i);
        bt_field_class_type t = bt_field_get_class_type(f);
        if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
            if (nv < max)
                v[nv] = bt_field_integer_unsigned_get_value(f);
            nv++;
        } else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
            if (nv < max)
                v[nv] = (uint64_t)bt_field_integer_signed_get_value(f);
            nv++;
        } else if (t == BT_FIELD_CLASS_TYPE_STRING) {
            ctr_pb_append(seq, bt_field_string_get_value(f), bt_field_string_get_length(f));
        } else if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_ARRAY)) {
            /* Bytes (a build-id) as bytes, wider integers (a stack's
             * addresses) as 8 bytes each. */
            const bt_field_class *ec = bt_field_class_array_borrow_element_field_class_const(
                bt_field_borrow_class_const(f));
            if (!bt_field_class_type_is(bt_field_class_get_type(ec),
                                        BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
                return -1;
            size_t width = bt_field_class_integer_get_field_value_range(ec) <= 8 ? 1 : 8;
            uint64_t len = bt_field_array_get_length(f);
            for (uint64_t k = 0; k < len; k++) {
                uint64_t x = bt_field_integer_unsigned_get_value(
                    bt_field_array_borrow_element_field_by_index_const(f, k));
                ctr_pb_append(seq, &x, width); /* little-endian: the low byte first */
            }
        } else {
            return -1;
        }
    }
    return nv;
}

/* The process of an event: its `vpid` context, its trace's `vpid`; 0 if
 * neither says. */
static uint64_t event_pid(struct ctr_ctf *c, const bt_event *ev)
{
    const bt_field *ctx = bt_event_borrow_common_context_field_const(ev);
    if (ctx) {
        const bt_field_class *cc = bt_field_borrow_class_const(ctx);
        if ((const void *)cc != c->ctx_class) {
            c->ctx_class = cc;
            c->ctx_vpid = 0;
            uint64_t n = bt_field_class_structure_get_member_count(cc);
            for (uint64_t i = 0; i < n; i++)
                if (strcmp(bt_field_class_structure_member_get_name(
                               bt_field_class_structure_borrow_member_by_index_const(cc, i)),
                           "vpid") == 0)
                    c->ctx_vpid = i + 1;
        }
        if (c->ctx_vpid) {
            const bt_field *f =
                bt_field_structure_borrow_member_field_by_index_const(ctx, c->ctx_vpid - 1);
            return (uint64_t)bt_field_integer_signed_get_value(f);
        }
    }
    const bt_trace *tr = bt_stream_borrow_trace_const(bt_event_borrow_stream_const(ev));
    if ((const void *)tr != c->env_trace) {
        c->env_trace = tr;
        c->env_pid = 0;
        const bt_value *v = bt_trace_borrow_environment_entry_value_by_name_const(tr, "vpid");
        if (v && bt_value_is_signed_integer(v))
            c->env_pid = (uint64_t)bt_value_integer_signed_get(v);
    }
    return c->env_pid;
}

static void on_message(struct ctr_ctf *c, const bt_message *m)
{
    bt_message_type mt = bt_message_get_type(m);
    if (mt == BT_MESSAGE_TYPE_DISCARDED_EVENTS) {
        uint64_t n;
        if (bt_message_discarded_events_get_count(m, &n) == BT_PROPERTY_AVAILABILITY_AVAILABLE)
            ctr_rebuild_discarded(c->rb, n);
        return;
    }
    if (mt != BT_MESSAGE_TYPE_EVENT || c->error[0])
        return;
    c->nevents++;
    const bt_event *ev = bt_message_event_borrow_event_const(m);
    const bt_event_class *cls = bt_event_borrow_class_const(ev);
    uint64_t *known = ctr_idmap_get(&c->kinds, (uintptr_t)cls);
    uint64_t what = known ? *known : ctr_rebuild_classify(bt_event_class_get_name(cls));
    if (!known && ctr_idmap_put(&c->kinds, (uintptr_t)cls, what) != 0) {
        fail(c, "out of memory");
        return;
    }
    if ((int)(what >> 16) == CTR_TP_NONE)
        return;
    uint64_t v[CTR_MAX_FIELDS + 4];
    int nv = read_fields(bt_event_borrow_payload_field_const(ev), v, CTR_MAX_FIELDS + 4, &c->seq);
    if (nv < 0 || c->seq.err) {
        fail(c,
             nv < 0 ? "%s: a field of a type the ctrace provider never writes"
                    : "%s: out of memory",
             bt_event_class_get_name(cls));
        return;
    }
    ctr_rebuild_point(c->rb, what, event_pid(c, ev), v, nv, c->seq.b, c->seq.len, c->nevents);
}

/* ---------------------------------------------------------------------------
 * The graph
 * ------------------------------------------------------------------------- */

static bt_graph_simple_sink_component_initialize_func_status sink_init(bt_message_iterator *it,
                                                                       void *data)
{
    ((struct ctr_ctf *)data)->it = it;
    return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

static bt_graph_simple_sink_component_consume_func_status sink_consume(bt_message_iterator *it,
                                                                       void *data)
{
    struct ctr_ctf *c = data;
    bt_message_array_const msgs;
    uint64_t n;
    switch (bt_message_iterator_next(it, &msgs, &n)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
        break;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
    default:
        return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
    }
    for (uint64_t i = 0; i < n; i++) {
        on_message(c, msgs[i]);
        bt_message_put_ref(msgs[i]);
    }
    return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
}

/* What the search of a directory finds (nftw passes no argument through):
 * the directories that hold a CTF trace (a `metadata` file), or the first
 * damage ctf_check.h finds, in err. */
static struct {
    bt_value *traces;
    char *err;
    size_t errlen;
    int rc;
} found;

/* How deep a session's traces lie: ust/uid/UID/64-bit, or a relay daemon's
 * HOST/SESSION/ust/pid/NAME-PID-DATE/64-bit. Deeper is not searched (a
 * user who names / by mistake does not wait for the whole disk). */
#define TRACE_DEPTH_MAX 8

static int find_trace(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    if (type == FTW_D && ftw->level >= TRACE_DEPTH_MAX)
        return FTW_SKIP_SUBTREE;
    const char *base = strrchr(path, '/');
    if (type != FTW_F || !base)
        return FTW_CONTINUE;
    size_t len = strlen(base + 1);
    if (strcmp(base + 1, "metadata") == 0) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path);
        if ((found.rc = ctr_ctf_check_metadata(path, found.err, found.errlen)) != 0)
            return FTW_STOP;
        if (bt_value_array_append_string_element(found.traces, dir) != 0) {
            snprintf(found.err, found.errlen, "%s: out of memory", path);
            found.rc = -ENOMEM;
            return FTW_STOP;
        }
    } else if (len > 4 && strcmp(base + 1 + len - 4, ".idx") == 0) {
        if ((found.rc = ctr_ctf_check_index(path, found.err, found.errlen)) != 0)
            return FTW_STOP;
    }
    return FTW_CONTINUE;
}

/* Builds the graph: source.ctf.fs over the traces, muxer, our sink. */
static int graph_make(struct ctr_ctf *c, char *err, size_t errlen)
{
    const bt_plugin *ctf = NULL, *utils = NULL;
    bt_value *params = bt_value_map_create();
    found.traces = bt_value_array_create();
    found.err = err;
    found.errlen = errlen;
    found.rc = 0;
    int rc = -ENOMEM;
    if (!params || !found.traces)
        goto out;
    if (nftw(c->dir, find_trace, 16, FTW_PHYS | FTW_ACTIONRETVAL) != 0) {
        if (!(rc = found.rc)) {
            snprintf(err, errlen, "%s: cannot search it for CTF traces", c->dir);
            rc = -EIO;
        }
        goto out;
    }
    if (bt_value_array_get_length(found.traces) == 0) {
        snprintf(err, errlen, "%s: a directory with no CTF trace in it (no `metadata` file)",
                 c->dir);
        rc = -ENOENT;
        goto out;
    }
    if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &ctf) !=
            BT_PLUGIN_FIND_STATUS_OK ||
        bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_FALSE, &utils) !=
            BT_PLUGIN_FIND_STATUS_OK) {
        snprintf(err, errlen,
                 "%s: babeltrace2's ctf and utils plugins are not installed "
                 "(Debian: libbabeltrace2-0)",
                 c->dir);
        rc = -ENOENT;
        goto out;
    }
    const bt_component_class_source *fs =
        bt_plugin_borrow_source_component_class_by_name_const(ctf, "fs");
    const bt_component_class_filter *mux =
        bt_plugin_borrow_filter_component_class_by_name_const(utils, "muxer");
    const bt_component_source *src;
    const bt_component_filter *muxer;
    const bt_component_sink *sink;
    c->graph = bt_graph_create(0);
    if (!fs || !mux || !c->graph ||
        bt_value_map_insert_entry(params, "inputs", found.traces) !=
            BT_VALUE_MAP_INSERT_ENTRY_STATUS_OK)
        goto out;
    ctr_watchdog_arm(c->dog);
    bt_graph_add_component_status st =
        bt_graph_add_source_component(c->graph, fs, "ctf", params, BT_LOGGING_LEVEL_NONE, &src);
    ctr_watchdog_disarm(c->dog);
    char what[256];
    snprintf(what, sizeof(what), "%s: babeltrace2 cannot read it as CTF", c->dir);
    int said = take_bt_error(err, errlen, what);
    if (said || st != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
        if (!said)
            snprintf(err, errlen, "%s", what);
        rc = -EINVAL;
        goto out;
    }
    if (bt_graph_add_filter_component(c->graph, mux, "muxer", NULL, BT_LOGGING_LEVEL_NONE,
                                      &muxer) != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
        bt_graph_add_simple_sink_component(c->graph, "ctrace", sink_init, sink_consume, NULL, c,
                                           &sink) != BT_GRAPH_ADD_COMPONENT_STATUS_OK)
        goto out;
    uint64_t nports = bt_component_source_get_output_port_count(src);
    for (uint64_t i = 0; i < nports; i++) {
        /* The muxer adds an input port each time one is connected. */
        uint64_t in = bt_component_filter_get_input_port_count(muxer);
        if (bt_graph_connect_ports(
                c->graph, bt_component_source_borrow_output_port_by_index_const(src, i),
                bt_component_filter_borrow_input_port_by_index_const(muxer, in - 1),
                NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
            goto out;
    }
    if (bt_graph_connect_ports(c->graph,
                               bt_component_filter_borrow_output_port_by_index_const(muxer, 0),
                               bt_component_sink_borrow_input_port_by_index_const(sink, 0),
                               NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
        goto out;
    rc = 0;
out:
    /* Our message says what failed; an error babeltrace2 left must go
     * before its next call (take_bt_error). */
    bt_current_thread_clear_error();
    if (rc == -ENOMEM)
        snprintf(err, errlen, "%s: setting up babeltrace2 failed", c->dir);
    bt_value_put_ref(params);
    bt_value_put_ref(found.traces);
    found.traces = NULL;
    bt_plugin_put_ref(ctf);
    bt_plugin_put_ref(utils);
    return rc;
}

/* Forgets what was read: the state of a new reading. */
static void reading_reset(struct ctr_ctf *c)
{
    ctr_rebuild_free(c->rb);
    c->rb = NULL;
    ctr_idmap_free(&c->kinds);
    c->seq.len = 0;
    c->seq.err = 0;
    c->nevents = 0;
    c->ctx_class = c->env_trace = NULL;
    c->error[0] = 0;
    bt_graph_put_ref(c->graph);
    c->graph = NULL;
    c->it = NULL;
}

/* A new reading: the rebuilding, then the graph. */
static int reading_start(struct ctr_ctf *c, char *err, size_t errlen)
{
    if (!(c->rb = ctr_rebuild_new(c->want_pid))) {
        snprintf(err, errlen, "%s: out of memory", c->dir);
        return -ENOMEM;
    }
    return graph_make(c, err, errlen);
}

/* How long one call into babeltrace2 may take (CTRACE_CTF_TIMEOUT, in
 * seconds; 0: no bound). A call reads a batch of events, or (the first) the
 * metadata and the first packet of each stream: well under a second on any
 * trace seen; the bound only ends the loops babeltrace2 falls into on
 * damage ctf_check.h does not know (a sequence length flipped to billions:
 * it allocates the elements one by one). */
#define CTF_TIMEOUT_DEFAULT 10.0

/* Starts c's watchdog, unless CTRACE_CTF_TIMEOUT is 0. */
static int watchdog_start(struct ctr_ctf *c, char *err, size_t errlen)
{
    const char *v = getenv("CTRACE_CTF_TIMEOUT");
    char *end;
    double s = v && *v ? strtod(v, &end) : CTF_TIMEOUT_DEFAULT;
    if (v && *v && (*end || !(s >= 0 && s < 1e6))) {
        snprintf(err, errlen, "CTRACE_CTF_TIMEOUT=%s: not a number of seconds", v);
        return -EINVAL;
    }
    if (s == 0)
        return 0;
    char msg[256];
    snprintf(msg, sizeof(msg),
             "ctrace: %s: babeltrace2 read nothing for %g s (a damaged trace it loops on?); "
             "stopped (CTRACE_CTF_TIMEOUT sets the bound)",
             c->dir, s);
    int rc = ctr_watchdog_start(&c->dog, s, msg);
    if (rc != 0)
        snprintf(err, errlen, "%s: cannot start the watchdog: %s", c->dir, strerror(-rc));
    return rc;
}

int ctr_ctf_open(const char *dir, uint64_t pid, struct ctr_ctf **out, char *err, size_t errlen)
{
    *out = NULL;
    struct ctr_ctf *c = calloc(1, sizeof(*c));
    if (!c || !(c->dir = strdup(dir))) {
        free(c);
        snprintf(err, errlen, "%s: out of memory", dir);
        return -ENOMEM;
    }
    c->want_pid = pid;
    int rc = watchdog_start(c, err, errlen);
    if (rc == 0)
        rc = reading_start(c, err, errlen);
    if (rc != 0) {
        ctr_ctf_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

int ctr_ctf_next(struct ctr_ctf *c, struct ctr_frame *f)
{
    *f = (struct ctr_frame){0};
    for (;;) {
        /* What was made before any failure is handed out first. */
        if (c->rb && ctr_rebuild_take(c->rb, f))
            return 1;
        int ambiguous = 0;
        const char *why = c->rb ? ctr_rebuild_error(c->rb, &ambiguous) : "";
        if (c->error[0] || why[0]) {
            snprintf(f->skipped, sizeof(f->skipped), "%s", c->error[0] ? c->error : why);
            return ambiguous ? -ENOTUNIQ : -EINVAL;
        }
        if (!c->rb || ctr_rebuild_done(c->rb))
            return 0;
        ctr_watchdog_arm(c->dog);
        bt_graph_run_once_status st = bt_graph_run_once(c->graph);
        ctr_watchdog_disarm(c->dog);
        if (take_bt_error(c->error, sizeof(c->error), "babeltrace2"))
            continue; /* said at the top of the loop; the graph is not run again */
        if (st == BT_GRAPH_RUN_ONCE_STATUS_END)
            ctr_rebuild_finish(c->rb, c->nevents);
        else if (st != BT_GRAPH_RUN_ONCE_STATUS_OK && st != BT_GRAPH_RUN_ONCE_STATUS_AGAIN)
            fail(c, "babeltrace2: reading failed");
    }
}

int ctr_ctf_rewind(struct ctr_ctf *c)
{
    reading_reset(c);
    char err[256];
    return reading_start(c, err, sizeof(err));
}

uint64_t ctr_ctf_pos(const struct ctr_ctf *c)
{
    return c->nevents;
}

uint64_t ctr_ctf_discarded(const struct ctr_ctf *c)
{
    return c->rb ? ctr_rebuild_discards(c->rb) : 0;
}

void ctr_ctf_close(struct ctr_ctf *c)
{
    if (!c)
        return;
    reading_reset(c);
    ctr_watchdog_stop(c->dog);
    free(c->seq.b);
    free(c->dir);
    free(c);
}
