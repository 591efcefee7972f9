//! Tags: the 64-bit names the pipeline writes into a frame's metadata for the set of
//! slices its sender is in (docs/controller.md, "Tags").
//!
//! A tag must name one set and one only, on every instance of a cluster and after every
//! restart, without anything stored: a switch's tables are read back and judged by what
//! their tags mean now. So the [`TagBook`] is a function of the membership alone. Each
//! set gets the FNV-1a hash of its sorted names; the sets are named in their canonical
//! (sorted) order, and one whose hash an earlier set already took, or that hashes to
//! zero, takes the hash salted with 1, 2, ... until it is free. No two sets ever share a
//! tag, whatever names an attacker picks, and a set keeps its tag as long as no set
//! sorting before it collides with it: in practice always, since only a deliberate
//! collision moves a tag, and then only the later set's.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use imbl::OrdMap;
use slice_core::{Host, MacAddress, Membership, PortId, SliceName};

/// A set of slices, in its canonical order.
pub type SliceSet = BTreeSet<SliceName>;

/// FNV-1a over the sorted names, each followed by a zero byte, then `salt`'s bytes when
/// it is not zero: the tag a set asks for on its `salt`-th try.
pub fn hash_of_set(set: &SliceSet, salt: u32) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let salt_bytes = (salt != 0).then(|| salt.to_be_bytes());
    set.iter()
        .flat_map(|name| name.as_str().bytes().chain([0]))
        .chain(salt_bytes.into_iter().flatten())
        .fold(OFFSET_BASIS, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(PRIME)
        })
}

/// Every set of slices some member of the membership is in, each with its tag.
#[derive(Debug, Default, Clone)]
pub struct TagBook {
    tag_of: BTreeMap<SliceSet, u64>,
    set_of: BTreeMap<u64, SliceSet>,
}

impl TagBook {
    /// The book of `membership`: the same on every instance for the same slices.
    pub fn of(membership: &Membership) -> TagBook {
        let sets: BTreeSet<SliceSet> = (membership.slice_sets())
            .map(|list| list.iter().cloned().collect())
            .collect();
        let mut book = TagBook::default();
        for set in sets {
            let tag = (0..=u32::MAX)
                .map(|salt| hash_of_set(&set, salt))
                .find(|tag| *tag != 0 && !book.set_of.contains_key(tag))
                // Fewer than 2^32 sets exist (each needs a member), so a free tag is
                // found long before the salts run out; were it not, the set gets none
                // and its hosts no entries, which fails closed.
                .unwrap_or(0);
            if tag != 0 {
                book.set_of.insert(tag, set.clone());
                book.tag_of.insert(set, tag);
            }
        }
        book
    }

    /// The tag of `set`, if some member is in exactly these slices.
    pub fn tag(&self, set: &SliceSet) -> Option<u64> {
        self.tag_of.get(set).copied()
    }

    /// The set a tag stands for.
    pub fn set(&self, tag: u64) -> Option<&SliceSet> {
        self.set_of.get(&tag)
    }
}

/// The tags of the bound hosts the pipeline serves, and the slice sets they stand for.
///
/// The per-host and per-MAC maps are persistent: a copy shares them, so that one MAC's
/// change ([`Tags::admit`] after [`Tags::withdraw`]) costs O(log hosts) while an older
/// plan keeps its own view, and [`imbl::OrdMap::diff`] of the two visits only what
/// differs.
#[derive(Debug, Default, Clone)]
pub struct Tags {
    book: Arc<TagBook>,
    /// The membership's [`Membership::sets_generation`] the book was made at.
    generation: u64,
    pub(super) of_host: OrdMap<Host, u64>,
    /// A MAC's frames arriving over a link: the slices that all its bindings share, since
    /// the next switch cannot tell at which of them the frame entered.
    pub(super) of_mac: OrdMap<MacAddress, u64>,
    /// How many entries of `of_host` and `of_mac` name each tag.
    uses: OrdMap<u64, usize>,
    /// The tags in use, with their sets.
    pub(super) sets: Arc<BTreeMap<u64, SliceSet>>,
    /// Tags that share a slice, by slice.
    with_slice: Arc<BTreeMap<SliceName, BTreeSet<u64>>>,
}

