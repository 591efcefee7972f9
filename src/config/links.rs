//! Where links between switches may form: the fabric the operator declares, or the
//! window after a switch connects in which they are discovered (docs/security.md,
//! "Links").

use std::time::Duration;

use anyhow::Context;
use slice_controller::{DeclaredFabric, FabricEntry};

/// The flags of `Args` about links.
#[derive(Debug, Default, Clone, clap::Args)]
pub(crate) struct LinkArgs {
    /// A cable between two switches (0x1:10-0x2:10), or a port that leads to another
    /// switch (0x1:10); repeat for each. With any, links form on these only
    /// [default: links are discovered]
    #[arg(long = "fabric", value_name = "CABLE|PORT")]
    pub fabric: Vec<FabricEntry>,
    /// Without --fabric: seconds after a switch connects in which links at its ports are
    /// discovered; afterwards only a cable that was a link comes back [default: 30]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub discovery_window: Option<u64>,
}

/// What the settings say of links, resolved.
#[derive(Debug, Clone, Default)]
pub(crate) struct Links {
    pub fabric: DeclaredFabric,
    /// Unset: the controller's default.
    pub discovery_window: Option<Duration>,
}

impl LinkArgs {
    /// The flags over `controller.fabric` and `controller.discovery_window_secs`.
    pub(crate) fn resolve(
        &self,
        file_fabric: Option<Vec<String>>,
        file_window: Option<u64>,
    ) -> anyhow::Result<Links> {
        let entries = if self.fabric.is_empty() {
            file_fabric
                .unwrap_or_default()
                .iter()
                .map(|text| text.parse::<FabricEntry>())
                .collect::<Result<Vec<_>, _>>()
                .context("controller.fabric")?
        } else {
            self.fabric.clone()
        };
        let fabric = DeclaredFabric::new(entries).context("the declared fabric")?;
        let discovery_window = self.discovery_window.or(file_window);
        anyhow::ensure!(
            discovery_window.map_or(true, |secs| (1..=86_400).contains(&secs)),
            "controller.discovery_window_secs must be between 1 and 86400"
        );
        anyhow::ensure!(
            !(fabric.is_declared() && discovery_window.is_some()),
            "a declared fabric (--fabric, controller.fabric) makes links on its cables only: \
             drop the discovery window"
        );
        Ok(Links {
            fabric,
            discovery_window: discovery_window.map(Duration::from_secs),
        })
    }
}
