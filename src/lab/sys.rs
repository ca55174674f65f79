//! The lab's external tools and root checks: they live in `util::tool` (the monitor uses them
//! too, and the minimal build has no lab); re-exported here for the lab's own code.

pub use crate::util::tool::*;
