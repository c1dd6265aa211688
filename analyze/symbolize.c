/* symbolize.c - maps PCs recorded in a trace to inline chains of (function,
 * file, line) with elfutils libdwfl/libdw.
 *
 * Invariants:
 * - Each distinct (path, bias) gets its own Dwfl holding exactly one module,
 *   opened the first time a PC in one of its mappings is symbolized. One Dwfl
 *   per file keeps bogus or stale mapping tables (overlapping files) from
 *   confusing libdwfl's address lookup: we always know which module to ask.
 * - A file that cannot be used (missing, not ELF, build-id differs) is marked
 *   failed once, with one warning line, and never opened again.
 * - Every string handed out is an interned copy owned by the symbolizer, so it
 *   outlives nothing but ctr_symbolizer_free(); results are cached per PC.
 * - Input is untrusted: no PC, mapping or file may crash us; the worst outcome
 *   is "unknown" (return 0).
 *
 * Separate debug info is looked for the standard elfutils way (build-id under
 * /usr/lib/debug, .gnu_debuglink, and debuginfod if DEBUGINFOD_URLS is set).
 * Not thread-safe: symbolizing fills caches.
 */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHAIN_MAX 32   /* inline depth kept per PC; deeper chains are cut */

enum map_state { MAP_UNOPENED, MAP_OPEN, MAP_FAILED };

struct map {
    struct ctr_sym_mapping m;  /* path and build_id point to our own copies */
    int index;                 /* position in the caller's array */
    uint64_t max_limit;        /* max limit over maps[0..this], for overlaps */
    enum map_state state;
    bool owner;                /* this entry created dwfl and must end it */
    Dwfl *dwfl;
    Dwfl_Module *mod;
};

struct pc_entry {              /* one cached PC; n == 0 means "no symbol" */
    uint64_t pc;
    uint32_t first;            /* index into frames */
    uint16_t n;
    bool used;
};

struct ctr_symbolizer {
    struct map *maps;          /* sorted by start */
    size_t nmaps;
    struct pc_entry *pcs;      /* open addressing; cap is a power of two */
    size_t pcs_cap, pcs_len;
    struct ctr_sym_frame *frames;
    size_t frames_cap, frames_len;
    char **strs;               /* interned strings; open addressing */
    size_t strs_cap, strs_len;
    char *warn;                /* NULL until the first warning */
    size_t warn_len;
};

/* ---------------------------------------------------------------------------
 * Small owned containers: warnings, interned strings, the PC cache
 * ------------------------------------------------------------------------- */

