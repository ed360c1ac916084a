//! What one HTTP/1 connection's requests need from the server loop (issue 22): the request body
//! watched until its end, so an answer given before the body was read whole (a body over the
//! limit, a refusal before the body) says `Connection: close` — hyper closes such a connection
//! after the answer, and a pooled client must not send its next request into it — and the same
//! header on every answer once the server is stopping, so clients move on while it drains.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, HttpBody};
use axum::http::{HeaderValue, Request, Response, header};
use hyper::body::{Frame, SizeHint};

/// A request body that records when it was read to its end.
pub struct Watched<B> {
    inner: B,
    done: Arc<AtomicBool>,
}

impl<B: HttpBody + Unpin> HttpBody for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let p = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = p {
            self.done.store(true, Ordering::Relaxed);
        }
        p
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The request with its body watched; the flag is `None` when it has no body.
pub fn watch<B>(req: Request<B>) -> (Request<Body>, Option<Arc<AtomicBool>>)
where
    B: HttpBody<Data = axum::body::Bytes> + Unpin + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    if req.body().is_end_stream() {
        return (req.map(Body::new), None);
    }
    let done = Arc::new(AtomicBool::new(false));
    let flag = done.clone();
    (req.map(|inner| Body::new(Watched { inner, done })), Some(flag))
}

/// Marks an answer that ends its connection: the request body was not read to its end, or the
/// server is stopping.
pub fn finish(resp: &mut Response<Body>, body_done: Option<&AtomicBool>, stopping: bool) {
    let unread = body_done.is_some_and(|d| !d.load(Ordering::Relaxed));
    if unread || stopping {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
}
