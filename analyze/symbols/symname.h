/* SPDX-License-Identifier: MIT */
/* symname.h - the one form in which the analyzer names a function, whether
 * the name comes from DWARF or from a symbol table.
 *
 * C names are kept as they are. C++ names are the demangled qualified name
 * without parameter list, return type, cv- or ref-qualifiers, ABI tags or
 * clone suffix, as pprof shows C++ by default, but keeping template
 * arguments (distinct instantiations are distinct code):
 *
 *     _ZNK5store5Table3getB5cxx11Ei     store::Table::get
 *     _ZN5store5QueueIiE3popERi         store::Queue<int>::pop
 *     _ZZ4mainENKUlvE_clEv              main::{lambda()#1}::operator()
 *     _Z3fooi.constprop.0               foo
 *
 * Overloads of one name therefore share it, as in pprof.
 */
#ifndef CTR_SYMNAME_H
#define CTR_SYMNAME_H

/* ctr_symname() : the shown name of the function whose symbol (or DWARF
 * linkage name) is `symbol`: a mangled C++ name (_Z...) demangled and
 * reduced by ctr_symname_reduce(); any other name, or one that does not
 * demangle, unchanged. `symbol` may come from a hostile file: any string is
 * accepted.
 * @return a malloc'd string the caller frees; NULL if symbol is NULL or
 *         memory ran out. Thread-safe. */
char *ctr_symname(const char *symbol);

/* ctr_symname_reduce() : reduces a demangled C++ function name as the file
 * comment shows ("void f<int>(int)" -> "f<int>"; "store::f()::Local::g()"
 * -> "store::f::Local::g"). A name with no parameter list (a variable,
 * "vtable for X") or with brackets that do not balance is returned whole.
 * @return a malloc'd string the caller frees; NULL if demangled is NULL or
 *         memory ran out. Thread-safe. */
char *ctr_symname_reduce(const char *demangled);

#endif