static void add_warning(struct ctr_symbolizer *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    char *w = realloc(s->warn, s->warn_len + (size_t)n + 2);
    if (w == NULL)
        return;   /* warnings are best-effort; losing one under OOM is fine */
    va_start(ap, fmt);
    vsnprintf(w + s->warn_len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->warn = w;
    s->warn_len += (size_t)n;
    s->warn[s->warn_len++] = '\n';
    s->warn[s->warn_len] = '\0';
}

static uint64_t hash_str(const char *p)
{
    uint64_t h = 0xcbf29ce484222325u;   /* FNV-1a */
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3u;
    return h;
}

/* Returns the interned copy of str, or NULL if str is NULL or memory ran out
 * (an unknown name is an acceptable answer under OOM). */
static const char *intern(struct ctr_symbolizer *s, const char *str)
{
    if (str == NULL)
        return NULL;
    if (2 * (s->strs_len + 1) > s->strs_cap) {
        size_t cap = s->strs_cap ? 2 * s->strs_cap : 256;
        char **t = calloc(cap, sizeof *t);
        if (t == NULL)
            return NULL;
        for (size_t i = 0; i < s->strs_cap; i++) {
            if (s->strs[i] == NULL)
                continue;
            size_t j = hash_str(s->strs[i]) & (cap - 1);
            while (t[j] != NULL)
                j = (j + 1) & (cap - 1);
            t[j] = s->strs[i];
        }
        free(s->strs);
        s->strs = t;
        s->strs_cap = cap;
    }
    size_t j = hash_str(str) & (s->strs_cap - 1);
    for (; s->strs[j] != NULL; j = (j + 1) & (s->strs_cap - 1))
        if (strcmp(s->strs[j], str) == 0)
            return s->strs[j];
    if ((s->strs[j] = strdup(str)) == NULL)
        return NULL;
    s->strs_len++;
    return s->strs[j];
}

static size_t hash_pc(uint64_t pc, size_t cap)
{
    return (size_t)((pc * 0x9e3779b97f4a7c15u) >> 17) & (cap - 1);
}

/* Returns the cache slot for pc: either its entry (used) or the free slot
 * where it belongs. NULL only if the table could not grow. */
static struct pc_entry *pc_slot(struct ctr_symbolizer *s, uint64_t pc)
{
    if (2 * (s->pcs_len + 1) > s->pcs_cap) {
        size_t cap = s->pcs_cap ? 2 * s->pcs_cap : 1024;
        struct pc_entry *t = calloc(cap, sizeof *t);
        if (t == NULL)
            return NULL;
        for (size_t i = 0; i < s->pcs_cap; i++) {
            if (!s->pcs[i].used)
                continue;
            size_t j = hash_pc(s->pcs[i].pc, cap);
            while (t[j].used)
                j = (j + 1) & (cap - 1);
            t[j] = s->pcs[i];
        }
        free(s->pcs);
        s->pcs = t;
        s->pcs_cap = cap;
    }
    size_t j = hash_pc(pc, s->pcs_cap);
    while (s->pcs[j].used && s->pcs[j].pc != pc)
        j = (j + 1) & (s->pcs_cap - 1);
    return &s->pcs[j];
}

/* ---------------------------------------------------------------------------
 * Mappings and lazily opened files
 * ------------------------------------------------------------------------- */

static int cmp_start(const void *a, const void *b)
{
    uint64_t x = ((const struct map *)a)->m.start, y = ((const struct map *)b)->m.start;
    return x < y ? -1 : x > y;
}

static struct map *find_map(const struct ctr_symbolizer *s, uint64_t pc)
{
    size_t lo = 0, hi = s->nmaps;   /* first map with start > pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->maps[mid].m.start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Walk back only while an earlier map could still reach pc; with a sane
     * (non-overlapping) table this looks at one map. */
    for (size_t i = lo; i-- > 0 && s->maps[i].max_limit > pc;)
        if (pc < s->maps[i].m.limit)
            return &s->maps[i];
    return NULL;
}

static char *hex(const uint8_t *p, size_t n, char *buf, size_t size)
{
    size_t i = 0;
    for (; i < n && 2 * i + 2 < size; i++)
        snprintf(buf + 2 * i, 3, "%02x", p[i]);
    buf[2 * i] = '\0';
    return buf;
}

/* Reports m's file into a fresh Dwfl and checks it is the recorded one. */
static void open_map(struct ctr_symbolizer *s, struct map *m)
{
    /* Another mapping of the same file and bias (e.g. a second executable
     * segment) shares its module, or its failure. */
    for (size_t i = 0; i < s->nmaps; i++) {
        struct map *o = &s->maps[i];
        if (o->state != MAP_UNOPENED && o->m.bias == m->m.bias
            && strcmp(o->m.path, m->m.path) == 0) {
            m->state = o->state, m->dwfl = o->dwfl, m->mod = o->mod;
            return;
        }
    }
    m->state = MAP_FAILED;
    static char *debuginfo_path = NULL;   /* NULL: elfutils' default path */
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = &debuginfo_path,
    };
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (dwfl == NULL) {
        add_warning(s, "%s: %s", m->m.path, dwfl_errmsg(-1));
        return;
    }
    dwfl_report_begin(dwfl);
    /* add_p_vaddr: the module lands at bias + p_vaddr, i.e. where the traced
     * process had it, for PIE executables and shared libraries alike. */
    Dwfl_Module *mod = dwfl_report_elf(dwfl, m->m.path, m->m.path, -1, m->m.bias, true);
    dwfl_report_end(dwfl, NULL, NULL);
    if (mod == NULL) {
        add_warning(s, "%s: cannot open as ELF: %s", m->m.path, dwfl_errmsg(-1));
        dwfl_end(dwfl);
        return;
    }
    if (m->m.build_id_len > 0) {
        const unsigned char *bits;
        GElf_Addr vaddr;
        int n = dwfl_module_build_id(mod, &bits, &vaddr);
        if (n <= 0 || (size_t)n != m->m.build_id_len
            || memcmp(bits, m->m.build_id, (size_t)n) != 0) {
            char want[130], have[130];
            add_warning(s, "%s: build-id mismatch (trace has %s, file has %s); not symbolized",
                        m->m.path, hex(m->m.build_id, m->m.build_id_len, want, sizeof want),
                        n > 0 ? hex(bits, (size_t)n, have, sizeof have) : "none");
            dwfl_end(dwfl);
            return;
        }
    }
    Dwarf_Addr bias;
    if (dwfl_module_getdwarf(mod, &bias) == NULL)
        add_warning(s, "%s: no debug info; function names only", m->m.path);
    m->state = MAP_OPEN, m->owner = true, m->dwfl = dwfl, m->mod = mod;
}

