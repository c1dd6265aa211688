/* SPDX-License-Identifier: MIT */
/* bt2plugin.c - the babeltrace2 plugin `ctrace`: its source component class
 * `source.ctrace.trace` reads native ctrace trace files as LTTng would have
 * recorded them, so that every babeltrace2 tool (the text and details
 * sinks, sink.ctf.fs's conversion to CTF, filters) takes them as they are.
 *
 * Parameters: `inputs`, an array of paths of native traces, as source.ctf.fs
 * takes. Each input is one trace with one stream (an output port named by
 * its path), whose clock class counts CLOCK_MONOTONIC nanoseconds from the
 * Unix epoch (its offset: realtime minus monotonic at the trace's first
 * CLOCK record), and whose event classes are the `ctrace` LTTng provider's
 * tracepoints, built from the same table as tp/ctrace_tp.h
 * (CTR_LTTNG_TRACEPOINTS): the same names, members in the same order and
 * of the same types as babeltrace2 reads from an LTTng session's CTF. The
 * payloads are what ctr_lttng_transcribe gives (a ticks field holds the raw
 * ticks), so a native trace converted to CTF reads back in ctrace
 * (analyze/read/ctf.c) as the trace itself. The reading, its time order and its
 * damage are bt2read.c's.
 *
 * The query `babeltrace.support-info` claims a file that begins with the
 * ctrace magic, so `babeltrace2 trace.bin` finds this class by itself.
 */
#include <babeltrace2/babeltrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt2read.h"
#include "ctrace_format.h"
#include "ctrace_lttng.h"

/* The weight of a claimed input: source.ctf.fs's for its own traces. */
#define SUPPORT_WEIGHT 0.75

/* The wait reasons' names, for the enumeration's labels. */
#define REASON_NAME(id, name, call, cls, release) [id] = #name,
static const char *const reason_names[CTR_REASON_LIMIT] = {CTR_REASONS(REASON_NAME)};
#undef REASON_NAME

/* ---------------------------------------------------------------------------
 * Event classes, from the table
 * ------------------------------------------------------------------------- */

static bt_field_class *uint_class(bt_trace_class *tc, uint64_t bits, int hex)
{
    bt_field_class *fc = bt_field_class_integer_unsigned_create(tc);
    if (fc) {
        bt_field_class_integer_set_field_value_range(fc, bits);
        bt_field_class_integer_set_preferred_display_base(
            fc, hex ? BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_HEXADECIMAL
                    : BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_DECIMAL);
    }
    return fc;
}

/* A uint8 enumeration of CTR_REASONS, labelled by their names. */
static bt_field_class *reason_class(bt_trace_class *tc)
{
    bt_field_class *fc = bt_field_class_enumeration_unsigned_create(tc);
    if (!fc)
        return NULL;
    bt_field_class_integer_set_field_value_range(fc, 8);
    for (uint64_t id = 1; id < CTR_REASON_LIMIT; id++) {
        if (!reason_names[id])
            continue;
        bt_integer_range_set_unsigned *rs = bt_integer_range_set_unsigned_create();
        int ok = rs &&
                 bt_integer_range_set_unsigned_add_range(rs, id, id) ==
                     BT_INTEGER_RANGE_SET_ADD_RANGE_STATUS_OK &&
                 bt_field_class_enumeration_unsigned_add_mapping(fc, reason_names[id], rs) ==
                     BT_FIELD_CLASS_ENUMERATION_ADD_MAPPING_STATUS_OK;
        bt_integer_range_set_unsigned_put_ref(rs);
        if (!ok) {
            bt_field_class_put_ref(fc);
            return NULL;
        }
    }
    return fc;
}

/* Appends member `name` of class fc (whose reference it takes) to st.
 * @return 0, or -1 (fc NULL, or out of memory). */
static int append(bt_field_class *st, const char *name, bt_field_class *fc)
{
    int ok = fc && bt_field_class_structure_append_member(st, name, fc) ==
                       BT_FIELD_CLASS_STRUCTURE_APPEND_MEMBER_STATUS_OK;
    bt_field_class_put_ref(fc);
    return ok ? 0 : -1;
}

