/* An unwinder that walks no frame, for the MIPS router builds (bench/cross.sh links it as
   libunwind.a instead of GCC's libgcc_eh.a; docs/cross-build.md).

   With panic = "abort" and panic_immediate_abort nothing unwinds, and the only caller left is
   std::backtrace::Backtrace::capture (anyhow calls it for each error when RUST_BACKTRACE or
   RUST_LIB_BACKTRACE is set). On MIPS that walk cannot work: rustc emits no unwind tables for
   the MIPS targets under panic = "abort" (the binary's .eh_frame is libgcc's own, 2.7 kB), and
   Debian's MIPS libgcc_eh.a, which is hard-float code, segfaulted under qemu-mips once the walk
   left its own frames. Here a capture finds no frame: the error is printed without a backtrace
   (the router build has no symbols to print anyway), and the binary has no FPU instruction of
   the unwinder's. Every entry point std's unwind crate can reference is defined, so the link
   never falls back to another libunwind. */
#include <stdint.h>
#include <stdlib.h>

typedef int reason_code;
enum { URC_NO_REASON = 0, URC_FATAL_PHASE1_ERROR = 3, URC_END_OF_STACK = 5 };
struct context;
struct exception;
typedef reason_code (*trace_fn)(struct context *, void *);

reason_code _Unwind_Backtrace(trace_fn trace, void *arg);
uintptr_t _Unwind_GetIP(struct context *c);
uintptr_t _Unwind_GetIPInfo(struct context *c, int *before);
uintptr_t _Unwind_GetCFA(struct context *c);
uintptr_t _Unwind_GetGR(struct context *c, int reg);
void _Unwind_SetGR(struct context *c, int reg, uintptr_t value);
void _Unwind_SetIP(struct context *c, uintptr_t value);
void *_Unwind_GetLanguageSpecificData(struct context *c);
uintptr_t _Unwind_GetRegionStart(struct context *c);
uintptr_t _Unwind_GetTextRelBase(struct context *c);
uintptr_t _Unwind_GetDataRelBase(struct context *c);
void *_Unwind_FindEnclosingFunction(void *pc);
reason_code _Unwind_RaiseException(struct exception *e);
void _Unwind_DeleteException(struct exception *e);
void _Unwind_Resume(struct exception *e);

reason_code _Unwind_Backtrace(trace_fn trace, void *arg) {
  (void)trace;
  (void)arg;
  return URC_END_OF_STACK;
}
/* No context is ever handed out, so these are never reached; they answer "nothing". */
uintptr_t _Unwind_GetIP(struct context *c) { (void)c; return 0; }
uintptr_t _Unwind_GetIPInfo(struct context *c, int *before) { (void)c; *before = 0; return 0; }
uintptr_t _Unwind_GetCFA(struct context *c) { (void)c; return 0; }
uintptr_t _Unwind_GetGR(struct context *c, int reg) { (void)c; (void)reg; return 0; }
void _Unwind_SetGR(struct context *c, int reg, uintptr_t value) { (void)c; (void)reg; (void)value; }
void _Unwind_SetIP(struct context *c, uintptr_t value) { (void)c; (void)value; }
void *_Unwind_GetLanguageSpecificData(struct context *c) { (void)c; return NULL; }
uintptr_t _Unwind_GetRegionStart(struct context *c) { (void)c; return 0; }
uintptr_t _Unwind_GetTextRelBase(struct context *c) { (void)c; return 0; }
uintptr_t _Unwind_GetDataRelBase(struct context *c) { (void)c; return 0; }
void *_Unwind_FindEnclosingFunction(void *pc) { (void)pc; return NULL; }
/* Raising is unwinding, which panic = "abort" never does. */
reason_code _Unwind_RaiseException(struct exception *e) { (void)e; return URC_FATAL_PHASE1_ERROR; }
void _Unwind_DeleteException(struct exception *e) { (void)e; }
void _Unwind_Resume(struct exception *e) { (void)e; abort(); }