/* ---------------------------------------------------------------------------
 * DWARF lookups
 * ------------------------------------------------------------------------- */

/* integrate: also look through DW_AT_abstract_origin / DW_AT_specification. */
static bool attr_udata(Dwarf_Die *die, int name, bool integrate, Dwarf_Word *out)
{
    Dwarf_Attribute mem;
    Dwarf_Attribute *a = integrate ? dwarf_attr_integrate(die, name, &mem) : dwarf_attr(die, name, &mem);
    return dwarf_formudata(a, out) == 0;
}

/* The source name of a function DIE; inlined instances and out-of-line
 * clones (foo.constprop.0) carry it only on their abstract origin. */
static const char *die_function(Dwarf_Die *die)
{
    Dwarf_Attribute mem;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &mem));
    if (name == NULL)
        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &mem));
    return name;
}

static int clamp_line(Dwarf_Word v)
{
    return v > INT32_MAX ? 0 : (int)v;
}

/* Interns file, made absolute against the CU's comp_dir when relative. */
static const char *abs_path(struct ctr_symbolizer *s, Dwarf_Die *cu, const char *file)
{
    Dwarf_Attribute mem;
    const char *dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &mem));
    if (file == NULL || file[0] == '/' || dir == NULL || dir[0] == '\0')
        return intern(s, file);
    size_t n = strlen(dir) + strlen(file) + 2;
    char *p = malloc(n);
    if (p == NULL)
        return NULL;
    snprintf(p, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", file);
    const char *r = intern(s, p);
    free(p);
    return r;
}

/* Appends to chain[0..n) the subprogram and inlined_subroutine DIEs under
 * parent that contain addr, outermost first, keeping the innermost CHAIN_MAX;
 * returns the new count. Our own walk rather than dwarf_getscopes, which (in
 * elfutils 0.188) finds nothing when an inlined function's abstract origin
 * lives in another CU, as with -flto. */
static int find_chain(Dwarf_Die *parent, Dwarf_Addr addr, Dwarf_Die *chain, int n, int depth)
{
    Dwarf_Die child;
    if (depth > 256 || dwarf_child(parent, &child) != 0)   /* bounds recursion on bogus DWARF */
        return n;
    do {
        int tag = dwarf_tag(&child), m;
        switch (tag) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (dwarf_haspc(&child, addr) != 1)
                break;
            if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
                if (n == CHAIN_MAX)
                    memmove(chain, chain + 1, --n * sizeof *chain);
                chain[n++] = child;
            }
            return find_chain(&child, addr, chain, n, depth + 1);
        case DW_TAG_namespace:     /* code-less containers of C++ functions */
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
            if ((m = find_chain(&child, addr, chain, n, depth + 1)) != n)
                return m;
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return n;
}

/* Fills out with the inline chain at module address addr (innermost first)
 * from DWARF; returns the number of frames, 0 if DWARF does not know addr. */
