//! The network's changes on `GET /events`: the controller's notices, handed to the
//! event hub while anyone follows the stream.
//!
//! Every flow set up is a notice, so they are not even made while no stream is open:
//! the controller's engine only sends notices to followers, and this task follows it
//! only while the hub has streams. A client that comes back after a time without
//! streams is told by the hub to read the state again.

use std::sync::Arc;

use slice_controller::ControllerHandle;
use slice_http::EventHub;
use tokio::sync::broadcast::error::RecvError;

/// Publishes the controller's notices to `hub` for as long as the controller runs. Call
/// [`EventHub::recording`] with `false` before anyone can open a stream, so that streams
/// wait for this task to follow the controller before they start.
pub(crate) async fn publish_network_changes(hub: Arc<EventHub>, controller: ControllerHandle) {
    let mut open_streams = hub.open_streams();
    loop {
        if open_streams.wait_for(|open| *open > 0).await.is_err() {
            return;
        }
        let mut notices = controller.follow();
        hub.recording(true);
        let stopped = loop {
            tokio::select! {
                notice = notices.recv() => match notice {
                    Ok(notice) => match serde_json::to_value(&notice) {
                        Ok(data) => hub.publish(notice.kind(), &data),
                        Err(err) => log::warn!("cannot render {notice:?}: {err}"),
                    },
                    Err(RecvError::Lagged(missed)) => hub.publish_loss(&format!(
                        "{missed} changes of the network were lost; read the state again"
                    )),
                    Err(RecvError::Closed) => break true,
                },
                unfollowed = open_streams.wait_for(|open| *open == 0) => {
                    break unfollowed.is_err();
                }
            }
        };
        // Not following from here: what happens next is not recorded.
        drop(notices);
        hub.recording(false);
        if stopped {
            return;
        }
    }
}