/* A tail as LTTng's CTF has it, once babeltrace2 reads it: a uint32
 * member `_<name>_length`, then the text as a string, or the values as a
 * dynamic array linked to that length. */
static int append_tail(bt_trace_class *tc, bt_field_class *st, const struct ctr_lttng_member *m)
{
    char len_name[64];
    snprintf(len_name, sizeof(len_name), "_%s_length", m->name);
    bt_field_class *len = uint_class(tc, 32, 0);
    bt_field_class *data = NULL;
    if (len && m->shape == CTR_LTTNG_TEXT) {
        data = bt_field_class_string_create(tc);
    } else if (len) {
        bt_field_class *elem = uint_class(tc, m->shape == CTR_LTTNG_HEX64 ? 64 : 8, 1);
        if (elem)
            data = bt_field_class_array_dynamic_create(tc, elem, len);
        bt_field_class_put_ref(elem); /* the array holds its own */
    }
    if (!data) {
        bt_field_class_put_ref(len);
        return -1;
    }
    if (append(st, len_name, len) != 0) {
        bt_field_class_put_ref(data);
        return -1;
    }
    return append(st, m->name, data);
}

static bt_field_class *payload_class(bt_trace_class *tc, const struct ctr_lttng_tracepoint *tp)
{
    bt_field_class *st = bt_field_class_structure_create(tc);
    for (int i = 0; st && i < CTR_LTTNG_MAX_MEMBERS && tp->members[i].name; i++) {
        const struct ctr_lttng_member *m = &tp->members[i];
        int rc;
        switch (m->shape) {
        case CTR_LTTNG_U:
        case CTR_LTTNG_X:
            rc = append(st, m->name, uint_class(tc, 64, m->shape == CTR_LTTNG_X));
            break;
        case CTR_LTTNG_REASON:
            rc = append(st, m->name, reason_class(tc));
            break;
        default:
            rc = append_tail(tc, st, m);
            break;
        }
        if (rc != 0) {
            bt_field_class_put_ref(st);
            st = NULL;
        }
    }
    return st;
}

/* ---------------------------------------------------------------------------
 * One input: its trace, stream and classes
 * ------------------------------------------------------------------------- */

/* An event class and the table row it was built from. */
struct tp_class {
    const bt_event_class *ec; /* owned by the stream class */
    const struct ctr_lttng_tracepoint *tp;
};

struct input_it {
    bt_self_message_iterator *self;
    const char *path; /* the port's (the component's) */
    struct ctrbt_reader *r;
    bt_stream *stream;
    /* By what ctr_lttng_name() maps to a tracepoint. */
    struct tp_class ev[CTR_EV_LIMIT][2], rec[CTR_REC_LIMIT];
    enum { IT_START, IT_FRAMES, IT_DONE } state;
    int at_eof; /* the last frame was read */
    int failed; /* err says why: reported once what came before is out */
    char err[512];
    const bt_message *made; /* what the emitter made of a tracepoint */
};

/* The class of the tracepoint ctr_lttng_name() gives. */
static struct tp_class class_named(struct tp_class *made, uint8_t type, int sched, uint8_t kind)
{
    char buf[32];
    const char *name = ctr_lttng_name(type, sched, kind, buf);
    for (size_t i = 0; name && i < CTR_LTTNG_NTRACEPOINTS; i++)
        if (strcmp(ctr_lttng_tracepoints[i].name, name) == 0)
            return made[i];
    return (struct tp_class){NULL, NULL};
}

static void set_error(struct input_it *it, const char *what)
{
    if (!it->failed)
        snprintf(it->err, sizeof(it->err), "%s: %s", it->path, what);
    it->failed = 1;
}

/* The trace IR of the input, once its first frame gave the clock's
 * offset and the process id. @return 0 or -1 (it->err says why). */