static int dwarf_chain(struct ctr_symbolizer *s, Dwfl_Module *mod, Dwarf_Addr addr,
                       struct ctr_sym_frame *out)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
    if (cu == NULL)
        return 0;
    const char *file = NULL;
    int line = 0;
    Dwarf_Line *l = dwarf_getsrc_die(cu, addr - bias);
    if (l != NULL) {
        file = abs_path(s, cu, dwarf_linesrc(l, NULL, NULL));
        if (dwarf_lineno(l, &line) != 0)
            line = 0;
    }

    /* With split DWARF (-gsplit-dwarf) the functions are in the .dwo unit
     * that libdw finds for the skeleton; the line table stays in the skeleton. */
    Dwarf_Die *unit = cu, split;
    uint8_t type;
    if (dwarf_cu_info(cu->cu, NULL, &type, NULL, &split, NULL, NULL, NULL) == 0
        && type == DW_UT_skeleton && split.addr != NULL)   /* cleared if .dwo missing */
        unit = &split;
    Dwarf_Die chain[CHAIN_MAX];
    int n = find_chain(unit, addr - bias, chain, 0, 0), k = 0;
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    for (int i = n - 1; i >= 0; i--) {   /* innermost first */
        Dwarf_Word v;
        out[k].function = intern(s, die_function(&chain[i]));
        out[k].file = file;
        out[k].line = line;
        out[k].function_line = attr_udata(&chain[i], DW_AT_decl_line, true, &v) ? clamp_line(v) : 0;
        k++;
        if (dwarf_tag(&chain[i]) == DW_TAG_subprogram)
            break;   /* the real function; anything outside is a nested-function parent */
        /* The caller's position is where this instance was inlined. */
        file = NULL, line = 0;
        if (files == NULL && dwarf_getsrcfiles(unit, &files, &nfiles) != 0)
            files = NULL;
        if (files != NULL && attr_udata(&chain[i], DW_AT_call_file, false, &v) && v < nfiles)
            file = abs_path(s, cu, dwarf_filesrc(files, v, NULL, NULL));
        if (attr_udata(&chain[i], DW_AT_call_line, false, &v))
            line = clamp_line(v);
    }
    if (k == 0 && file != NULL) {
        /* Line info but no function DIE (e.g. assembly): keep file/line and
         * let the symbol table name the function. */
        out[0] = (struct ctr_sym_frame){ .file = file, .line = line };
        return 1;
    }
    return k;
}

/* Symbolizes pc from scratch into out[0..CHAIN_MAX); returns the count. */
static int lookup(struct ctr_symbolizer *s, uint64_t pc, struct ctr_sym_frame *out)
{
    struct map *m = find_map(s, pc);
    if (m == NULL)
        return 0;
    if (m->state == MAP_UNOPENED)
        open_map(s, m);
    if (m->state != MAP_OPEN)
        return 0;
    /* libdwfl placed the module at its own bias; go through the file's vaddr
     * so a recorded bias libdwfl would not use (ET_EXEC) still lines up. */
    Dwarf_Addr mod_bias;
    if (dwfl_module_getelf(m->mod, &mod_bias) == NULL)
        return 0;
    Dwarf_Addr addr = pc - m->m.bias + mod_bias;
    int k = dwarf_chain(s, m->mod, addr, out);
    if (k > 0 && out[k - 1].function != NULL)
        return k;
    const char *sym = intern(s, dwfl_module_addrname(m->mod, addr));
    if (sym == NULL)
        return k > 0 && out[0].file != NULL ? k : 0;
    if (k == 0)
        out[k++] = (struct ctr_sym_frame){ 0 };
    out[k - 1].function = sym;
    return k;
}

static int copy_frames(struct ctr_sym_frame *out, const struct ctr_sym_frame *f, int n, int max)
{
    int k = n < max ? n : max;
    if (k > 0)   /* f may be NULL when there is nothing to copy */
        memcpy(out, f, (size_t)k * sizeof *f);
    return k;
}

