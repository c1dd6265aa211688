/* SPDX-License-Identifier: MIT */
/* cpu_unwind.c - unwinds a perf_event CPU sample (cpu.c) in the collector:
 * the registers the kernel saved and a copy of the top of the stack, the
 * way `perf record --call-graph dwarf` does, but in the traced process
 * itself, whose code and .eh_frame are the sampled thread's.
 *
 * libunwind's generic library (libunwind-x86_64, dlopen'd RTLD_LOCAL as
 * stack.c does libunwind, never linked) unwinds through accessors of ours:
 * registers from the sample; memory from the copy where it covers the
 * address, else from a readable segment of a loaded object (the .eh_frame
 * tables, read in place), else nothing: nothing unmapped is ever read. Each
 * object's .eh_frame_hdr is found by dl_iterate_phdr and handed to
 * dwarf_search_unwind_table as a remote table. Where libunwind cannot be
 * had, or CTRACE_UNWIND=fp asks for frame pointers, the frame-pointer chain
 * is walked inside the copy, every step checked (stack.c's rules).
 *
 * Collector thread only: no state here is shared with another thread.
 */
#include "perf/cpu.h"

#include "core/maps.h"
#include "core/retaddr.h"
#include "core/stack.h"
#include "ctrace_options.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include <libunwind.h> /* the generic (remote) API: _Ux86_64_* */

#ifndef CTR_LIBUNWIND_GENERIC_SONAME
#define CTR_LIBUNWIND_GENERIC_SONAME "libunwind-x86_64.so.8"
#endif

/* A loaded object: its readable segments' span and its .eh_frame_hdr. */
struct object {
    uintptr_t lo, hi; /* the object's PT_LOAD segments, [lo, hi) */
    uintptr_t text_lo, text_hi;
    uintptr_t eh_frame_hdr; /* 0: none */
};

static struct {
    int tried, ok;
    unw_addr_space_t (*create_addr_space)(unw_accessors_t *, int);
    int (*init_remote)(unw_cursor_t *, unw_addr_space_t, void *);
    int (*step)(unw_cursor_t *);
    int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
    int (*search_table)(unw_addr_space_t, unw_word_t, unw_dyn_info_t *, unw_proc_info_t *, int,
                        void *);
    int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
    void (*flush_cache)(unw_addr_space_t, unw_word_t, unw_word_t);
    unw_addr_space_t as;
    /* The loaded objects, remade when ctr__maps_version() changes. */
    struct object *objects;
    size_t nobjects, cap;
    uint64_t version;
} U;

/* What one unwinding reads: the sample. */
struct sample {
    const struct ctr_sample_regs *r;
    const uint8_t *stack;
    size_t len;
};

/* ---------------------------------------------------------------------------
 * The objects
 * ------------------------------------------------------------------------- */

static int add_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    struct object o = {UINTPTR_MAX, 0, UINTPTR_MAX, 0, 0};
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_R)) {
            if (lo < o.lo)
                o.lo = lo;
            if (hi > o.hi)
                o.hi = hi;
            if ((ph->p_flags & PF_X) && lo < o.text_lo)
                o.text_lo = lo;
            if ((ph->p_flags & PF_X) && hi > o.text_hi)
                o.text_hi = hi;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            o.eh_frame_hdr = lo;
        }
    }
    if (o.hi == 0 || o.text_hi == 0)
        return 0;
    if (U.nobjects == U.cap) {
        size_t cap = U.cap ? 2 * U.cap : 64;
        struct object *p = realloc(U.objects, cap * sizeof(*p));
        if (!p)
            return 1; /* out of memory: the objects so far */
        U.objects = p;
        U.cap = cap;
    }
    U.objects[U.nobjects++] = o;
    return 0;
}

static void objects_refresh(void)
{
    uint64_t v = ctr__maps_version();
    if (U.objects && v == U.version)
        return;
    U.nobjects = 0;
    dl_iterate_phdr(add_object, NULL);
    U.version = v;
    if (U.as)
        U.flush_cache(U.as, 0, 0); /* what it cached may be unmapped code */
}

static const struct object *object_of(uintptr_t a)
{
    for (size_t i = 0; i < U.nobjects; i++)
        if (a >= U.objects[i].lo && a < U.objects[i].hi)
            return &U.objects[i];
    return NULL;
}

/* ---------------------------------------------------------------------------
 * libunwind's accessors
 * ------------------------------------------------------------------------- */

/* Reads the 8 bytes at a: from the copy, or a loaded object. */
static int read_word(const struct sample *s, uintptr_t a, uint64_t *out)
{
    if (a >= s->r->sp && a - s->r->sp <= s->len && s->len - (a - s->r->sp) >= 8) {
        memcpy(out, s->stack + (a - s->r->sp), 8);
        return 0;
    }
    const struct object *o = object_of(a);
    if (!o || a > o->hi - 8)
        return -1;
    memcpy(out, (const void *)a, 8);
    return 0;
}

