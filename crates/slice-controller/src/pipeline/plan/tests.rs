//! The plan against the reference: [`super::super::build`] from scratch after every step
//! of random changes, the whole table and the part a change touches.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use slice_core::{MacAddress, Membership, PortId, SliceName};

use super::super::{build, diff, Entry, Fabric};
use super::{key, Plan, Scope};

fn mac(n: u8) -> MacAddress {
    MacAddress::new([0x02, 0, 0, 0, 0, n])
}

const SLICE_SETS: [&[&str]; 4] = [&["red"], &["blue"], &["red", "blue"], &["green"]];
const SWITCHES: u64 = 5;

/// One step of the network's life.
#[derive(Debug, Clone)]
enum Step {
    /// A MAC bound at a host port, in one of [`SLICE_SETS`].
    Bind {
        dpid: u64,
        port_no: u32,
        mac: u8,
        set: usize,
    },
    /// The n-th binding (modulo how many there are) goes.
    Unbind(usize),
    /// The cable between two switches comes or goes.
    Cable(u64, u64),
    /// A switch connects or leaves.
    Switch(u64),
    /// A MAC is heard at a host port.
    Heard { dpid: u64, port_no: u32, mac: u8 },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1..=SWITCHES, 1u32..4, 1u8..7, 0usize..4)
            .prop_map(|(dpid, port_no, mac, set)| Step::Bind { dpid, port_no, mac, set }),
        2 => (0usize..64).prop_map(Step::Unbind),
        2 => (1..=SWITCHES, 1..=SWITCHES).prop_map(|(a, b)| Step::Cable(a, b)),
        1 => (1..=SWITCHES).prop_map(Step::Switch),
        1 => (1..=SWITCHES, 1u32..4, 1u8..7)
            .prop_map(|(dpid, port_no, mac)| Step::Heard { dpid, port_no, mac }),
    ]
}

/// The inputs as the steps left them.
#[derive(Debug, Default)]
struct World {
    switches: BTreeSet<u64>,
    cables: BTreeSet<(u64, u64)>,
    bindings: BTreeSet<(u64, u32, u8, usize)>,
    heard: BTreeMap<u8, (u64, u32)>,
}

impl World {
    fn apply(&mut self, step: &Step) {
        match *step {
            Step::Bind {
                dpid,
                port_no,
                mac,
                set,
            } => {
                self.bindings.insert((dpid, port_no, mac, set));
            }
            Step::Unbind(n) => {
                if let Some(binding) = self.bindings.iter().nth(n % self.bindings.len().max(1)) {
                    let binding = *binding;
                    self.bindings.remove(&binding);
                }
            }
            Step::Cable(a, b) if a != b => {
                let cable = (a.min(b), a.max(b));
                if !self.cables.remove(&cable) {
                    self.cables.insert(cable);
                }
            }
            Step::Cable(..) => {}
            Step::Switch(dpid) => {
                if !self.switches.remove(&dpid) {
                    self.switches.insert(dpid);
                }
            }
            Step::Heard { dpid, port_no, mac } => {
                self.heard.insert(mac, (dpid, port_no));
            }
        }
    }

    /// Host ports 1 to 3 on every switch; the cable between a and b at port 10 + b of a.
    fn fabric(&self) -> Fabric {
        let mut fabric = Fabric::default();
        for &dpid in &self.switches {
            fabric.add_switch(dpid, [1, 2, 3]);
        }
        for &(a, b) in &self.cables {
            if self.switches.contains(&a) && self.switches.contains(&b) {
                let (at_a, at_b) = (PortId::new(a, 10 + b as u32), PortId::new(b, 10 + a as u32));
                fabric.add_link(at_a, at_b);
                fabric.add_link(at_b, at_a);
            }
        }
        for (&n, &(dpid, port_no)) in &self.heard {
            fabric.heard(mac(n), PortId::new(dpid, port_no));
        }
        fabric
    }

    fn membership(&self) -> Membership {
        let mut membership = Membership::default();
        for &(dpid, port_no, n, set) in &self.bindings {
            let port = PortId::new(dpid, port_no);
            for slice in SLICE_SETS[set] {
                let slice: SliceName = slice.parse().unwrap();
                membership.add_slice(&slice);
                membership.add_port(&slice, port);
                membership.add_mac(&slice, port, mac(n));
            }
        }
        membership
    }
}