/* Stores chain[0..k) as the cached answer for pc in free slot e. */
static void remember(struct ctr_symbolizer *s, struct pc_entry *e, uint64_t pc,
                     const struct ctr_sym_frame *chain, int k)
{
    if (k > 0 && s->frames_len + (size_t)k > s->frames_cap) {
        size_t cap = s->frames_cap ? 2 * s->frames_cap : 1024;
        if (cap > UINT32_MAX)   /* pc_entry.first is 32 bits */
            return;
        struct ctr_sym_frame *f = realloc(s->frames, cap * sizeof *f);
        if (f == NULL)
            return;
        s->frames = f;
        s->frames_cap = cap;
    }
    if (k > 0)
        memcpy(s->frames + s->frames_len, chain, (size_t)k * sizeof *chain);
    *e = (struct pc_entry){ .pc = pc, .first = (uint32_t)s->frames_len,
                            .n = (uint16_t)k, .used = true };
    s->frames_len += (size_t)k;
    s->pcs_len++;
}

/* ---------------------------------------------------------------------------
 * Public functions
 * ------------------------------------------------------------------------- */

struct ctr_symbolizer *ctr_symbolizer_new(const struct ctr_sym_mapping *maps, size_t n)
{
    struct ctr_symbolizer *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    if (n > 0 && (s->maps = calloc(n, sizeof *s->maps)) == NULL)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        struct map *m = &s->maps[s->nmaps];
        const char *path = maps[i].path ? maps[i].path : "";
        m->m = maps[i];
        m->index = (int)i;
        m->m.build_id = NULL;
        if ((m->m.path = strdup(path)) == NULL)
            goto fail;
        s->nmaps++;
        if (maps[i].build_id != NULL && maps[i].build_id_len > 0) {
            uint8_t *id = malloc(maps[i].build_id_len);
            if (id == NULL)
                goto fail;
            memcpy(id, maps[i].build_id, maps[i].build_id_len);
            m->m.build_id = id;
        } else {
            m->m.build_id_len = 0;
        }
    }
    if (s->nmaps > 0)
        qsort(s->maps, s->nmaps, sizeof *s->maps, cmp_start);
    for (size_t i = 0; i < s->nmaps; i++) {
        uint64_t prev = i > 0 ? s->maps[i - 1].max_limit : 0;
        s->maps[i].max_limit = s->maps[i].m.limit > prev ? s->maps[i].m.limit : prev;
    }
    return s;
fail:
    ctr_symbolizer_free(s);
    return NULL;
}

int ctr_symbolize(struct ctr_symbolizer *s, uint64_t pc, struct ctr_sym_frame *out, int max)
{
    if (s == NULL || out == NULL || max <= 0)
        return 0;
    struct pc_entry *e = pc_slot(s, pc);
    if (e != NULL && e->used)
        return e->n ? copy_frames(out, s->frames + e->first, e->n, max) : 0;
    struct ctr_sym_frame chain[CHAIN_MAX];
    int k = lookup(s, pc, chain);
    /* e is still valid: lookup() never touches the PC table. Under OOM the
     * answer is simply not cached. */
    if (e != NULL)
        remember(s, e, pc, chain, k);
    return copy_frames(out, chain, k, max);
}

int ctr_symbolizer_mapping(const struct ctr_symbolizer *s, uint64_t pc)
{
    const struct map *m = s ? find_map(s, pc) : NULL;
    return m ? m->index : -1;
}

const char *ctr_symbolizer_warnings(const struct ctr_symbolizer *s)
{
    return s && s->warn ? s->warn : "";
}

void ctr_symbolizer_free(struct ctr_symbolizer *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->nmaps; i++) {
        if (s->maps[i].owner)
            dwfl_end(s->maps[i].dwfl);
        free((char *)s->maps[i].m.path);
        free((uint8_t *)s->maps[i].m.build_id);
    }
    free(s->maps);
    for (size_t i = 0; i < s->strs_cap; i++)
        free(s->strs[i]);
    free(s->strs);
    free(s->pcs);
    free(s->frames);
    free(s->warn);
    free(s);
}