static int access_mem(unw_addr_space_t as, unw_word_t a, unw_word_t *v, int write, void *arg)
{
    (void)as;
    uint64_t w;
    if (write || read_word(arg, (uintptr_t)a, &w) != 0)
        return -UNW_EINVAL;
    *v = (unw_word_t)w;
    return 0;
}

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *v, int write, void *arg)
{
    (void)as;
    const struct ctr_sample_regs *r = ((const struct sample *)arg)->r;
    /* libunwind's numbering to the sample's (PERF_REG_X86_* packed: AX BX
     * CX DX SI DI BP SP IP R8..R15). */
    static const int8_t from_unw[UNW_X86_64_RIP + 1] = {
        [UNW_X86_64_RAX] = 0,  [UNW_X86_64_RDX] = 3,  [UNW_X86_64_RCX] = 2,  [UNW_X86_64_RBX] = 1,
        [UNW_X86_64_RSI] = 4,  [UNW_X86_64_RDI] = 5,  [UNW_X86_64_RBP] = 6,  [UNW_X86_64_RSP] = 7,
        [UNW_X86_64_R8] = 9,   [UNW_X86_64_R9] = 10,  [UNW_X86_64_R10] = 11, [UNW_X86_64_R11] = 12,
        [UNW_X86_64_R12] = 13, [UNW_X86_64_R13] = 14, [UNW_X86_64_R14] = 15, [UNW_X86_64_R15] = 16,
        [UNW_X86_64_RIP] = 8};
    if (write || reg < 0 || reg > UNW_X86_64_RIP || !r->have_all)
        return -UNW_EBADREG;
    *v = (unw_word_t)r->regs[from_unw[reg]];
    return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *v, int write, void *arg)
{
    (void)as, (void)reg, (void)v, (void)write, (void)arg;
    return -UNW_EINVAL;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
    (void)as, (void)c, (void)arg;
    return -UNW_EINVAL;
}

static int get_proc_name(unw_addr_space_t as, unw_word_t ip, char *buf, size_t len, unw_word_t *off,
                         void *arg)
{
    (void)as, (void)ip, (void)buf, (void)len, (void)off, (void)arg;
    return -UNW_ENOINFO;
}

static int get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
    (void)as, (void)addr, (void)arg;
    return -UNW_ENOINFO;
}

/* Table entries are libunwind's to free (format TABLE): nothing to do. */
static void put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
    (void)as, (void)pi, (void)arg;
}

/* .eh_frame_hdr (LSB): version 1, the encodings of eh_frame_ptr, fde_count
 * and the table, then eh_frame_ptr, fde_count and the sorted table of
 * (initial location, FDE address) pairs. Only the layout every linker
 * writes is taken: 4-byte pointer and count, a table of datarel sdata4. */
static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                          int need_unwind_info, void *arg)
{
    const struct object *o = object_of((uintptr_t)ip);
    if (!o || !o->eh_frame_hdr || o->eh_frame_hdr > o->hi - 12)
        return -UNW_ENOINFO;
    const uint8_t *h = (const uint8_t *)o->eh_frame_hdr;
    enum { UDATA4 = 0x03, SDATA4 = 0x0b, PCREL = 0x10, DATAREL = 0x30 };
    if (h[0] != 1 || (h[1] & 0x0f) != SDATA4 || h[2] != UDATA4 || h[3] != (DATAREL | SDATA4))
        return -UNW_ENOINFO;
    uint32_t fde_count;
    memcpy(&fde_count, h + 8, sizeof(fde_count));
    if ((uint64_t)fde_count * 8 > o->hi - o->eh_frame_hdr - 12)
        return -UNW_ENOINFO;
    unw_dyn_info_t di;
    memset(&di, 0, sizeof(di));
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.start_ip = o->text_lo;
    di.end_ip = o->text_hi;
    di.u.rti.segbase = o->eh_frame_hdr;
    di.u.rti.table_data = o->eh_frame_hdr + 12;
    di.u.rti.table_len = (uint64_t)fde_count * 8 / sizeof(unw_word_t);
    return U.search_table(as, ip, &di, pi, need_unwind_info, arg);
}

static unw_accessors_t accessors = {
    .find_proc_info = find_proc_info,
    .put_unwind_info = put_unwind_info,
    .get_dyn_info_list_addr = get_dyn_info_list_addr,
    .access_mem = access_mem,
    .access_reg = access_reg,
    .access_fpreg = access_fpreg,
    .resume = resume,
    .get_proc_name = get_proc_name,
};