static int make_trace(struct input_it *it)
{
    bt_self_component *comp = bt_self_message_iterator_borrow_component(it->self);
    bt_trace_class *tc = bt_trace_class_create(comp);
    bt_clock_class *cc = bt_clock_class_create(comp);
    bt_stream_class *sc = tc ? bt_stream_class_create(tc) : NULL;
    bt_trace *trace = tc ? bt_trace_create(tc) : NULL;
    struct tp_class made[CTR_LTTNG_NTRACEPOINTS] = {{0}};
    int rc = -1;
    if (!cc || !sc || !trace)
        goto out;
    int64_t off = ctrbt_clock_offset(it->r);
    int64_t sec = off / 1000000000, cyc = off % 1000000000;
    if (cyc < 0) {
        cyc += 1000000000;
        sec--;
    }
    if (bt_clock_class_set_name(cc, "monotonic") != BT_CLOCK_CLASS_SET_NAME_STATUS_OK ||
        bt_clock_class_set_description(cc, "CLOCK_MONOTONIC of the traced process") !=
            BT_CLOCK_CLASS_SET_DESCRIPTION_STATUS_OK)
        goto out;
    bt_clock_class_set_frequency(cc, 1000000000);
    bt_clock_class_set_offset(cc, sec, (uint64_t)cyc);
    bt_clock_class_set_origin_is_unix_epoch(cc, BT_TRUE);
    if (bt_stream_class_set_default_clock_class(sc, cc) !=
        BT_STREAM_CLASS_SET_DEFAULT_CLOCK_CLASS_STATUS_OK)
        goto out;
    for (size_t i = 0; i < CTR_LTTNG_NTRACEPOINTS; i++) {
        const struct ctr_lttng_tracepoint *tp = &ctr_lttng_tracepoints[i];
        char buf[32], name[48];
        if (!ctr_lttng_name(tp->type, tp->sched, tp->kind, buf))
            continue;
        snprintf(name, sizeof(name), CTR_LTTNG_PROVIDER ":%s", buf);
        bt_event_class *ec = bt_event_class_create(sc);
        bt_field_class *payload = ec ? payload_class(tc, tp) : NULL;
        int ok = payload &&
                 bt_event_class_set_name(ec, name) == BT_EVENT_CLASS_SET_NAME_STATUS_OK &&
                 bt_event_class_set_payload_field_class(ec, payload) ==
                     BT_EVENT_CLASS_SET_FIELD_CLASS_STATUS_OK;
        if (ok) /* as LTTng-UST's tracepoints without a level */
            bt_event_class_set_log_level(ec, BT_EVENT_CLASS_LOG_LEVEL_DEBUG_LINE);
        bt_field_class_put_ref(payload);
        made[i] = (struct tp_class){ec, tp};
        bt_event_class_put_ref(ec); /* the stream class holds it */
        if (!ok)
            goto out;
    }
    for (uint8_t t = 1; t < CTR_EV_LIMIT; t++)
        for (int sched = 0; sched < 2; sched++)
            it->ev[t][sched] = class_named(made, t, sched, 0);
    for (uint8_t k = 1; k < CTR_REC_LIMIT; k++)
        it->rec[k] = class_named(made, 0, 0, k);
    const char *base = strrchr(it->path, '/');
    uint64_t pid = ctrbt_pid(it->r);
    if (bt_trace_set_name(trace, base ? base + 1 : it->path) != BT_TRACE_SET_NAME_STATUS_OK ||
        bt_trace_set_environment_entry_string(trace, "tracer_name", "ctrace") !=
            BT_TRACE_SET_ENVIRONMENT_ENTRY_STATUS_OK ||
        /* As LTTng's per-process traces say it (analyze/read/ctf.c reads it). */
        (pid && pid <= INT64_MAX &&
         bt_trace_set_environment_entry_integer(trace, "vpid", (int64_t)pid) !=
             BT_TRACE_SET_ENVIRONMENT_ENTRY_STATUS_OK))
        goto out;
    it->stream = bt_stream_create(sc, trace);
    if (!it->stream || bt_stream_set_name(it->stream, it->path) != BT_STREAM_SET_NAME_STATUS_OK)
        goto out;
    rc = 0;
out:
    if (rc != 0)
        set_error(it, "out of memory making its trace classes");
    bt_trace_put_ref(trace);
    bt_stream_class_put_ref(sc);
    bt_clock_class_put_ref(cc);
    bt_trace_class_put_ref(tc);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Tracepoints to event messages
 * ------------------------------------------------------------------------- */

/* Makes it->made: the event message of tracepoint c, at the reader's time,
 * its members filled in the table's order (a tail fills two). */
static void make_event(struct input_it *it, const struct tp_class *c, uint64_t thread,
                       uint64_t time, const uint64_t *vals, const uint64_t *tail_u,
                       const uint8_t *tail_b, uint32_t tail_n)
{
    it->made = NULL;
    if (!c->ec)
        return;
    bt_message *msg = bt_message_event_create_with_default_clock_snapshot(
        it->self, c->ec, it->stream, ctrbt_time(it->r));
    if (!msg) {
        set_error(it, "out of memory");
        return;
    }
    bt_field *payload = bt_event_borrow_payload_field(bt_message_event_borrow_event(msg));
    uint64_t k = 0;
    int ok = 1;
    for (int i = 0; ok && i < CTR_LTTNG_MAX_MEMBERS && c->tp->members[i].name; i++) {
        const struct ctr_lttng_member *m = &c->tp->members[i];
        bt_field *f = bt_field_structure_borrow_member_field_by_index(payload, k++);
        if (m->src != CTR_LTTNG_SRC_TAIL) {
            uint64_t v = m->src == CTR_LTTNG_SRC_THREAD ? thread
                         : m->src == CTR_LTTNG_SRC_TIME ? time
                                                        : vals[m->src];
            /* The enumeration is a uint8, as the provider's cast makes it
             * (a record's reason is not range-checked). */
            bt_field_integer_unsigned_set_value(f, m->shape == CTR_LTTNG_REASON ? (uint8_t)v : v);
            continue;
        }
        bt_field_integer_unsigned_set_value(f, tail_n); /* _<name>_length */
        f = bt_field_structure_borrow_member_field_by_index(payload, k++);
        if (m->shape == CTR_LTTNG_TEXT) {
            /* A string ends at a NUL, as babeltrace2 reads LTTng's text. */
            const uint8_t *nul = tail_n ? memchr(tail_b, 0, tail_n) : NULL;
            bt_field_string_clear(f);
            ok = bt_field_string_append_with_length(f, tail_n ? (const char *)tail_b : "",
                                                    nul ? (uint64_t)(nul - tail_b) : tail_n) ==
                 BT_FIELD_STRING_APPEND_STATUS_OK;
            continue;
        }
        ok = bt_field_array_dynamic_set_length(f, tail_n) ==
             BT_FIELD_DYNAMIC_ARRAY_SET_LENGTH_STATUS_OK;
        for (uint32_t j = 0; ok && j < tail_n; j++)
            bt_field_integer_unsigned_set_value(bt_field_array_borrow_element_field_by_index(f, j),
                                                m->shape == CTR_LTTNG_HEX64 ? tail_u[j]
                                                                            : tail_b[j]);
    }
    if (!ok) {
        bt_message_put_ref(msg);
        set_error(it, "out of memory");
        return;
    }
    it->made = msg;
}

static void on_event(void *ctx, uint64_t thread, uint64_t time, uint8_t type, int sched,
                     const uint64_t *args, const void *payload, uint32_t len)
{
    struct input_it *it = ctx;
    make_event(it, &it->ev[type][sched != 0], thread, time, args, NULL, payload, len);
}

static void on_record(void *ctx, uint8_t kind, const uint64_t *fields, const uint64_t *tail_u,
                      const void *tail_b, uint32_t tail_n)
{
    struct input_it *it = ctx;
    make_event(it, &it->rec[kind], 0, 0, fields, tail_u, tail_b, tail_n);
}

/* ---------------------------------------------------------------------------
 * The message iterator: one per input (output port)
 * ------------------------------------------------------------------------- */

static bt_message_iterator_class_initialize_method_status
input_init(bt_self_message_iterator *self, bt_self_message_iterator_configuration *config,
           bt_self_component_port_output *port)
{
    (void)config;
    struct input_it *it = calloc(1, sizeof(*it));
    if (!it)
        return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
    it->self = self;
    it->path =
        bt_self_component_port_get_data(bt_self_component_port_output_as_self_component_port(port));
    if (ctrbt_open(it->path, &it->r, it->err, sizeof(it->err)) != 0) {
        BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(self, "%s", it->err);
        free(it);
        return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
    }
    bt_self_message_iterator_set_data(self, it);
    return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static void input_finalize(bt_self_message_iterator *self)
{
    struct input_it *it = bt_self_message_iterator_get_data(self);
    if (!it)
        return;
    bt_stream_put_ref(it->stream);
    ctrbt_close(it->r);
    free(it);
}

/* Reads the next frame: 1, or 0 when it failed (it->err). */
static int next_frame(struct input_it *it)
{
    int rc = ctrbt_next_frame(it->r, it->err, sizeof(it->err));
    if (rc < 0) {
        it->failed = 1; /* err names the file already */
        return 0;
    }
    it->at_eof = rc == 0;
    return 1;
}

/* Messages: the stream's beginning once the first frame is read (its
 * CLOCK gives the clock class's offset), the frames' tracepoints, the
 * stream's end. An error is reported once the messages before it are out
 * (a damaged trace shows what it holds up to the damage). */
static bt_message_iterator_class_next_method_status input_next(bt_self_message_iterator *self,
                                                               bt_message_array_const msgs,
                                                               uint64_t capacity, uint64_t *count)
{
    struct input_it *it = bt_self_message_iterator_get_data(self);
    const struct ctr_lttng_emitter e = {it, on_event, on_record};
    uint64_t n = 0;
    while (n < capacity && !it->failed && it->state != IT_DONE) {
        if (it->state == IT_START) {
            if (!next_frame(it) || make_trace(it) != 0)
                break;
            const bt_message *m = bt_message_stream_beginning_create(self, it->stream);
            if (!m) {
                set_error(it, "out of memory");
                break;
            }
            msgs[n++] = m;
            it->state = IT_FRAMES;
        } else if (ctrbt_next(it->r, &e)) {
            if (it->made)
                msgs[n++] = it->made;
            it->made = NULL;
        } else if (it->at_eof) {
            const bt_message *m = bt_message_stream_end_create(self, it->stream);
            if (!m) {
                set_error(it, "out of memory");
                break;
            }
            msgs[n++] = m;
            it->state = IT_DONE;
        } else {
            next_frame(it);
        }
    }
    *count = n;
    if (n)
        return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
    if (it->failed) {
        BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(self, "%s", it->err);
        return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
    }
    return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
}

/* ---------------------------------------------------------------------------
 * The component: its inputs, one output port each
 * ------------------------------------------------------------------------- */

struct inputs {
    size_t n;
    char **paths;
};

static void inputs_free(struct inputs *in)
{
    if (!in)
        return;
    for (size_t i = 0; i < in->n; i++)
        free(in->paths[i]);
    free(in->paths);
    free(in);
}

static bt_component_class_initialize_method_status
trace_init(bt_self_component_source *self, bt_self_component_source_configuration *config,
           const bt_value *params, void *init_data)
{
    (void)config, (void)init_data;
    bt_self_component *comp = bt_self_component_source_as_self_component(self);
    const bt_value *list =
        bt_value_is_map(params) ? bt_value_map_borrow_entry_value_const(params, "inputs") : NULL;
    if (!list || !bt_value_is_array(list) || bt_value_array_get_length(list) == 0) {
        BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(
            comp, "%s",
            "the parameter `inputs` must be a non-empty array of paths of "
            "native ctrace traces");
        return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
    }
    uint64_t n = bt_value_array_get_length(list);
    struct inputs *in = calloc(1, sizeof(*in));
    if (!in || !(in->paths = calloc(n, sizeof(*in->paths)))) {
        inputs_free(in);
        return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
    }
    char err[512] = "out of memory";
    bt_component_class_initialize_method_status st =
        BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
    for (uint64_t i = 0; i < n; i++) {
        const bt_value *v = bt_value_array_borrow_element_by_index_const(list, i);
        if (!bt_value_is_string(v)) {
            snprintf(err, sizeof(err), "`inputs`[%llu] is not a string (a path)",
                     (unsigned long long)i);
            goto fail;
        }
        const char *path = bt_value_string_get(v);
        for (size_t j = 0; j < in->n; j++)
            if (strcmp(in->paths[j], path) == 0) {
                snprintf(err, sizeof(err), "%s: given twice in `inputs`", path);
                goto fail;
            }
        /* The header now, so that a wrong input fails the graph's making. */
        struct ctrbt_reader *r;
        if (ctrbt_open(path, &r, err, sizeof(err)) != 0)
            goto fail;
        ctrbt_close(r);
        st = BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
        if (!(in->paths[in->n] = strdup(path)))
            goto fail;
        in->n++;
        if (bt_self_component_source_add_output_port(self, path, in->paths[in->n - 1], NULL) !=
            BT_SELF_COMPONENT_ADD_PORT_STATUS_OK)
            goto fail;
        st = BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
    }
    bt_self_component_set_data(comp, in);
    return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
fail:
    BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(comp, "%s", err);
    inputs_free(in); /* the ports made go with the component */
    return st;
}

static void trace_finalize(bt_self_component_source *self)
{
    inputs_free(bt_self_component_get_data(bt_self_component_source_as_self_component(self)));
}

/* babeltrace.support-info: a file that begins with the ctrace magic is
 * ours; anything else (a directory, a string, another file) is not. */
static bt_component_class_query_method_status
trace_query(bt_self_component_class_source *cls, bt_private_query_executor *qe, const char *object,
            const bt_value *params, void *data, const bt_value **result)
{
    (void)qe, (void)data;
    if (strcmp(object, "babeltrace.support-info") != 0)
        return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_UNKNOWN_OBJECT;
    const bt_value *type = NULL, *input = NULL;
    if (bt_value_is_map(params)) {
        type = bt_value_map_borrow_entry_value_const(params, "type");
        input = bt_value_map_borrow_entry_value_const(params, "input");
    }
    if (!type || !bt_value_is_string(type) || !input || !bt_value_is_string(input)) {
        BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT_CLASS(
            bt_self_component_class_source_as_self_component_class(cls), "%s",
            "babeltrace.support-info takes the strings `type` and `input`");
        return BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_ERROR;
    }
    double weight =
        strcmp(bt_value_string_get(type), "file") == 0 && ctrbt_is_trace(bt_value_string_get(input))
            ? SUPPORT_WEIGHT
            : 0.0;
    *result = bt_value_real_create_init(weight);
    return *result ? BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_OK
                   : BT_COMPONENT_CLASS_QUERY_METHOD_STATUS_MEMORY_ERROR;
}

/* ---------------------------------------------------------------------------
 * The plugin
 * ------------------------------------------------------------------------- */

BT_PLUGIN_MODULE();
BT_PLUGIN(ctrace);
BT_PLUGIN_DESCRIPTION("Native ctrace traces, as the ctrace LTTng provider's events.");

BT_PLUGIN_SOURCE_COMPONENT_CLASS(trace, input_next);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_DESCRIPTION(trace, "Read native ctrace trace files.");
BT_PLUGIN_SOURCE_COMPONENT_CLASS_HELP(
    trace, "Parameters:\n"
           "  inputs (array of strings): paths of native ctrace trace files (what\n"
           "    `ctrace run -o FILE` and trace_start(FILE) write); each is a trace\n"
           "    of its own, with one stream.\n"
           "Each event is the `ctrace` LTTng-UST provider's tracepoint of the same\n"
           "name and fields (ctrace:block, ctrace:stack, ...), timed by\n"
           "CLOCK_MONOTONIC from the Unix epoch.");
BT_PLUGIN_SOURCE_COMPONENT_CLASS_INITIALIZE_METHOD(trace, trace_init);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_FINALIZE_METHOD(trace, trace_finalize);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_QUERY_METHOD(trace, trace_query);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD(trace, input_init);
BT_PLUGIN_SOURCE_COMPONENT_CLASS_MESSAGE_ITERATOR_CLASS_FINALIZE_METHOD(trace, input_finalize);
