//! The little of an ELF file the VM router's image builder needs from a dynamically linked
//! program or library: its interpreter (`PT_INTERP`, e.g. `/lib/ld-linux-armhf.so.3`) and the
//! libraries it needs (`DT_NEEDED` of `PT_DYNAMIC`, names in the dynamic string table). 32- and
//! 64-bit, either byte order. Bad or truncated input is an error, never a panic.

/// What a dynamically linked ELF file asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dynamic {
    pub interp: Option<String>,
    pub needed: Vec<String>,
}

struct Reader<'a> {
    b: &'a [u8],
    le: bool,
    wide: bool,
}

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: u64) -> Result<[u8; N], String> {
        let at = usize::try_from(at).map_err(|_| "offset out of range".to_string())?;
        self.b
            .get(at..at.checked_add(N).ok_or("offset out of range")?)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| format!("truncated ELF (wanted {N} bytes at {at})"))
    }
    fn u16(&self, at: u64) -> Result<u64, String> {
        let a = self.bytes::<2>(at)?;
        Ok(u64::from(if self.le {
            u16::from_le_bytes(a)
        } else {
            u16::from_be_bytes(a)
        }))
    }
    fn u32(&self, at: u64) -> Result<u64, String> {
        let a = self.bytes::<4>(at)?;
        Ok(u64::from(if self.le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }))
    }
    fn u64(&self, at: u64) -> Result<u64, String> {
        let a = self.bytes::<8>(at)?;
        Ok(if self.le {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        })
    }
    /// An address-sized word.
    fn word(&self, at: u64) -> Result<u64, String> {
        if self.wide {
            self.u64(at)
        } else {
            self.u32(at)
        }
    }
    fn cstr(&self, at: u64) -> Result<String, String> {
        let at = usize::try_from(at).map_err(|_| "string out of range".to_string())?;
        let rest = self.b.get(at..).ok_or("string out of range")?;
        let end = rest
            .iter()
            .take(4096)
            .position(|&c| c == 0)
            .ok_or("unterminated string")?;
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    }
}

const PT_LOAD: u64 = 1;
const PT_DYNAMIC: u64 = 2;
const PT_INTERP: u64 = 3;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;

