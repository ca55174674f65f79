//! End-to-end: `routerbench wifi` and the monitor on a machine without radios (this CI host:
//! its kernel has no wireless), and the bad inputs. The radios themselves are tested in the
//! Wi-Fi VM router (tests/vm/) and on captured nl80211 dumps (src/monitor/).

use crate::support::{rb, text};

#[test]
fn no_radio_is_one_note_and_exit_zero() {
    if std::path::Path::new("/sys/class/ieee80211").exists() {
        eprintln!("skipped: this machine has wireless radios");
        return;
    }
    let o = rb(&["wifi", "--interval", "0.1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("note: no wireless radio (no /sys/class/ieee80211)"),
        "{t}"
    );
    let o = rb(&["wifi", "--interval", "0.1", "--json", "-"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["radios"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(v["notes"][0], "no wireless radio (no /sys/class/ieee80211)");
    // The monitor says it once too.
    let o = rb(&["monitor", "-t", "0.3", "-i", "0.1", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        t.matches("no wireless radio (no /sys/class/ieee80211)")
            .count(),
        1,
        "{t}"
    );
}

#[test]
fn a_bad_interval_is_refused_by_name() {
    let o = rb(&["wifi", "--interval", "0"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        text(&o).contains("--interval 0: use 0.1–60 s"),
        "{}",
        text(&o)
    );
}
