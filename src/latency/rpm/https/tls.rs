//! TLS for `rpm --url`: a rustls client configuration (ring provider, TLS 1.3 and 1.2, ALPN
//! `h2`) trusting the system's CA bundle, a CA file the user names (`--ca`), or, with
//! `--insecure`, any certificate (the handshake's signatures are still verified, so the
//! handshake costs what it costs against a trusted server). TLS errors become messages that say
//! what to do.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which server certificates to accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The system's CA bundle ($SSL_CERT_FILE, else the usual Debian/Fedora/OpenWrt paths).
    System,
    /// The CA (or self-signed) certificates in this PEM file.
    CaFile(PathBuf),
    /// Any certificate (a self-signed test server).
    Insecure,
}

/// Where CA bundles live: Debian/Ubuntu/OpenWrt (ca-bundle, ca-certificates), Fedora/RHEL,
/// Alpine/macOS-style.
const BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
];

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads every certificate of a PEM file into a root store.
fn load_pem(path: &Path, roots: &mut RootCertStore) -> Result<usize, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut n = 0;
    for c in certs {
        let c = c.map_err(|e| format!("{}: not a PEM certificate file: {e}", path.display()))?;
        if roots.add(c).is_ok() {
            n += 1;
        }
    }
    if n == 0 {
        return Err(format!("{}: no usable certificate in it", path.display()));
    }
    Ok(n)
}

fn system_roots() -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    let from_env = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    let candidates: Vec<PathBuf> = from_env
        .into_iter()
        .chain(BUNDLES.iter().map(PathBuf::from))
        .collect();
    for p in &candidates {
        if p.is_file() && load_pem(p, &mut roots).is_ok() {
            return Ok(roots);
        }
    }
    Err(format!(
        "no CA bundle found (looked at $SSL_CERT_FILE and {}): install ca-certificates, pass \
         --ca FILE with the server's CA, or --insecure for a self-signed test server",
        BUNDLES.join(", ")
    ))
}

/// The client configuration for `trust`, offering ALPN `h2` only.
pub fn client_config(trust: &Trust) -> Result<Arc<ClientConfig>, String> {
    let p = provider();
    let builder = ClientConfig::builder_with_provider(p.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?;
    let mut cfg = match trust {
        Trust::System => builder
            .with_root_certificates(system_roots()?)
            .with_no_client_auth(),
        Trust::CaFile(path) => {
            let mut roots = RootCertStore::empty();
            load_pem(path, &mut roots).map_err(|e| format!("--ca: {e}"))?;
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(p)))
            .with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// The TLS name for `host` (a DNS name or an IP address).
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string())
        .map_err(|e| format!("{host}: not a TLS server name: {e}"))
}

/// Words for a failed handshake: the cause and what to do.
pub fn explain(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(c))
            if format!("{c:?}").contains("CaUsedAsEndEntity") =>
        {
            "TLS: the server's certificate is a CA certificate (CA:TRUE, what `openssl req -x509` \
             makes by default), which may not identify a server: make it with `-addext \
             basicConstraints=critical,CA:FALSE` or sign a server certificate with a CA and pass \
             --ca CA.pem; or --insecure for a test server"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(c)) => format!(
            "TLS: the server's certificate was refused ({c:?}): pass --ca FILE with the CA that \
             signed it (or the certificate itself), or --insecure for a self-signed test server"
        ),
        Some(rustls::Error::NoApplicationProtocol)
        | Some(rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)) => {
            "TLS: the server offers no HTTP/2 (ALPN h2): a responsiveness server must speak \
             HTTP/2 over TLS (nginx: `listen … ssl http2`)"
                .into()
        }
        Some(rustls::Error::AlertReceived(a)) => {
            format!("TLS: the server refused the handshake (alert {a:?})")
        }
        // A plain-text server (HTTP/1.1 without TLS, or another protocol) answered the
        // ClientHello with bytes that are not a TLS record.
        Some(rustls::Error::InvalidMessage(m)) => format!(
            "TLS: the server's answer is not TLS ({m:?}): this port does not speak HTTPS (a \
             plain http:// server?); a responsiveness server must speak HTTP/2 over TLS"
        ),
        Some(other) => format!("TLS: {other}"),
        // Closed before answering: EOF, or a reset if the ClientHello was still unread when it
        // closed (which of the two depends on timing).
        None if matches!(
            e.kind(),
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
        ) =>
        {
            "TLS: the server closed the connection during the handshake: is it an HTTPS server?"
                .into()
        }
        None => format!("TLS handshake: {e}"),
    }
}

/// Accepts any certificate chain, but still checks the handshake's signatures with the
/// provider's algorithms.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_and_errors() {
        let c = client_config(&Trust::Insecure).unwrap();
        assert_eq!(c.alpn_protocols, vec![b"h2".to_vec()]);
        let missing = Trust::CaFile("/nonexistent/ca.pem".into());
        let e = client_config(&missing).unwrap_err();
        assert!(
            e.contains("--ca") && e.contains("/nonexistent/ca.pem"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("rb-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let e = client_config(&Trust::CaFile(junk)).unwrap_err();
        assert!(e.contains("no usable certificate"), "{e}");
        assert!(server_name("127.0.0.1").is_ok());
        assert!(server_name("example.com").is_ok());
        assert!(server_name("bad name!").is_err());
    }
}