/// Each list of slices (a host's, in the order it joined them) named once: hosts are
/// many and their lists few.
pub(super) type TagOfList<'m> = HashMap<&'m [SliceName], Option<u64>>;

/// The slices every binding of one MAC seen so far shares.
enum Shared<'m> {
    /// One binding: its slices and their tag.
    Alone(&'m [SliceName], Option<u64>),
    /// Several: the slices they all are in.
    Several(SliceSet),
}

impl Shared<'_> {
    /// Another binding of the MAC, in the slices `list`.
    fn narrow(&mut self, list: &[SliceName]) {
        match self {
            Shared::Alone(first, _) => {
                let set = (first.iter()).filter(|slice| list.contains(slice)).cloned();
                *self = Shared::Several(set.collect());
            }
            Shared::Several(set) => set.retain(|slice| list.contains(slice)),
        }
    }
}

impl Tags {
    /// The tags of every member of `membership`.
    pub fn of(membership: &Membership) -> Tags {
        Self::of_hosts(membership, membership.members().copied())
    }

    /// The tags of `hosts`, each a member of `membership`: the hosts the pipeline serves.
    pub fn of_hosts(membership: &Membership, hosts: impl IntoIterator<Item = Host>) -> Tags {
        let mut tags = Tags::empty(membership);
        let mut hosts: Vec<Host> = hosts.into_iter().collect();
        hosts.sort_unstable_by_key(|host| (host.mac, host.port));
        hosts.dedup();
        let mut tag_of_list = TagOfList::new();
        for hosts in hosts.chunk_by(|a, b| a.mac == b.mac) {
            tags.admit(membership, hosts, &mut tag_of_list);
        }
        tags
    }

    /// No host tagged yet, with the book of `membership`.
    pub(super) fn empty(membership: &Membership) -> Tags {
        Tags {
            book: Arc::new(TagBook::of(membership)),
            generation: membership.sets_generation(),
            ..Tags::default()
        }
    }

    /// Whether the book still names `membership`'s sets, so that hosts can be admitted
    /// and withdrawn one MAC at a time ([`Tags::admit`], [`Tags::withdraw`]).
    pub(super) fn has_book_of(&self, membership: &Membership) -> bool {
        self.generation == membership.sets_generation()
    }

