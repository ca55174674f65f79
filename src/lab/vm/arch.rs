//! The VM router's CPU architecture (`lab up --router vm --vm-arch A`): which qemu, machine and
//! CPU model, which Debian kernel and busybox, which console, and which static routerbench build
//! go into the VM. docs/lab.md describes both.
//!
//! - **armv7** (the default): `qemu-system-arm -M virt,highmem=off -cpu cortex-a15`, Debian's
//!   armmp kernel (`linux-image-armmp:armhf`), console ttyAMA0, the
//!   `armv7-unknown-linux-musleabihf` build.
//! - **mipsel**: `qemu-system-mipsel -M malta -cpu 34Kf`, Debian's 4kc-malta kernel
//!   (`linux-image-4kc-malta:mipsel`), console ttyS0, the `mipsel-unknown-linux-musl` build
//!   (soft-float, what an MT7621 runs). qemu has no 1004Kc, the MT7621's core. The 1004K is the
//!   34K core in a coherent multi-core cluster: the same MIPS32r2 pipeline with the MT and DSP
//!   ASEs. So the 34Kf is the nearest model qemu has. Its FPU is the one difference, and the
//!   soft-float build never uses it. The VM has one CPU. The kernel's MT SMP
//!   (`CONFIG_MIPS_MT_SMP`, `NR_CPUS=2`) does bring up the 34Kf's second VPE under `-smp 2`,
//!   but under qemu the timer then stalls: RCU stalls and soft lockups, and a 55 s boot. An
//!   MT7621 has two cores with two threads each, so this VM is the weaker router. A 24KEc has
//!   the DSP ASE but not MT, and does not boot with `-smp 2` at all.

/// The VM router's architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VmArch {
    #[default]
    Armv7,
    Mipsel,
}

impl VmArch {
    /// Every architecture, for messages and tests.
    pub const ALL: [VmArch; 2] = [VmArch::Armv7, VmArch::Mipsel];

