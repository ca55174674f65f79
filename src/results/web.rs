//! A browser test served by `routerbench server` (docs/web.md): who ran it, how its figures
//! were taken, and what the router saw of that client. The figures themselves are the usual
//! `latency` section (test `web`); the router's samples are the usual `router` section.

use serde::{Deserialize, Serialize};

/// The browser side of a web test and the router's verdict on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WebClient {
    /// The client's address as the server saw it.
    pub client: String,
    /// `User-Agent` the page reported (at most 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// Screen size the page reported, `WxH` CSS pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<String>,
    /// Parallel HTTP streams per loaded direction.
    pub streams: u32,
    /// How the probes were timed: `resource-timing` (the browser's request-sent to
    /// first-byte times) or `fetch` (the page's own clock around the request).
    pub timing: String,
    /// The device of the server's route toward the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Where the queue built, in words (the router's qdisc toward the client, or not here).
    pub verdict: String,
    /// Transfer errors the page saw (at most 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Upload bytes the page counted as sent (its upload progress events), against what the
    /// server received (the flows' figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_bytes_sent_by_page: Option<u64>,
    /// The client as a Wi-Fi station of this router, over the loaded part of the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub station: Option<WebStation>,
}

/// The client's Wi-Fi link as this router's access point saw it (medians over the load).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WebStation {
    pub mac: String,
    pub dev: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_dbm: Option<f64>,
    /// Rate to the station (its download) and from it, Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_rate_mbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_rate_mbps: Option<f64>,
    /// Retries over the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_retries: Option<u64>,
    /// Share of its radio's airtime, percent (median over the load).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub airtime_share_pct: Option<f64>,
}
