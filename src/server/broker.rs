//! The cookie table: which tests are waiting for TCP data connections, which are running
//! (their cookie's late connections get ACCESS_DENIED), so many tests share one listener.

use crate::iperf3::session::StreamBroker;
use crate::wire::iperf3::Cookie;
use std::collections::HashMap;
use std::net::TcpStream;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};

/// A data connection with its accept sequence number.
pub type Accepted = (u64, TcpStream);

/// Where a connection with a known cookie goes.
#[derive(Debug)]
pub enum Route {
    /// A data stream of a test in CREATE_STREAMS.
    Stream(Sender<Accepted>),
    /// The test no longer accepts streams: answer ACCESS_DENIED.
    Deny,
    /// Unknown cookie: a new control connection.
    NewTest,
}

/// The server's cookie → test table.
#[derive(Debug, Default)]
pub struct Broker {
    tests: Mutex<HashMap<Vec<u8>, Option<Sender<Accepted>>>>,
}

impl Broker {
    /// Decides what a connection that sent `cookie` is.
    pub fn route(&self, cookie: &Cookie) -> Route {
        let Ok(t) = self.tests.lock() else {
            return Route::Deny;
        };
        match t.get(cookie.text_bytes()) {
            Some(Some(tx)) => Route::Stream(tx.clone()),
            Some(None) => Route::Deny,
            None => Route::NewTest,
        }
    }

    /// Registers a control connection's cookie (before streams are expected), so a second
    /// control connection with the same cookie is refused.
    pub fn claim(&self, cookie: &Cookie) -> bool {
        match self.tests.lock() {
            Ok(mut t) => {
                let key = cookie.text_bytes().to_vec();
                if t.contains_key(&key) {
                    return false;
                }
                t.insert(key, None);
                true
            }
            Err(_) => false,
        }
    }
}

impl StreamBroker for Broker {
    fn open(&self, cookie: &Cookie) -> Receiver<Accepted> {
        let (tx, rx) = channel();
        if let Ok(mut t) = self.tests.lock() {
            t.insert(cookie.text_bytes().to_vec(), Some(tx));
        }
        rx
    }

    fn running(&self, cookie: &Cookie) {
        if let Ok(mut t) = self.tests.lock() {
            t.insert(cookie.text_bytes().to_vec(), None);
        }
    }

    fn close(&self, cookie: &Cookie) {
        if let Ok(mut t) = self.tests.lock() {
            t.remove(cookie.text_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_cookie() {
        let b = Broker::default();
        let c = Cookie::from_random(&[1; 36]);
        assert!(matches!(b.route(&c), Route::NewTest));
        assert!(b.claim(&c));
        assert!(
            !b.claim(&c),
            "a second control connection with the same cookie"
        );
        assert!(matches!(b.route(&c), Route::Deny));
        let _rx = b.open(&c);
        assert!(matches!(b.route(&c), Route::Stream(_)));
        b.running(&c);
        assert!(matches!(b.route(&c), Route::Deny));
        b.close(&c);
        assert!(matches!(b.route(&c), Route::NewTest));
    }
}
