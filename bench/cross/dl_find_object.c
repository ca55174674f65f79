/* _dl_find_object for static musl builds (bench/cross.sh links it into the unwinder archive).

   Debian's GCC 12 libgcc_eh.a (the unwinder the router recipe links as libunwind.a) was built
   against glibc 2.36, so its _Unwind_Find_FDE (unwind-dw2-fde-dip.c) asks glibc's
   _dl_find_object(pc, &dlfo) for the object that holds a PC and takes dlfo.dlfo_eh_frame as that
   object's PT_GNU_EH_FRAME table; when the call fails it returns "no FDE" and does not fall back
   to dl_iterate_phdr. musl has no _dl_find_object. A stub that fails made every frame look
   unwind-table-less: _Unwind_Backtrace's first step (uw_init_context_1 describing the unwinder's
   own frame) then hits gcc_assert and calls abort(), which is how the aarch64 router build's
   server died when anyhow captured a backtrace under RUST_BACKTRACE=1 (docs/cross-build.md).

   This one answers the question with musl's dl_iterate_phdr, which in a static executable
   reports the executable itself (from the auxiliary vector's AT_PHDR): the PT_LOAD segment that
   contains the PC gives the mapping, PT_GNU_EH_FRAME (rustc links with --eh-frame-hdr) the
   table. ARM's EHABI unwinder (armv7) does not call it. */
#include <link.h>
#include <stddef.h>
#include <stdint.h>

/* glibc's struct dl_find_object (<dlfcn.h>, glibc 2.35+) on every target without
   DLFO_STRUCT_HAS_EH_DBASE / DLFO_STRUCT_HAS_EH_COUNT, which is all but i386, nios2 and arm
   (and arm's EHABI path never calls this): aarch64 and mips. */
struct dl_find_object {
  unsigned long long dlfo_flags;
  void *dlfo_map_start;
  void *dlfo_map_end;
  void *dlfo_link_map;
  void *dlfo_eh_frame;
  unsigned long long dlfo_reserved[7];
};

int _dl_find_object(void *pc, struct dl_find_object *result);

struct search {
  uintptr_t pc;
  struct dl_find_object *out;
  int found;
};

static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
  struct search *s = arg;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  void *eh = NULL;
  int hit = 0;
  (void)size;
  for (size_t i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD) {
      if (s->pc >= start && s->pc - start < ph->p_memsz) hit = 1;
      if (start < lo) lo = start;
      if (start + ph->p_memsz > hi) hi = start + ph->p_memsz;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh = (void *)start;
    }
  }
  if (!hit) return 0;
  s->out->dlfo_flags = 0;
  s->out->dlfo_map_start = (void *)lo;
  s->out->dlfo_map_end = (void *)hi;
  s->out->dlfo_link_map = NULL;
  s->out->dlfo_eh_frame = eh;
  s->found = 1;
  return 1;
}

int _dl_find_object(void *pc, struct dl_find_object *result) {
  struct search s = {(uintptr_t)pc, result, 0};
  dl_iterate_phdr(visit, &s);
  return s.found && result->dlfo_eh_frame != NULL ? 0 : -1;
}