/// `held` after `before` (what it held of a scope) became `after`, as a switch applies
/// the diff: deletes, then adds replacing what has their key.
fn apply_diff(held: &mut BTreeSet<Entry>, before: &BTreeSet<Entry>, after: &BTreeSet<Entry>) {
    let change = diff(before, after);
    let gone: BTreeSet<_> = change.delete.iter().map(key).collect();
    let added: BTreeSet<_> = change.add.iter().map(key).collect();
    held.retain(|entry| !gone.contains(&key(entry)) && !added.contains(&key(entry)));
    held.extend(change.add);
}

/// `next`, the plan after `step`, against `reference` (what [`build`] gives every
/// switch): each switch's whole table, and each switch of `tables` (holding what `plan`
/// gave it) brought to the reference by the diff of the part the change can touch.
fn check_step(
    plan: &Plan,
    next: &Plan,
    reference: &BTreeMap<u64, BTreeSet<Entry>>,
    tables: &mut BTreeMap<u64, BTreeSet<Entry>>,
    step: &Step,
) -> Result<(), TestCaseError> {
    let change = plan.change_to(next);
    let switches: BTreeSet<u64> = next.switches().collect();
    prop_assert_eq!(switches, reference.keys().copied().collect());
    for (&dpid, wanted) in reference {
        let whole = next.entries(dpid, &Scope::all());
        prop_assert_eq!(&whole, wanted, "switch {} after {:?}", dpid, step);
        let held = tables.entry(dpid).or_default();
        let scope = plan.scope_of(next, &change, dpid);
        let before: BTreeSet<Entry> = (held.iter())
            .filter(|entry| scope.covers(&entry.rule))
            .cloned()
            .collect();
        let after = next.entries(dpid, &scope);
        prop_assert!(after.iter().all(|entry| scope.covers(&entry.rule)));
        apply_diff(held, &before, &after);
        prop_assert_eq!(&*held, wanted, "switch {} after {:?}", dpid, step);
    }
    tables.retain(|dpid, _| reference.contains_key(dpid));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// After every step: each switch's whole table from the plan is the reference's, and
    /// a switch that held the last plan's table and gets only the diff of the part the
    /// step can touch holds the reference's table too.
    #[test]
    fn only_the_part_a_change_touches_is_computed_and_it_brings_every_table_right(
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let mut world = World::default();
        world.switches.extend(1..=3);
        let mut plan = Plan::default();
        let mut tables: BTreeMap<u64, BTreeSet<Entry>> = BTreeMap::new();
        for step in &steps {
            world.apply(step);
            let (fabric, membership) = (world.fabric(), world.membership());
            let next = Plan::new(&fabric, &membership, &plan);
            check_step(&plan, &next, &build(&fabric, &membership), &mut tables, step)?;
            plan = next;
        }
    }
}

/// Ten switches in a line, ten hosts on each in two slices: binding one more host
/// computes that MAC's entries (and the floods of its switch) and nothing of the others.
#[test]
fn one_binding_computes_the_entries_of_its_mac_alone() {
    let mut world = World::default();
    world.switches.extend(1..=5);
    world.cables.extend((1..5).map(|a| (a, a + 1)));
    for dpid in 1..=5 {
        for port_no in 1..=3 {
            let n = (dpid * 10) as u8 + port_no as u8;
            world
                .bindings
                .insert((dpid, port_no, n, port_no as usize % 2));
        }
    }
    let first = Plan::new(&world.fabric(), &world.membership(), &Plan::default());
    world.apply(&Step::Bind {
        dpid: 3,
        port_no: 1,
        mac: 99,
        set: 0,
    });
    let second = Plan::new(&world.fabric(), &world.membership(), &first);
    let change = first.change_to(&second);
    for dpid in 1..=5 {
        let scope = first.scope_of(&second, &change, dpid);
        let macs: BTreeSet<MacAddress> = second
            .entries(dpid, &scope)
            .iter()
            .filter_map(|entry| match entry.rule {
                super::EntryMatch::HostAtPort { mac, .. }
                | super::EntryMatch::Sender { mac, .. }
                | super::EntryMatch::TaggedTo { mac, .. } => Some(mac),
                _ => None,
            })
            .collect();
        assert_eq!(macs, BTreeSet::from([mac(99)]), "switch {dpid}");
        let floods = second
            .entries(dpid, &scope)
            .iter()
            .any(|entry| matches!(entry.rule, super::EntryMatch::TaggedToGroup { .. }));
        assert_eq!(floods, dpid == 3, "switch {dpid}: floods computed");
    }
}

