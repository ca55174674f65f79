//! `--qdisc fifo|codel|fq_codel|cake`, as `lab up`, `lab capacity --sqm` and `shape` take it.

use aqm::QdiscKind;
use clap::ValueEnum;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum QdiscArg {
    Fifo,
    Codel,
    #[value(name = "fq_codel")]
    FqCodel,
    Cake,
}

impl QdiscArg {
    pub fn kind(self) -> QdiscKind {
        match self {
            QdiscArg::Fifo => QdiscKind::Fifo,
            QdiscArg::Codel => QdiscKind::Codel,
            QdiscArg::FqCodel => QdiscKind::FqCodel,
            QdiscArg::Cake => QdiscKind::Cake,
        }
    }
}
