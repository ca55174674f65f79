//! CAKE's DiffServ tins: which DSCP goes to which tin, and each tin's share of the rate and
//! DRR weight (Linux `cake_config_besteffort/diffserv3/diffserv4`).

/// The tin layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiffservMode {
    Besteffort,
    Diffserv3,
    #[default]
    Diffserv4,
}

/// One tin's static description: name, rate threshold as a right shift of the shaped rate, DRR
/// weight when unlimited (the quantum 1024 shifted the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TinSpec {
    pub name: &'static str,
    pub rate_shift: u32,
}

#[rustfmt::skip]
const DIFFSERV3: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 2, 0, 2, 0,
    2, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 0, 0, 0, 0, 0, 0,
];

#[rustfmt::skip]
const DIFFSERV4: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0,
    1, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 2, 0, 2, 0, 2, 0,
    2, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 0, 0, 3, 0, 3, 0,
    3, 0, 0, 0, 0, 0, 0, 0,
    3, 0, 0, 0, 0, 0, 0, 0,
];

impl DiffservMode {
    /// The tins in index order; in shaped mode a higher index wins while within its threshold.
    pub fn tins(self) -> &'static [TinSpec] {
        const BE: TinSpec = TinSpec {
            name: "Best Effort",
            rate_shift: 0,
        };
        const BULK: TinSpec = TinSpec {
            name: "Bulk",
            rate_shift: 4,
        };
        const VIDEO: TinSpec = TinSpec {
            name: "Video",
            rate_shift: 1,
        };
        const VOICE: TinSpec = TinSpec {
            name: "Voice",
            rate_shift: 2,
        };
        match self {
            DiffservMode::Besteffort => &[BE],
            DiffservMode::Diffserv3 => &[BE, BULK, VOICE],
            DiffservMode::Diffserv4 => &[BE, BULK, VIDEO, VOICE],
        }
    }

    /// The tin for a DSCP.
    pub fn tin_of(self, dscp: u8) -> usize {
        let d = usize::from(dscp & 63);
        match self {
            DiffservMode::Besteffort => 0,
            DiffservMode::Diffserv3 => usize::from(DIFFSERV3[d]),
            DiffservMode::Diffserv4 => usize::from(DIFFSERV4[d]),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "besteffort" => Some(DiffservMode::Besteffort),
            "diffserv3" => Some(DiffservMode::Diffserv3),
            "diffserv4" => Some(DiffservMode::Diffserv4),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffserv4_classes() {
        let m = DiffservMode::Diffserv4;
        let name = |d| m.tins()[m.tin_of(d)].name;
        assert_eq!(name(0), "Best Effort");
        assert_eq!(name(8), "Bulk"); // CS1
        assert_eq!(name(1), "Bulk"); // LE
        assert_eq!(name(34), "Video"); // AF41
        assert_eq!(name(24), "Video"); // CS3
        assert_eq!(name(46), "Voice"); // EF
        assert_eq!(name(48), "Voice"); // CS6
        assert_eq!(name(10), "Best Effort"); // AF11
    }
}
