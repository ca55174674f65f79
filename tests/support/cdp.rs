//! Headless Chromium driven over the DevTools protocol, as a user's browser: it opens a page,
//! clicks with real mouse events, reads the page's state and takes screenshots. The protocol
//! runs over a WebSocket; this is the least client of RFC 6455 the protocol needs (masked text
//! frames out, unmasked frames in, fragments joined), in test code only.

use base64ct::{Base64, Encoding};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Debian `chromium` binary, or `None` with the reason printed.
pub fn chromium() -> Option<PathBuf> {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        for name in ["chromium", "chromium-browser"] {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    eprintln!("skip the browser test: no chromium in PATH (apt-get install chromium)");
    None
}

/// A headless Chromium process (killed by PID and its profile removed on drop).
pub struct Browser {
    child: Child,
    profile: PathBuf,
    /// The DevTools port on the browser's loopback.
    pub port: u16,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Starts Chromium inside network namespace `ns` (None: this one) with a fresh profile, every
/// background feature off and the DevTools protocol on an ephemeral loopback port.
pub fn launch(bin: &Path, ns: Option<&str>, tag: &str) -> Browser {
    let profile = std::env::temp_dir().join(format!("rb-cdp-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns]).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(super::CHROMIUM_FLAGS);
    cmd.args(["--remote-debugging-port=0", "--remote-allow-origins=*"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("DevTools listening on ws://127.0.0.1:").nth(1) {
                if let Some(t) = tx.take() {
                    let _ = t.send(rest.split('/').next().unwrap_or("").parse::<u16>().ok());
                }
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(30))
        .ok()
        .flatten()
        .expect("chromium printed no DevTools port within 30 s");
    Browser {
        child,
        profile,
        port,
    }
}

/// One DevTools session with a page target.
pub struct Page {
    ws: TcpStream,
    next: u64,
}

fn http_get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("DevTools HTTP");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

impl Page {
    /// Attaches to the browser's first page (call from the browser's network namespace).
    pub fn attach(port: u16) -> Page {
        let list: Value = serde_json::from_str(&http_get(port, "/json/list")).expect("targets");
        let url = list
            .as_array()
            .and_then(|a| a.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["webSocketDebuggerUrl"].as_str())
            .expect("a page target")
            .to_string();
        let path = url.splitn(4, '/').nth(3).map(|p| format!("/{p}")).unwrap();
        let mut ws = TcpStream::connect(("127.0.0.1", port)).unwrap();
        ws.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let key = Base64::encode_string(&[7u8; 16]);
        write!(
            ws,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        // The 101 answer's head, byte by byte so no frame is read into a buffer here.
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            ws.read_exact(&mut b).expect("WebSocket handshake");
            head.push(b[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        Page { ws, next: 1 }
    }

    fn send(&mut self, text: &str) {
        let data = text.as_bytes();
        let mut f = vec![0x81u8];
        let n = data.len();
        if n < 126 {
            f.push(0x80 | n as u8);
        } else if n < 65536 {
            f.push(0x80 | 126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            f.push(0x80 | 127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
        let mask = [0x12u8, 0x34, 0x56, 0x78];
        f.extend_from_slice(&mask);
        f.extend(data.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.ws.write_all(&f).unwrap();
    }

    fn recv(&mut self) -> String {
        let mut msg = Vec::new();
        loop {
            let mut h = [0u8; 2];
            self.ws.read_exact(&mut h).expect("DevTools frame");
            let fin = h[0] & 0x80 != 0;
            let op = h[0] & 0x0f;
            let mut n = u64::from(h[1] & 0x7f);
            if n == 126 {
                let mut e = [0u8; 2];
                self.ws.read_exact(&mut e).unwrap();
                n = u64::from(u16::from_be_bytes(e));
            } else if n == 127 {
                let mut e = [0u8; 8];
                self.ws.read_exact(&mut e).unwrap();
                n = u64::from_be_bytes(e);
            }
            assert!(n < 64 << 20, "DevTools frame of {n} bytes");
            let mut data = vec![0u8; n as usize];
            self.ws.read_exact(&mut data).unwrap();
            if op == 0x9 || op == 0xA {
                continue; // ping/pong
            }
            msg.extend_from_slice(&data);
            if fin {
                return String::from_utf8_lossy(&msg).into_owned();
            }
        }
    }

    /// Sends a command and returns its `result` (panics on a protocol error).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"id": id, "method": method, "params": params}).to_string());
        loop {
            let v: Value = serde_json::from_str(&self.recv()).expect("DevTools JSON");
            if v["id"].as_u64() == Some(id) {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
        }
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        r["result"]["value"].clone()
    }

    /// Sets the viewport: CSS width and height, and whether it is a phone.
    pub fn viewport(&mut self, width: u32, height: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": if mobile {2} else {1}, "mobile": mobile}),
        );
    }

    /// Opens `url` and waits (20 s at most) until the document has loaded.
    pub fn open(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until {
            if self.eval("document.readyState") == "complete" && self.eval("location.href") == url {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{url} did not load within 20 s");
    }

    /// Clicks the element `#id` with the mouse, at its centre, as a user would.
    pub fn click(&mut self, id: &str) {
        let r = self.eval(&format!(
            "(() => {{ const r = document.getElementById('{id}').getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (r[0].as_f64().unwrap(), r[1].as_f64().unwrap());
        for t in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": t, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// A PNG of the whole page at the current viewport.
    pub fn screenshot(&mut self, path: &Path) {
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = Base64::decode_vec(r["data"].as_str().unwrap()).unwrap();
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }
}
