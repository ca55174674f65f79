//! The router lab: three network namespaces (LAN host, router, WAN host) joined by two veth
//! pairs, with a known bottleneck on each direction of the router, optional NAT, offloads and a
//! congestion-control default. Every latency number measured through it can be checked against
//! buffer·8/rate (docs/protocols/netns-lab.md).
//!
//! ```text
//! [<name>-lan] lan0 10.201.1.2 <-veth-> rtr-lan 10.201.1.1 [<name>-rtr] rtr-wan 10.201.2.1 <-veth-> wan0 10.201.2.2 [<name>-wan]
//! upload bottleneck: egress qdisc of rtr-wan        download bottleneck: egress qdisc of rtr-lan
//! ```
//!
//! Links are created directly inside the lab namespaces, so nothing ever appears in the root
//! namespace, and deleting the three namespaces removes everything. Addresses can repeat between
//! labs because each lab's namespaces are separate.

pub mod accuracy;
pub mod aqm_forwarder;
pub mod backlog;
pub mod capacity;
pub mod error;
pub mod events;
pub mod load;
pub mod native_load;
pub mod netns;
pub mod offload;
pub mod probe;
pub mod router;
pub mod run;
pub mod sqm_capacity;
pub mod state;
pub mod sys;
pub mod tc_shaper;
pub mod theory;
mod topology;
pub mod vm;
pub mod wifi_bytes;
pub mod wifi_run;

pub use error::{LabError, Result};
pub use events::{LabEvent, LabEvents};
pub use state::{config_path, load_config};
pub use topology::{DownReport, LabGuard, LabSpec, down, qdisc_stats, status, up};

/// Device names inside the lab (the same in every lab: each lab has its own namespaces).
pub const DEV_LAN: &str = "lan0";
pub const DEV_RTR_LAN: &str = "rtr-lan";
pub const DEV_RTR_WAN: &str = "rtr-wan";
pub const DEV_WAN: &str = "wan0";

pub const LAN_IP: &str = "10.201.1.2";
pub const RTR_LAN_IP: &str = "10.201.1.1";
pub const RTR_WAN_IP: &str = "10.201.2.1";
pub const WAN_IP: &str = "10.201.2.2";
pub const LAN_NET: &str = "10.201.1.0/24";

/// The nftables table routerbench owns inside the router namespace.
pub const NFT_TABLE: &str = "routerbench_lab";

/// Default lab name (`--name`).
pub const DEFAULT_NAME: &str = "rblab";
