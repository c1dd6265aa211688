/* SPDX-License-Identifier: MIT */
/* symbolize-nodwarf.c - code without DWARF of its own, for test-symbolize.c
 * (built with -g0):
 *
 * - nodwarf_member(), whose symbol is a mangled C++ name (an asm label):
 *   the symbol table's names must be demangled as DWARF's are.
 * - ctr_gap_a/b/c, three functions in one unit described by hand below:
 *   its ranges hold a and c, not b, but its line table's row for the end of
 *   a runs on over b, and libdwfl's address lookup (which keeps only where
 *   a unit's run of aranges starts) answers b with this unit. gcc -O2 makes
 *   the same gap for _start between a unit's .text.startup and its .text.
 *   b must get no file:line.
 */

void nodwarf_member(int x) __asm__("_ZN7nodwarf3Gap5probeEi");

/* Does nothing a compiler may remove; its body only gives it some bytes. */
__attribute__((noinline)) void nodwarf_member(int x)
{
    __asm__ volatile("nop; nop; nop; nop" ::"r"(x) : "memory");
}

/* The unit: DWARF 4, a compile_unit DIE with DW_AT_ranges and stmt_list,
 * aranges for a and c, and the line table gas builds from the .loc lines. */
__asm__(".file 1 \"/ctrace-test/gap-unit.c\"\n"
        ".section .debug_line,\"\",@progbits\n"
        ".Lctr_gap_line:\n"
        ".text\n"
        ".globl ctr_gap_a, ctr_gap_b, ctr_gap_c\n"
        ".type ctr_gap_a, @function\n"
        "ctr_gap_a:\n"
        ".loc 1 10\n"
        "  nop\n"
        ".loc 1 11\n"
        "  ret\n"
        ".Lctr_gap_a_end:\n"
        ".size ctr_gap_a, .-ctr_gap_a\n"
        ".type ctr_gap_b, @function\n"
        "ctr_gap_b:\n"
        "  nop\n  nop\n  nop\n  ret\n"
        ".size ctr_gap_b, .-ctr_gap_b\n"
        ".type ctr_gap_c, @function\n"
        "ctr_gap_c:\n"
        ".loc 1 30\n"
        "  nop\n"
        ".loc 1 31\n"
        "  ret\n"
        ".Lctr_gap_c_end:\n"
        ".size ctr_gap_c, .-ctr_gap_c\n"

        ".section .debug_abbrev,\"\",@progbits\n"
        ".Lctr_gap_abbrev:\n"
        "  .uleb128 1\n  .uleb128 0x11\n  .byte 0\n" /* 1: compile_unit, no children */
        "  .uleb128 0x03\n  .uleb128 0x08\n"         /* name: string */
        "  .uleb128 0x13\n  .uleb128 0x0b\n"         /* language: data1 */
        "  .uleb128 0x11\n  .uleb128 0x01\n"         /* low_pc: addr */
        "  .uleb128 0x55\n  .uleb128 0x17\n"         /* ranges: sec_offset */
        "  .uleb128 0x10\n  .uleb128 0x17\n"         /* stmt_list: sec_offset */
        "  .byte 0, 0\n  .byte 0\n"

        ".section .debug_info,\"\",@progbits\n"
        ".Lctr_gap_info:\n"
        "  .long .Lctr_gap_info_end - .Lctr_gap_info - 4\n"
        "  .value 4\n  .long .Lctr_gap_abbrev\n  .byte 8\n"
        "  .uleb128 1\n  .string \"/ctrace-test/gap-unit.c\"\n  .byte 0x0c\n" /* C99 */
        "  .quad 0\n  .long .Lctr_gap_ranges\n  .long .Lctr_gap_line\n"
        ".Lctr_gap_info_end:\n"

        ".section .debug_ranges,\"\",@progbits\n"
        ".Lctr_gap_ranges:\n"
        "  .quad ctr_gap_a, .Lctr_gap_a_end\n"
        "  .quad ctr_gap_c, .Lctr_gap_c_end\n"
        "  .quad 0, 0\n"

        ".section .debug_aranges,\"\",@progbits\n"
        "  .long .Lctr_gap_aranges_end - .Lctr_gap_aranges\n"
        ".Lctr_gap_aranges:\n"
        "  .value 2\n  .long .Lctr_gap_info\n  .byte 8, 0\n  .long 0\n"
        "  .quad ctr_gap_a, .Lctr_gap_a_end - ctr_gap_a\n"
        "  .quad ctr_gap_c, .Lctr_gap_c_end - ctr_gap_c\n"
        "  .quad 0, 0\n"
        ".Lctr_gap_aranges_end:\n"
        ".text\n");