    /// Tags the served hosts `hosts` (one MAC's, each a member of `membership`, none
    /// tagged yet), and the MAC in transit.
    pub(super) fn admit<'m>(
        &mut self,
        membership: &'m Membership,
        hosts: &[Host],
        tag_of_list: &mut TagOfList<'m>,
    ) {
        let mut shared: Option<Shared> = None;
        for host in hosts {
            let list = membership.slices_of(host);
            if list.is_empty() {
                continue;
            }
            let tag = *(tag_of_list.entry(list))
                .or_insert_with(|| self.book.tag(&list.iter().cloned().collect()));
            match &mut shared {
                Some(shared) => shared.narrow(list),
                None => shared = Some(Shared::Alone(list, tag)),
            }
            if let Some(tag) = tag {
                self.use_tag(tag, || list.iter().cloned().collect());
                self.of_host.insert(*host, tag);
            }
        }
        let Some(mac) = hosts.first().map(|host| host.mac) else {
            return;
        };
        match shared {
            // Its one host named the set already: the closure never runs.
            Some(Shared::Alone(list, Some(tag))) => {
                self.use_tag(tag, || list.iter().cloned().collect());
                self.of_mac.insert(mac, tag);
            }
            // A MAC bound at two ports in slices that share nothing is not admitted in
            // transit at all (it still reaches the hosts at its own switch), nor is one
            // whose bindings share a set no member is in exactly, which fails closed.
            Some(Shared::Several(set)) if !set.is_empty() => {
                if let Some(tag) = self.book.tag(&set) {
                    self.use_tag(tag, || set);
                    self.of_mac.insert(mac, tag);
                }
            }
            Some(Shared::Alone(_, None) | Shared::Several(_)) | None => {}
        }
    }

    /// One more entry names `tag` (of the set `set`).
    fn use_tag(&mut self, tag: u64, set: impl FnOnce() -> SliceSet) {
        *self.uses.entry(tag).or_insert(0) += 1;
        if !self.sets.contains_key(&tag) {
            let set = set();
            let with_slice = Arc::make_mut(&mut self.with_slice);
            for slice in &set {
                with_slice.entry(slice.clone()).or_default().insert(tag);
            }
            Arc::make_mut(&mut self.sets).insert(tag, set);
        }
    }

    /// Untags every host of `mac` at `ports` and the MAC in transit; gives the ports
    /// where a host was untagged to `untagged`. A tag no entry names any more stays in
    /// [`Tags::sets`]: [`Tags::sets_in_use_since`] tells.
    pub(super) fn withdraw(
        &mut self,
        mac: MacAddress,
        ports: impl IntoIterator<Item = PortId>,
        mut untagged: impl FnMut(PortId),
    ) {
        for port in ports {
            if let Some(tag) = self.of_host.remove(&Host { port, mac }) {
                self.release(tag);
                untagged(port);
            }
        }
        if let Some(tag) = self.of_mac.remove(&mac) {
            self.release(tag);
        }
    }

    fn release(&mut self, tag: u64) {
        if let Some(uses) = self.uses.get_mut(&tag) {
            *uses -= 1;
            if *uses == 0 {
                self.uses.remove(&tag);
            }
        }
    }

    /// Whether the tags in use are those of `earlier` (this was patched from it): the
    /// flood entries and what may reach each host are then as they were.
    pub(super) fn sets_in_use_since(&self, earlier: &Tags) -> bool {
        Arc::ptr_eq(&self.sets, &earlier.sets)
            && self.uses.len() == self.sets.len()
            && Arc::ptr_eq(&self.book, &earlier.book)
    }

    /// The tag of a bound host.
    pub fn of_host(&self, host: &Host) -> Option<u64> {
        self.of_host.get(host).copied()
    }

    /// The set a tag stands for, in use or not: what a tag read back from a switch means.
    pub fn meaning(&self, tag: u64) -> Option<&SliceSet> {
        self.book.set(tag)
    }

    /// Tags that may send to a host in `slices`.
    pub(super) fn allowed_to_reach<'a>(&'a self, slices: &'a [SliceName]) -> BTreeSet<u64> {
        slices
            .iter()
            .filter_map(|slice| self.with_slice.get(slice))
            .flatten()
            .copied()
            .collect()
    }

    pub(super) fn shares_slice<'a>(
        &self,
        tag: u64,
        mut slices: impl Iterator<Item = &'a SliceName>,
    ) -> bool {
        self.sets
            .get(&tag)
            .is_some_and(|set| slices.any(|slice| set.contains(slice)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slice_core::PortId;

    fn name(text: &str) -> SliceName {
        text.parse().unwrap()
    }

    fn set(names: &[&str]) -> SliceSet {
        names.iter().map(|text| name(text)).collect()
    }

    fn membership(bindings: &[(&str, u32)]) -> Membership {
        let mut membership = Membership::default();
        for (i, (slice, port_no)) in bindings.iter().enumerate() {
            let slice = name(slice);
            let port = PortId::new(1, *port_no);
            membership.add_slice(&slice);
            membership.add_port(&slice, port);
            let last = u8::try_from(i).expect("a handful of bindings");
            membership.add_mac(&slice, port, MacAddress::new([2, 0, 0, 0, 0, last]));
        }
        membership
    }

    #[test]
    fn a_mac_bound_at_several_ports_is_tagged_in_transit_by_the_slices_all_share() {
        let mut membership = Membership::default();
        let bind = |membership: &mut Membership, slice: &str, port_no: u32, last: u8| {
            let slice = name(slice);
            membership.add_slice(&slice);
            membership.add_mac(
                &slice,
                PortId::new(1, port_no),
                MacAddress::new([2, 0, 0, 0, 0, last]),
            );
        };
        // MAC 1 at port 1 in red and blue, at port 2 in green and blue; MAC 3 alone in
        // blue, so that {blue} has a tag; MAC 4 at ports 4 and 5 in red and in green; MAC 5
        // as MAC 1 and at port 9 in green alone.
        for (slice, port_no, last) in [
            ("red", 1, 1),
            ("blue", 1, 1),
            ("green", 2, 1),
            ("blue", 2, 1),
            ("blue", 3, 3),
            ("red", 4, 4),
            ("green", 5, 4),
            ("red", 7, 5),
            ("blue", 7, 5),
            ("blue", 8, 5),
            ("green", 8, 5),
            ("green", 9, 5),
        ] {
            bind(&mut membership, slice, port_no, last);
        }
        let tags = Tags::of(&membership);
        let book = TagBook::of(&membership);
        let mac = |last: u8| MacAddress::new([2, 0, 0, 0, 0, last]);
        assert_eq!(tags.of_mac.get(&mac(1)), book.tag(&set(&["blue"])).as_ref());
        assert!(book.tag(&set(&["blue"])).is_some());
        assert_eq!(
            tags.of_mac.get(&mac(4)),
            None,
            "red and green share nothing"
        );
        let none = tags.of_mac.get(&mac(5));
        assert_eq!(none, None, "its three bindings share nothing");
        let host = |port_no, last| Host {
            port: PortId::new(1, port_no),
            mac: mac(last),
        };
        assert_eq!(tags.of_host(&host(1, 1)), book.tag(&set(&["red", "blue"])));
        assert_eq!(
            tags.of_host(&host(2, 1)),
            book.tag(&set(&["blue", "green"]))
        );
        assert_eq!(tags.of_host(&host(4, 4)), book.tag(&set(&["red"])));
    }

    #[test]
    fn a_set_hashes_alike_whatever_its_order_and_its_names_are_delimited() {
        assert_eq!(
            hash_of_set(&set(&["red", "blue"]), 0),
            hash_of_set(&set(&["blue", "red"]), 0)
        );
        assert_ne!(
            hash_of_set(&set(&["ab", "c"]), 0),
            hash_of_set(&set(&["a", "bc"]), 0)
        );
        assert_ne!(
            hash_of_set(&set(&["red"]), 0),
            hash_of_set(&set(&["red"]), 1)
        );
        // FNV-1a 64 of "red\0": what every build and instance, and releases before the
        // book, wrote into switches, so an upgrade reads its tables back as they are.
        let fnv1a_64 = |bytes: &[u8]| {
            bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(*byte)).wrapping_mul(0x100_0000_01b3)
            })
        };
        assert_eq!(hash_of_set(&set(&["red"]), 0), fnv1a_64(b"red\0"));
    }

    #[test]
    fn names_that_collide_under_the_hash_still_get_tags_of_their_own() {
        // Found by lattice reduction (issue 33): the same FNV-1a 64.
        let (first, second) = ("BALA4A91ACHA", "MG2G6I91-NIr");
        assert_eq!(
            hash_of_set(&set(&[first]), 0),
            hash_of_set(&set(&[second]), 0)
        );
        let book = TagBook::of(&membership(&[(first, 1), (second, 2), ("red", 3)]));
        let tags = [first, second, "red"].map(|slice| book.tag(&set(&[slice])).unwrap());
        assert_eq!(BTreeSet::from(tags).len(), 3, "{tags:x?}");
        // The set that sorts first keeps its hash; the other takes the next salt.
        assert_eq!(tags[0], hash_of_set(&set(&[first]), 0));
        assert_eq!(tags[1], hash_of_set(&set(&[second]), 1));
        assert_eq!(book.set(tags[1]), Some(&set(&[second])));
    }

    #[test]
    fn the_book_depends_on_the_slices_alone_and_a_tag_stays_while_its_set_lives() {
        let before = TagBook::of(&membership(&[("red", 1), ("blue", 2)]));
        let after = TagBook::of(&membership(&[("green", 5), ("blue", 2), ("red", 1)]));
        for slice in ["red", "blue"] {
            assert_eq!(before.tag(&set(&[slice])), after.tag(&set(&[slice])));
        }
        assert_eq!(
            before.tag(&set(&["red"])),
            Some(hash_of_set(&set(&["red"]), 0))
        );
    }
}