static int load(void)
{
    if (U.tried)
        return U.ok;
    U.tried = 1;
    void *h = dlopen(CTR_LIBUNWIND_GENERIC_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
#define SYM(field, name) *(void **)&U.field = dlsym(h, name)
    SYM(create_addr_space, "_Ux86_64_create_addr_space");
    SYM(init_remote, "_Ux86_64_init_remote");
    SYM(step, "_Ux86_64_step");
    SYM(get_reg, "_Ux86_64_get_reg");
    SYM(search_table, "_Ux86_64_dwarf_search_unwind_table");
    SYM(set_caching_policy, "_Ux86_64_set_caching_policy");
    SYM(flush_cache, "_Ux86_64_flush_cache");
#undef SYM
    if (!U.create_addr_space || !U.init_remote || !U.step || !U.get_reg || !U.search_table ||
        !U.set_caching_policy || !U.flush_cache)
        return 0;
    U.as = U.create_addr_space(&accessors, 0);
    if (!U.as)
        return 0;
    U.set_caching_policy(U.as, UNW_CACHE_GLOBAL); /* the collector's alone */
    U.ok = 1;
    return 1;
}

/* ---------------------------------------------------------------------------
 * Unwinding
 * ------------------------------------------------------------------------- */

static unsigned unwind_dwarf(struct sample *s, uintptr_t *pcs, unsigned max)
{
    unw_cursor_t c;
    unsigned n = 0;
    if (U.init_remote(&c, U.as, s) != 0)
        return 0;
    pcs[n++] = (uintptr_t)s->r->ip + 1; /* the instruction itself (FORMAT.md §4.1) */
    while (n < max && U.step(&c) > 0) {
        unw_word_t ip;
        if (U.get_reg(&c, UNW_REG_IP, &ip) != 0 || ip < 65536)
            break;
        pcs[n++] = (uintptr_t)ip;
    }
    return n;
}

/* Frame pointers inside the copy: each frame above the last, 8-aligned,
 * inside the copy, its return address in code. */
static unsigned unwind_fp(struct sample *s, uintptr_t *pcs, unsigned max)
{
    unsigned n = 0;
    pcs[n++] = (uintptr_t)s->r->ip + 1;
    uintptr_t fp = s->r->bp, last = s->r->sp;
    while (n < max && fp >= last && !(fp & 7)) {
        uint64_t next, ret;
        if (read_word(s, fp, &next) != 0 || fp - s->r->sp >= s->len ||
            read_word(s, fp + 8, &ret) != 0 || fp + 8 - s->r->sp >= s->len)
            break;
        if (ret < 65536 || !ctr__in_code((uintptr_t)ret))
            break;
        pcs[n++] = (uintptr_t)ret;
        if (next <= fp)
            break;
        last = fp;
        fp = (uintptr_t)next;
    }
    return n;
}

unsigned ctr__unwind_copy(const struct ctr_sample_regs *r, const uint8_t *stack, size_t len,
                          uintptr_t *pcs, unsigned max)
{
    struct sample s = {r, stack, len};
    if (max == 0)
        return 0;
    if (!ctr__stack_uses_dwarf() || !load()) {
        objects_refresh();
        return unwind_fp(&s, pcs, max);
    }
    objects_refresh();
    unsigned n = unwind_dwarf(&s, pcs, max);
    return n ? n : unwind_fp(&s, pcs, max);
}

/* The most frame pointers guessed for one stack (ctr__unwind_copy_guess_bp). */
#define GUESSES_MAX 8

/* The next frame pointer to try from `from` up: an address in the copy
 * whose second word is in code, as a frame record's return address is (0:
 * none left). */
static uint64_t next_bp_guess(const struct sample *s, uint64_t from)
{
    uint64_t ret;
    for (uint64_t a = from; a + 16 <= s->r->sp + s->len; a += 8)
        if (!read_word(s, (uintptr_t)a + 8, &ret) && ctr__in_code((uintptr_t)ret))
            return a;
    return 0;
}

unsigned ctr__unwind_copy_guess_bp(uint64_t ip, uint64_t sp, const uint8_t *stack, size_t len,
                                   uintptr_t *pcs, unsigned max)
{
    uintptr_t try[CTR_STACK_MAX];
    unsigned n = 0;
    uint64_t bp = 0;
    if (max > CTR_STACK_MAX)
        max = CTR_STACK_MAX;
    for (int i = 0; i <= GUESSES_MAX; i++) {
        struct ctr_sample_regs r = {.ip = ip, .sp = sp, .bp = bp, .have_all = 1};
        /* The others are not known: 0, which no frame's rule can follow. */
        r.regs[6] = bp;
        r.regs[7] = sp;
        r.regs[8] = ip;
        unsigned got = ctr__unwind_copy(&r, stack, len, try, max);
        if (got > n) {
            memcpy(pcs, try, got * sizeof(*try));
            n = got;
        }
        struct sample s = {&r, stack, len};
        if (!(bp = next_bp_guess(&s, bp ? bp + 8 : sp)))
            break;
    }
    return n;
}
