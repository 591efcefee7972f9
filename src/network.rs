//! The operators' network views of the REST API, answered by the running controller.

use slice_controller::ControllerHandle;
use slice_http::{NetworkView, ViewFuture, ViewKind};

pub(crate) struct ControllerView {
    handle: ControllerHandle,
}

impl ControllerView {
    pub(crate) fn new(handle: ControllerHandle) -> Self {
        Self { handle }
    }
}

impl NetworkView for ControllerView {
    fn view(&self, kind: ViewKind) -> ViewFuture {
        let handle = self.handle.clone();
        if kind == ViewKind::Verification {
            // Kept outside the engine, by the verification's own thread: no need to wait
            // for the engine task.
            let view = serde_json::to_value(handle.verification()).ok();
            return Box::pin(std::future::ready(view));
        }
        Box::pin(async move {
            // Serialised inside the engine task, so a view is one consistent snapshot.
            handle
                .inspect(move |engine| {
                    let json = match kind {
                        ViewKind::Switches => serde_json::to_value(engine.switches()),
                        ViewKind::Links => serde_json::to_value(engine.links()),
                        ViewKind::Fabric => serde_json::to_value(engine.fabric()),
                        ViewKind::Hosts => serde_json::to_value(engine.hosts()),
                        ViewKind::Paths => serde_json::to_value(engine.paths()),
                        ViewKind::Verification => return None,
                    };
                    // The views are plain structs of numbers and strings: serialising them
                    // cannot fail, but a failure would read as "controller not running".
                    json.ok()
                })
                .await
                .flatten()
        })
    }
}
