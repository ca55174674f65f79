//! The standalone accept loop of the routerbench protocol (tests, `routerbench latency-server`,
//! the in-process server of `routerbench run`), until the shared server on port 5201 hosts the
//! [`Service`] through `crate::server::ProtocolHandler`.

use super::server::{Bounds, Service};
use crate::wire::ROUTERBENCH_MAGIC;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A minimal accept loop for the routerbench protocol alone (tests, `routerbench latency-server`,
/// and the in-process server of `run`): reads the magic and hands over to the service. Bounded
/// to `max_sessions × (max_flows + 1)` connections at once. Returns when the service shuts down.
pub fn serve_standalone(listener: TcpListener, service: Service) -> anyhow::Result<()> {
    let b = &service.inner.bounds;
    let max_conns = b.max_sessions * (b.max_flows as usize + 1);
    let live = Arc::new(AtomicU64::new(0));
    listener.set_nonblocking(true)?;
    while !service.inner.shutdown.load(Ordering::SeqCst) {
        let (mut stream, peer) = match listener.accept() {
            Ok(v) => v,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(e) => {
                service.inner.log(format!("accept failed: {e}"));
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        if live.load(Ordering::SeqCst) as usize >= max_conns {
            service.inner.log(format!(
                "{peer}: dropped, {max_conns} connections already open"
            ));
            continue;
        }
        let svc = service.clone();
        let live2 = live.clone();
        live.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("rb-conn".into())
            .spawn(move || {
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(svc.inner.bounds.handshake_timeout));
                let mut magic = [0u8; 8];
                let r = match stream.read_exact(&mut magic) {
                    Ok(()) if magic == ROUTERBENCH_MAGIC => {
                        use crate::server::ProtocolHandler;
                        svc.handle(stream, &magic)
                    }
                    Ok(()) => {
                        svc.inner.log(format!(
                            "{peer}: not a routerbench client (first bytes {magic:02x?})"
                        ));
                        Ok(())
                    }
                    Err(e) => {
                        svc.inner.log(format!(
                            "{peer}: no magic within the handshake timeout: {e}"
                        ));
                        Ok(())
                    }
                };
                if let Err(e) = r {
                    svc.inner.log(format!("{peer}: {e:#}"));
                }
                live2.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            live.fetch_sub(1, Ordering::SeqCst);
            service.inner.log(format!("{peer}: cannot spawn a thread"));
        }
    }
    Ok(())
}

/// Starts a service and its accept loop on a thread, listening on `bind` (port 0 = ephemeral).
/// Used by `routerbench run` and the tests. Call `shutdown()` on the service to stop it.
pub fn spawn_in_process(
    bind: SocketAddr,
    mut bounds: Bounds,
) -> anyhow::Result<(SocketAddr, Service)> {
    if bounds.udp_bind.is_none() {
        bounds.udp_bind = Some(bind.ip());
    }
    let listener = TcpListener::bind(bind)
        .map_err(|e| anyhow::anyhow!("cannot listen on {bind}: {e} (is the port in use?)"))?;
    let addr = listener.local_addr()?;
    let service = Service::new(bounds)?;
    let svc = service.clone();
    std::thread::Builder::new()
        .name("rb-accept".into())
        .spawn(move || serve_standalone(listener, svc))?;
    Ok((addr, service))
}
