//! Who the measured machine is: SoC, board, CPU, BogoMIPS, OS and OpenWrt revision, kernel.
//! Every field is optional because every source file is (OpenWrt strips /proc on small images).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceInfo {
    /// SoC name: MIPS `system type`, ARM `Hardware`, or the board's SoC string.
    pub soc: Option<String>,
    /// Board / model: `/tmp/sysinfo/model`, MIPS `machine`, device-tree model, DMI product.
    pub model: Option<String>,
    /// `/tmp/sysinfo/board_name` (e.g. `netgear,r7800`).
    pub board_name: Option<String>,
    /// CPU model: MIPS `cpu model`, ARM `Processor`/`model name`, x86 `model name`.
    pub cpu_model: Option<String>,
    /// Architecture family as seen in cpuinfo: `mips`, `arm`, `aarch64`, `x86`, or other.
    pub arch: Option<String>,
    /// BogoMIPS of the first CPU (as the OpenWrt row shows it), per the cpuinfo text.
    pub bogomips: Option<String>,
    /// Logical CPUs listed in /proc/cpuinfo.
    pub cores: Option<u32>,
    /// `PRETTY_NAME` of /etc/os-release, or `DISTRIB_DESCRIPTION`.
    pub os: Option<String>,
    /// OpenWrt release (`VERSION_ID` / `DISTRIB_RELEASE`), when the system is OpenWrt.
    pub openwrt_release: Option<String>,
    /// Revision as the OpenWrt table shows it: `r23633` from BUILD_ID `r23633-c7b6cfac40`.
    pub revision: Option<String>,
    /// The full build id (`r23633-c7b6cfac40`).
    pub build_id: Option<String>,
    /// OpenWrt target/subtarget (`ramips/mt7621`).
    pub target: Option<String>,
    /// Kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// Host name.
    pub hostname: Option<String>,
    /// The cpuinfo lines the OpenWrt wiki awk picks (Processor, Hardware, machine, cpu model,
    /// system type, BogoMIPS), values only, de-duplicated, in file order.
    pub wiki_cpu_fields: Vec<String>,
    /// Sources that were missing or unreadable.
    #[serde(default)]
    pub notes: Vec<String>,
}
