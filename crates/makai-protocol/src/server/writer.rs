//! A connection's writer task: control frames first, then stream messages
//! round robin across the attached streams, written in batches with one flush.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::stream::Outbox;
use crate::transport::{Frame, FrameSender};

/// Frames taken from one stream before moving to the next.
const PER_STREAM: usize = 32;
/// Frames per write (one flush).
const PER_WRITE: usize = 256;

/// How the writer ended.
pub(crate) enum WriterEnd {
    /// Asked to stop: close the connection politely.
    Stopped,
    /// Asked to drop the socket without a close handshake (test hook).
    Killed,
    /// The socket failed.
    Failed,
}

/// Runs until `stop` / `kill` or a write error; on a write error cancels `dead`.
pub(crate) async fn run_writer(
    outbox: Arc<Outbox>,
    mut control: mpsc::Receiver<Frame>,
    mut sender: Box<dyn FrameSender>,
    stop: CancellationToken,
    kill: CancellationToken,
    dead: CancellationToken,
) {
    let mut batch: Vec<Frame> = Vec::with_capacity(PER_WRITE);
    let end = loop {
        while batch.len() < PER_WRITE {
            match control.try_recv() {
                Ok(f) => batch.push(f),
                Err(_) => break,
            }
        }
        while batch.len() < PER_WRITE {
            let Some(entry) = outbox.pop() else { break };
            if entry.take_batch(outbox.id, &mut batch, PER_STREAM) {
                outbox.requeue(entry);
            }
        }
        if !batch.is_empty() {
            let write = sender.send_frames(&batch);
            let result = tokio::select! {
                r = write => r,
                _ = kill.cancelled() => break WriterEnd::Killed,
            };
            batch.clear();
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection write failed");
                break WriterEnd::Failed;
            }
            continue;
        }
        tokio::select! {
            _ = outbox.wait() => {}
            f = control.recv() => match f {
                Some(f) => batch.push(f),
                None => break WriterEnd::Stopped,
            },
            _ = stop.cancelled() => break WriterEnd::Stopped,
            _ = kill.cancelled() => break WriterEnd::Killed,
            _ = dead.cancelled() => break WriterEnd::Failed,
        }
    };
    match end {
        WriterEnd::Stopped => {
            // Deliver control frames still queued (e.g. a final error), then close.
            while let Ok(f) = control.try_recv() {
                batch.push(f);
            }
            if !batch.is_empty() {
                // The connection is closing; frames that cannot go out now
                // stay in the replay buffers for a resume.
                let _ = sender.send_frames(&batch).await;
            }
            sender.close("the makai server closed the connection").await;
        }
        WriterEnd::Killed => drop(sender),
        WriterEnd::Failed => {}
    }
    dead.cancel();
}
