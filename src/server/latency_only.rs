//! The shared server hosting routerbench's latency protocol alone (no iperf3): `routerbench
//! latency-server`, the in-process server of `lab run`, and the tests. Bounded as the latency
//! service's limits say: `max_sessions × (max_flows + 1)` connections at once (each session's
//! control connection and its load flows), the magic within the handshake timeout; it stops when
//! the service is shut down. Refusals go to the service's log.

use super::{Server, ServerConfig, ServerError, ServerEvent, ServerObserver};
use crate::latency::server::{Bounds, Service};
use crate::service::limits::Caps;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

/// The server's settings for `service`'s bounds, listening on `bind`.
pub fn config(bind: SocketAddr, bounds: &Bounds) -> ServerConfig {
    let max_conns = bounds
        .max_sessions
        .saturating_mul(usize::from(bounds.max_flows) + 1)
        .max(1);
    let mut cfg = ServerConfig::new(bind);
    cfg.iperf3 = false;
    cfg.max_connections = max_conns;
    cfg.first_bytes_timeout = bounds.handshake_timeout;
    // The service bounds sessions per host and in all; the connections bound is the only cap
    // here (the threads are one per connection).
    cfg.caps = Caps {
        conns_per_host: max_conns,
        max_threads: usize::MAX,
        ..Caps::default()
    };
    cfg
}

/// Binds the shared server on `bind` for `service` (not yet running): the protocol handler,
/// refusals logged by the service, a stop when the service shuts down.
pub fn bind(bind: SocketAddr, service: &Service) -> Result<Server, ServerError> {
    let log = Arc::new(ServiceLog(OnceLock::new()));
    let _ = log.0.set(service.clone());
    let cfg = config(bind, &service.inner.bounds);
    let server = Server::bind(cfg, log).map_err(|e| ServerError::io("latency server", e))?;
    Ok(hosting(server, service))
}

/// Binds the TCP port first, then starts the service with its reflector on the same port
/// number when `udp_follows` (so `-p 0` gives one port number for TCP and UDP), and returns
/// both, not yet running.
pub fn bind_with_service(
    bind: SocketAddr,
    mut bounds: Bounds,
    udp_follows: bool,
) -> Result<(Server, Service), ServerError> {
    let log = Arc::new(ServiceLog(OnceLock::new()));
    let server = Server::bind(config(bind, &bounds), log.clone())
        .map_err(|e| ServerError::io("latency server", e))?;
    if udp_follows {
        bounds.udp_port = server
            .local_addr()
            .map_err(|e| ServerError::io("latency server address", e))?
            .port();
    }
    let service = Service::new(bounds).map_err(|e| ServerError::Service(format!("{e:#}")))?;
    let _ = log.0.set(service.clone());
    Ok((hosting(server, &service), service))
}

fn hosting(server: Server, service: &Service) -> Server {
    let watched = service.clone();
    server
        .with_handler(Arc::new(service.clone()))
        .stop_when(Arc::new(move || {
            watched.inner.shutdown.load(Ordering::SeqCst)
        }))
}

/// Starts a service and the server hosting it on a thread, listening on `bind` (port 0 =
/// ephemeral). Call `shutdown()` on the service to stop both.
pub fn spawn_in_process(
    bind: SocketAddr,
    mut bounds: Bounds,
) -> Result<(SocketAddr, Service), ServerError> {
    if bounds.udp_bind.is_none() {
        bounds.udp_bind = Some(bind.ip());
    }
    let service = Service::new(bounds).map_err(|e| ServerError::Service(format!("{e:#}")))?;
    let server = self::bind(bind, &service)?;
    let addr = server
        .local_addr()
        .map_err(|e| ServerError::io("latency server address", e))?;
    std::thread::Builder::new()
        .name("rb-accept".into())
        .spawn(move || server.run())
        .map_err(|e| ServerError::io("latency server thread", e))?;
    Ok((addr, service))
}

/// Refusals and failed hand-offs go to the service's log, one line each (`peer: why`); set
/// once the service exists (the TCP port may be bound before it).
struct ServiceLog(OnceLock<Service>);

impl ServerObserver for ServiceLog {
    fn event(&self, e: &ServerEvent<'_>) {
        let Some(svc) = self.0.get() else { return };
        match e {
            ServerEvent::Refused { peer, reason } => svc.inner.log(format!("{peer}: {reason}")),
            ServerEvent::Handoff {
                peer,
                error: Some(error),
            } => svc.inner.log(format!("{peer}: {error}")),
            _ => {}
        }
    }
}