/// Every (slice, host) of `membership`.
fn bindings_of(membership: &Membership) -> BTreeSet<(SliceName, slice_core::Host)> {
    (membership.members())
        .flat_map(|host| (membership.slices_of(host).iter()).map(|slice| (slice.clone(), *host)))
        .collect()
}

/// Brings `membership` to `wanted` one MAC at a time, as the engine sees changes: the
/// MACs touched, each with the ports it was bound at and is not now.
fn bring_to(
    membership: &mut Membership,
    wanted: &Membership,
) -> BTreeMap<MacAddress, BTreeSet<PortId>> {
    let (have, want) = (bindings_of(membership), bindings_of(wanted));
    let mut touched: BTreeMap<MacAddress, BTreeSet<PortId>> = BTreeMap::new();
    for (slice, host) in have.difference(&want) {
        membership.remove_mac(slice, host.port, host.mac);
        touched.entry(host.mac).or_default().insert(host.port);
    }
    for (slice, host) in want.difference(&have) {
        membership.add_slice(slice);
        membership.add_mac(slice, host.port, host.mac);
        touched.entry(host.mac).or_default();
    }
    touched
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// A plan patched for the MACs a step touched (where the step changed no switch or
    /// cable and the patch is possible) has every switch's table of the reference, and
    /// a switch that applies the diff of the part the change can touch gets it too.
    #[test]
    fn a_plan_patched_for_the_macs_a_change_touched_is_the_plan_made_anew(
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let mut world = World::default();
        world.switches.extend(1..=3);
        let mut membership = Membership::default();
        let mut plan = Plan::default();
        let mut tables: BTreeMap<u64, BTreeSet<Entry>> = BTreeMap::new();
        for (at, step) in steps.iter().enumerate() {
            // The first plan is made whole: the default one has no switches.
            let graph_before = (at > 0).then(|| (world.switches.clone(), world.cables.clone()));
            world.apply(step);
            let fabric = world.fabric();
            let mut touched = bring_to(&mut membership, &world.membership());
            if let Step::Heard { mac: n, .. } = step {
                touched.entry(mac(n.to_owned())).or_default();
            }
            let same_graph = graph_before == Some((world.switches.clone(), world.cables.clone()));
            let heard = |m: &MacAddress| fabric.heard_at.get(m).copied();
            let next = match same_graph.then(|| plan.patched(&membership, &touched, heard)) {
                Some(Some(next)) => next,
                _ => Plan::new(&fabric, &membership, &plan),
            };
            check_step(&plan, &next, &build(&fabric, &membership), &mut tables, step)?;
            plan = next;
        }
    }
}

/// A binding in slices some member is in already patches the plan; one in a set of
/// slices nobody was in (its tag is new) does not, nor does one after the last member of
/// a set went.
#[test]
fn a_plan_is_patched_unless_a_set_of_slices_comes_or_goes() {
    let mut world = World::default();
    world.switches.extend(1..=2);
    world.cables.insert((1, 2));
    world.bindings.insert((1, 1, 1, 0));
    world.bindings.insert((2, 1, 2, 1));
    let mut membership = Membership::default();
    bring_to(&mut membership, &world.membership());
    let plan = Plan::new(&world.fabric(), &membership, &Plan::default());
    let heard = |_: &MacAddress| None;

    world.bindings.insert((2, 2, 3, 0));
    let touched = bring_to(&mut membership, &world.membership());
    let patched = plan.patched(&membership, &touched, heard);
    assert!(patched.is_some(), "red has a member already");
    let plan = patched.unwrap();
    let change = Plan::new(&world.fabric(), &membership, &Plan::default());
    assert_eq!(
        plan.entries(2, &Scope::all()),
        change.entries(2, &Scope::all())
    );

    world.bindings.insert((2, 3, 4, 3));
    let touched = bring_to(&mut membership, &world.membership());
    assert!(
        plan.patched(&membership, &touched, heard).is_none(),
        "green is new"
    );

    let plan = Plan::new(&world.fabric(), &membership, &plan);
    world.bindings.remove(&(2, 3, 4, 3));
    let touched = bring_to(&mut membership, &world.membership());
    assert!(
        plan.patched(&membership, &touched, heard).is_none(),
        "green is gone"
    );
}