/// The interpreter and `DT_NEEDED` names of ELF file `b` (a static file has neither).
pub fn dynamic(b: &[u8]) -> Result<Dynamic, String> {
    if b.len() < 52 || &b[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    let wide = match b[4] {
        1 => false,
        2 => true,
        c => return Err(format!("unknown ELF class {c}")),
    };
    let le = match b[5] {
        1 => true,
        2 => false,
        d => return Err(format!("unknown ELF data encoding {d}")),
    };
    let r = Reader { b, le, wide };
    let (phoff, phentsize, phnum) = if wide {
        (r.u64(32)?, r.u16(54)?, r.u16(56)?)
    } else {
        (r.u32(28)?, r.u16(42)?, r.u16(44)?)
    };
    // (type, offset, vaddr, filesz) of each program header.
    let mut phs = Vec::new();
    for i in 0..phnum.min(256) {
        let at = phoff + i * phentsize;
        let p_type = r.u32(at)?;
        let (off, vaddr, filesz) = if wide {
            (r.u64(at + 8)?, r.u64(at + 16)?, r.u64(at + 32)?)
        } else {
            (r.u32(at + 4)?, r.u32(at + 8)?, r.u32(at + 16)?)
        };
        phs.push((p_type, off, vaddr, filesz));
    }
    let mut out = Dynamic::default();
    if let Some(&(_, off, _, _)) = phs.iter().find(|p| p.0 == PT_INTERP) {
        out.interp = Some(r.cstr(off)?);
    }
    let Some(&(_, dyn_off, _, dyn_size)) = phs.iter().find(|p| p.0 == PT_DYNAMIC) else {
        return Ok(out);
    };
    let entry = if wide { 16 } else { 8 };
    let mut needed_at = Vec::new();
    let mut strtab = None;
    for i in 0..(dyn_size / entry).min(4096) {
        let at = dyn_off + i * entry;
        let tag = r.word(at)?;
        let val = r.word(at + entry / 2)?;
        match tag {
            DT_NULL => break,
            DT_NEEDED => needed_at.push(val),
            DT_STRTAB => strtab = Some(val),
            _ => {}
        }
    }
    if needed_at.is_empty() {
        return Ok(out);
    }
    let strtab = strtab.ok_or("DT_NEEDED without DT_STRTAB")?;
    // DT_STRTAB is an address: the load segment that maps it gives its file offset.
    let str_off = phs
        .iter()
        .find(|p| p.0 == PT_LOAD && p.2 <= strtab && strtab < p.2 + p.3)
        .map(|p| strtab - p.2 + p.1)
        .ok_or("the dynamic string table is in no loaded segment")?;
    for n in needed_at {
        out.needed.push(r.cstr(str_off + n)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 32-bit little-endian ELF: a PT_LOAD mapping the whole file at vaddr 0x1000, a
    /// PT_INTERP, a PT_DYNAMIC with two DT_NEEDED and a DT_STRTAB.
    fn tiny_elf32() -> Vec<u8> {
        let mut b = vec![0u8; 0x200];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 1;
        b[5] = 1;
        let w16 =
            |b: &mut Vec<u8>, at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_le_bytes());
        let w32 =
            |b: &mut Vec<u8>, at: usize, v: u32| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        w32(&mut b, 28, 0x40); // phoff
        w16(&mut b, 42, 32); // phentsize
        w16(&mut b, 44, 3); // phnum
        // PT_LOAD: offset 0, vaddr 0x1000, filesz 0x200
        w32(&mut b, 0x40, 1);
        w32(&mut b, 0x44, 0);
        w32(&mut b, 0x48, 0x1000);
        w32(&mut b, 0x50, 0x200);
        // PT_INTERP at 0x100
        w32(&mut b, 0x60, 3);
        w32(&mut b, 0x64, 0x100);
        b[0x100..0x100 + 25].copy_from_slice(b"/lib/ld-linux-armhf.so.3\0");
        // PT_DYNAMIC at 0x140, 4 entries
        w32(&mut b, 0x80, 2);
        w32(&mut b, 0x84, 0x140);
        w32(&mut b, 0x90, 32);
        // strtab at file 0x180 = vaddr 0x1180
        b[0x180..0x180 + 22].copy_from_slice(b"\0libc.so.6\0libnl-3.so\0");
        for (i, (tag, val)) in [(1u32, 1u32), (1, 11), (5, 0x1180), (0, 0)]
            .iter()
            .enumerate()
        {
            w32(&mut b, 0x140 + i * 8, *tag);
            w32(&mut b, 0x144 + i * 8, *val);
        }
        b
    }

    #[test]
    fn interp_and_needed() {
        let d = dynamic(&tiny_elf32()).unwrap();
        assert_eq!(d.interp.as_deref(), Some("/lib/ld-linux-armhf.so.3"));
        assert_eq!(d.needed, ["libc.so.6", "libnl-3.so"]);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(dynamic(b"#!/bin/sh\n").is_err());
        let e = tiny_elf32();
        for cut in [60, 0x90, 0x148, 0x185] {
            assert!(dynamic(&e[..cut]).is_err(), "cut at {cut}");
        }
        let mut odd = e.clone();
        odd[4] = 9;
        assert!(dynamic(&odd).unwrap_err().contains("class"));
    }

    #[test]
    fn this_test_binary_if_dynamic() {
        // The test binary itself: either static (nothing) or with libc among its needs.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let d = dynamic(&me).unwrap();
        if d.interp.is_some() {
            assert!(d.needed.iter().any(|n| n.starts_with("libc.so")), "{d:?}");
        }
    }
}
