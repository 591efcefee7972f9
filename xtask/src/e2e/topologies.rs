//! The lab's named topologies, in the notation `Topo` parses (`h1=s1:1` a host at a
//! switch's port, `s1:2-s2:2` a cable). A leaf: scenarios and the fixture both use it.

/// One switch, four hosts.
pub(super) const SINGLE: &str = "h1=s1:1 h2=s1:2 h3=s1:3 h4=s1:4";
/// Three switches in a row, a host on each end and one in the middle:
/// h1 - s1 - s2 - s3 - h3, with h2 on s2.
pub(super) const LINE3: &str = "h1=s1:1 h2=s2:1 h3=s3:1  s1:2-s2:2 s2:3-s3:2";
/// Four switches, each cabled to every other, one host per switch (port 1).
pub(super) const MESH4: &str = "h1=s1:1 h2=s2:1 h3=s3:1 h4=s4:1  \
                         s1:2-s2:2 s1:3-s3:2 s1:4-s4:2 s2:3-s3:3 s2:4-s4:3 s3:4-s4:4";

/// Two switches with one cable; h1 and h2 (one per switch) will share a slice, h3 and
/// h4 (likewise) play the attackers.
pub(super) const PAIR: &str = "h1=s1:1 h2=s2:1 h3=s1:2 h4=s2:2  s1:3-s2:3";

/// Four switches, each cabled to every other, two hosts on each (ports 1 and 5): 8 hosts,
/// 56 ordered pairs, and more than one path between any two switches.
pub(super) const MESH4X2: &str =
    "h1=s1:1 h2=s1:5 h3=s2:1 h4=s2:5 h5=s3:1 h6=s3:5 h7=s4:1 h8=s4:5  \
                           s1:2-s2:2 s1:3-s3:2 s1:4-s4:2 s2:3-s3:3 s2:4-s4:3 s3:4-s4:4";

/// Two switches, one cable on port 10; per switch a host of slice A (port 1), one of
/// slice B (port 2) and one bound nowhere (port 5): h1, h3, h5 on s1, h2, h4, h6 on s2.
/// h5 and h6 play two colluding attackers relaying each other's frames (fake-link).
pub(super) const PAIR_WITH_ATTACKERS: &str =
    "h1=s1:1 h2=s2:1 h3=s1:2 h4=s2:2 h5=s1:5 h6=s2:5  s1:10-s2:10";
