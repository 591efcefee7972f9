//! A network namespace of the run, for scenarios that need a loopback and an Open vSwitch
//! of their own (a container's view, or fixed ports that must collide with nothing).

use super::sys;

/// A network namespace of the run (its name carries the prefix, so the sweep of an
/// interrupted run removes it too); deleted when dropped, with whatever is left in it.
pub(super) struct Namespace(pub String);

impl Namespace {
    /// Creates the namespace `name` with its loopback up.
    pub(super) fn create(name: &str) -> anyhow::Result<Namespace> {
        sys::run(&mut sys::command("ip", &["netns", "add", name]))?;
        let namespace = Namespace(name.to_owned());
        sys::run(&mut sys::command(
            "ip",
            &["-n", name, "link", "set", "lo", "up"],
        ))?;
        Ok(namespace)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        sys::park_if_interrupted();
        let deleted = sys::output_always(&mut sys::command("ip", &["netns", "del", &self.0]));
        if !deleted.is_ok_and(|out| out.status.success()) {
            eprintln!("lab: cannot delete the namespace {}", self.0);
        }
    }
}
