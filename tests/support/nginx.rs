//! Debian's nginx as a draft-conforming responsiveness server for the `rpm --url` tests: HTTP/2
//! over TLS with a certificate from a throwaway CA made with the `openssl` CLI, and the draft's
//! four endpoints (docs/rpm.md, "A responsiveness server with nginx"):
//! - `/.well-known/nq`: the configuration JSON;
//! - `/small`: 1 byte; `/large`: an 8 GiB sparse file (no disk space, read at memory speed);
//! - `/upload`: POST of any size, read whole and discarded (how: `nginx.conf.in`).
//!
//! Also, for the bad cases: `/.well-known/nq-limited` (an upload URL that refuses large bodies,
//! 413), `/.well-known/nq-stalled` (never answered), a TLS port without HTTP/2 and a plain-HTTP
//! port.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The POST body the client sends (src/latency/rpm/https/conn.rs UPLOAD_BODY).
const UPLOAD_BODY: &str = "4m";

/// The server's configuration (shared with bench/rpm-nginx.sh).
const TEMPLATE: &str = include_str!("nginx.conf.in");

/// True if nginx and openssl are installed; otherwise says why the test skips.
pub fn available(test: &str) -> bool {
    for (tool, pkg) in [("nginx", "nginx"), ("openssl", "openssl")] {
        let found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .iter()
            .any(|d| Path::new(d).join(tool).exists());
        if !found {
            eprintln!("skip {test}: {tool} not installed (apt-get install {pkg}; .ci/run does)");
            return false;
        }
    }
    true
}

/// A running nginx; stopped (SIGTERM to its master, which stops the workers) when dropped.
pub struct Nginx {
    child: Child,
    pub dir: PathBuf,
    pub ip: String,
    pub port: u16,
    /// A TLS port without HTTP/2.
    pub port_h1: u16,
    /// Plain HTTP/1.1, no TLS.
    pub port_plain: u16,
    _silent: std::net::TcpListener,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run a tool");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A CA and a server certificate for `ip`, signed by it (`ca.pem`, `cert.pem`, `key.pem`).
fn make_certs(dir: &Path, ip: &str) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(Command::new("openssl")
        .current_dir(dir)
        .args(["req", "-x509"])
        .args(ec)
        .args(["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"])
        .args(["-subj", "/CN=routerbench test CA"]));
    run(Command::new("openssl")
        .current_dir(dir)
        .arg("req")
        .args(ec)
        .args([
            "-keyout",
            "key.pem",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=rpm-test",
        ]));
    std::fs::write(
        dir.join("ext.cnf"),
        format!(
            "subjectAltName=IP:{ip},DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
             extendedKeyUsage=serverAuth\n"
        ),
    )
    .unwrap();
    run(Command::new("openssl")
        .current_dir(dir)
        .args([
            "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        ])
        .args([
            "-CAcreateserial",
            "-out",
            "cert.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]));
}

fn config(host: &str, upload: &str) -> String {
    format!(
        r#"{{"version": 1, "urls": {{"large_download_url": "https://{host}/large",
 "small_download_url": "https://{host}/small", "upload_url": "https://{host}/{upload}"}}}}"#
    )
}

impl Nginx {
    /// Starts nginx listening on `ip` (a loopback address, or with `netns` an address inside
    /// that network namespace); ports are free ones on loopback, fixed ones in a namespace.
    pub fn start(tag: &str, ip: &str, netns: Option<&str>) -> Nginx {
        let dir = std::env::temp_dir().join(format!("rb-nginx-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        make_certs(&dir, ip);
        let (port, port_h1) = match netns {
            None => (free_port(), free_port()),
            Some(_) => (8443, 8444),
        };
        let host = if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        };
        std::fs::write(dir.join("small"), "x").unwrap();
        std::fs::File::create(dir.join("large"))
            .unwrap()
            .set_len(8 << 30)
            .unwrap();
        std::fs::write(dir.join("config.json"), config(&host, "upload")).unwrap();
        std::fs::write(dir.join("limited.json"), config(&host, "upload-limited")).unwrap();
        let listen = if ip.contains(':') {
            format!("[{ip}]")
        } else {
            ip.to_string()
        };
        // Bound and never accepted: connections to it complete in the kernel and then hear
        // nothing (the stalled configuration URL's upstream).
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port_plain = match netns {
            None => free_port(),
            Some(_) => 8080,
        };
        let conf = TEMPLATE
            .replace("@DIR@", &dir.display().to_string())
            .replace("@LISTEN@", &listen)
            .replace("@PORT@", &port.to_string())
            .replace("@PORT_H1@", &port_h1.to_string())
            .replace("@PORT_PLAIN@", &port_plain.to_string())
            .replace(
                "@PORT_SILENT@",
                &silent.local_addr().unwrap().port().to_string(),
            )
            .replace("@UPLOAD_BODY@", UPLOAD_BODY);
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "nginx"]);
                c
            }
            None => Command::new("nginx"),
        };
        let child = cmd
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let n = Nginx {
            child,
            dir,
            ip: ip.into(),
            port,
            port_h1,
            port_plain,
            _silent: silent,
        };
        // Listening: its pid file appears once the configuration is read and the ports bound.
        let until = Instant::now() + Duration::from_secs(10);
        while !n.dir.join("nginx.pid").exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            n.dir.join("nginx.pid").exists(),
            "nginx did not start: {}",
            std::fs::read_to_string(n.dir.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
        n
    }

    /// `https://ip:port/PATH`.
    pub fn url(&self, path: &str) -> String {
        if self.ip.contains(':') {
            format!("https://[{}]:{}{path}", self.ip, self.port)
        } else {
            format!("https://{}:{}{path}", self.ip, self.port)
        }
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM to the master: it stops its workers and exits (SIGKILL would orphan them).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_dir_all(&self.dir);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
