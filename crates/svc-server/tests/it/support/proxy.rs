//! A loopback TCP proxy in front of the PostgreSQL peer that a test can cut and restore: cut, it
//! resets every open connection and refuses new ones, as a stopped or unreachable server does,
//! without stopping the PostgreSQL that the other tests share.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct Proxy {
    pub addr: SocketAddr,
    target: String,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    accept: Option<JoinHandle<()>>,
    conns: Vec<JoinHandle<()>>,
}

impl Proxy {
    /// A proxy to `target` (`host:port`), on a free loopback port.
    pub async fn start(target: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let p = Proxy {
            addr: listener.local_addr().unwrap(),
            target: target.to_string(),
            inner: Default::default(),
        };
        p.serve(listener);
        p
    }

    /// The PostgreSQL URL `url` with its host and port replaced by the proxy's.
    pub fn postgres_url(&self, url: &str) -> String {
        let mut u = url::Url::parse(url).unwrap();
        u.set_host(Some("127.0.0.1")).unwrap();
        u.set_port(Some(self.addr.port())).unwrap();
        u.to_string()
    }

    fn serve(&self, listener: TcpListener) {
        let (target, inner) = (self.target.clone(), self.inner.clone());
        let accept = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let target = target.clone();
                let conn = tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    let (mut c, mut s) = (client, server);
                    let _ = tokio::io::copy_bidirectional(&mut c, &mut s).await;
                });
                let mut g = inner.lock().unwrap();
                g.conns.retain(|h| !h.is_finished());
                g.conns.push(conn);
            }
        });
        self.inner.lock().unwrap().accept = Some(accept);
    }

    /// The database "goes away": open connections are dropped and new ones refused.
    pub fn cut(&self) {
        let mut g = self.inner.lock().unwrap();
        if let Some(a) = g.accept.take() {
            a.abort();
        }
        for c in g.conns.drain(..) {
            c.abort();
        }
    }

    /// The database is back, on the same address.
    pub async fn restore(&self) {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                Err(e) => panic!("rebinding the proxy on {}: {e}", self.addr),
            }
        };
        self.serve(listener);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}