    /// The name `--vm-arch` takes and bench/cross.sh's `TARGETS` uses.
    pub fn name(self) -> &'static str {
        match self {
            VmArch::Armv7 => "armv7",
            VmArch::Mipsel => "mipsel",
        }
    }

    /// The qemu system emulator.
    pub fn qemu(self) -> &'static str {
        match self {
            VmArch::Armv7 => "qemu-system-arm",
            VmArch::Mipsel => "qemu-system-mipsel",
        }
    }

    /// The Debian package that has [`Self::qemu`].
    pub fn qemu_package(self) -> &'static str {
        match self {
            VmArch::Armv7 => "qemu-system-arm",
            VmArch::Mipsel => "qemu-system-mips",
        }
    }

    /// qemu's machine and CPU model.
    pub fn machine(self) -> [&'static str; 4] {
        match self {
            VmArch::Armv7 => ["-M", "virt,highmem=off", "-cpu", "cortex-a15"],
            VmArch::Mipsel => ["-M", "malta", "-cpu", "34Kf"],
        }
    }

    /// The kernel's serial console.
    pub fn console(self) -> &'static str {
        match self {
            VmArch::Armv7 => "ttyAMA0",
            VmArch::Mipsel => "ttyS0",
        }
    }

    /// Debian's architecture name (dpkg's foreign architecture).
    pub fn deb_arch(self) -> &'static str {
        match self {
            VmArch::Armv7 => "armhf",
            VmArch::Mipsel => "mipsel",
        }
    }

    /// The Debian kernel flavour (`linux-image-<version>-<flavour>`).
    pub fn kernel_flavour(self) -> &'static str {
        match self {
            VmArch::Armv7 => "armmp",
            VmArch::Mipsel => "4kc-malta",
        }
    }

    /// The meta package whose dependency names the exact kernel package.
    pub fn kernel_meta(self) -> String {
        format!("linux-image-{}:{}", self.kernel_flavour(), self.deb_arch())
    }

    /// Debian's multiarch directory name (`lib/<multiarch>/`).
    pub fn multiarch(self) -> &'static str {
        match self {
            VmArch::Armv7 => "arm-linux-gnueabihf",
            VmArch::Mipsel => "mipsel-linux-gnu",
        }
    }

    /// The static busybox package.
    pub fn busybox(self) -> String {
        format!("busybox-static:{}", self.deb_arch())
    }

    /// The directory (in the cache) the packages unpack into. armv7's is `root`, as before.
    pub fn root_dir(self) -> &'static str {
        match self {
            VmArch::Armv7 => "root",
            VmArch::Mipsel => "root-mipsel",
        }
    }

    /// The Rust target bench/cross.sh builds for this VM.
    pub fn triple(self) -> &'static str {
        match self {
            VmArch::Armv7 => "armv7-unknown-linux-musleabihf",
            VmArch::Mipsel => "mipsel-unknown-linux-musl",
        }
    }

    /// The environment variable that names the static routerbench for this VM.
    pub fn bin_env(self) -> &'static str {
        match self {
            VmArch::Armv7 => "ROUTERBENCH_ARMV7_BIN",
            VmArch::Mipsel => "ROUTERBENCH_MIPSEL_BIN",
        }
    }

    /// ELF `e_machine` of the static routerbench (EM_ARM = 40, EM_MIPS = 8); both are 32-bit
    /// little-endian.
    pub fn elf_machine(self) -> u16 {
        match self {
            VmArch::Armv7 => 40,
            VmArch::Mipsel => 8,
        }
    }

    /// What `routerbench device` says the architecture is inside the VM (Rust's
    /// `std::env::consts::ARCH`).
    pub fn guest_arch(self) -> &'static str {
        match self {
            VmArch::Armv7 => "arm",
            VmArch::Mipsel => "mips",
        }
    }

    /// The most virtual CPUs that work: 8 on the virt machine. On malta only 1: a second VPE
    /// stalls the timer under qemu (see the module's comment).
    pub fn max_vcpus(self) -> u32 {
        match self {
            VmArch::Armv7 => 8,
            VmArch::Mipsel => 1,
        }
    }

    /// The virtual CPUs when `--vcpus` is not given.
    pub fn default_vcpus(self) -> u32 {
        match self {
            VmArch::Armv7 => 2,
            VmArch::Mipsel => 1,
        }
    }

    /// The most memory: armv7's highmem=off caps the virt machine below 3 GiB (2048 used);
    /// the 4kc-malta kernel has no HIGHMEM, so it sees at most 256 MiB of low memory.
    pub fn max_memory_mib(self) -> u32 {
        match self {
            VmArch::Armv7 => 2048,
            VmArch::Mipsel => 256,
        }
    }

    /// A line for the result: emulator, machine, CPU.
    pub fn emulator(self) -> String {
        let m = self.machine();
        format!("{} -M {} -cpu {}", self.qemu(), m[1], m[3])
    }
}

impl std::str::FromStr for VmArch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        VmArch::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("unknown VM architecture {s:?}: use armv7 or mipsel"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_packages() {
        for a in VmArch::ALL {
            assert_eq!(a.name().parse::<VmArch>(), Ok(a));
        }
        assert!("mips".parse::<VmArch>().unwrap_err().contains("mipsel"));
        assert_eq!(VmArch::default(), VmArch::Armv7);
        assert_eq!(VmArch::Armv7.kernel_meta(), "linux-image-armmp:armhf");
        assert_eq!(VmArch::Mipsel.kernel_meta(), "linux-image-4kc-malta:mipsel");
        assert_eq!(VmArch::Mipsel.busybox(), "busybox-static:mipsel");
        assert_eq!(
            VmArch::Mipsel.emulator(),
            "qemu-system-mipsel -M malta -cpu 34Kf"
        );
    }
}
