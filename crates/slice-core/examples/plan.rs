//! Planning the way from one state of the slices to a declared one, as
//! `slice apply -f FILE` and `POST /slices:apply` do before they write.
//!
//! Run with `cargo run -p slice-core --example plan`.

use slice_core::{Membership, Plan, PlanError, Port, Slice, Step};

/// A slice from text, for brevity: `(name, [(port, [mac, ...]), ...])`.
fn slice(name: &str, ports: &[(&str, &[&str])]) -> Result<Slice, Box<dyn std::error::Error>> {
    let mut built = Slice::empty(name.parse()?);
    for (port, macs) in ports {
        let macs = macs
            .iter()
            .map(|mac| mac.parse())
            .collect::<Result<_, _>>()?;
        built.ports.push(Port {
            id: port.parse()?,
            macs,
        });
    }
    Ok(built)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let current = [
        slice(
            "red",
            &[("0x1:1", &["00:00:00:00:00:01", "00:00:00:00:00:02"])],
        )?,
        slice("old", &[("0x1:2", &[])])?,
    ];
    let declared = [
        slice("blue", &[("0x2:1", &["00:00:00:00:00:03"])])?,
        slice("red", &[("0x1:1", &["00:00:00:00:00:01"])])?,
    ];

    // Removals come first, so that no host may talk even for a moment to one the
    // declared state separates it from; then additions, in the declared order.
    let plan = Plan::between(&current, &declared)?;
    for step in &plan.steps {
        println!("{step:?}");
    }
    assert!(matches!(plan.steps[0], Step::DeleteMac { .. }));
    assert!(matches!(plan.steps[1], Step::DeleteSlice { .. }));
    assert_eq!(plan.steps.len(), 5);

    // The changes the plan makes, as a store tells them: applied to an index of the
    // current state, they give the index of the declared one.
    let mut index = Membership::from_slices(&current);
    for change in plan.changes(&current) {
        index.apply(&change);
    }
    let expected = Membership::from_slices(&declared);
    assert_eq!(index.slice_count(), expected.slice_count());
    assert_eq!(index.bound_mac_count(), expected.bound_mac_count());

    // The declared state again is an empty plan: nothing to write, no flow disturbed.
    assert!(Plan::between(&declared, &declared)?.is_empty());

    // A declaration that names something twice is refused before anything is planned.
    let twice = [slice("blue", &[])?, slice("blue", &[])?];
    match Plan::between(&current, &twice) {
        Err(err @ PlanError::DuplicateSlice(_)) => println!("refused: {err}"),
        other => return Err(format!("expected a refusal, got {other:?}").into()),
    }
    Ok(())
}
