//! Units for people: routerbench's own display of a bit rate (`20.0 Mbit/s`). Two other rate
//! texts exist on purpose, each in its layer: iperf3's output format (`19.1 Mbits/sec`, with
//! `--format`) is `report::iperf3::bitrate`, and tc's command-line syntax (`20000000bit`) is
//! `lab::tc_shaper::tc_rate`.

/// A bit rate for people: `950 kbit/s`, `20.0 Mbit/s`, `1.50 Gbit/s`.
pub fn human_rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else {
        format!("{:.0} kbit/s", bps / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_for_people() {
        assert_eq!(human_rate(950e3), "950 kbit/s");
        assert_eq!(human_rate(20e6), "20.0 Mbit/s");
        assert_eq!(human_rate(6.5e9), "6.50 Gbit/s");
    }
}
